# The ulab backend: kernels over ulab ndarrays that share memory with the array('f') buffers
# (numpy.frombuffer views made once, at allocation), for boards whose firmware has ulab (common
# ESP32 and Pico builds). Only what ulab has is used: dot, sum(axis), tanh, exp, sqrt, maximum,
# where, in-place operators; results go into the preallocated views by slice assignment or
# in-place operators. ulab has no out= argument, so dot and elementwise temporaries still
# allocate (the numpy backend avoids that on CPython; the native module avoids it everywhere).
from ulab import numpy as np

from . import _plain
from .activations import GELU, IDENTITY, RELU, SIGMOID, TANH

load_input = _plain.load_input  # a policy's input: Python over array('f')

# Views share memory with array('f') only when ulab's float is float32 (boards: yes; a unix port
# built with double floats: no). Then this backend cannot work in place: let the seam fall back.
if np.zeros(1).itemsize != 4:
    raise ImportError("ulab's float is double here: it cannot share array('f') buffers (use a single-precision build)")

try:
    from ulab.scipy.special import erf as _erf
except ImportError:  # ulab built without scipy: Abramowitz-Stegun 7.1.26 (error < 1.5e-7) in ulab ops

    def _erf(a):
        s = np.where(a < 0.0, -1.0, 1.0)
        x = a * s
        t = 1.0 / (1.0 + 0.3275911 * x)
        p = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t
        return s * (1.0 - p * np.exp(-x * x))


_INV_SQRT2 = 0.7071067811865476
_INV_SQRT_2PI = 0.3989422804014327


def _is_double(buf):
    # array('d') (gradient checks): ulab here has float32 only, so those buffers get plain views
    # and the plain kernels. MicroPython's array has no .typecode: compare byte and item counts.
    return np.frombuffer(buf, dtype=np.uint8).size == 8 * len(buf) and len(buf) > 0


def matrix(buf, offset, rows, cols):
    if _is_double(buf):
        return _plain.matrix(buf, offset, rows, cols)
    return np.frombuffer(buf, dtype=np.float, count=rows * cols, offset=offset * 4).reshape((rows, cols))


def vector(buf, offset, n):
    if _is_double(buf):
        return _plain.vector(buf, offset, n)
    return np.frombuffer(buf, dtype=np.float, count=n, offset=offset * 4)


def dense(W, b, x, y, n, act, z=None):
    if isinstance(W, tuple):
        return _plain.dense(W, b, x, y, n, act, z)
    yn = y[:n]
    yn[:] = np.dot(x[:n], W.transpose())
    yn += b
    if z is not None:
        z[:n] = yn
    if act == RELU:
        yn[:] = np.maximum(yn, 0.0)
    elif act == TANH:
        yn[:] = np.tanh(yn)
    elif act == SIGMOID:  # 0.5 * (1 + tanh(z / 2)): no overflow for large |z|
        yn *= 0.5
        yn[:] = np.tanh(yn)
        yn += 1.0
        yn *= 0.5
    elif act == GELU:
        yn[:] = yn * (0.5 * (1.0 + _erf(yn * _INV_SQRT2)))
    elif act != IDENTITY:
        raise ValueError("unknown activation code %r" % act)


def dense_backward(W, x, y, z, dy, n, act, dW=None, db=None, dx=None):
    if isinstance(W, tuple):
        return _plain.dense_backward(W, x, y, z, dy, n, act, dW, db, dx)
    g = dy[:n]
    yn = y[:n]
    if act == RELU:
        g *= yn > 0.0
    elif act == TANH:
        g *= 1.0 - yn * yn
    elif act == SIGMOID:
        g *= yn * (1.0 - yn)
    elif act == GELU:
        zn = z[:n]
        g *= 0.5 * (1.0 + _erf(zn * _INV_SQRT2)) + zn * (_INV_SQRT_2PI * np.exp(-0.5 * zn * zn))
    if dW is not None:
        dW[:] = np.dot(g.transpose(), x[:n])
    if db is not None:
        db[:] = np.sum(g, axis=0)
    if dx is not None:
        dx[:n] = np.dot(g, W)


def adam(p, g, m, v, lr, beta1, beta2, eps, step):
    if isinstance(p, tuple):
        return _plain.adam(p, g, m, v, lr, beta1, beta2, eps, step)
    m *= beta1
    m += (1.0 - beta1) * g
    v *= beta2
    v += (1.0 - beta2) * (g * g)
    bc1 = 1.0 - beta1**step
    bc2_sqrt = (1.0 - beta2**step) ** 0.5
    p -= (lr / bc1) * m / (np.sqrt(v) * (1.0 / bc2_sqrt) + eps)


def polyak(target, source, tau):
    if isinstance(target, tuple):
        return _plain.polyak(target, source, tau)
    target *= 1.0 - tau
    target += tau * source


def copy(target, source):
    if isinstance(target, tuple):
        return _plain.copy(target, source)
    target[:] = source
