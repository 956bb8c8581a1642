"""A task written against the task interface (docs/tasks.md: microrl.tasks.pendulum,
microrl.tasks.quadrotor, a user's own module) compiled with numba into the host's training loop
(algos/loop.py, bind_task) and its evaluation: the task's functions are registered with numba
unchanged, and one loop and one evaluation are compiled per task from one source each.

A compiled run keeps the whole task in one float64 array, the trainer state's `env` (so that a
checkpoint holds it as it is): the episode's return so far, then the task's parameters P, state
s, uniforms u and action a (in the task's units), and the generic sim-to-real perturbations'
arrays (microrl.perturb: their settings G, the perturbation stream, the episode's step, the
delayed actions' line, the noise's uniforms), at the offsets of Layout.

The perturbations are the device core's own functions (microrl.perturb, compiled here as a task
is), applied around the task's reset and step by the loop and the evaluation as microrl.task.Env
applies them on a board. Their random numbers come from a stream of their own (stream_uniform),
so that with every perturbation off a run draws, and computes, exactly what it did before they
existed.
"""
import hashlib
import inspect
import math
import os
import re

import numpy as np
from numba.extending import register_jitable

from microrl import perturb
from microrl.perturb import ACTION_DELAY, GENERIC_DIM, MAX_DELAY, OBSERVATION_NOISE, add_noise, delay_action, noise_draws, randomise, randomise_draws
from microrl.perturb import noise_shape, pending_actions, set_values, start_line

from ..nn.jit import bound_copy, jit
from ..nn.mlp import greedy_action
from ..nn.rng import uniform
from ..tasks import TaskError, check

RETURN = 0  # env[RETURN]: the episode's return so far

def source_key(module, constants=""):
    """'<name>_<16 hex digits of SHA-256 of the module's source file and constants>': what the
    task's compiled loop and evaluation are cached under, so that an edited task (or a changed
    layout of its arrays, constants) never runs stale code."""
    path = inspect.getsourcefile(module) or module.__file__
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read() + constants.encode()).hexdigest()[:16]
    return "%s_%s" % (re.sub(r"\W", "_", str(module.NAME)), digest)


HOST_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def compiled_sources():
    """The source files (sorted paths) whose code a task's bound loop and evaluation contain
    besides the task: the algorithms' updates (inlined into the one loop) and the networks
    (microrl_host/algos/, nn/), this file and the generic perturbations (microrl/perturb.py).
    numba's disk cache checks only the bound copy's own file (algos/loop.py, or this one), so
    the key must change with these, else an edited update (td3.py, twin.py, mlp.py) ran stale
    code."""
    out = []
    for folder in ("algos", "nn"):
        path = os.path.join(HOST_PACKAGE, folder)
        # seed.py holds no compiled code: it loads the code this key names (nn/seed.py)
        out.extend(os.path.join(path, f) for f in sorted(os.listdir(path)) if f.endswith(".py") and f != "seed.py")
    return out + [os.path.abspath(__file__), os.path.abspath(perturb.__file__)]


_DIGESTS = {}


def sources_digest(paths):
    """SHA-256 (hex) of the files' contents in order, once per process and set of paths."""
    key = tuple(paths)
    if key not in _DIGESTS:
        h = hashlib.sha256()
        for path in paths:
            with open(path, "rb") as f:
                h.update(hashlib.sha256(f.read()).digest())
        _DIGESTS[key] = h.hexdigest()
    return _DIGESTS[key]


_REGISTERED = set()


def register(module):
    """Register every function defined in the task module with numba (once per function), so
    that the task's functions, and its helpers calling each other, compile as they are written.
    Only those the loop reaches are ever compiled."""
    for value in vars(module).values():
        if inspect.isfunction(value) and value.__module__ == module.__name__ and value not in _REGISTERED:
            register_jitable(value)
            _REGISTERED.add(value)


# ---------------------------------------------------------------- the generic perturbations
# (called by the bound loop and evaluation with the Layout's offsets)
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


register(perturb)


# hooks a task may leave out: what the compiled code calls in their place
@register_jitable
def no_evaluation(P):
    pass


@register_jitable
def no_success(P, s):
    return False


@register_jitable
def no_final_error(P, s):
    return math.nan


class Layout:
    """Offsets of a task's parts in the env array: P0 (parameters), S0 (state), U0 (uniforms),
    A0 (action), then the perturbations': G0 (their settings, microrl.perturb.NAMES), STREAM (the
    perturbation stream: key and draw count), T (the episode's step), LINE0 (the delayed
    actions, MAX_DELAY of them), W0 (the observation noise's uniforms), N0 (the nominal
    parameters), R0 (the randomisation's uniforms); END (length)."""

    def __init__(self, module):
        self.P0 = RETURN + 1
        self.S0 = self.P0 + len(module.PARAMETERS)
        self.U0 = self.S0 + module.STATE_DIM
        self.A0 = self.U0 + max(module.RESET_DRAWS, module.STEP_DRAWS, 1)
        self.G0 = self.A0 + module.ACT_DIM
        self.STREAM = self.G0 + GENERIC_DIM
        self.T = self.STREAM + 3
        self.LINE0 = self.T + 1
        self.W0 = self.LINE0 + MAX_DELAY * module.ACT_DIM
        self.N0 = self.W0 + noise_draws(module.OBS_DIM)
        self.R0 = self.N0 + len(module.PARAMETERS)
        self.END = self.R0 + randomise_draws(randomised(module))


def randomised(module):
    """The task's RANDOMISED as the compiled code takes it: a tuple of 4-int tuples, one that
    changes nothing for a task without (numba types no empty tuple of tuples)."""
    spec = tuple(tuple(int(v) for v in group) for group in getattr(module, "RANDOMISED", ()))
    return spec or ((0, 0, 0, 0),)


class CompiledTask:
    """A task module as a trainer's environment, simulated inside the compiled loop. params:
    its parameter values (default: the module's PARAMETERS). perturbations: {name: value} of the
    sim-to-real perturbations training runs with (microrl.perturb.names; default
    none: the nominal task). ValueError names a perturbation the task does not have, or one out
    of range. pending_actions: under an action delay, the observation carries the commands sent
    but not yet applied (obs_dim = OBS_DIM + delay * ACT_DIM; microrl.perturb.pending_actions),
    as docs/sim-to-real.md says why; False: the task's observation alone."""

    compiled = True

    def __init__(self, module, params=None, name=None, perturbations=None, pending_actions=True):
        check(module)
        register(module)
        self.module = module
        self.name = name or module.NAME
        self.obs_dim = module.OBS_DIM
        self.act_dim = module.ACT_DIM
        self.low = np.array(module.ACTION_LOW, np.float32)
        self.high = np.array(module.ACTION_HIGH, np.float32)
        self.nominal = np.array(module.PARAMETERS if params is None else params, np.float64)
        if self.nominal.shape != (len(module.PARAMETERS),):
            raise TaskError("%s takes %d parameters, got %d" % (self.name, len(module.PARAMETERS), self.nominal.size))
        self.perturbations = dict(perturbations or {})
        # training's parameters and generic perturbation settings
        self.params, self.generic = self.arrays(self.perturbations)
        self.pending = int(self.generic[ACTION_DELAY]) if pending_actions else 0
        self.obs_dim = module.OBS_DIM + self.pending * module.ACT_DIM
        self.training = dict(getattr(module, "TRAINING", None) or {})
        self.has_success = hasattr(module, "success")
        self.layout = Layout(module)
        L = self.layout
        low = [float(v) for v in module.ACTION_LOW]
        high = [float(v) for v in module.ACTION_HIGH]
        # the names a bound copy of loop.run_task and of evaluate_task sees
        self.bindings = {
            "task_reset": module.reset,
            "task_step": module.step,
            "task_evaluation": getattr(module, "evaluation", no_evaluation),
            "task_success": getattr(module, "success", no_success),
            "task_final_error": getattr(module, "final_error", no_final_error),
            "RETURN": RETURN, "P0": L.P0, "S0": L.S0, "U0": L.U0, "A0": L.A0, "END": L.END,
            "G0": L.G0, "STREAM": L.STREAM, "T": L.T, "LINE0": L.LINE0, "W0": L.W0, "N0": L.N0, "R0": L.R0,
            "OBS_DIM": module.OBS_DIM, "ACT_DIM": module.ACT_DIM, "PARAM_DIM": len(module.PARAMETERS),
            "RESET_DRAWS": module.RESET_DRAWS, "STEP_DRAWS": module.STEP_DRAWS,
            "RANDOMISED": randomised(module),
            "NOISE_SHAPE": tuple(float(v) for v in noise_shape(module)),
            # the networks' [-1, 1] onto the task's range, as the policy file's act_scale/act_offset
            "ACTION_SCALE": tuple((h - lo) / 2.0 for lo, h in zip(low, high)),
            "ACTION_OFFSET": tuple((h + lo) / 2.0 for lo, h in zip(low, high)),
        }
        # the key sees the task's source, the layout and the sources compiled with it
        self.key = source_key(module, repr(sorted((k, v) for k, v in self.bindings.items() if not callable(v))) + sources_digest(compiled_sources()))
        self._evaluate = None

    def arrays(self, perturbations=None):
        """(P, G): the task's parameters (float64, from its nominal ones) and the generic
        perturbation settings (microrl.perturb.NAMES) with perturbations ({name: value}) set;
        ValueError as microrl.perturb.set_values."""
        P = self.nominal.copy()
        G = np.zeros(GENERIC_DIM)
        if perturbations:
            set_values(self.module, P, G, perturbations)
        return P, G

    def new_env(self):
        """The env array of a fresh run: training's parameters and perturbation settings in
        place, everything else zero."""
        L = self.layout
        env = np.zeros(L.END)
        env[L.P0 : L.S0] = self.params
        env[L.G0 : L.G0 + GENERIC_DIM] = self.generic
        env[L.N0 : L.N0 + len(self.params)] = self.params
        return env

    def parameters(self, env):
        """The parameters' view of an env array."""
        return env[self.layout.P0 : self.layout.S0]

    def curriculum(self, env, step):
        """Set the parameters for the curriculum level at step (the task's curriculum() hook,
        over TRAINING's curriculum_steps), if the task has one."""
        hook = getattr(self.module, "curriculum", None)
        steps = self.training.get("curriculum_steps")
        if hook is not None and steps:
            hook(self.parameters(env), self.params, min(1.0, step / float(steps)))

    def evaluate(self, net, squash, episodes, seed, params=None, perturbations=None, pending=None):
        """Rows of (return, success 1/0, final error, steps) of deterministic episodes of the
        actor net from the task's evaluation starts drawn from seed (compiled), on the nominal
        task (params: other parameter values) or under perturbations ({name: value}). pending:
        the steps of pending actions the actor observes (default: training's, self.pending), which
        must be the action delay of perturbations when not 0 (ValueError)."""
        if self._evaluate is None:
            self._evaluate = bound_copy(evaluate_task, "evaluate_task_" + self.key, self.bindings, jit)
        P, G = self.arrays(perturbations)
        if params is not None:
            P[:] = np.asarray(params, np.float64)
        pending = self.pending if pending is None else int(pending)
        if pending and pending != int(G[ACTION_DELAY]):
            raise ValueError("an actor that observes %d steps of pending actions runs under an action delay of %d steps, not %d" % (pending, pending, int(G[ACTION_DELAY])))
        return self._evaluate(net, squash, episodes, seed, P, G, self.module.OBS_DIM + pending * self.module.ACT_DIM)

    def close(self):
        pass


# ---------------------------------------------------------------- the evaluation, bound per task
# the names a bound copy sees in place of these (CompiledTask.bindings)
task_reset = task_step = task_evaluation = task_success = task_final_error = None
P0 = S0 = U0 = A0 = G0 = STREAM = T = LINE0 = W0 = N0 = R0 = END = OBS_DIM = ACT_DIM = PARAM_DIM = RESET_DRAWS = STEP_DRAWS = 0
ACTION_SCALE = ACTION_OFFSET = NOISE_SHAPE = (0.0,)
RANDOMISED = ((0, 0, 0, 0),)


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
    u = env[U0:A0]
    a = env[A0:G0]
    for i in range(PARAM_DIM):
        P[i] = params[i]
    for i in range(GENERIC_DIM):
        env[G0 + i] = generic[i]
    seed_stream(env, STREAM, rng[0])
    task_evaluation(P)
    for i in range(PARAM_DIM):
        env[N0 + i] = P[i]
    obs = np.zeros(width, np.float32)
    act = np.zeros(ACT_DIM, np.float32)
    out = np.zeros((episodes, 4))
    for e in range(episodes):
        draw(rng, u, RESET_DRAWS)
        randomised_parameters(env, P, N0, R0, RANDOMISED, STREAM)
        start_delay(env, ACT_DIM, G0, LINE0, ACTION_OFFSET)
        task_reset(P, s, u, obs)
        noisy_observation(env, obs, OBS_DIM, G0, STREAM, W0, NOISE_SHAPE)
        observed_pending(env, obs, OBS_DIM, ACT_DIM, G0, LINE0, ACTION_SCALE, ACTION_OFFSET)
        env[T] = 0.0
        total = 0.0
        steps = 0
        done = False
        truncated = False
        while not (done or truncated):
            greedy_action(net, obs, squash, act)
            for i in range(ACT_DIM):
                a[i] = ACTION_SCALE[i] * act[i] + ACTION_OFFSET[i]
            delayed_action(env, a, G0, LINE0)
            draw(rng, u, STEP_DRAWS)
            r, done, truncated = task_step(P, s, a, u, obs)
            env[T] += 1.0
            noisy_observation(env, obs, OBS_DIM, G0, STREAM, W0, NOISE_SHAPE)
            observed_pending(env, obs, OBS_DIM, ACT_DIM, G0, LINE0, ACTION_SCALE, ACTION_OFFSET)
            total += r
            steps += 1
        out[e, 0] = total
        out[e, 1] = 1.0 if (not done) and task_success(P, s) else 0.0
        out[e, 2] = task_final_error(P, s)
        out[e, 3] = steps
    return out


def plain(task, policy):
    """Whether policy is the bare actor that training writes for task (no observation
    normalisation beyond what folds into its first layer, the task's own action range): the
    compiled evaluation can run it."""
    if getattr(policy, "in_low", None) is not None or getattr(policy, "act_low", None) is not None:
        return False  # clipped inputs or outputs: the device core's runner
    scale = np.array(task.bindings["ACTION_SCALE"], np.float32)
    offset = np.array(task.bindings["ACTION_OFFSET"], np.float32)
    if policy.act_scale is None:
        return bool(np.all(scale == 1.0) and np.all(offset == 0.0))
    return bool(np.array_equal(np.array(policy.act_scale, np.float32), scale) and np.array_equal(np.array(policy.act_offset, np.float32), offset))


def folded_parameters(policy):
    """The policy's parameters (float32) with its observation normalisation, if any, folded into
    its first layer: W (x - mean) / std + b = (W / std) x + (b - (W / std) mean), so that the
    bare network computes what the policy does (PPO's policies normalise)."""
    from microrl.layout import layout

    params = np.frombuffer(bytes(policy.params), dtype=np.float32).copy()
    if policy.obs_mean is None:
        return params
    (w0, b0), _ = layout(policy.sizes)[0][0], None
    n_in, n_out = policy.sizes[0], policy.sizes[1]
    W = params[w0 : w0 + n_in * n_out].reshape(n_out, n_in).astype(np.float64)
    mean = np.array(policy.obs_mean, np.float64)
    std = np.array(policy.obs_std, np.float64)
    W = W / std
    params[b0 : b0 + n_out] = params[b0 : b0 + n_out] - W @ mean
    params[w0 : w0 + n_in * n_out] = W.reshape(-1)
    return params


def evaluate_policy(task, policy, episodes, seed, perturbations=None):
    """Rows of (return, success, final error, steps) of a microrl.policy.Policy on a
    CompiledTask's evaluation starts, nominal or under perturbations ({name: value}): compiled
    when the policy is plain (an observation normalisation folds into its first layer:
    folded_parameters), else through the device core's runner (the same starts only within
    one of the two paths). A policy that observes pending actions runs under its own action
    delay (microrl.task.policy_perturbations; ValueError when another is asked)."""
    from microrl.evaluate import rollouts
    from microrl.rng import Rng
    from microrl.task import policy_env, policy_perturbations

    from ..nn.mlp import new_net, refresh_transposed, view

    if not plain(task, policy):
        env = policy_env(task.module, policy, perturbations, params=list(task.nominal), rng=Rng(seed), evaluation=True)
        return np.array(rollouts(policy, env, episodes), dtype=np.float64).reshape(-1, 4)
    perturbations = policy_perturbations(policy, perturbations)
    net = new_net(list(policy.sizes), list(policy.acts), 1, trainable=False)
    view(net).params[:] = folded_parameters(policy)
    refresh_transposed(net)
    return task.evaluate(net, False, episodes, seed, perturbations=perturbations, pending=policy.pending)
