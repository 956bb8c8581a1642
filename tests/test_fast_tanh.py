"""PPO's networks run the device core's numpy kernels with a compiled tanh (host/microrl_host/nn/
fast_tanh.py): numpy's float32 tanh runs one element at a time on CPUs without AVX-512. The
compiled one must stay tanh (within a few float32 ulps, NaN kept) and leave every other
kernel and activation to microrl._numpy bit for bit."""
import math

import numpy as np

from microrl.activations import IDENTITY
from microrl.nn import MLP
from microrl_host.nn import fast_tanh


def test_tanh_is_tanh_within_a_few_ulps_everywhere():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(0.0, 3.0, 100_000), np.linspace(-12.0, 12.0, 24_001), [0.0, -0.0, 1e-30, -1e-30, 8.99, 9.0, 9.01, 50.0, -50.0, 1e30, -1e30]]).astype(np.float32)
    y = x.copy()
    fast_tanh.tanh_in_place(y)
    exact = np.tanh(x.astype(np.float64))
    assert np.abs(y - exact).max() < 4e-7  # float32 tanh itself: 6e-8
    # beyond about 8 the rational overshoots 1 by up to two ulps (1.0000002; its slope 1 - y^2 then
    # -5e-7 in place of +2e-7): harmless in training, and the saved policy runs the exact tanh
    assert np.all(np.abs(y) <= 1.0000002)
    assert np.all(np.sign(y) == np.sign(exact)) and y[np.argmax(x == 0.0)] == 0.0
    nan = np.array([math.nan, 1.0], np.float32)
    fast_tanh.tanh_in_place(nan)
    assert math.isnan(nan[0]) and abs(nan[1] - math.tanh(1.0)) < 1e-7  # a NaN stays a NaN: the divergence check sees it


def _pair(acts, rows=300):
    rng = np.random.default_rng(1)
    nets = [MLP([25, 64, 64, 4], acts, batch=rows, kernels=k) for k in ("numpy", fast_tanh)]
    p = (0.3 * rng.standard_normal(nets[0].n_params)).astype(np.float32)
    for net in nets:
        net.p[:] = p
    x = rng.standard_normal((rows, 25)).astype(np.float32)
    dy = rng.standard_normal((rows, 4)).astype(np.float32)
    out = []
    for net in nets:
        y = np.array(net.forward(rows, x)[:rows])
        net.backward(dy.copy(), rows)
        out.append((y, np.array(net.g)))
    return out


def test_a_tanh_network_forward_and_backward_match_numpys_kernels():
    (y0, g0), (y1, g1) = _pair(["tanh", "tanh", IDENTITY])
    assert np.abs(y1 - y0).max() < 1e-5 * max(1.0, np.abs(y0).max())
    assert np.abs(g1 - g0).max() < 1e-5 * np.abs(g0).max()
    assert not np.array_equal(y0, y1)  # the compiled tanh is in use (numpy's gives other last bits)


def test_other_activations_are_numpys_bit_for_bit():
    (y0, g0), (y1, g1) = _pair(["relu", "relu", IDENTITY])
    assert np.array_equal(y0, y1) and np.array_equal(g0, g1)
