from math import sqrt

from microrl.rng import Rng
from microrl.task import Env
from microrl.tasks import quadrotor as Q
from tiny import SINGLE_PRECISION, assert_close

# one formula: a few ulps (float32 on boards, doubles here); a whole episode's drift
ONE = 1e-5 if SINGLE_PRECISION else 1e-12
DRIFT = 1e-3 if SINGLE_PRECISION else 1e-6


def quadrotor_env(rng, evaluation=False):
    return Env(Q, rng=rng, evaluation=evaluation)


def _at_rest(P, rpm):
    return [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, rpm, rpm, rpm, rpm]


def test_hover_rpm_holds_the_weight():
    P = Q.new_parameters()
    env = quadrotor_env(Rng(0))
    env.set_state(_at_rest(P, Q.hover_rpm(P)))
    a = [Q.hover_action(P)] * 4
    for _ in range(Q.EPISODE_STEPS - 1):
        obs, r, terminated, truncated = env.step(a)
        assert not terminated and not truncated
    obs, r, terminated, truncated = env.step(a)
    assert truncated and not terminated
    level = [0.0] * 3 + [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0] + [0.0] * 6  # identity rotation
    for i in range(18):
        assert abs(obs[i] - level[i]) < DRIFT
    for i in range(18, 22):
        assert_close(obs[i], 2.0 * Q.hover_rpm(P) - 1.0, DRIFT, DRIFT, "rotor speed at hover")
    assert_close(r, P[Q.REWARD_CONSTANT], 1e3 * ONE, 1e3 * ONE, "reward at the target")


def test_free_fall_and_termination():
    P = Q.new_parameters()
    s = _at_rest(P, 0.0) + [0.0] * (Q.STATE_DIM - Q.PHYSICS_DIM)
    a = [-1.0] * 4
    t = 0
    while True:
        r, done = Q.advance(P, s, a)
        t += 1
        if done:
            break
        # rotors at RPM_MIN give C0 of thrust each: a little less than free fall
        expected_v = -(P[Q.GRAVITY] - 4 * P[Q.THRUST_C0] / P[Q.MASS]) * t * P[Q.TIME_STEP]
        assert_close(s[9], expected_v, 1e-6, 1e-9, "vertical velocity")
    assert r == 0.0
    assert s[9] < -P[Q.LIMIT_VELOCITY] or s[2] < -P[Q.LIMIT_POSITION]


def test_quaternion_stays_unit_and_motors_lag():
    P = Q.new_parameters()
    env = quadrotor_env(Rng(3))
    env.reset()
    rpm0 = env.s[Q.RPM]
    env.step([1.0, -1.0, 1.0, -1.0])
    s = env.s
    n = sqrt(s[3] * s[3] + s[4] * s[4] + s[5] * s[5] + s[6] * s[6])
    assert_close(n, 1.0, ONE, ONE, "quaternion norm")
    # first-order motor: one step of 10 ms moves about dt/tau of the way to the setpoint
    frac = (s[Q.RPM] - rpm0) / (P[Q.RPM_MAX] - rpm0)
    assert 0.8 * P[Q.TIME_STEP] / P[Q.TAU_RISING] < frac < P[Q.TIME_STEP] / P[Q.TAU_RISING]
    frac = (rpm0_down(env, P))
    assert 0.8 * P[Q.TIME_STEP] / P[Q.TAU_FALLING] < frac < P[Q.TIME_STEP] / P[Q.TAU_FALLING]


def rpm0_down(env, P):
    before = env.s[Q.RPM + 1]
    env.step([1.0, -1.0, 1.0, -1.0])
    return (before - env.s[Q.RPM + 1]) / (before - P[Q.RPM_MIN])


def test_differential_thrust_rolls_the_right_way():
    P = Q.new_parameters()
    env = quadrotor_env(Rng(0))
    h = Q.hover_rpm(P)
    env.set_state(_at_rest(P, h))
    up = Q.hover_action(P) + 0.1
    down = Q.hover_action(P) - 0.1
    # rotors 2 and 3 sit at y = +0.028: more thrust there is a positive torque about x
    for _ in range(5):
        env.step([down, down, up, up])
    assert env.s[Q.ANGULAR_VELOCITY] > 0.0
    assert abs(env.s[Q.ANGULAR_VELOCITY + 1]) < 1e-6 * abs(env.s[Q.ANGULAR_VELOCITY])


def test_reset_distributions():
    P = Q.new_parameters()
    env = quadrotor_env(Rng(5))
    ev = quadrotor_env(Rng(6), evaluation=True)
    at_target = 0
    for _ in range(300):
        obs = env.reset()
        s = env.s
        if s[0] == 0.0 and s[1] == 0.0 and s[2] == 0.0:
            at_target += 1
        for i in range(3):
            assert abs(s[i]) <= P[Q.INIT_POSITION] and abs(s[7 + i]) <= P[Q.INIT_VELOCITY]
            assert abs(s[10 + i]) <= P[Q.INIT_ANGULAR_VELOCITY]
        assert Q.tilt(s) <= P[Q.INIT_ANGLE] + 1e-9
        h = Q.hover_rpm(P)
        for i in range(4):
            assert h + P[Q.INIT_RPM_LOW] - ONE <= s[13 + i] <= h + P[Q.INIT_RPM_HIGH] + ONE
        ev.reset()
        s = ev.s
        assert Q.tilt(s) <= Q.EVAL_ANGLE + 1e-9
        for i in range(3):
            assert abs(s[i]) <= Q.EVAL_POSITION and s[7 + i] == 0.0 and s[10 + i] == 0.0
        assert_close(s[13], Q.hover_rpm(P), ONE, ONE)
    assert 10 <= at_target <= 60  # guidance 0.1 of 300


def test_reward_is_l2fs_squared_hover_reward():
    P = Q.new_parameters()
    s = [0.1, -0.2, 0.3, 0.9, 0.3, -0.2, 0.2, 0.5, 0.1, -0.3, 0.0, 0.0, 0.0, 0.7, 0.7, 0.7, 0.7] + [0.0] * (Q.STATE_DIM - Q.PHYSICS_DIM)
    n = sqrt(sum(v * v for v in s[3:7]))
    for i in range(3, 7):
        s[i] /= n
    a = [0.1, 0.2, 0.3, 0.4]
    before = list(s)
    r, done = Q.advance(P, s, a)
    assert not done
    h = Q.hover_action(P)
    cost = (P[Q.REWARD_POSITION] * (0.01 + 0.04 + 0.09) + P[Q.REWARD_ORIENTATION] * (1 - before[3] ** 2)
            + P[Q.REWARD_VELOCITY] * (0.25 + 0.01 + 0.09) + P[Q.REWARD_ACTION] * sum((x - h) ** 2 for x in a))
    assert_close(r, P[Q.REWARD_CONSTANT] - P[Q.REWARD_SCALE] * cost, ONE, ONE, "reward")


def test_success_means_close_and_calm():
    s = [0.05, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.1, 0.0, 0.0, 0.8, 0.8, 0.8, 0.8]
    P = Q.new_parameters()
    assert Q.success(P, s)
    s[1] = 0.1
    assert not Q.success(P, s)
    s[1] = 0.0
    s[12] = 1.0
    assert not Q.success(P, s)


def test_observation_is_position_rotation_velocities_rotors():
    P = Q.new_parameters()
    env = quadrotor_env(Rng(7))
    obs = env.reset()
    s = env.s
    assert len(obs) == Q.OBS_DIM == 22 + Q.INTEGRAL_DIM
    F = 1e-6  # the observation buffer is float32
    R = [[obs[3 + 3 * r + c] for c in range(3)] for r in range(3)]
    # orthonormal, and its last column is the body z axis the thrust acts along (derivative())
    for a in range(3):
        for b in range(3):
            dot = sum(R[k][a] * R[k][b] for k in range(3))
            assert_close(dot, 1.0 if a == b else 0.0, 10 * F, 10 * F, "R^T R")
    qw, qx, qy, qz = s[3], s[4], s[5], s[6]
    assert_close(R[0][2], 2.0 * (qx * qz + qw * qy), F, F)
    assert_close(R[2][2], 1.0 - 2.0 * (qx * qx + qy * qy), F, F)
    for i in range(3):
        assert_close(obs[i], s[i], F, F)
        assert_close(obs[12 + i], s[7 + i], F, F)
        assert_close(obs[15 + i], s[10 + i], F, F)
    for i in range(4):
        assert_close(obs[18 + i], 2.0 * s[13 + i] - 1.0, F, F, "rotor speed in [-1, 1]")


def test_motor_estimate_follows_the_simulated_rotors():
    """A craft without rotor-speed sensing feeds the motor model's estimate: from the same start
    it stays within a small fraction of the range of what the simulation integrates."""
    P = Q.new_parameters()
    env = quadrotor_env(Rng(0))
    h = Q.hover_rpm(P)
    env.set_state(_at_rest(P, h))
    est = [h] * 4
    sp = [0.0] * 4
    worst = 0.0
    for t in range(60):
        a = [Q.hover_action(P) + (0.3 if (t // 10 + i) % 2 else -0.3) for i in range(4)]
        env.step(a)
        for i in range(4):
            sp[i] = Q.rpm_setpoint(P, a[i])
        Q.motor_estimate(P, est, sp)
        for i in range(4):
            worst = max(worst, abs(est[i] - env.s[13 + i]))
    assert worst < 0.01


def test_observation_ends_with_the_integral_of_the_position_error():
    # INTEGRAL_DIM values after the rotor speeds: the position error summed over the episode's
    # steps (x DT, m s), each clipped at +-INTEGRAL_LIMIT, observed over INTEGRAL_LIMIT; 0 at the
    # start of every episode
    n = Q.INTEGRAL_DIM
    F = 1e-6  # the observation buffer is float32
    env = quadrotor_env(Rng(5))
    for episode in range(2):
        obs = env.reset()
        assert len(obs) == Q.OBS_DIM == 22 + n == 25
        for i in range(n):
            assert obs[22 + i] == 0.0
        start = _at_rest(env.P, Q.hover_rpm(env.P))
        start[0:3] = [0.1, -0.05, 0.3]  # hovering there: x and y sum, z reaches the clip
        env.set_state(start)
        total = [0.0, 0.0, 0.0]
        for t in range(200):
            obs, r, terminated, truncated = env.step([Q.hover_action(env.P)] * 4)
            for i in range(3):
                v = total[i] + env.P[Q.TIME_STEP] * env.s[i]
                total[i] = min(Q.INTEGRAL_LIMIT, max(-Q.INTEGRAL_LIMIT, v))
        for i in range(n):
            assert_close(obs[22 + i], total[i] / Q.INTEGRAL_LIMIT, F, F, "integral, axis %d" % i)
        assert total[2] == Q.INTEGRAL_LIMIT  # clipped
        assert 0.15 < total[0] < Q.INTEGRAL_LIMIT and -0.05 > total[1] > -Q.INTEGRAL_LIMIT  # summed


def test_state_from_observation_carries_the_integral():
    env = quadrotor_env(Rng(9))
    obs = env.reset()
    for t in range(20):
        obs, r, terminated, truncated = env.step([Q.hover_action(env.P) + 0.02, Q.hover_action(env.P)] * 2)
    s = [0.0] * Q.STATE_DIM
    Q.state_from_observation(env.P, obs, s)
    for i in range(Q.INTEGRAL_DIM):
        assert_close(s[Q.INTEGRAL + i], env.s[Q.INTEGRAL + i], 1e-6, 1e-6, "integral, axis %d" % i)
