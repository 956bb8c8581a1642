"""microrl.tasks.quadrotor against L2F itself (PyPI `l2f`, RLtools' C++ simulator of "Learning to Fly
in Seconds"): same parameters, same states, same motor commands, the next states and
terminations compared over many random steps. Skipped where l2f is not installed (it compiles
C++ at install: `pip install l2f`)."""
import json
import math

import numpy as np
import pytest

from microrl.tasks import quadrotor as Q

l2f = pytest.importorskip("l2f", reason="l2f (RLtools' Learning-to-Fly simulator) is not installed: pip install l2f")

STEPS = 3000


@pytest.fixture(scope="module")
def sim():
    device = l2f.Device()
    env = l2f.Environment()
    params = l2f.Parameters()
    rng = l2f.Rng()
    _initialize(l2f, device, env, params, rng)
    return device, env, params, rng


def _initialize(module, device, env, params, rng):
    """l2f's (or its vector1 module's) environment, rng (seed 0) and initial parameters."""
    module.initialize_environment(device, env)
    module.initialize_rng(device, rng, 0)
    module.initial_parameters(device, env, params)


def l2f_parameters(sim):
    device, env, params, rng = sim
    return json.loads(l2f.parameters_to_json(device, env, params))


def test_parameters_are_l2fs(sim):
    """Our Crazyflie parameter set and task constants are the ones l2f runs."""
    p = l2f_parameters(sim)
    d = p["dynamics"]
    P = Q.new_parameters()
    close = lambda a, b: abs(a - b) <= 1e-6 * max(1.0, abs(b))  # noqa: E731 - l2f prints 6 decimals
    assert close(P[Q.MASS], d["mass"]) and close(-P[Q.GRAVITY], d["gravity"][2])
    for i, axis in enumerate((Q.J_XX, Q.J_YY, Q.J_ZZ)):
        assert abs(1.0 / P[axis] - d["J_inv"][i][i]) < 1e-3 * d["J_inv"][i][i]
    for r in range(4):
        assert close(P[Q.ROTOR_X + r], d["rotor_positions"][r][0]) and close(P[Q.ROTOR_Y + r], d["rotor_positions"][r][1])
        assert P[Q.ROTOR_SPIN + r] == d["rotor_torque_directions"][r][2]
        for k, idx in enumerate((Q.THRUST_C0, Q.THRUST_C1, Q.THRUST_C2)):
            assert close(P[idx], d["rotor_thrust_coefficients"][r][k])
        assert close(P[Q.TORQUE_CONSTANT], d["rotor_torque_constants"][r])
        assert close(P[Q.TAU_RISING], d["rotor_time_constants_rising"][r])
        assert close(P[Q.TAU_FALLING], d["rotor_time_constants_falling"][r])
    assert (P[Q.RPM_MIN], P[Q.RPM_MAX]) == (d["action_limit"]["min"], d["action_limit"]["max"])
    assert close(P[Q.TIME_STEP], p["integration"]["dt"])
    # the task around the airframe (start states, reward, termination) is the one the
    # learning-to-fly trainer used, not this package's default environment (docs/quadrotor.md):
    # the step comparison below runs with l2f's termination limits
    assert p["disturbances"]["random_force"]["std"] == 0.0 and p["mdp"]["action_noise"]["normalized_rpm"] == 0.0


def l2f_limits(sim, P):
    """P with l2f's termination limits, so that terminations can be compared."""
    t = l2f_parameters(sim)["mdp"]["termination"]
    assert t["enabled"]
    P[Q.LIMIT_POSITION] = t["position_threshold"]
    P[Q.LIMIT_VELOCITY] = t["linear_velocity_threshold"]
    P[Q.LIMIT_ANGULAR_VELOCITY] = t["angular_velocity_threshold"]
    return P


def _set(state, s):
    state.position = [float(v) for v in s[0:3]]
    state.orientation = [float(v) for v in s[3:7]]
    state.linear_velocity = [float(v) for v in s[7:10]]
    state.angular_velocity = [float(v) for v in s[10:13]]
    state.rpm = [float(v) for v in s[13:17]]


def _get(state):
    return np.concatenate([state.position, state.orientation, state.linear_velocity, state.angular_velocity, state.rpm]).astype(np.float64)


def _random_state(rng):
    """States across the task's range and beyond it: flips, fast spins, rotors anywhere."""
    s = np.zeros(Q.PHYSICS_DIM)
    s[0:3] = rng.uniform(-1.5, 1.5, 3)
    q = rng.normal(size=4)
    s[3:7] = q / np.linalg.norm(q)
    s[7:10] = rng.uniform(-3.0, 3.0, 3)
    s[10:13] = rng.uniform(-20.0, 20.0, 3) * rng.choice([0.05, 1.0])
    s[13:17] = rng.uniform(0.0, 1.0, 4)
    return s.astype(np.float32).astype(np.float64)  # l2f holds float32


def test_next_states_and_terminations_match_l2f(sim):
    """STEPS random (state, command) pairs, and chains of steps from l2f's own initial states:
    our float64 step of the float32 state l2f holds agrees with l2f's float32 step."""
    device, env, params, l2f_rng = sim
    from l2f import vector1

    venv = vector1.VectorEnvironment()
    vparams = vector1.VectorParameters()
    vrng = vector1.VectorRng()
    _initialize(vector1, device, venv, vparams, vrng)
    vstate = vector1.VectorState()
    vnext = vector1.VectorState()
    flags = np.zeros(1, bool)

    P = l2f_limits(sim, Q.new_parameters())
    s = np.zeros(Q.STATE_DIM)  # the craft, then the step's work space
    rng = np.random.default_rng(13)
    worst = np.zeros(5)  # position, orientation, velocity, angular velocity, rpm: max abs error
    n_terminated = 0
    chain = None
    for k in range(STEPS):
        if chain is None or k % 50 == 0:  # a fresh random state every 50 steps, else continue l2f's chain
            start = _random_state(rng) if k % 100 == 0 else None
            if start is None:
                vector1.sample_initial_state(device, venv, vparams, vstate, vrng)
                start = _get(vstate.states[0])
            chain = start
        a = rng.uniform(-1.2, 1.2, 4).astype(np.float32)  # slightly beyond the range: l2f clips too
        st = vstate.states[0]
        _set(st, chain)
        vstate.states = [st]
        vector1.step(device, venv, vparams, vstate, a.reshape(1, 4), vnext, vrng)
        vector1.terminated(device, venv, vparams, vnext, flags, vrng)
        theirs = _get(vnext.states[0])
        s[: Q.PHYSICS_DIM] = chain
        ours_r, ours_done = Q.advance(P, s, a.astype(np.float64))
        scale = np.maximum(1.0, np.abs(theirs))
        err = np.abs(s[: Q.PHYSICS_DIM] - theirs) / scale
        for j, (lo, hi) in enumerate(((0, 3), (3, 7), (7, 10), (10, 13), (13, 17))):
            worst[j] = max(worst[j], err[lo:hi].max())
        assert ours_done == bool(flags[0]), (k, chain, a, s, theirs)
        n_terminated += ours_done
        chain = theirs if not ours_done else None
    print("worst relative error per part (pos, quat, vel, angvel, rpm):", worst, "terminations:", n_terminated)
    # float32 arithmetic in l2f against float64 here: errors of a few float32 ulps of the
    # largest term (angular velocity changes by thousands of rad/s^2 x 0.01 s)
    assert worst.max() < 2e-5, worst
    assert 0 < n_terminated < STEPS  # both outcomes were compared


def test_observation_is_l2fs_then_rotor_speeds(sim):
    """Our first 18 values are l2f's observation (position, rotation matrix, velocities); l2f's
    actor then sees an action history, ours the four rotor speeds and the integral of the position
    error."""
    device, env, params, rng = sim
    state = l2f.State()
    obs = l2f.Observation()
    P = Q.new_parameters()
    ours = np.zeros(Q.OBS_DIM, np.float32)
    for _ in range(50):
        l2f.sample_initial_state(device, env, params, state, rng)
        l2f.observe(device, env, params, state, obs, rng)
        o = np.array(obs.observation)
        s = np.zeros(Q.STATE_DIM)
        s[: Q.PHYSICS_DIM] = _get(state)  # l2f's craft; the step count, work space and integral at 0
        Q.observe(P, s, ours)
        assert np.allclose(o[0:18], ours[0:18], atol=1e-5)
        assert np.allclose(ours[18:22], 2.0 * s[13:17] - 1.0, atol=1e-6)
        assert np.all(ours[22:25] == 0.0)  # the integral of an episode's first state
