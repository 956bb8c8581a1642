"""Our Pendulum-v1 step by step against gymnasium's: same state, same action, same reward."""
import numpy as np
import pytest

gym = pytest.importorskip("gymnasium")

from microrl.task import Env  # noqa: E402
from microrl.tasks import pendulum  # noqa: E402
from microrl.tasks.pendulum import EPISODE_STEPS  # noqa: E402
from microrl.rng import Rng  # noqa: E402


def _gym_env():
    env = gym.make("Pendulum-v1")
    env.reset(seed=0)
    return env


def test_step_by_step_from_the_same_states():
    env = _gym_env()
    ours = Env(pendulum)
    rng = np.random.default_rng(0)
    for _ in range(2000):
        th, thdot = rng.uniform(-8, 8), rng.uniform(-8, 8)
        u = float(rng.uniform(-3, 3))  # beyond the limits too: both clip
        env.unwrapped.state = np.array([th, thdot])
        # float64 action: with float32, numpy 2 computes gymnasium's torque term in float32
        obs_g, r_g, term_g, trunc_g, _ = env.unwrapped.step(np.array([u]))
        ours.set_state([th, thdot])
        obs_o, r_o, term_o, _ = ours.step([u])
        assert np.allclose(env.unwrapped.state, [ours.s[0], ours.s[1]], rtol=0, atol=1e-12)
        assert r_o == pytest.approx(float(r_g), abs=1e-9)
        assert np.allclose(obs_g, np.array(obs_o, dtype=np.float32), atol=1e-6)
        assert term_g is term_o is False


def test_whole_episode_same_trajectory_and_time_limit():
    env = _gym_env()
    ours = Env(pendulum)
    obs_g, _ = env.reset(seed=3)
    th, thdot = env.unwrapped.state
    ours.set_state([float(th), float(thdot)])
    rng = Rng(1)
    total_g = total_o = 0.0
    for t in range(1, EPISODE_STEPS + 1):
        u = rng.uniform(-2.0, 2.0)
        obs_g, r_g, term_g, trunc_g, _ = env.step(np.array([u], dtype=np.float32))
        obs_o, r_o, term_o, trunc_o = ours.step([float(np.float32(u))])
        total_g += float(r_g)
        total_o += r_o
        assert trunc_g == trunc_o == (t == EPISODE_STEPS)
        assert np.allclose(obs_g, np.array(obs_o, dtype=np.float32), atol=1e-5)
    assert total_o == pytest.approx(total_g, rel=1e-6)  # float32 actions: gymnasium rounds u * 3.0 to float32


def test_reset_distribution_matches_gymnasium_bounds():
    high = gym.make("Pendulum-v1").unwrapped
    env = Env(pendulum, rng=Rng(0))
    states = np.array([[env.reset() is not None and env.s[0], env.s[1]] for _ in range(3000)])
    # gymnasium: uniform in [-pi, pi] x [-1, 1]
    assert states[:, 0].min() >= -np.pi and states[:, 0].max() <= np.pi
    assert states[:, 1].min() >= -1 and states[:, 1].max() <= 1
    assert abs(states[:, 0].std() - np.pi / np.sqrt(3)) < 0.1 and abs(states[:, 1].std() - 1 / np.sqrt(3)) < 0.05
    assert high.max_speed == 8 and high.max_torque == 2.0 and high.dt == 0.05
