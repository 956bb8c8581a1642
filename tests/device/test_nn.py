# Gradients against finite differences, forward batch vs single, Adam against its formula.
from math import sqrt

from microrl.activations import NAMES
from microrl.compat import zeros
from microrl.nn import MLP, layout, param_count
from microrl.rng import Rng
from tiny import SINGLE_PRECISION, assert_all_close, assert_close, raises

# Central differences: step and tolerances for the port's float. Double: a 1e-6 step, 2e-4
# relative. Float32 (boards): the loss is resolved to about 6e-8 of its size, so a 1e-6 step
# would be mostly rounding; a 1e-3 step leaves truncation and rounding errors near 1e-4 relative,
# checked at 5e-3 relative plus 5e-4 absolute.
if SINGLE_PRECISION:
    FD_EPS, FD_REL, FD_ABS = 1e-3, 5e-3, 5e-4
else:
    FD_EPS, FD_REL, FD_ABS = 1e-6, 2e-4, 1e-6


def _loss(net, n, coef):
    # L = sum_k coef_k * y_k over the n output rows
    net.forward(n)
    y = net.output_buf
    total = 0.0
    for k in range(n * net.sizes[-1]):
        total += coef[k] * y[k]
    return total


def _check_gradients(sizes, acts, n=3, seed=0, eps=FD_EPS, rel=FD_REL, abs_=FD_ABS):
    rng = Rng(seed)
    net = MLP(sizes, acts, batch=n, typecode="d").init(rng)
    x = net.input_buf
    for k in range(n * sizes[0]):
        x[k] = rng.uniform(-2.0, 2.0)
    n_out = sizes[-1]
    coef = zeros(n * n_out, "d")
    for k in range(len(coef)):
        coef[k] = rng.uniform(-1.0, 1.0)
    # analytic: dy = coef
    net.forward(n)
    dy_buf = zeros(n * n_out, "d")
    for k in range(len(coef)):
        dy_buf[k] = coef[k]
    dx_buf = zeros(n * sizes[0], "d")
    B = net.B
    net.backward(B.matrix(dy_buf, 0, n, n_out), n, dx=B.matrix(dx_buf, 0, n, sizes[0]))
    _check_against_fd(net.params, net.grads, net, n, coef, eps, rel, abs_, "dparam %r" % (acts,))
    _check_against_fd(x, dx_buf, net, n, coef, eps, rel, abs_, "dx %r" % (acts,))


def _check_against_fd(values, grads, net, n, coef, eps, rel, abs_, what):
    # central differences of the loss in each entry of values, against the analytic grads
    for k in range(len(grads)):
        old = values[k]
        values[k] = old + eps
        up = _loss(net, n, coef)
        values[k] = old - eps
        down = _loss(net, n, coef)
        values[k] = old
        assert_close(grads[k], (up - down) / (2 * eps), rel, abs_, "%s[%d]" % (what, k))


def test_gradients_every_activation():
    for name in NAMES:
        # the same activation in the hidden layer and at the output
        _check_gradients([3, 5, 2], [name, name], seed=NAMES.index(name))


def test_gradients_deep_network():
    _check_gradients([4, 6, 5, 6, 5, 3], ["relu", "tanh", "gelu", "sigmoid", "identity"], n=2, seed=11)


def test_forward_batch_matches_single_rows():
    rng = Rng(5)
    sizes = [13, 16, 8, 4]
    net = MLP(sizes, ("relu", "tanh"), batch=4).init(rng)
    one = MLP(sizes, ("relu", "tanh"), batch=1, params=net.params)
    for k in range(4 * 13):
        net.input_buf[k] = rng.uniform(-1, 1)
    net.forward(4)
    for s in range(4):
        for i in range(13):
            one.input_buf[i] = net.input_buf[s * 13 + i]
        one.forward(1)
        assert_all_close(one.output_buf, net.output_buf[s * 4 : s * 4 + 4], 1e-5, 1e-6, "row %d" % s)


def test_init_bounds_like_pytorch_linear():
    net = MLP([16, 9, 4], "relu").init(Rng(0))
    offsets, n = layout([16, 9, 4])
    assert n == 16 * 9 + 9 + 9 * 4 + 4 == param_count([16, 9, 4])
    bounds = (1 / sqrt(16), 1 / sqrt(9))
    for l, (wo, bo) in enumerate(offsets):
        end = offsets[l + 1][0] if l + 1 < len(offsets) else n
        for k in range(wo, end):
            assert abs(net.params[k]) <= bounds[l] * 1.0000001
    # not all the same sign or size: it is random
    assert max(net.params) > 0.0 > min(net.params)


def test_adam_matches_torch_formula():
    net = MLP([2, 1], "identity", typecode="d")
    for k in range(3):
        net.params[k] = 0.5
    lr, b1, b2, eps = 0.01, 0.9, 0.999, 1e-8
    m = [0.0] * 3
    v = [0.0] * 3
    ref = [0.5] * 3
    for t in range(1, 6):
        for k in range(3):
            g = 0.1 * (k + 1) * t - 0.2
            net.grads[k] = g
            m[k] = b1 * m[k] + (1 - b1) * g
            v[k] = b2 * v[k] + (1 - b2) * g * g
            denom = sqrt(v[k]) / sqrt(1 - b2**t) + eps
            ref[k] -= lr / (1 - b1**t) * m[k] / denom
        net.adam_step(lr, b1, b2, eps)
        # double: the same formula to 1e-9; float32 (the reference above computes in float32, a
        # native kernel in double): a few float32 ulps (6e-8 each)
        rel, abs_ = (1e-6, 1e-9) if SINGLE_PRECISION else (1e-9, 1e-12)
        assert_all_close(net.params, ref, rel, abs_, "step %d" % t)


def test_adam_fits_a_line():
    # a one-layer net learns y = 2x - 1 by gradient descent with Adam
    rng = Rng(9)
    n = 16
    net = MLP([1, 1], "identity", batch=n).init(rng)
    dy = zeros(n)
    dyv = net.B.matrix(dy, 0, n, 1)
    for _ in range(400):
        for s in range(n):
            net.input_buf[s] = rng.uniform(-1, 1)
        net.forward(n)
        for s in range(n):
            dy[s] = 2.0 * (net.output_buf[s] - (2.0 * net.input_buf[s] - 1.0)) / n
        net.backward(dyv, n)
        net.adam_step(0.05)
    assert abs(net.params[0] - 2.0) < 0.05 and abs(net.params[1] + 1.0) < 0.05, list(net.params)


def test_bad_construction_errors():
    raises(ValueError, MLP, [3], "relu")
    raises(ValueError, MLP, [3, 4, 1], ["relu"])
    e = raises(ValueError, MLP, [3, 4, 1], "swish")
    assert "relu" in str(e)
    net = MLP([3, 2], "relu", batch=2)
    raises(ValueError, net.forward, 3)


def test_shared_hidden_buffers_give_the_same_outputs():
    rng = Rng(12)
    a = MLP([3, 8, 8, 2], ("relu", "tanh"), batch=2).init(rng)
    b = MLP([3, 8, 8, 2], ("relu", "tanh"), batch=2, share=a, scratch_from=a).init(rng)
    lone = MLP([3, 8, 8, 2], ("relu", "tanh"), batch=2, params=b.params)
    assert b.y[0] is a.y[0] and b.y[-1] is not a.y[-1]
    for k in range(6):
        a.input_buf[k] = b.input_buf[k] = lone.input_buf[k] = rng.uniform(-1, 1)
    a.forward(2)
    out_a = list(a.output_buf)
    b.forward(2)
    lone.forward(2)
    assert list(b.output_buf) == list(lone.output_buf)
    assert list(a.output_buf) == out_a  # outputs are never shared
