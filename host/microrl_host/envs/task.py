"""A task written against the task interface (docs/tasks.md: microrl.tasks.pendulum,
microrl.tasks.quadrotor, a user's own module) compiled with numba into the host's training loop
(algos/loop.py, bind_task) and its evaluation: the task's functions are registered with numba
unchanged, and one loop and one evaluation are compiled per task from one source each.

A compiled run keeps the whole task in one float64 array, the trainer state's `env` (so that a
checkpoint holds it as it is): the episode's return so far, then the task's parameters P, state
s, uniforms u and action a (in the task's units), at the offsets of Layout.
"""
import hashlib
import inspect
import math
import re

import numpy as np
from numba.extending import register_jitable

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


_REGISTERED = set()


def register(module):
    """Register every function defined in the task module with numba (once per function), so
    that the task's functions, and its helpers calling each other, compile as they are written.
    Only those the loop reaches are ever compiled."""
    for value in vars(module).values():
        if inspect.isfunction(value) and value.__module__ == module.__name__ and value not in _REGISTERED:
            register_jitable(value)
            _REGISTERED.add(value)


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
    A0 (action), END (length)."""

    def __init__(self, module):
        self.P0 = RETURN + 1
        self.S0 = self.P0 + len(module.PARAMETERS)
        self.U0 = self.S0 + module.STATE_DIM
        self.A0 = self.U0 + max(module.RESET_DRAWS, module.STEP_DRAWS, 1)
        self.END = self.A0 + module.ACT_DIM


class CompiledTask:
    """A task module as a trainer's environment, simulated inside the compiled loop. params:
    its parameter values (default: the module's PARAMETERS)."""

    compiled = True

    def __init__(self, module, params=None, name=None):
        check(module)
        register(module)
        self.module = module
        self.name = name or module.NAME
        self.obs_dim = module.OBS_DIM
        self.act_dim = module.ACT_DIM
        self.low = np.array(module.ACTION_LOW, np.float32)
        self.high = np.array(module.ACTION_HIGH, np.float32)
        self.params = np.array(module.PARAMETERS if params is None else params, np.float64)
        if self.params.shape != (len(module.PARAMETERS),):
            raise TaskError("%s takes %d parameters, got %d" % (self.name, len(module.PARAMETERS), self.params.size))
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
            "OBS_DIM": module.OBS_DIM, "ACT_DIM": module.ACT_DIM, "PARAM_DIM": len(module.PARAMETERS),
            "RESET_DRAWS": module.RESET_DRAWS, "STEP_DRAWS": module.STEP_DRAWS,
            # the networks' [-1, 1] onto the task's range, as the policy file's act_scale/act_offset
            "ACTION_SCALE": tuple((h - lo) / 2.0 for lo, h in zip(low, high)),
            "ACTION_OFFSET": tuple((h + lo) / 2.0 for lo, h in zip(low, high)),
        }
        self.key = source_key(module, repr(sorted((k, v) for k, v in self.bindings.items() if not callable(v))))
        self._evaluate = None

    def new_env(self):
        """The env array of a fresh run: the parameters in place, everything else zero."""
        env = np.zeros(self.layout.END)
        env[self.layout.P0 : self.layout.S0] = self.params
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

    def evaluate(self, net, squash, episodes, seed, params=None):
        """Rows of (return, success 1/0, final error, steps) of deterministic episodes of the
        actor net from the task's evaluation starts drawn from seed (compiled)."""
        if self._evaluate is None:
            self._evaluate = bound_copy(evaluate_task, "evaluate_task_" + self.key, self.bindings, jit)
        return self._evaluate(net, squash, episodes, seed, self.params if params is None else np.asarray(params, np.float64))

    def close(self):
        pass


# ---------------------------------------------------------------- the evaluation, bound per task
# the names a bound copy sees in place of these (CompiledTask.bindings)
task_reset = task_step = task_evaluation = task_success = task_final_error = None
P0 = S0 = U0 = A0 = END = OBS_DIM = ACT_DIM = PARAM_DIM = RESET_DRAWS = STEP_DRAWS = 0
ACTION_SCALE = ACTION_OFFSET = (0.0,)


def evaluate_task(net, squash, episodes, seed, params):
    """Rows of (return, success 1/0, final error, steps): `episodes` deterministic episodes from
    the task's evaluation starts (its evaluation() hook applied to params), drawn from seed."""
    rng = np.zeros(1, np.uint64)
    rng[0] = np.uint64(seed) * np.uint64(0x2545F4914F6CDD1D) + np.uint64(7)
    env = np.zeros(END)
    P = env[P0:S0]
    s = env[S0:U0]
    u = env[U0:A0]
    a = env[A0:END]
    for i in range(PARAM_DIM):
        P[i] = params[i]
    task_evaluation(P)
    obs = np.zeros(OBS_DIM, np.float32)
    act = np.zeros(ACT_DIM, np.float32)
    out = np.zeros((episodes, 4))
    for e in range(episodes):
        for i in range(RESET_DRAWS):
            u[i] = uniform(rng, 0.0, 1.0)
        task_reset(P, s, u, obs)
        total = 0.0
        steps = 0
        done = False
        truncated = False
        while not (done or truncated):
            greedy_action(net, obs, squash, act)
            for i in range(ACT_DIM):
                a[i] = ACTION_SCALE[i] * act[i] + ACTION_OFFSET[i]
            for i in range(STEP_DRAWS):
                u[i] = uniform(rng, 0.0, 1.0)
            r, done, truncated = task_step(P, s, a, u, obs)
            total += r
            steps += 1
        out[e, 0] = total
        out[e, 1] = 1.0 if (not done) and task_success(P, s) else 0.0
        out[e, 2] = task_final_error(P, s)
        out[e, 3] = steps
    return out


def plain(task, policy):
    """Whether policy is the bare actor that training writes for task (no observation
    normalisation, the task's own action range): the compiled evaluation can run it."""
    if policy.obs_mean is not None:
        return False
    scale = np.array(task.bindings["ACTION_SCALE"], np.float32)
    offset = np.array(task.bindings["ACTION_OFFSET"], np.float32)
    if policy.act_scale is None:
        return bool(np.all(scale == 1.0) and np.all(offset == 0.0))
    return bool(np.array_equal(np.array(policy.act_scale, np.float32), scale) and np.array_equal(np.array(policy.act_offset, np.float32), offset))


def evaluate_policy(task, policy, episodes, seed):
    """Rows of (return, success, final error, steps) of a microrl.policy.Policy on a
    CompiledTask's evaluation starts: compiled when the policy is plain, else through the device
    core's runner (the same starts only within one of the two paths)."""
    from microrl.evaluate import rollouts
    from microrl.rng import Rng
    from microrl.task import Env

    from ..nn.mlp import new_net, refresh_transposed, view

    if not plain(task, policy):
        return np.array(rollouts(policy, Env(task.module, list(task.params), Rng(seed), evaluation=True), episodes), dtype=np.float64).reshape(-1, 4)
    net = new_net(list(policy.sizes), list(policy.acts), 1, trainable=False)
    view(net).params[:] = np.frombuffer(bytes(policy.params), dtype=np.float32)
    refresh_transposed(net)
    return task.evaluate(net, False, episodes, seed)
