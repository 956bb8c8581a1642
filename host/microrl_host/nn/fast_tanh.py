"""The device core's numpy kernels (microrl._numpy) with tanh compiled: numpy's float32 tanh runs
one element at a time on CPUs without AVX-512 (2.6-6 ns an element here, three times a 64x64
product's time per row), where a rational approximation compiled by numba runs in SIMD lanes
(4-8x faster on this AVX2 machine), within 4e-7 of tanh (beyond about 8 it overshoots 1 by up to
two float32 ulps). PPO's networks (algos/ppo.py) are built on these kernels; the policy it saves
runs the device core's own tanh.

    MLP(sizes, acts, batch=n, kernels=fast_tanh)   # every other kernel is microrl._numpy's
"""
import numpy as np
from microrl import backend
from microrl.activations import IDENTITY, TANH

from .jit import jit

_numpy = backend.load("numpy")  # the device core's numpy kernels, through its one seam
# the rest of the backend, unchanged
adam, copy, load_input, matrix, polyak, vector = _numpy.adam, _numpy.copy, _numpy.load_input, _numpy.matrix, _numpy.polyak, _numpy.vector

CLAMP = 9.0  # tanh is 1.0 in float32 from 9.01 on, and the rational's error grows beyond it


@jit
def tanh_in_place(a):
    """a[i] = tanh(a[i]) for a flat float32 array: Eigen's 13/6 rational approximation of tanh on
    [-9, 9] (its coefficients), clamped beyond. (One array: with an output array that may be the
    input, LLVM's overlap check sends it down the scalar path, 5x slower than numpy.)"""
    for i in range(a.shape[0]):
        x = a[i]
        x = np.float32(CLAMP) if x > np.float32(CLAMP) else x
        x = np.float32(-CLAMP) if x < np.float32(-CLAMP) else x
        x2 = x * x
        p = np.float32(-2.76076847742355e-16)
        p = p * x2 + np.float32(2.00018790482477e-13)
        p = p * x2 + np.float32(-8.60467152213735e-11)
        p = p * x2 + np.float32(5.12229709037114e-08)
        p = p * x2 + np.float32(1.48572235717979e-05)
        p = p * x2 + np.float32(6.37261928875436e-04)
        p = p * x2 + np.float32(4.89352455891786e-03)
        q = np.float32(1.19825839466702e-06)
        q = q * x2 + np.float32(1.18534705686654e-04)
        q = q * x2 + np.float32(2.26843463243900e-03)
        q = q * x2 + np.float32(4.89352518554385e-03)
        a[i] = p * x / q


@jit
def times_tanh_slope(g, y):
    """g[i] *= 1 - y[i]^2 (tanh's derivative from its output), flat arrays, in one pass."""
    for i in range(g.shape[0]):
        g[i] *= np.float32(1.0) - y[i] * y[i]


def dense(W, b, x, y, n, act, z=None):
    if act != TANH or y.dtype != np.float32 or not y[:n].flags.c_contiguous:
        return _numpy.dense(W, b, x, y, n, act, z)
    yn = y[:n]
    np.matmul(x[:n], W.T, out=yn)
    yn += b
    tanh_in_place(yn.reshape(-1))  # rows of a C-ordered matrix: a view


def dense_backward(W, x, y, z, dy, n, act, dW=None, db=None, dx=None):
    if act != TANH or dy.dtype != np.float32 or not dy[:n].flags.c_contiguous:
        return _numpy.dense_backward(W, x, y, z, dy, n, act, dW, db, dx)
    g = dy[:n]
    times_tanh_slope(g.reshape(-1), y[:n].reshape(-1))
    _numpy.dense_backward(W, x, y, z, dy, n, IDENTITY, dW, db, dx)
