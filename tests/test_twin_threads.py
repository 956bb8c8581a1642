"""TD3's and SAC's updates on two threads (algos/twin.py): the worker thread really does the
second critic's pieces, and the run is bit for bit the run on one thread; the training driver's
threads option changes nothing in the policy it writes."""
import numpy as np
import pytest

from microrl.tasks import pendulum
from microrl_host.algos import loop, sac, td3, twin
from microrl_host.envs.task import CompiledTask
from microrl_host.nn import mlp, sync
from microrl_host.nn.blas import one_blas_thread

TASK = CompiledTask(pendulum)
EP_STEP, EP_RETURN = np.zeros(64, np.int64), np.zeros(64)


def run_pendulum(S, hp, n, ep_step, ep_return):
    return loop.bind_task(TASK)(S, hp, n, ep_step, ep_return, 1)


def _state(algo):
    c = algo.config(steps=3000)
    S = algo.new_state(c, 3, 1, 0)._replace(env=TASK.new_env())
    hp = algo.hyperparameters(c)
    run_pendulum(S, hp, loop.BEGIN, EP_STEP, EP_RETURN)
    return S, hp


def _arrays(S):
    nets = ("actor", "critic1", "critic2", "critic1_target", "critic2_target")
    return dict({k: mlp.view(getattr(S, k)).params.copy() for k in nets}, rng=S.rng.copy())


@pytest.mark.parametrize("algo", [td3, sac], ids=["td3", "sac"])
def test_the_worker_serves_and_the_run_is_bit_identical(algo):
    ep_step, ep_return = np.zeros(64, np.int64), np.zeros(64)
    with one_blas_thread():
        one, hp = _state(algo)
        run_pendulum(one, hp, 1500, ep_step, ep_return)
        two, hp = _state(algo)
        served = 0
        for chunk in range(3):  # the warm-up, then an update per step
            twin.run_threaded(loop.bind_task(TASK), two, hp, 500, ep_step, ep_return, 1)
            served += int(two.sync[sync.DONE]) - 1  # the last one done is the order to quit
            assert two.sync[sync.SERVING] == 0  # the worker is gone after each chunk
    # every update hands the worker two pieces or more (the target values and the critics'
    # steps; TD3 every second update the actor's rows and the targets' averaging too)
    updates = int(two.counters[loop.UPDATES])
    assert updates >= 400 and served >= 2 * updates
    a, b = _arrays(one), _arrays(two)
    for k in a:
        assert np.array_equal(a[k], b[k]), k


def test_threads_option_keeps_the_policy(tmp_path):
    outs = []
    for threads in (1, 2):
        out = tmp_path / ("t%d.mrlp" % threads)
        run = sac.ALGO.run("pendulum", steps=1200, seed=3, eval_every=0, eval_episodes=0, out=str(out), threads=threads)
        outs.append(out.read_bytes())
        assert run.stats["steps"] == 1200
    assert outs[0] == outs[1]
    with pytest.raises(ValueError, match="threads"):
        td3.ALGO.run("pendulum", steps=10, threads=0)


def test_default_threads_follows_the_environment(monkeypatch):
    monkeypatch.setenv("MICRORL_THREADS", "1")
    assert twin.default_threads() == 1
    monkeypatch.setenv("MICRORL_THREADS", "two")
    with pytest.raises(ValueError, match="MICRORL_THREADS"):
        twin.default_threads()


def test_threads_tries_two_then_keeps_the_faster():
    """Threads runs the first chunks on two threads and on one, then keeps whichever was faster
    per step, trying the other again every PROBE_EVERY chunks; with threads=1, one always."""
    assert twin.Threads(1).choose() == 1
    runner = twin.Threads(2)
    assert runner.choose() == 2
    runner.per_step[2] = 1.0
    assert runner.choose() == 1
    runner.per_step[1] = 2.0
    runner.chunks = 1
    assert runner.choose() == 2  # two was faster
    runner.chunks = twin.Threads.PROBE_EVERY
    assert runner.choose() == 1  # a probe of the slower choice


@pytest.mark.parametrize("algo", [td3, sac], ids=["td3", "sac"])
def test_compiled_calls_leave_no_references(algo):
    """The loops count no references (nn/jit.py): after chunks on one thread and two, and the
    update and exploration called one by one from Python as a gymnasium task's loop calls
    them, every array of the state is referred to as often as before, so a finished run's
    state is freed."""
    import sys

    S, hp = _state(algo)
    ep_step, ep_return = np.zeros(64, np.int64), np.zeros(64)

    def counts():
        return [sys.getrefcount(a) for a in (S.actor.work, S.actor.weights, S.critic1.work, S.replay.obs, S.obs, S.sync)]

    with one_blas_thread():
        run_pendulum(S, hp, 1100, ep_step, ep_return)  # compiled (or loaded) and past the warm-up
        loop.explore(S, hp, S.obs, S.action)
        loop.observe(S, hp, S.obs, S.action, -1.0, S.next_obs, False, 1)
        before = counts()
        run_pendulum(S, hp, 50, ep_step, ep_return)
        twin.run_threaded(loop.bind_task(TASK), S, hp, 50, ep_step, ep_return, 1)
        for _ in range(20):
            loop.explore(S, hp, S.obs, S.action)
            loop.observe(S, hp, S.obs, S.action, -1.0, S.next_obs, False, 1)
    assert int(S.counters[loop.UPDATES]) > 100
    assert counts() == before
