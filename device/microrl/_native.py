# The native backend: the C kernels of native_modules/microrl_kernels (a MicroPython dynamic
# native module, microrl_kernels.mpy, built for the board's architecture; see docs/native.md).
# Views are the plain backend's tuples, so the kernels take them directly: a call allocates
# nothing, and the C code checks every view's typecode, shape and bounds.
import microrl_kernels as _k  # ImportError here makes the backend seam fall back


def matrix(buf, offset, rows, cols):
    return (buf, offset, rows, cols)


def vector(buf, offset, n):
    return (buf, offset, n)


dense = _k.dense
dense_backward = _k.dense_backward
adam = _k.adam
polyak = _k.polyak
copy = _k.copy
