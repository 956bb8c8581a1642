# The native kernels' module (what device/microrl/_native.py imports on a board) for MicroPython's
# webassembly port in a browser: the same C (native_modules/microrl_kernels), compiled to
# microrl_kernels.wasm, instantiated by engine.js on MicroPython's own memory. An array's data
# is then at the same address for both, so a call passes addresses and sizes only: no copy.
# Float kernels only (as on boards); array('d') views fall back to the plain ones in _native.py.
import js
from uctypes import addressof

_k = js.microrlKernels  # set by engine.js before microrl is imported
_dense = _k.mrl_dense_f
_dense_backward = _k.mrl_dense_backward_f
_adam = _k.mrl_adam_f
_polyak = _k.mrl_polyak_f
_copy = _k.mrl_copy_f

double_kernels = False
SOURCE_HASH = _k.source_hash


def typecode(buf):
    # once per view, at allocation: an empty slice's repr, "array('f')", names it
    return ord(repr(buf[:0])[7])


def dense(W, b, x, y, n, act, z=None):
    wb, wo, n_out, n_in = W
    za = 0 if z is None else addressof(z[0]) + 4 * z[1]
    _dense(addressof(wb) + 4 * wo, addressof(b[0]) + 4 * b[1], addressof(x[0]) + 4 * x[1], addressof(y[0]) + 4 * y[1], za, n, n_out, n_in, act)


def dense_backward(W, x, y, z, dy, n, act, dW=None, db=None, dx=None):
    wb, wo, n_out, n_in = W
    za = 0 if z is None else addressof(z[0]) + 4 * z[1]
    dwa = 0 if dW is None else addressof(dW[0]) + 4 * dW[1]
    dba = 0 if db is None else addressof(db[0]) + 4 * db[1]
    dxa = 0 if dx is None else addressof(dx[0]) + 4 * dx[1]
    _dense_backward(addressof(wb) + 4 * wo, addressof(x[0]) + 4 * x[1], addressof(y[0]) + 4 * y[1], za, addressof(dy[0]) + 4 * dy[1], n, n_out, n_in, act, dwa, dba, dxa)


def adam(p, g, m, v, lr, beta1, beta2, eps, step):
    _adam(addressof(p[0]) + 4 * p[1], addressof(g[0]) + 4 * g[1], addressof(m[0]) + 4 * m[1], addressof(v[0]) + 4 * v[1], p[2], lr, beta1, beta2, eps, step)


def polyak(target, source, tau):
    _polyak(addressof(target[0]) + 4 * target[1], addressof(source[0]) + 4 * source[1], target[2], tau)


def copy(target, source):
    _copy(addressof(target[0]) + 4 * target[1], addressof(source[0]) + 4 * source[1], target[2])
