# On the board: the bytes it can allocate in pieces of 1 kB after a collection (the free heap
# less the holes too small for a buffer), as usable_heap(); the pieces are freed again.
import gc


def usable_heap(piece=1024):
    gc.collect()
    held = [None] * (gc.mem_free() // piece + 1)
    n = 0
    try:
        while n < len(held):
            held[n] = bytearray(piece)
            n += 1
    except MemoryError:
        pass
    held = None
    gc.collect()
    return n * piece
