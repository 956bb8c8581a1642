"""A task written against the task interface (docs/tasks.md: microrl.tasks.pendulum,
microrl.tasks.quadrotor, a user's own module) compiled with numba into the host's training loop
(algos/loop.py, bind_task), its evaluation and PPO's vectors (envs/task_vector.py): the task's
functions are registered with numba unchanged, and its episode under the sim-to-real
perturbations (envs/episode.py, written once) is bound to it, with the loop, the evaluation and
the vectors, one compiled copy per task of one source each.

A compiled run keeps the whole task in one float64 array, the trainer state's `env` (so that a
checkpoint holds it as it is): the episode's return so far, then the task's parameters P, state
s, uniforms u and action a (in the task's units), and the generic sim-to-real perturbations'
arrays (microrl.perturb: their settings G, the perturbation stream, the episode's step, the
delayed actions' line, the noise's uniforms), at the offsets of Layout.
"""
import hashlib
import inspect
import math
import os
import re

import numpy as np
from numba.extending import register_jitable

from microrl import perturb
from microrl.perturb import ACTION_DELAY, GENERIC_DIM, MAX_DELAY, noise_draws, noise_shape, randomise_draws, set_values

from ..nn.jit import bound_copy, jit
from ..tasks import TaskError, check
from . import episode
from .episode import RETURN, register  # noqa: F401  (register: where its callers look)


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
    (microrl_host/algos/, nn/), this file, the episode (episode.py) and the generic perturbations
    (microrl/perturb.py). numba's disk cache checks only the bound copy's own file (algos/loop.py,
    episode.py, task_vector.py), so
    the key must change with these, else an edited update (td3.py, twin.py, mlp.py) ran stale
    code."""
    out = []
    for folder in ("algos", "nn"):
        path = os.path.join(HOST_PACKAGE, folder)
        # seed.py holds no compiled code: it loads the code this key names (nn/seed.py)
        out.extend(os.path.join(path, f) for f in sorted(os.listdir(path)) if f.endswith(".py") and f != "seed.py")
    return out + [os.path.abspath(__file__), os.path.abspath(episode.__file__), os.path.abspath(perturb.__file__)]


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
        # the names a bound copy of loop.run_task, episode.py's functions and task_vector.step_copies sees
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
        self.bindings.update(episode.bind(self.key, self.bindings))  # its episode: reset, step (episode.py)
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
            self._evaluate = bound_copy(episode.evaluate_task, "evaluate_task_" + self.key, self.bindings, jit)
        P, G = self.arrays(perturbations)
        if params is not None:
            P[:] = np.asarray(params, np.float64)
        pending = self.pending if pending is None else int(pending)
        if pending and pending != int(G[ACTION_DELAY]):
            raise ValueError("an actor that observes %d steps of pending actions runs under an action delay of %d steps, not %d" % (pending, pending, int(G[ACTION_DELAY])))
        return self._evaluate(net, squash, episodes, seed, P, G, self.module.OBS_DIM + pending * self.module.ACT_DIM)

    def close(self):
        pass


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
