"""PPO on gymnasium environments that no compiled MuJoCo family serves (issue 31, item 6): a
vector of gymnasium's own copies (envs/gym.py's GymVectorEnv), the Python API (an id or an Env),
and `microrl train ID --algo ppo` with its one-line errors. Needs gymnasium only."""
import json
import os

import numpy as np
import pytest

from helpers import run_cpython

gym = pytest.importorskip("gymnasium")

from microrl import policy as policy_file  # noqa: E402
from microrl_host.algos import ppo  # noqa: E402
from microrl_host.envs.gym import GymVectorEnv  # noqa: E402
from microrl_host.tasks import TaskError  # noqa: E402

TRAIN = ["-m", "microrl_host.cli", "train"]


def test_the_vector_steps_each_copy_as_gymnasium_and_resets_finished_ones():
    n, horizon = 3, 7
    vec = GymVectorEnv("Pendulum-v1", n, max_episode_steps=horizon)
    singles = [gym.make("Pendulum-v1", max_episode_steps=horizon) for _ in range(n)]
    obs, _ = vec.reset(seed=10)
    for i, env in enumerate(singles):
        assert np.array_equal(obs[i], env.reset(seed=10 + i)[0])
    rng = np.random.default_rng(0)
    finished = 0
    for t in range(2 * horizon):
        actions = rng.uniform(-2, 2, (n, 1))
        obs, rewards, terminated, truncated, infos = vec.step(actions)
        for i, env in enumerate(singles):
            o, r, term, trunc, _ = env.step(actions[i].astype(np.float32))
            assert rewards[i] == pytest.approx(r) and terminated[i] == term and truncated[i] == trunc
            if term or trunc:  # the copy restarted in the same step; its last observation is kept
                assert infos["_final_obs"][i] and np.allclose(infos["final_obs"][i], o)
                assert infos["_episode"][i] and infos["episode"]["l"][i] == horizon
                finished += 1
                env.reset()
                o = obs[i]  # the new episode's start (from the copy's own generator)
            assert np.allclose(obs[i], o)
    assert finished == 2 * n
    vec.close()


def test_train_on_pendulum_from_the_python_api(tmp_path):
    config = ppo.PPOSettings(steps=1024, envs=4, rollout_steps=64, hidden=(16, 16), seed=2, threads=1)
    trained = ppo.train(config, "Pendulum-v1", run_dir=str(tmp_path / "run"), out=str(tmp_path / "p.mrlp"), eval_every=512, eval_episodes=2)
    learner, evals = trained.trainer, trained.evals
    assert [e[0] for e in evals] == [512, 1024] and all(np.isfinite(e[1]) for e in evals)
    policy = policy_file.load(str(tmp_path / "p.mrlp"))
    assert policy.sizes == [3, 16, 16, 1]
    obs = np.array([0.3, -0.2, 1.5])
    assert np.allclose(policy(obs), learner.deterministic(obs, clip=False)[0], atol=1e-4)
    assert trained.stats["task"] == "Pendulum-v1"
    # an Env made by gym.make: copies from its spec; same seed, same run
    trained = ppo.train(config, gym.make("Pendulum-v1"), eval_every=512, eval_episodes=2)
    again, evals_again = trained.trainer, trained.evals
    assert evals_again == evals and np.array_equal(again.actor.p, learner.actor.p)


def test_what_ppo_cannot_train_is_refused_in_one_line(tmp_path):
    with pytest.raises(TaskError, match="Discrete actions"):
        ppo.train(ppo.PPOSettings(steps=64, envs=1), "CartPole-v1")
    for task, words in (("CartPole-v1", "Discrete actions"), ("NoSuchEnv-v0", "unknown task 'NoSuchEnv-v0'")):
        out = tmp_path / "x.mrlp"
        proc = run_cpython(TRAIN + [task, "--algo", "ppo", "--steps", "64", "--out", str(out)], timeout=120)
        assert proc.returncode == 2 and words in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert not os.path.exists(out) and not os.path.exists(tmp_path / "x.run")


def test_cli_trains_a_gymnasium_id(tmp_path):
    out = str(tmp_path / "mc.mrlp")
    proc = run_cpython(TRAIN + ["MountainCarContinuous-v0", "--algo", "ppo", "--steps", "512", "--envs", "4", "--hidden", "8,8", "--eval-every", "512",
                               "--eval-episodes", "1", "--init-std", "0.3", "--out", out, "--json"], timeout=300)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["task"] == "MountainCarContinuous-v0" and result["steps"] == 512 and len(result["evals"]) == 1
    assert policy_file.load(out).sizes == [2, 8, 8, 1]
    with open(str(tmp_path / "mc.run" / "run.json")) as f:
        assert json.load(f)["config"]["init_log_std"] == pytest.approx(np.log(0.3))
