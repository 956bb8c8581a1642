"""The host's numba networks against the device core's MLP (numpy backend): one forward,
backward and Adam step agree to float32 tolerance; SAC's hand-derived actor gradient matches
finite differences. (The tasks compiled from the device core: tests/test_tasks.py.)"""
import math

import numpy as np
import pytest
from numba import njit

from microrl import backend
from microrl.tasks import pendulum
from microrl.task import Env
from microrl.nn import MLP

from microrl_host.algos import loop, replay
from microrl_host.nn import mlp
from microrl_host.nn import rng as compiled_rng


# forward, backward and Adam are called from compiled code only (no Python wrapper): reach them
# through compiled wrappers of the test's own
@njit
def forward(net, x, n):
    return mlp.forward(net, x, n).copy()


@njit
def backward(net, x, n, dy, grads, dx):
    mlp.backward(net, x, n, dy, grads, dx)


@njit
def adam(net, lr, step):
    mlp.adam(net, lr, step)


@pytest.fixture
def numpy_backend():
    before = backend.name()
    backend.use("numpy")
    yield
    backend.use(before)


@pytest.mark.parametrize("acts", [("relu", "tanh"), ("tanh", "identity"), ("sigmoid", "identity"), ("gelu", "tanh")])
def test_forward_backward_adam_match_device_core(numpy_backend, acts):
    sizes, n = [4, 16, 8, 2], 7
    host = mlp.new_net(sizes, acts, n, seed=5)
    ref = MLP(sizes, acts, batch=n)
    for k in range(ref.n_params):
        ref.params[k] = float(mlp.view(host).params[k])
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, sizes[0])).astype(np.float32)
    dy = rng.normal(size=(n, sizes[-1])).astype(np.float32)

    y_host = forward(host, x, n)
    ref.input[:] = x
    y_ref = np.array(ref.forward(n))
    np.testing.assert_allclose(y_host, y_ref, rtol=1e-5, atol=1e-6)

    dx_host = np.zeros_like(x)
    backward(host, x, n, dy.copy(), mlp.view(host).grads, dx_host)
    dx_ref = ref.B.matrix(nets_array(n * sizes[0]), 0, n, sizes[0])
    ref.backward(ref.B.matrix(nets_array(n * sizes[-1], dy), 0, n, sizes[-1]), n, dx=dx_ref)
    np.testing.assert_allclose(mlp.view(host).grads, np.array(ref.grads), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(dx_host, np.array(dx_ref), rtol=1e-4, atol=1e-6)

    for step in (1, 2):  # Adam with bias correction, twice
        adam(host, 1e-3, step)
        ref.adam_step(1e-3)
    np.testing.assert_allclose(mlp.view(host).params, np.array(ref.params), rtol=1e-5, atol=1e-7)
    assert host.weights.dtype == np.float32


def test_compiled_only_functions_called_from_python_compute_the_same():
    """forward, backward and Adam have no Python wrapper (numba would call a null pointer: the
    interpreter died); a Python call gets a compiled copy of its own, with the same results."""
    sizes, n = [3, 8, 2], 5
    a = mlp.new_net(sizes, ("tanh", "identity"), n, seed=2)
    b = mlp.new_net(sizes, ("tanh", "identity"), n, seed=2)
    x = np.random.default_rng(1).normal(size=(n, 3)).astype(np.float32)
    assert type(mlp.forward).__name__ == "CompiledOnlyDispatcher"
    np.testing.assert_array_equal(mlp.forward(a, x, n), forward(b, x, n))
    dy = np.ones((n, 2), np.float32)
    dx_a, dx_b = np.zeros_like(x), np.zeros_like(x)
    mlp.backward(a, x, n, dy.copy(), mlp.view(a).grads, dx_a)
    backward(b, x, n, dy.copy(), mlp.view(b).grads, dx_b)
    np.testing.assert_array_equal(dx_a, dx_b)
    mlp.adam(a, 1e-3, 1)
    adam(b, 1e-3, 1)
    np.testing.assert_array_equal(mlp.view(a).params, mlp.view(b).params)


def nets_array(n, values=None):
    from array import array

    a = array("f", bytes(4 * n))
    if values is not None:
        a[:] = array("f", np.asarray(values, np.float32).ravel().tobytes())
    return a


def test_polyak_and_layout_match_device_core():
    from microrl.nn import layout

    sizes = [3, 5, 1]
    a = mlp.new_net(sizes, "relu", 2, seed=1)
    b = mlp.new_net(sizes, "relu", 2, seed=2)
    expect = 0.9 * mlp.view(a).params + 0.1 * mlp.view(b).params
    mlp.polyak(a, b, 0.1)
    np.testing.assert_allclose(mlp.view(a).params, expect, rtol=1e-6)
    assert [tuple(o) for o in mlp.view(a).offsets] == layout(sizes)[0]
    assert mlp.view(a).params.size == layout(sizes)[1]


def test_random_numbers_are_uniform_and_normal():
    s = compiled_rng.new_rng(3)
    u = np.array([compiled_rng.uniform(s, -1.0, 1.0) for _ in range(20000)])
    g = np.array([compiled_rng.normal(s, 0.0, 1.0) for _ in range(20000)])
    assert -1.0 <= u.min() and u.max() < 1.0 and abs(u.mean()) < 0.02
    assert abs(g.mean()) < 0.03 and abs(g.std() - 1.0) < 0.03
    assert sorted({compiled_rng.randint(s, 5) for _ in range(200)}) == [0, 1, 2, 3, 4]


def test_sac_actor_gradient_matches_finite_differences(numpy_backend):
    """SAC's actor gradient is derived by hand (tanh squashing, log-prob, min of two critics):
    check dL/d(actor output) from one compiled update against central differences in float64."""
    from microrl_host.algos import sac

    c = sac.default_config()
    c.batch, c.hidden, c.warmup = 8, (16, 16), 0
    S = sac.new_state(c, 3, 1, seed=4)
    hp = sac.hyperparameters(c)
    rng = np.random.default_rng(1)
    transitions = []
    for _ in range(20):
        o, o2 = rng.normal(size=3).astype(np.float32), rng.normal(size=3).astype(np.float32)
        transitions.append((o, rng.uniform(-1, 1, 1).astype(np.float32), float(rng.normal()), o2, False))
    for t in transitions[:-1]:
        replay.replay_add(S.replay, *t)
    S.alpha[0] = math.log(0.3)
    actor_before = mlp.view(S.actor).params.copy()
    loop.observe(S, hp, *transitions[-1], 1)  # stores the last one, then one update (warm-up 0)
    assert S.counters[1] == 1
    n, od, ad = c.batch, 3, 1
    alpha = 0.3
    obs = S.actor_in.astype(np.float64)
    eps = S.eps.astype(np.float64)

    def mlp64(net, params):
        m = MLP([int(s) for s in mlp.view(net).sizes], [int(a) for a in mlp.view(net).acts], batch=n, typecode="d")
        for k in range(len(params)):
            m.params[k] = float(params[k])
        return m

    actor = mlp64(S.actor, actor_before)
    critics = [mlp64(S.critic1, mlp.view(S.critic1).params), mlp64(S.critic2, mlp.view(S.critic2).params)]
    actor.input[:] = obs
    out0 = np.array(actor.forward(n), dtype=np.float64)

    def loss(out):
        mu, ls = out[:, :ad], np.clip(out[:, ad:], sac.LOG_STD_MIN, sac.LOG_STD_MAX)
        a = np.tanh(mu + np.exp(ls) * eps)
        logp = (-0.5 * eps**2 - ls - 0.5 * math.log(2 * math.pi) - np.log(1 - a * a + 1e-6)).sum(axis=1)
        qs = []
        for cr in critics:
            cr.input[:] = np.concatenate([obs, a], axis=1)
            qs.append(np.array(cr.forward(n))[:, 0])
        return float(np.mean(alpha * logp - np.minimum(qs[0], qs[1])))

    numeric = np.zeros_like(out0)
    h = 1e-5
    for s in range(n):
        for j in range(2 * ad):
            up, down = out0.copy(), out0.copy()
            up[s, j] += h
            down[s, j] -= h
            numeric[s, j] = (loss(up) - loss(down)) / (2 * h)
    np.testing.assert_allclose(S.dout, numeric, rtol=2e-3, atol=2e-5)


def test_host_trainers_follow_lr_end_as_the_device_core_does():
    """lr_end: the learning rates fall linearly to lr_end times their value at the last step,
    the device core's TD3 schedule; 1.0 (the default) leaves a run exactly as it was."""
    from microrl.td3 import TD3, TD3Config
    from microrl_host.algos import td3
    from microrl_host.algos.offpolicy import learning_rate_share

    c = td3.config(lr_end=0.25)
    device = TD3(Env(pendulum), TD3Config(lr_end=0.25, steps=1000, replay_capacity=100))
    for step in (0, 250, 999, 1000):
        device.steps = step
        assert math.isclose(learning_rate_share(c, step, 1000), device.lr_scale())
    assert learning_rate_share(td3.config(), 500, 1000) == 1.0
    plain = td3.ALGO.run("pendulum", steps=1500, seed=2, eval_every=0, eval_episodes=0).policy
    same = td3.ALGO.run("pendulum", steps=1500, seed=2, eval_every=0, eval_episodes=0, lr_end=1.0).policy
    falling = td3.ALGO.run("pendulum", steps=1500, seed=2, eval_every=0, eval_episodes=0, lr_end=0.1).policy
    assert bytes(plain.params) == bytes(same.params)
    assert bytes(plain.params) != bytes(falling.params)
