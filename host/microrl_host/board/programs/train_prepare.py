# On the board (train.train_on_board), first: import the trainer, report the free heap and its
# largest block (mem_info), and the GC block size in bytes.
import gc, sys
from microrl.td3 import TD3, TD3Config
from microrl.pendulum import Pendulum
from microrl.policy import save
gc.collect()
try:
    import micropython
    micropython.mem_info()
except (ImportError, AttributeError):
    pass
print('F', gc.mem_free(), 16 if sys.maxsize < 2 ** 32 else 32)
