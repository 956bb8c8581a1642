# numpy kernels for CPython: views are numpy arrays sharing memory with the array('f') buffers,
# made once at allocation; kernels write through out= so that a step allocates little.
import numpy as np

from ._plain import load_input as _load_input
from .activations import GELU, IDENTITY, RELU, SIGMOID, TANH

try:
    from math import erf as _erf_scalar

    _erf = np.vectorize(_erf_scalar, otypes=[np.float64])
except ImportError:  # pragma: no cover
    _erf = None

_INV_SQRT2 = 0.7071067811865476
_INV_SQRT_2PI = 0.3989422804014327


def load_input(obs, x, n, mean, std, scale=1.0):
    """_plain.load_input (a policy's input: Python over array('f')); a policy's check of its own
    values in place (obs is x: the overflow guard) in numpy."""
    if obs is x and mean is None:
        ok = np.isfinite(np.frombuffer(x, dtype=_dtype(x), count=n))
        return -1 if ok.all() else int(np.argmin(ok))
    return _load_input(obs, x, n, mean, std, scale)


def _dtype(buf):
    return np.float32 if buf.typecode == "f" else np.float64


def matrix(buf, offset, rows, cols):
    return np.frombuffer(buf, dtype=_dtype(buf), count=rows * cols, offset=offset * buf.itemsize).reshape(rows, cols)


def vector(buf, offset, n):
    return np.frombuffer(buf, dtype=_dtype(buf), count=n, offset=offset * buf.itemsize)


def _gelu(z, out):
    cdf = 0.5 * (1.0 + _erf(z * _INV_SQRT2))
    np.multiply(z, cdf, out=out)


def dense(W, b, x, y, n, act, z=None):
    yn = y[:n]
    np.matmul(x[:n], W.T, out=yn)
    yn += b
    if z is not None:
        z[:n] = yn
    if act == RELU:
        np.maximum(yn, 0.0, out=yn)
    elif act == TANH:
        np.tanh(yn, out=yn)
    elif act == SIGMOID:
        # stable for large |z|: 0.5 * (1 + tanh(z / 2))
        np.multiply(yn, 0.5, out=yn)
        np.tanh(yn, out=yn)
        yn += 1.0
        yn *= 0.5
    elif act == GELU:
        _gelu(yn.copy(), yn)
    elif act != IDENTITY:
        raise ValueError("unknown activation code %r" % act)


_BITS = {np.dtype(np.float32): np.int32, np.dtype(np.float64): np.int64}


def _zero_where_off(g, y):
    # g[y <= 0] = 0 bit for bit (NaN in y keeps its gradient), as an AND with all-ones or zero:
    # numpy's boolean-mask assignment took 3 ms for 2048x256, as long as its GEMM; this 0.24 ms
    keep = np.subtract(np.less_equal(y, 0.0), 1, dtype=_BITS[g.dtype])  # off: 1 - 1 = 0, on: -1
    bits = g.view(keep.dtype)
    np.bitwise_and(bits, keep, out=bits)


def dense_backward(W, x, y, z, dy, n, act, dW=None, db=None, dx=None):
    g = dy[:n]
    yn = y[:n]
    if act == RELU:
        _zero_where_off(g, yn)
    elif act == TANH:
        g *= 1.0 - yn * yn
    elif act == SIGMOID:
        g *= yn * (1.0 - yn)
    elif act == GELU:
        zn = z[:n].astype(np.float64)
        g *= (0.5 * (1.0 + _erf(zn * _INV_SQRT2)) + zn * _INV_SQRT_2PI * np.exp(-0.5 * zn * zn)).astype(g.dtype)
    if dW is not None:
        np.matmul(g.T, x[:n], out=dW)
    if db is not None:
        np.sum(g, axis=0, out=db)
    if dx is not None:
        np.matmul(g, W, out=dx[:n])


def adam(p, g, m, v, lr, beta1, beta2, eps, step):
    m *= beta1
    m += (1.0 - beta1) * g
    v *= beta2
    v += (1.0 - beta2) * g * g
    bc1 = 1.0 - beta1**step
    bc2_sqrt = (1.0 - beta2**step) ** 0.5
    p -= (lr / bc1) * m / (np.sqrt(v) / bc2_sqrt + eps)


def polyak(target, source, tau):
    target *= 1.0 - tau
    target += tau * source


def copy(target, source):
    target[:] = source
