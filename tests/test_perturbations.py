"""Sim-to-real perturbations on the host (issue 33, items 2 and 3): the compiled loop and
evaluation apply the device core's own microrl.perturb around the task; off, a run is the run it
was (tests/test_same_bytes.py holds the bytes); --action-delay / --latency-from / --nominal on
the command line, and microrl eval's nominal and perturbed figures."""
import json

import numpy as np
import pytest

from helpers import run_cpython
from microrl.tasks import pendulum
from microrl.tasks import quadrotor as Q


def microrl(*args, timeout=600):
    return run_cpython(["-m", "microrl_host.cli"] + [str(a) for a in args], timeout=timeout)


def assert_user_error(proc, *words):
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]  # (argparse's own errors print its usage above it)
    for w in words:
        assert w in last, (w, proc.stderr)


def _actor(seed=0):
    """A random quadrotor actor whose commands vary with the observation (a delay shows)."""
    from microrl_host.nn.mlp import new_net, refresh_transposed, view

    net = new_net([Q.OBS_DIM, 16, Q.ACT_DIM], [1, 2], 1, trainable=False)
    rng = np.random.default_rng(seed)
    view(net).params[:] = rng.normal(0.0, 0.2, view(net).params.shape).astype(np.float32)
    refresh_transposed(net)
    return net


def test_compiled_evaluation_off_is_nominal_and_each_perturbation_changes_it():
    from microrl.perturb import names as perturbation_names
    from microrl_host.envs.task import CompiledTask

    task = CompiledTask(Q)
    net = _actor()
    nominal = task.evaluate(net, True, 4, 7)
    off = task.evaluate(net, True, 4, 7, perturbations={k: 0.0 for k in perturbation_names(Q)})
    assert np.array_equal(nominal, off)
    for name, value in (("action_delay", 3), ("observation_noise", 5.0), ("disturbance_force", 0.05), ("vary_thrust", 0.3)):
        rows = task.evaluate(net, True, 4, 7, perturbations={name: value})
        assert not np.array_equal(rows[:, 0], nominal[:, 0]), name


def test_compiled_delay_is_the_device_runners():
    """The host's compiled evaluation and the board's runner delay actions the same way: a
    trained Pendulum policy, each path's episodes under a 3-step delay, replayed on the other
    path's start states, give the same returns."""
    from microrl.policy import load
    from microrl.task import Env
    from microrl_host.envs.task import CompiledTask, evaluate_policy

    from helpers import trained_pendulum_policy

    policy = load(trained_pendulum_policy())
    task = CompiledTask(pendulum)
    delayed = {"action_delay": 3}
    compiled = evaluate_policy(task, policy, 3, 7, delayed)
    nominal = evaluate_policy(task, policy, 3, 7)
    assert (compiled[:, 0] < nominal[:, 0] - 50.0).all()  # a 3-step delay costs a trained swing-up
    for e, start in enumerate(_compiled_starts(task, 7, 3)):
        env = Env(pendulum, perturbations=delayed)
        env.reset(__import__("microrl.rng", fromlist=["Rng"]).Rng(0))
        obs = env.set_state(start)
        total = 0.0
        for _ in range(pendulum.EPISODE_STEPS):
            obs, r, term, trunc = env.step(policy(obs))
            total += r
            if term or trunc:
                break
        assert total == pytest.approx(compiled[e, 0], rel=1e-5, abs=1e-3)


def _compiled_starts(task, seed, episodes):
    """The start states of the compiled evaluation's episodes (its generator and draws, in Python)."""
    M = (1 << 64) - 1
    s = (seed * 0x2545F4914F6CDD1D + 7) & M
    P = np.array(task.module.PARAMETERS, np.float64)
    getattr(task.module, "evaluation", lambda P: None)(P)
    out = []
    for _ in range(episodes):
        u = []
        for _ in range(task.module.RESET_DRAWS):
            s = (s + 0x9E3779B97F4A7C15) & M
            z = s
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
            z ^= z >> 31
            u.append((z >> 11) * (1.0 / 9007199254740992.0))
        st = np.zeros(task.module.STATE_DIM)
        task.module.reset(P, st, np.array(u), np.zeros(task.module.OBS_DIM))
        out.append(list(st))
    return out


def test_training_with_perturbations_off_is_the_nominal_run_and_a_delay_is_not():
    from microrl.perturb import names as perturbation_names
    from microrl_host.algos import td3

    kw = dict(steps=1200, seed=3, eval_every=0, eval_episodes=0, threads=1, warmup=500, batch=32, hidden=(16, 16))
    base = td3.ALGO.run("pendulum", **kw)
    off = td3.ALGO.run("pendulum", perturbations={k: 0.0 for k in perturbation_names(pendulum)}, **kw)
    late = td3.ALGO.run("pendulum", perturbations={"action_delay": 2}, **kw)
    assert bytes(base.policy.params) == bytes(off.policy.params)
    assert bytes(base.policy.params) != bytes(late.policy.params)
    assert late.stats["perturbations"] == {"action_delay": 2} and "perturbations" not in base.stats


@pytest.mark.parametrize("p50_us,dt,steps", [(23000.0, 0.05, 1), (50000.0, 0.05, 1), (50001.0, 0.05, 2), (120000.0, 0.05, 3), (25000.0, 0.01, 3)])
def test_latency_from_a_bench_is_whole_steps_rounded_up(tmp_path, p50_us, dt, steps):
    from microrl_host.commands.latency import delay_from_bench

    path = tmp_path / "bench.json"
    path.write_text(json.dumps({"p50_us": p50_us, "p99_us": 2 * p50_us}))
    got, line = delay_from_bench(str(path), dt)
    assert got == steps and ("%d step" % steps) in line and "\n" not in line


def test_bad_sim_to_real_options_are_one_line_errors(tmp_path):
    missing = tmp_path / "none.json"
    bad = tmp_path / "bad.json"
    bad.write_text("[1")
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"completed": 0, "p50_us": float("nan")}))
    far = tmp_path / "far.json"
    far.write_text(json.dumps({"p50_us": 2e6}))
    out = tmp_path / "p.mrlp"
    for args, words in [
        (("--latency-from", missing), ("no such file", "microrl bench serial")),
        (("--latency-from", bad), ("not the JSON",)),
        (("--latency-from", empty), ("not a positive time",)),
        (("--latency-from", far), ("beyond the 32 steps",)),
        (("--latency-from", tmp_path), ("is a folder",)),
        (("--action-delay", 40), ("--action-delay", "0 to 32")),
        (("--action-delay", -1), ("--action-delay",)),
        (("--action-delay", 1, "--latency-from", far), ("not both",)),
    ]:
        assert_user_error(microrl("train", "pendulum", "--steps", 10, "--out", out, *args), *words)
        assert not out.exists()
    assert_user_error(microrl("train", "Pendulum-v1", "--steps", 10, "--action-delay", 1, "--out", out), "task interface")
    # PPO trains under a delay too (issue 40): on a task written against the task interface
    assert_user_error(microrl("train", "ant", "--algo", "ppo", "--action-delay", 1, "--out", out), "--action-delay needs a task written against the task interface")
    assert not out.exists()


def test_latency_from_a_named_pipe_or_a_too_deep_json_is_a_one_line_error(tmp_path):
    """bench/bad_command_lines.py: --latency-from a named pipe waited for ever (its read blocks),
    and JSON nested 100,000 deep ended in a RecursionError traceback; in train and in eval."""
    import os

    from helpers import PENDULUM_POLICY

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100000 + "]" * 100000)
    out = tmp_path / "p.mrlp"
    for command in (("train", "pendulum", "--steps", 10, "--out", out), ("eval", PENDULUM_POLICY)):
        assert_user_error(microrl(*command, "--latency-from", fifo, timeout=60), "--latency-from", "is a named pipe")
        assert_user_error(microrl(*command, "--latency-from", deep, timeout=60), "--latency-from", "not the JSON")
    assert sorted(os.listdir(tmp_path)) == ["deep.json", "fifo"]


def test_eval_reports_nominal_and_perturbed(tmp_path):
    from helpers import trained_pendulum_policy

    path = trained_pendulum_policy()
    plain = json.loads(microrl("eval", path, "--episodes", 3, "--json").stdout)
    assert "perturbed" not in plain
    proc = microrl("eval", path, "--episodes", 3, "--action-delay", 2, "--json")
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert r["mean"] == plain["mean"] and r["perturbed"]["perturbations"] == {"action_delay": 2}
    assert r["perturbed"]["mean"] != r["mean"] and len(r["perturbed"]["returns"]) == 3
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps({"p50_us": 60000.0}))
    proc = microrl("eval", path, "--episodes", 3, "--latency-from", bench, "--json")
    assert proc.returncode == 0 and "2 steps" in proc.stderr and json.loads(proc.stdout)["perturbed"]["perturbations"] == {"action_delay": 2}


def test_quadrotor_eval_has_perturbed_success_by_default(tmp_path):
    from microrl.policy import save
    from microrl_host.algos import td3

    run = td3.ALGO.run("quadrotor", steps=300, seed=0, eval_every=0, eval_episodes=0, threads=1, warmup=100, batch=16, hidden=(8, 8))
    assert run.stats["perturbations"]["observation_noise"] == 1.0  # on by default, as L2F trains
    path = tmp_path / "q.mrlp"
    save(str(path), run.policy)
    proc = microrl("eval", path, "--episodes", 5, "--json")
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    for figures in (r, r["perturbed"]):
        assert 0.0 <= figures["success_rate"] <= 1.0 and 0.0 <= figures["crash_rate"] <= 1.0 and len(figures["returns"]) == 5
    assert r["perturbed"]["perturbations"]["vary_mass"] == 0.1 and r["perturbed"]["returns"] != r["returns"]


# ---------------------------------------------------------------- pending actions (issue 33, item 3)
def _pending_run(d=2, steps=1200):
    from microrl_host.algos import td3

    return td3.ALGO.run("pendulum", steps=steps, seed=5, eval_every=0, eval_episodes=0, threads=1, warmup=500, batch=32, hidden=(16, 16),
                        perturbations={"action_delay": d})


def test_training_observes_the_pending_actions():
    """Under a delay of d the compiled loop's observation is the task's and the d commands sent
    and not yet applied, in the actor's [-1, 1] units: in every replay row (obs, action, next)
    within an episode, next's pending actions are obs's shifted by one with the action taken
    last; the policy file says d, its input is OBS_DIM + d wide."""
    d = 2
    run = _pending_run(d)
    n = int(run.state.replay.count[1])
    obs = run.state.replay.obs[:n]
    nxt = run.state.replay.next_obs[:n]
    act = run.state.replay.act[:n]
    assert obs.shape[1] == pendulum.OBS_DIM + d and run.policy.pending == d and run.policy.sizes[0] == pendulum.OBS_DIM + d
    assert run.stats["pending_actions"] == d
    within = np.all(np.isclose(obs[1:, :3], nxt[:-1, :3]), axis=1)  # row k+1 continues row k's episode
    assert within.sum() > n // 2
    assert np.allclose(nxt[:, 3 + d - 1], act[:, 0])  # the action just sent is the newest pending one
    assert np.allclose(nxt[:, 3 : 3 + d - 1], obs[:, 4 : 3 + d])  # the older ones move up by one
    # an episode's first observation shows neutral commands (no torque)
    assert np.all(obs[1:][~within][:, 3:] == 0.0) and np.all(obs[0, 3:] == 0.0)
    assert np.abs(obs[:, 3:]).max() <= 1.0


def _pending_ppo_run(d):
    """PPO on Pendulum under an action delay of d steps, observing its pending actions (its
    observation normalisation covers them: they are part of its input)."""
    from microrl_host.algos import ppo

    return ppo.train(ppo.PPOSettings(steps=512, envs=2, rollout_steps=64, hidden=(16, 16), threads=1, seed=5), "pendulum", eval_episodes=0,
                     perturbations={"action_delay": d})


@pytest.mark.parametrize("algo", ["td3", "ppo"])
def test_compiled_pending_actions_are_the_device_runners(algo):
    """A policy trained with its pending actions (TD3's; PPO's, which normalises them with the
    observation), evaluated compiled (envs/episode.py) and by the board's runner
    (microrl.task.policy_env) from the same starts, gives the same returns: both paths observe
    the same pending actions."""
    from microrl.rng import Rng
    from microrl.task import policy_env
    from microrl_host.envs.task import CompiledTask, evaluate_policy

    run = _pending_run(3) if algo == "td3" else _pending_ppo_run(3)
    assert run.policy.pending == 3 and run.policy.sizes[0] == pendulum.OBS_DIM + 3
    assert (run.policy.obs_mean is not None) == (algo == "ppo")
    task = CompiledTask(pendulum)
    compiled = evaluate_policy(task, run.policy, 3, 7)  # (its own delay, without asking)
    assert np.array_equal(compiled, evaluate_policy(task, run.policy, 3, 7, {"action_delay": 3}), equal_nan=True)
    with pytest.raises(ValueError, match="3 steps"):
        evaluate_policy(task, run.policy, 3, 7, {"action_delay": 2})
    for e, start in enumerate(_compiled_starts(task, 7, 3)):
        env = policy_env(pendulum, run.policy)
        env.reset(Rng(0))
        obs = env.set_state(start)
        total = 0.0
        for _ in range(pendulum.EPISODE_STEPS):
            obs, r, term, trunc = env.step(run.policy(obs))
            total += r
            if term or trunc:
                break
        assert total == pytest.approx(compiled[e, 0], rel=1e-5, abs=1e-3)


def test_policy_file_says_its_pending_actions(tmp_path):
    """The policy file round trip: version 3 with the pending actions in bytes 14-15 (float and
    int16 export), a policy without them the version it was; a header whose pending actions do
    not fit its input is refused by name."""
    import struct

    from microrl import fixedpoint
    from microrl.fileformat import CorruptPolicyError, crc32
    from microrl.policy import load, save, to_bytes
    from microrl.task import task_obs_dim

    run = _pending_run(2)
    path = str(tmp_path / "late.mrlp")
    save(path, run.policy)
    data = open(path, "rb").read()
    assert struct.unpack("<H", data[4:6])[0] == 3 and struct.unpack("<H", data[14:16])[0] == 2
    back = load(path, check=True)
    assert back.pending == 2 and task_obs_dim(back) == pendulum.OBS_DIM
    assert bytes(back.params) == bytes(run.policy.params)
    run.policy.pending = 0
    assert struct.unpack("<H", to_bytes(run.policy)[4:6])[0] in (1, 2)  # no pending actions: as before
    run.policy.pending = 2
    q = fixedpoint.quantise(back, [[0.1 * i, -0.2, 0.3, 0.5, -0.5] for i in range(10)])
    qpath = str(tmp_path / "late.mrlq")
    fixedpoint.save(qpath, q)
    assert load(qpath).pending == 2 and task_obs_dim(load(qpath)) == pendulum.OBS_DIM
    bad = bytearray(data)
    bad[14:16] = struct.pack("<H", 5)  # 5 steps of 1 action: no room beside the observation in 5 inputs
    bad[-4:] = struct.pack("<I", crc32(bytes(bad[:-4])) & 0xFFFFFFFF)
    open(path, "wb").write(bytes(bad))
    with pytest.raises(CorruptPolicyError, match="pending actions"):
        load(path)


def test_pending_actions_on_the_command_line(tmp_path):
    """microrl train --action-delay writes a policy that observes its pending actions; microrl
    eval runs it under its own delay and refuses another (0 included) in one line; --no-pending-actions
    trains on the observation alone, and without a delay is refused."""
    from microrl.policy import load

    out = str(tmp_path / "late.mrlp")
    proc = microrl("train", "pendulum", "--steps", 600, "--warmup", 300, "--hidden", "16,16", "--eval-every", 0, "--action-delay", 2, "--out", out, "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert load(out).pending == 2 and load(out).sizes[0] == pendulum.OBS_DIM + 2
    proc = microrl("eval", out, "--episodes", 2, "--json")
    assert proc.returncode == 0 and "2 pending actions" in proc.stderr, proc.stderr
    assert_user_error(microrl("eval", out, "--episodes", 2, "--action-delay", 3), "--action-delay 2")
    # 0 is a delay asked for too (it ran under the policy's own 2 steps, saying nothing of the 0)
    assert_user_error(microrl("eval", out, "--episodes", 2, "--action-delay", 0), "asked: 0 steps")
    blind = str(tmp_path / "blind.mrlp")
    proc = microrl("train", "pendulum", "--steps", 600, "--warmup", 300, "--hidden", "16,16", "--eval-every", 0, "--action-delay", 2, "--no-pending-actions", "--out", blind, "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert load(blind).pending == 0 and load(blind).sizes[0] == pendulum.OBS_DIM
    assert_user_error(microrl("train", "pendulum", "--steps", 10, "--no-pending-actions", "--out", str(tmp_path / "x.mrlp")), "--no-pending-actions")
