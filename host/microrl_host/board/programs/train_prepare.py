# On the board (train.train_on_board), first, after usable_heap.py and task_info.py (which
# imported the task TASK as `task` and printed its constants): import only what training needs
# (no policy code), report the free heap, the GC block size, the byte order and the backend, its
# largest free block (mem_info) and the heap usable in 1 kB pieces.
import gc, sys
from microrl.td3 import TD3, TD3Config
from microrl.task import Env
from microrl import backend_name
gc.collect()
try:
    import micropython
    micropython.mem_info()
except (ImportError, AttributeError):
    pass
print('F', gc.mem_free(), 16 if sys.maxsize < 2 ** 32 else 32, sys.byteorder, backend_name())
print('U', usable_heap())
