# On the board (deploy.board_hashes): SHA-256 of each of PATHS, None for a missing file.
import hashlib
def _h(p):
    try:
        f = open(p, 'rb')
    except OSError:
        return None
    h = hashlib.sha256()
    b = bytearray(512)
    m = memoryview(b)
    while True:
        n = f.readinto(b)
        if not n:
            break
        h.update(m[:n])
    f.close()
    return ''.join('%02x' % c for c in h.digest())
print(repr([_h(p) for p in PATHS]))
