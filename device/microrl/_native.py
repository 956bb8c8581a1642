# The native backend: the C kernels of native_modules/microrl_kernels (a MicroPython dynamic
# native module, microrl_kernels.mpy, built for the board's architecture; see docs/native.md).
# Views are the plain backend's tuples, so the kernels take them directly: a call allocates
# nothing, and the C code checks every view's typecode, shape and bounds.
import microrl_kernels as _k  # ImportError here makes the backend seam fall back

# a policy's input copied, normalised and checked for NaN and inf in C (policy.Policy uses it)
try:
    load_input = _k.load_input
except AttributeError:  # a module built before it existed
    from ._plain import load_input

if _k.double_kernels:  # x64 builds: float and double kernels, bound directly

    def matrix(buf, offset, rows, cols):
        return (buf, offset, rows, cols)

    def vector(buf, offset, n):
        return (buf, offset, n)

    dense = _k.dense
    dense_backward = _k.dense_backward
    adam = _k.adam
    polyak = _k.polyak
    copy = _k.copy

else:  # board builds have float kernels only: array('d') (gradient checks) gets the plain ones
    from . import _plain

    _D = 100  # ord("d")
    _dense, _dense_backward, _adam, _polyak, _copy = _k.dense, _k.dense_backward, _k.adam, _k.polyak, _k.copy

    def matrix(buf, offset, rows, cols):
        # a list marks a double view: the plain kernels unpack lists and tuples alike
        return [buf, offset, rows, cols] if _k.typecode(buf) == _D else (buf, offset, rows, cols)

    def vector(buf, offset, n):
        return [buf, offset, n] if _k.typecode(buf) == _D else (buf, offset, n)

    def dense(W, b, x, y, n, act, z=None):
        if W.__class__ is list:
            return _plain.dense(W, b, x, y, n, act, z)
        _dense(W, b, x, y, n, act, z)

    def dense_backward(W, x, y, z, dy, n, act, dW=None, db=None, dx=None):
        if W.__class__ is list:
            return _plain.dense_backward(W, x, y, z, dy, n, act, dW, db, dx)
        _dense_backward(W, x, y, z, dy, n, act, dW, db, dx)

    def adam(p, g, m, v, lr, beta1, beta2, eps, step):
        if p.__class__ is list:
            return _plain.adam(p, g, m, v, lr, beta1, beta2, eps, step)
        _adam(p, g, m, v, lr, beta1, beta2, eps, step)

    def polyak(target, source, tau):
        if target.__class__ is list:
            return _plain.polyak(target, source, tau)
        _polyak(target, source, tau)

    def copy(target, source):
        if target.__class__ is list:
            return _plain.copy(target, source)
        _copy(target, source)
