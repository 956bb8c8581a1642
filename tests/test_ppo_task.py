"""PPO on a task written against the task interface (issue 33 item 1): many compiled copies of the
task (envs/task_vector.py) stepped as the device core steps it, a policy with observation
normalisation evaluated by the compiled evaluation (its normalisation folded into the first
layer), and `microrl train quadrotor --algo ppo` writing a policy `microrl eval` flies, with
one-line refusals. Whether it learns to fly: the learning check in tests/test_learning.py and
bench/quadrotor.py --algo ppo."""
import json
import os

import numpy as np
import pytest

from helpers import assert_refused, run_microrl

from microrl import policy as policy_file
from microrl.policy import Policy, array_of
from microrl.tasks import quadrotor as Q
from microrl_host.algos import ppo
from microrl_host import tasks
from microrl_host.envs.task import CompiledTask, evaluate_policy, folded_parameters
from microrl_host.envs.task_vector import TaskVectorEnv


def test_the_copies_step_as_the_task_module_and_restart_in_the_same_step():
    n = 3
    vec = TaskVectorEnv(CompiledTask(Q), n)  # nominal: the task's own functions alone
    obs, _ = vec.reset(seed=5)
    L = vec.task.layout
    # each copy's parameters and state, stepped beside it by the task module in Python
    P = [vec.envs[i, L.P0 : L.S0].copy() for i in range(n)]
    S = [vec.envs[i, L.S0 : L.U0].copy() for i in range(n)]
    o = np.zeros(Q.OBS_DIM)
    rng = np.random.default_rng(0)
    hover = Q.hover_action(P[0])
    ended = 0
    for t in range(300):
        actions = np.clip(hover + rng.normal(0.0, 0.3, (n, 4)), -1.0, 1.0)
        obs_next, rewards, terminated, truncated, infos = vec.step(actions)
        for i in range(n):
            r, done, cut = Q.step(P[i], S[i], actions[i], None, o)
            assert rewards[i] == pytest.approx(r, abs=1e-9) and terminated[i] == done and truncated[i] == cut
            if done or cut:  # the copy's last observation kept, its next episode begun
                assert infos["_final_obs"][i] and np.allclose(infos["final_obs"][i], o, atol=1e-6)
                assert infos["_episode"][i] and infos["episode"]["l"][i] == S[i][Q.STEP]
                ended += 1
                S[i] = vec.envs[i, L.S0 : L.U0].copy()
                Q.observe(P[i], S[i], o)
            assert np.allclose(obs_next[i], o, atol=1e-6)
    assert ended >= n  # random commands crash the craft within 300 steps


def test_curriculum_and_perturbations_are_the_training_loops():
    from microrl.perturb import training

    task = CompiledTask(Q, perturbations=training(Q))
    vec = TaskVectorEnv(task, 2)
    vec.reset(seed=1)
    L = task.layout
    assert vec.envs[0, L.P0 + Q.INIT_POSITION] == pytest.approx(0.2 * Q.CRAZYFLIE[Q.INIT_POSITION])  # curriculum level 0
    vec.set_step(10**9)
    assert vec.envs[0, L.P0 + Q.INIT_POSITION] == pytest.approx(Q.CRAZYFLIE[Q.INIT_POSITION])
    # the airframe is redrawn per episode within +-10%, and differs between copies
    assert vec.envs[0, L.P0 + Q.MASS] != vec.envs[1, L.P0 + Q.MASS]
    assert abs(vec.envs[0, L.P0 + Q.MASS] / Q.CRAZYFLIE[Q.MASS] - 1.0) <= 0.1 + 1e-12


def test_a_normalising_policy_folds_into_the_compiled_evaluation():
    rng = np.random.default_rng(3)
    sizes = [Q.OBS_DIM, 16, 16, Q.ACT_DIM]
    n = sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))
    mean, std = rng.normal(0, 1, Q.OBS_DIM), rng.uniform(0.1, 3.0, Q.OBS_DIM)
    policy = Policy(sizes, ["tanh", "tanh", "identity"], params=array_of(rng.normal(0, 0.3, n).tolist()), obs_mean=mean.tolist(), obs_std=std.tolist(),
                    act_scale=[1.0] * 4, act_offset=[0.0] * 4)
    from microrl_host.nn.mlp import greedy_action, new_net, refresh_transposed, view

    net = new_net(sizes, list(policy.acts), 1, trainable=False)
    view(net).params[:] = folded_parameters(policy)
    refresh_transposed(net)
    for _ in range(20):
        obs = (mean + std * rng.normal(0, 1, Q.OBS_DIM)).astype(np.float32)
        got = np.zeros(4, np.float32)
        greedy_action(net, obs, False, got)
        assert np.allclose(got, np.clip(policy(obs.tolist()), -1, 1), atol=1e-5)
    rows = evaluate_policy(CompiledTask(Q), policy, 3, 7)  # compiled: the policy's rows, as microrl eval reads them
    assert rows.shape == (3, 4) and np.all(np.isfinite(rows[:, 0]))


def test_cli_trains_the_quadrotor_with_ppo_and_eval_flies_the_final_policy(tmp_path):
    out = tmp_path / "q.mrlp"
    proc = run_microrl("train", "quadrotor", "--algo", "ppo", "--steps", 2048, "--envs", 4, "--rollout-steps", 256, "--hidden", "8,8",
                       "--eval-episodes", 4, "--out", out, "--json", timeout=900)
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    assert r["algo"] == "ppo" and r["task"] == "quadrotor" and r["steps"] == 2048
    assert 0.0 <= r["success_rate"] <= 1.0 and "crash_rate" in r and r["perturbations"]["vary_mass"] > 0  # trained perturbed, as TD3
    policy = policy_file.load(str(out))
    assert policy.sizes == [Q.OBS_DIM, 8, 8, Q.ACT_DIM] and policy.obs_mean is not None
    with open(tmp_path / "q.run" / "run.json") as f:
        config = json.load(f)["config"]
    assert config["final_std"] == Q.TRAINING_PPO["final_std"] and config["envs"] == 4  # the task's suggestion, the user's setting
    e = run_microrl("eval", out, "--episodes", 4, "--json", timeout=600)
    assert e.returncode == 0, e.stderr
    assert 0.0 <= json.loads(e.stdout.strip().splitlines()[-1])["success_rate"] <= 1.0
    assert not os.path.exists(tmp_path / "n.mrlp")


@pytest.mark.parametrize("args, words", [
    (["Pendulum-v1", "--nominal"], "--nominal needs a task written against the task interface"),
    (["quadrotor", "--final-std", "-1"], "final_std must be a finite number >= 0, got -1.0"),  # (0: the std is learned)
])
def test_what_ppo_on_a_task_cannot_do_is_refused_in_one_line(tmp_path, args, words):
    out = tmp_path / "x.mrlp"
    assert_refused(run_microrl("train", *args, "--algo", "ppo", "--steps", 64, "--out", out, timeout=300), words)
    assert not os.path.exists(out) and not os.path.exists(tmp_path / "x.run")


def test_the_task_registry_resolves_a_task_module_for_ppo():
    assert tasks.resolve("quadrotor").kind == "task"
    for task in ("quadrotor", Q, CompiledTask(Q)):  # what the CLI passes is the module (a bug once: nothing suggested)
        assert ppo.suggested(task)["final_std"] == Q.TRAINING_PPO["final_std"]
        assert ppo.suggested(task)["hidden"] == tuple(Q.TRAINING_PPO["hidden"])


def _train_args(*argv):
    import argparse

    from microrl_host.commands import train

    sub = argparse.ArgumentParser().add_subparsers()
    train.register(sub)
    return sub.choices["train"].parse_args([str(a) for a in argv])


@pytest.mark.parametrize("argv, algo", [
    (("quadrotor",), "ppo"),  # the task's suggestion (its ALGO): PPO's final policy flies
    (("quadrotor", "--algo", "td3"), "td3"),  # named: taken as given
    (("quadrotor", "--action-delay", 2), "ppo"),  # latency training is every algorithm's (issue 40)
    (("quadrotor", "--policy-delay", 3), "td3"),  # a TD3 option
    (("quadrotor", "--set", "model_horizon=100"), "td3"),  # a TD3 experimental setting
    (("pendulum",), "td3"),  # no suggestion
    (("Pendulum-v1",), "td3"),
])
def test_a_run_that_names_no_algorithm_takes_the_tasks_suggestion(argv, algo):
    from microrl_host.commands import train

    args = _train_args(*argv)
    assert (args.algo or train.suggested_algo(args)) == algo


def test_options_of_two_algorithms_without_algo_are_refused_naming_algo(tmp_path):
    """--envs (PPO's) beside --policy-delay (TD3's) on the quadrotor, whose suggestion is PPO: one
    line that says --algo decides, nothing written."""
    proc = run_microrl("train", "quadrotor", "--envs", 8, "--policy-delay", 2, "--out", tmp_path / "q.mrlp")
    assert_refused(proc, "--envs is a ppo option", "without --algo")
    assert list(tmp_path.iterdir()) == []


def test_the_quadrotor_trains_its_own_ppo_in_a_boards_latency(tmp_path):
    """issue 40's "Done when": `microrl train quadrotor --latency-from bench.json` trains the task's
    own algorithm, PPO (it switched to TD3 before), under the measured delay and observing the
    commands not yet applied: the policy's input is the task's observation, then the delay's
    pending actions, and its file says so. The file evaluates to the run's final evaluation
    (microrl eval with the run's evaluation seed runs it under its own delay, as the run's
    evaluations did), and a resume that would observe no pending actions is refused in one line."""
    from microrl_host.algos.run import evaluation_seed

    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps({"p50_us": 1.5 * Q.DT * 1e6}))  # a round trip of 1.5 control steps: a delay of 2
    out = tmp_path / "late.mrlp"
    small = ["--steps", 1024, "--envs", 4, "--rollout-steps", 64, "--hidden", "8,8", "--eval-episodes", 4, "--seed", 3, "--out", out, "--json"]
    proc = run_microrl("train", "quadrotor", "--latency-from", bench, *small, timeout=900)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["algo"] == "ppo" and result["perturbations"]["action_delay"] == 2 and result["pending_actions"] == 2
    assert result["perturbations"]["vary_mass"] > 0  # and the task's own perturbations, as without the delay
    policy = policy_file.load(str(out), check=True)
    assert policy.pending == 2 and policy.sizes[0] == Q.OBS_DIM + 2 * Q.ACT_DIM and policy.obs_mean is not None
    e = run_microrl("eval", out, "--episodes", 4, "--seed", evaluation_seed(3), "--json", timeout=600)
    assert e.returncode == 0 and "2 pending actions" in e.stderr, e.stderr
    assert json.loads(e.stdout.strip().splitlines()[-1])["mean"] == result["eval_mean"]
    refused = run_microrl("train", "quadrotor", "--action-delay", 2, "--no-pending-actions", "--resume", *small[:1], 2048, *small[2:], timeout=600)
    assert_refused(refused, "pending actions observed: the checkpoint's 2 steps, given 0")
