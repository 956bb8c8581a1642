from math import pi

from microrl.rng import Rng
from microrl.task import Env
from microrl.tasks import pendulum
from microrl.tasks.pendulum import PARAMETERS, angle_normalize, dynamics
from tiny import assert_close


def test_reset_distribution_and_observation():
    env = Env(pendulum, rng=Rng(0))
    for _ in range(200):
        obs = env.reset()
        assert -pi <= env.s[pendulum.THETA] <= pi and -1.0 <= env.s[pendulum.THETA_DOT] <= 1.0
        assert_close(obs[0] * obs[0] + obs[1] * obs[1], 1.0, 1e-5)


def test_reset_maps_uniforms_as_the_generators_uniform_does():
    """reset(u) gives lo + (hi - lo) * u: the same start as Rng.uniform(lo, hi) from the same draw."""
    a = Rng(9)
    b = Rng(9)
    env = Env(pendulum, rng=a)
    for _ in range(50):
        env.reset()
        assert env.s[pendulum.THETA] == b.uniform(-pi, pi)
        assert env.s[pendulum.THETA_DOT] == b.uniform(-1.0, 1.0)


def test_episode_is_200_steps_and_never_terminates():
    env = Env(pendulum, rng=Rng(1))
    env.reset()
    for t in range(1, 201):
        obs, reward, terminated, truncated = env.step([0.0])
        assert not terminated
        assert truncated == (t == 200)
        assert -16.2736044 - 1e-6 <= reward <= 0.0


def test_torque_and_speed_limits():
    P = PARAMETERS
    th, thdot, r = dynamics(P, 0.0, 0.0, 100.0)  # clipped to 2
    th2, thdot2, r2 = dynamics(P, 0.0, 0.0, 2.0)
    assert (th, thdot, r) == (th2, thdot2, r2)
    th, thdot, r = dynamics(P, pi / 2, 7.9, 2.0)
    assert thdot == P[pendulum.MAX_SPEED]


def test_reward_formula():
    th, thdot, u = 2.5, -3.0, 1.5
    _, _, r = dynamics(PARAMETERS, th, thdot, u)
    a = angle_normalize(th)
    assert_close(r, -(a * a + 0.1 * thdot * thdot + 0.001 * u * u), 1e-12)
    assert_close(angle_normalize(3 * pi + 0.1), -pi + 0.1, 1e-9)
