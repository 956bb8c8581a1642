from math import pi

from microrl import pendulum
from microrl.pendulum import Pendulum, angle_normalize, dynamics
from microrl.rng import Rng
from tiny import assert_close


def test_reset_distribution_and_observation():
    env = Pendulum(Rng(0))
    for _ in range(200):
        obs = env.reset()
        assert -pi <= env.th <= pi and -1.0 <= env.thdot <= 1.0
        assert_close(obs[0] * obs[0] + obs[1] * obs[1], 1.0, 1e-5)


def test_episode_is_200_steps_and_never_terminates():
    env = Pendulum(Rng(1))
    env.reset()
    for t in range(1, 201):
        obs, reward, terminated, truncated = env.step([0.0])
        assert not terminated
        assert truncated == (t == 200)
        assert -16.2736044 - 1e-6 <= reward <= 0.0


def test_torque_and_speed_limits():
    th, thdot, r = dynamics(0.0, 0.0, 100.0)  # clipped to 2
    th2, thdot2, r2 = dynamics(0.0, 0.0, 2.0)
    assert (th, thdot, r) == (th2, thdot2, r2)
    th, thdot, r = dynamics(pi / 2, 7.9, 2.0)
    assert thdot == pendulum.MAX_SPEED


def test_reward_formula():
    th, thdot, u = 2.5, -3.0, 1.5
    _, _, r = dynamics(th, thdot, u)
    a = angle_normalize(th)
    assert_close(r, -(a * a + 0.1 * thdot * thdot + 0.001 * u * u), 1e-12)
    assert_close(angle_normalize(3 * pi + 0.1), -pi + 0.1, 1e-9)
