"""A task's episode under the generic sim-to-real perturbations, written once: its start
(episode_begin: the perturbation stream), its reset (episode_reset) and its step (episode_act or
episode_set_action, then episode_step), bound per task (bind: copies that see the task's
functions and layout, CompiledTask.bindings) and called by the three compiled users of a task:
the training loop (algos/loop.py run_task), the evaluation (evaluate_task below) and PPO's
vectors (envs/task_vector.py). One source for the three keeps them the same run bit for bit.

An episode lives in one float64 array of envs/task.py's Layout: the return so far (RETURN),
the task's parameters P, state s, uniforms u and action a, and the perturbations' arrays. The
perturbations are the device core's own functions (microrl.perturb, compiled here as a task is),
applied around the task's reset and step as microrl.task.Env applies them on a board. Their
random numbers come from a stream of their own (stream_uniform), so that with every
perturbation off a run draws, and computes, exactly what it did before they existed.
"""
import inspect

import numpy as np
from numba.extending import register_jitable

from microrl import perturb
from microrl.perturb import ACTION_DELAY, GENERIC_DIM, OBSERVATION_NOISE, add_noise, delay_action, pending_actions, randomise, randomise_draws, start_line

from ..nn.mlp import greedy_action
from ..nn.rng import uniform

RETURN = 0  # env[RETURN]: the episode's return so far

_REGISTERED = set()


def register(module):
    """Register every function defined in the module (a task's, microrl.perturb) with numba
    (once per function), so that its functions, and its helpers calling each other, compile as
    they are written. Only those the compiled code reaches are ever compiled."""
    for value in vars(module).values():
        if inspect.isfunction(value) and value.__module__ == module.__name__ and value not in _REGISTERED:
            register_jitable(value)
            _REGISTERED.add(value)


register(perturb)

# ---------------------------------------------------------------- the generic perturbations
STREAM_KEY = 0x5BD1E9955BD1E995  # the perturbation stream's key: the main generator's state ^ this


@register_jitable
def seed_stream(env, at, seed):
    """Start the perturbation stream at env[at:at+3] (its key as two 32-bit halves, and the
    count of its draws) from the uint64 seed, without drawing from any other generator."""
    key = seed ^ np.uint64(STREAM_KEY)
    env[at] = float(key >> np.uint64(32))
    env[at + 1] = float(key & np.uint64(0xFFFFFFFF))
    env[at + 2] = 0.0


@register_jitable
def stream_uniform(env, at):
    """The perturbation stream's next uniform in [0, 1): splitmix64 of its key and its draw count
    (a counter-based generator, so that its whole state is three floats of the env array)."""
    n = env[at + 2] + 1.0
    env[at + 2] = n
    key = (np.uint64(env[at]) << np.uint64(32)) | np.uint64(env[at + 1])
    z = key + np.uint64(n) * np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@register_jitable
def draw(rng, u, n):
    """The task's uniforms u[0:n] from the run's generator rng."""
    for i in range(n):
        u[i] = uniform(rng, 0.0, 1.0)


@register_jitable
def randomised_parameters(env, P, nominal, r, spec, stream):
    """The episode's parameters (microrl.perturb.randomise of the task's RANDOMISED, from its
    nominal ones in env[nominal:], its uniforms drawn into env[r:] from the perturbation stream)."""
    m = randomise_draws(spec)
    for i in range(m):
        env[r + i] = stream_uniform(env, stream)
    randomise(P, env[nominal : nominal + P.shape[0]], spec, env[r : r + m])


@register_jitable
def noisy_observation(env, obs, n, g, stream, w, shape):
    """Add the observation noise set in env[g:g+GENERIC_DIM] to the task's observation obs[0:n]
    (microrl.perturb.add_noise, its uniforms drawn into env[w:] from the perturbation stream);
    nothing when it is off."""
    scale = env[g + OBSERVATION_NOISE]
    if scale != 0.0:
        m = n + (n & 1)
        for i in range(m):
            env[w + i] = stream_uniform(env, stream)
        add_noise(obs, n, scale, shape, env[w : w + m])


@register_jitable
def start_delay(env, n, g, line, neutral):
    """An episode's line of delayed actions (microrl.perturb.start_line: n neutral commands per
    step of the delay set in env[g:g+GENERIC_DIM], in env[line:]); nothing when it is off."""
    d = int(env[g + ACTION_DELAY])
    if d > 0:
        start_line(env[line : line + d * n], n, d, neutral)


@register_jitable
def delayed_action(env, a, g, line):
    """Hold the action a back by the delay set in env[g:g+GENERIC_DIM] (microrl.perturb.delay_action,
    its line in env[line:]); nothing when it is off."""
    d = int(env[g + ACTION_DELAY])
    if d > 0:
        n = a.shape[0]
        delay_action(env[line : line + d * n], a, n, d)


@register_jitable
def observed_pending(env, obs, first, n, g, line, scale, offset):
    """The pending actions (microrl.perturb.pending_actions) into obs[first:] when obs has room
    for them (an observation wider than the task's: a run that observes them)."""
    if obs.shape[0] > first:
        d = int(env[g + ACTION_DELAY])
        pending_actions(obs, first, env[line : line + d * n], n, d, scale, offset)


# ---------------------------------------------------------------- the episode, bound per task
# the names a bound copy sees in place of these (envs/task.py, CompiledTask.bindings)
task_reset = task_step = task_evaluation = task_success = task_final_error = None
episode_begin = episode_reset = episode_act = episode_step = None
P0 = S0 = U0 = A0 = G0 = STREAM = T = LINE0 = W0 = N0 = R0 = END = OBS_DIM = ACT_DIM = PARAM_DIM = RESET_DRAWS = STEP_DRAWS = 0
ACTION_SCALE = ACTION_OFFSET = NOISE_SHAPE = (0.0,)
RANDOMISED = ((0, 0, 0, 0),)


def begin(env, rng):
    """Before a run's (or an evaluation's) first episode: its perturbation stream, seeded from
    the generator rng (a uint64 array) without drawing from it."""
    seed_stream(env, STREAM, rng[0])


def reset(env, rng, obs):
    """Start an episode: the task's uniforms from rng, the episode's randomised parameters and
    line of delayed actions, the task's reset, then its observation into obs with the noise and
    the pending actions (when obs has room for them); the step count and the return at 0."""
    P = env[P0:S0]
    s = env[S0:U0]
    u = env[U0:A0]
    draw(rng, u, RESET_DRAWS)
    randomised_parameters(env, P, N0, R0, RANDOMISED, STREAM)
    start_delay(env, ACT_DIM, G0, LINE0, ACTION_OFFSET)
    task_reset(P, s, u, obs)
    noisy_observation(env, obs, OBS_DIM, G0, STREAM, W0, NOISE_SHAPE)
    observed_pending(env, obs, OBS_DIM, ACT_DIM, G0, LINE0, ACTION_SCALE, ACTION_OFFSET)
    env[T] = 0.0
    env[RETURN] = 0.0


def act(env, action):
    """The networks' action in [-1, 1] onto the task's range, as the next step's action (as the
    policy file's act_scale/act_offset map it)."""
    a = env[A0:G0]
    for i in range(ACT_DIM):
        a[i] = ACTION_SCALE[i] * action[i] + ACTION_OFFSET[i]


def set_action(env, action):
    """The next step's action, in the task's units."""
    a = env[A0:G0]
    for i in range(ACT_DIM):
        a[i] = action[i]


def step(env, rng, obs):
    """One step with the action set (act, set_action): held back by the action delay, the task's
    uniforms from rng, the task's step, then its observation into obs with the noise and the
    pending actions; counts the step and adds the reward to the return. Returns the task's
    (reward, terminated, truncated)."""
    P = env[P0:S0]
    s = env[S0:U0]
    u = env[U0:A0]
    a = env[A0:G0]
    delayed_action(env, a, G0, LINE0)
    draw(rng, u, STEP_DRAWS)
    r, terminated, truncated = task_step(P, s, a, u, obs)
    env[T] += 1.0
    noisy_observation(env, obs, OBS_DIM, G0, STREAM, W0, NOISE_SHAPE)
    observed_pending(env, obs, OBS_DIM, ACT_DIM, G0, LINE0, ACTION_SCALE, ACTION_OFFSET)
    env[RETURN] += r
    return r, terminated, truncated


_BOUND = {}  # CompiledTask.key -> {name: the function bound to the task}


def bind(key, bindings):
    """{"episode_begin": ..., "episode_reset": ..., "episode_act": ..., "episode_set_action": ...,
    "episode_step": ...}: begin, reset, act, set_action and step bound to a task's bindings
    (CompiledTask.bindings, its key), registered with numba as a task's functions are, so that
    the loop, the evaluation and the vectors bound to the same task call them. Once per task
    and process."""
    bound = _BOUND.get(key)
    if bound is None:
        from ..nn.jit import bound_copy

        bound = _BOUND[key] = {"episode_" + f.__name__: bound_copy(f, "episode_%s_%s" % (f.__name__, key), bindings, register_jitable)
                               for f in (begin, reset, act, set_action, step)}
    return bound


def evaluate_task(net, squash, episodes, seed, params, generic, width):
    """Rows of (return, success 1/0, final error, steps): `episodes` deterministic episodes from
    the task's evaluation starts (its evaluation() hook applied to params), drawn from seed,
    under the generic perturbations set in generic (microrl.perturb.NAMES), the actor's input
    width numbers (the task's observation, then any pending actions)."""
    rng = np.zeros(1, np.uint64)
    rng[0] = np.uint64(seed) * np.uint64(0x2545F4914F6CDD1D) + np.uint64(7)
    env = np.zeros(END)
    P = env[P0:S0]
    s = env[S0:U0]
    for i in range(PARAM_DIM):
        P[i] = params[i]
    for i in range(GENERIC_DIM):
        env[G0 + i] = generic[i]
    episode_begin(env, rng)
    task_evaluation(P)
    for i in range(PARAM_DIM):
        env[N0 + i] = P[i]
    obs = np.zeros(width, np.float32)
    action = np.zeros(ACT_DIM, np.float32)
    out = np.zeros((episodes, 4))
    for e in range(episodes):
        episode_reset(env, rng, obs)
        done = False
        truncated = False
        while not (done or truncated):
            greedy_action(net, obs, squash, action)
            episode_act(env, action)
            r, done, truncated = episode_step(env, rng, obs)
        out[e, 0] = env[RETURN]
        out[e, 1] = 1.0 if (not done) and task_success(P, s) else 0.0
        out[e, 2] = task_final_error(P, s)
        out[e, 3] = env[T]
    return out
