"""The quadrotor hover task (microrl.tasks.quadrotor) compiled with numba for the host trainers: the
device core's own scalar functions, compiled unchanged, plus the episode bookkeeping of a
training loop and a compiled evaluation ("does it fly").

The whole environment lives in one float64 array (the trainer state's `env` field, so that a
checkpoint holds it as it is), at the offsets below.
"""
import numpy as np
from numba.extending import register_jitable

from microrl.tasks import quadrotor as Q

from ..nn.jit import device, jit
from ..nn.mlp import greedy_action
from ..nn.mlp import sizes as mlp_sizes
from ..nn.rng import uniform

# device functions that call each other: registering them lets numba compile the callers unchanged
for _f in (Q.hover_rpm, Q.hover_action, Q.rpm_setpoint, Q.derivative, Q._axpy, Q.step_state, Q.terminated, Q.initial_state, Q.observe, Q.success):
    register_jitable(_f)
q_step = device(Q.advance)
q_initial_state = device(Q.initial_state)
q_observe = device(Q.observe)
q_success = device(Q.success)

QUADROTOR = NAME = "quadrotor"
OBS_DIM = Q.OBS_DIM
ACT_DIM = Q.ACT_DIM

# ---------------------------------------------------------------- layout of the env array
T, RETURN, CURRICULUM = 0, 1, 2  # steps into the episode, return so far, curriculum level in [0, 1]
S0 = 4
W0 = S0 + Q.STATE_DIM
SP0 = W0
U0 = W0
A0 = U0 + Q.RESET_DRAWS
P0 = A0 + Q.ACT_DIM
ENV_DIM = P0 + Q.PARAM_DIM


def new_env(params=Q.CRAZYFLIE):
    env = np.zeros(ENV_DIM)
    env[P0:] = params
    env[S0 + 3] = 1.0
    return env


@jit
def _parts(env):
    return env[S0:W0], env[W0:SP0], env[SP0:U0], env[U0:A0], env[A0:P0], env[P0:]


@jit
def curriculum_ranges(P, level):
    """Start-state ranges at curriculum level in [0, 1]: from near hover (level 0) to L2F's full
    training distribution (level 1), linearly."""
    k = 0.2 + 0.8 * level
    return (P[Q.INIT_POSITION] * k, P[Q.INIT_ANGLE] * k, P[Q.INIT_VELOCITY] * k, P[Q.INIT_ANGULAR_VELOCITY] * k)


@jit
def reset(env, rng, obs):
    """A training start state (L2F's distribution narrowed by the curriculum level)."""
    s, w, sp, u, a, P = _parts(env)
    for i in range(u.shape[0]):
        u[i] = uniform(rng, 0.0, 1.0)
    pos, ang, vel, angvel = curriculum_ranges(P, env[CURRICULUM])
    q_initial_state(P, s, u, pos, ang, vel, angvel, P[Q.INIT_GUIDANCE], P[Q.INIT_RPM_LOW], P[Q.INIT_RPM_HIGH])
    env[T] = 0.0
    env[RETURN] = 0.0
    observe(env, obs)


@jit
def observe(env, obs):
    q_observe(env[P0:], env[S0:W0], obs)


@jit
def step(env, action, next_obs):
    """One step under action[0:4] in [-1, 1]: (reward, terminated, truncated)."""
    s, w, sp, u, a, P = _parts(env)
    for i in range(a.shape[0]):
        a[i] = action[i]
    r, done = q_step(P, s, a)
    env[T] += 1.0
    env[RETURN] += r
    observe(env, next_obs)
    return r, done, (not done) and env[T] >= Q.EPISODE_STEPS


@jit
def eval_reset(env, rng, obs):
    """microrl eval's start: within +-0.5 m and 30 deg of tilt, at rest, rotors at hover."""
    s, w, sp, u, a, P = _parts(env)
    for i in range(u.shape[0]):
        u[i] = uniform(rng, 0.0, 1.0)
    q_initial_state(P, s, u, Q.EVAL_POSITION, Q.EVAL_ANGLE, 0.0, 0.0, 0.0, 0.0, 0.0)
    env[T] = 0.0
    env[RETURN] = 0.0
    observe(env, obs)


@jit
def evaluate(net, squash, episodes, seed, params):
    """Deterministic episodes from eval_reset starts drawn from seed: rows of (return, success,
    final position error in m, steps flown)."""
    rng = np.zeros(1, np.uint64)
    rng[0] = np.uint64(seed) * np.uint64(0x2545F4914F6CDD1D) + np.uint64(7)
    env = np.zeros(ENV_DIM)
    env[P0:] = params
    obs = np.zeros(mlp_sizes(net)[0], np.float32)
    act = np.zeros(ACT_DIM, np.float32)
    out = np.zeros((episodes, 4))
    for e in range(episodes):
        eval_reset(env, rng, obs)
        done = False
        truncated = False
        while not (done or truncated):
            greedy_action(net, obs, squash, act)
            r, done, truncated = step(env, act, obs)
        s = env[S0:W0]
        out[e, 0] = env[RETURN]
        out[e, 1] = 1.0 if (not done) and q_success(env[P0:], s) else 0.0
        out[e, 2] = np.sqrt(s[0] * s[0] + s[1] * s[1] + s[2] * s[2])
        out[e, 3] = env[T]
    return out


def evaluate_policy(policy, episodes=100, seed=12345, params=Q.CRAZYFLIE):
    """Rows of (return, success, final distance, steps) for a microrl.policy.Policy: compiled
    when the policy is a plain actor (no observation normalisation, actions as they come out),
    else through the device core's Q.fly (same starts only within one of the two paths)."""
    from ..nn.mlp import new_net, refresh_transposed, view

    plain = policy.obs_mean is None and (policy.act_scale is None or (list(policy.act_scale) == [1.0] * 4 and list(policy.act_offset) == [0.0] * 4))
    if not plain:
        return np.array(Q.fly(policy, episodes, seed, params), dtype=np.float64).reshape(-1, 4)
    net = new_net(list(policy.sizes), list(policy.acts), 1, trainable=False)
    view(net).params[:] = np.frombuffer(bytes(policy.params), dtype=np.float32)
    refresh_transposed(net)
    return evaluate(net, False, episodes, seed, np.array(params, np.float64))


class CompiledQuadrotor:
    """The hover task as a trainer's environment: simulated inside the compiled loop, actions the
    4 motor commands in [-1, 1]."""

    name = QUADROTOR
    obs_dim = OBS_DIM
    act_dim = ACT_DIM
    low = -np.ones(ACT_DIM, np.float32)
    high = np.ones(ACT_DIM, np.float32)
    compiled = True


def flight_summary(rows):
    """success_rate, position_error_m (median final distance to the target) and crash_rate from
    evaluation rows (return, success, final distance, steps)."""
    rows = np.asarray(rows, dtype=np.float64).reshape(-1, 4)
    return {
        "success_rate": float(rows[:, 1].mean()),
        "position_error_m": float(np.median(rows[:, 2])),
        "crash_rate": float((rows[:, 3] < Q.EPISODE_STEPS).mean()),
    }
