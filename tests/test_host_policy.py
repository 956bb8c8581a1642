"""A policy trained by the host's numba TD3/SAC loads in the device core and acts identically:
on CPython (numpy and plain backends) and under micropython, matching the compiled actor."""
import numpy as np
import pytest

from microrl import backend
from microrl.policy import load, save

from helpers import needs_micropython, run_micropython_code
from microrl_host.algos import sac, td3
from microrl_host.nn import mlp

OBSERVATIONS = [[np.cos(t), np.sin(t), 3.0 * np.sin(2.7 * t)] for t in np.linspace(-3.0, 3.0, 17)]


@pytest.fixture(scope="module", params=["td3", "sac"])
def trained(request, tmp_path_factory):
    module = td3 if request.param == "td3" else sac
    run = module.ALGO.run("pendulum", steps=400, seed=5, warmup=100, eval_every=0, eval_episodes=0)
    path = str(tmp_path_factory.mktemp(request.param) / "p.mrlp")
    save(path, run.policy)
    return module, path, run


def compiled_actions(module, run):
    """The trained actor as the host's compiled evaluation runs it (SAC: tanh of the mean head)."""
    out = np.zeros(1, np.float32)
    actions = []
    for obs in OBSERVATIONS:
        mlp.greedy_action(run.state.actor, np.array(obs, np.float32), module.SQUASH, out)
        actions.append([2.0 * float(out[0])])
    return actions


@pytest.mark.parametrize("name", ["numpy", "plain"])
def test_device_core_acts_like_the_compiled_actor(trained, name):
    module, path, run = trained
    before = backend.name()
    backend.use(name)
    try:
        policy = load(path)
        got = [[float(policy(np.array(o, np.float32))[0])] for o in OBSERVATIONS]
    finally:
        backend.use(before)
    np.testing.assert_allclose(got, compiled_actions(module, run), rtol=1e-5, atol=1e-6)
    assert policy.sizes == [3, 64, 64, 1] and abs(max(abs(a[0]) for a in got)) <= 2.0


def test_host_training_agrees_with_its_policy_file(trained):
    """The evaluation during training (compiled actor) and the saved file are the same actor."""
    module, path, run = trained
    from microrl.evaluate import evaluate
    from microrl.task import Env
    from microrl.tasks import pendulum

    mean, _, _ = evaluate(load(path), Env(pendulum), episodes=2, seed=1)
    mean_in_memory, _, _ = evaluate(run.policy, Env(pendulum), episodes=2, seed=1)
    assert mean == mean_in_memory


@needs_micropython
def test_micropython_acts_like_cpython(trained, tmp_path):
    module, path, run = trained
    obs_path = str(tmp_path / "obs.txt")
    with open(obs_path, "w") as f:
        f.write("\n".join(" ".join(repr(float(v)) for v in o) for o in OBSERVATIONS) + "\n")
    code = "import microrl\np = microrl.load(%r)\nfor line in open(%r):\n    print(repr(p([float(v) for v in line.split()])[0]))" % (path, obs_path)
    got = [[float(line)] for line in run_micropython_code(code).split()]
    policy = load(path)
    expect = [[float(policy(np.array(o, np.float32))[0])] for o in OBSERVATIONS]
    np.testing.assert_allclose(got, expect, rtol=1e-5, atol=1e-6)
