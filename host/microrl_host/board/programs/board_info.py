# On the board (deploy.board_info): what it runs, its free RAM and flash, whether it can hash.
import sys, gc, os
try:
    import hashlib
    h = hasattr(hashlib, 'sha256')
except ImportError:
    h = False
free = -1
for p in ('.', '/', ''):
    try:
        s = os.statvfs(p)
        free = s[0] * s[3]
        break
    except Exception:
        pass
# the board and chip ("... with ESP32S2"): the ESP32-S2 has the ESP32's .mpy architecture, no FPU
m = getattr(sys.implementation, '_machine', None)
if m is None:
    try:
        m = os.uname().machine
    except Exception:
        m = ''
gc.collect()
print(repr((sys.implementation.name, tuple(sys.implementation.version[:3]), getattr(sys.implementation, '_mpy', 0), sys.platform, gc.mem_free(), free, h, m)))
