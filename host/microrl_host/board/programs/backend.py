# On the board (deploy): microrl's version and the backend it picks; why the native kernels did
# not load, if they did not.
import microrl
print(microrl.__version__, microrl.backend_name())
try:
    import microrl_kernels
except Exception as e:
    print(repr(e))
