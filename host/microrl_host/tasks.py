"""The task registry: what a task given to train, eval, render, export or demo means, in one
place. Built-in tasks are the modules of the device core's microrl/tasks/ folder, each named by
its NAME (a new one needs no entry here); a user's task is a file (`./cartpole.py`) or a module
(`pkg.mod`, `pkg.mod:attribute`) written against the task interface (docs/tasks.md), found from
the current folder without PYTHONPATH; a MuJoCo task with compiled formulas (MUJOCO_FAMILIES:
`ant`, `Hopper-v5`, any case or spelling; PPO steps many copies of it together, envs/mujoco.py,
TD3/SAC its gymnasium environment); anything else is a gymnasium id (`Pendulum-v1`,
`module:EnvId`, stepped from Python: the slow path) or, in the Python API, a gymnasium Env.
Every command and algorithm resolves a task here, once (resolve).

Loads no numba: the commands resolve a task before they decide to train."""
import inspect
import math
import os
import sys

DEFAULT = "pendulum"  # the task of `microrl demo` and of the Python API's train() when none is given
# built-in tasks drawn by a renderer of their own rather than their picture() hook
RENDERERS = {"quadrotor": "microrl_host.envs.quadrotor_render"}
GYM_EXAMPLES = ("Pendulum-v1", "MountainCarContinuous-v0", "LunarLanderContinuous-v3", "BipedalWalker-v3")  # for messages
SUMMARY_DEFAULTS = {"ERROR_NAME": "final_error", "TERMINATED_NAME": "terminated_rate"}
# MuJoCo tasks whose formulas envs/mujoco.py computes for many copies at once: gymnasium id ->
# the family of formulas (a new family: its formulas there, its ids here)
MUJOCO_FAMILIES = {
    "Ant-v4": "ant",
    "Ant-v5": "ant",
    "HalfCheetah-v4": "cheetah",
    "HalfCheetah-v5": "cheetah",
    "Hopper-v4": "hopper",
    "Hopper-v5": "hopper",
    "Walker2d-v4": "walker",
    "Walker2d-v5": "walker",
    "Humanoid-v4": "humanoid",
    "Humanoid-v5": "humanoid",
    "InvertedPendulum-v4": "pendulum",
    "InvertedPendulum-v5": "pendulum",
}


class TaskError(ValueError):
    """A task that cannot be trained: it names nothing, is malformed, or (gymnasium) has actions
    or observations TD3 and SAC cannot take. The message says what to do."""


class TaskImportError(TaskError):
    """A task file that imports a module this host lacks (a hardware task importing `machine`,
    say): it may run on a board, not here. path: the file."""

    def __init__(self, message, path):
        super().__init__(message)
        self.path = path


class UnknownTask(TaskError):
    """A task that names nothing: no built-in, file, module or gymnasium id of that name."""


REQUIRED = ("NAME", "OBS_DIM", "ACT_DIM", "ACTION_LOW", "ACTION_HIGH", "PARAMETERS", "STATE_DIM", "RESET_DRAWS", "STEP_DRAWS", "EPISODE_STEPS", "reset", "step")


def check(module):
    """TaskError naming what a task module lacks or gets wrong (docs/tasks.md)."""
    where = getattr(module, "__file__", None) or module.__name__
    missing = [k for k in REQUIRED if not hasattr(module, k)]
    if missing:
        raise TaskError("%s is not a task: it lacks %s (docs/tasks.md lists what a task defines)" % (where, ", ".join(missing)))
    problems = []
    for k in ("OBS_DIM", "ACT_DIM", "STATE_DIM", "EPISODE_STEPS"):
        v = getattr(module, k)
        if not (isinstance(v, int) and v >= 1):
            problems.append("%s must be a whole number >= 1, got %r" % (k, v))
    for k in ("RESET_DRAWS", "STEP_DRAWS"):
        v = getattr(module, k)
        if not (isinstance(v, int) and v >= 0):
            problems.append("%s must be a whole number >= 0, got %r" % (k, v))
    if not problems:
        for k in ("ACTION_LOW", "ACTION_HIGH"):
            v = getattr(module, k)
            if len(tuple(v)) != module.ACT_DIM or not all(isinstance(x, (int, float)) and math.isfinite(x) for x in v):
                problems.append("%s must be ACT_DIM (%d) finite numbers, got %r" % (k, module.ACT_DIM, v))
        if not problems and not all(lo < hi for lo, hi in zip(module.ACTION_LOW, module.ACTION_HIGH)):
            problems.append("every ACTION_LOW must be below its ACTION_HIGH")
        if not all(isinstance(x, (int, float)) for x in module.PARAMETERS):
            problems.append("PARAMETERS must be numbers")
        names = getattr(module, "PARAM_NAMES", None)
        if names is not None and len(names) != len(module.PARAMETERS):
            problems.append("PARAM_NAMES has %d names for %d PARAMETERS" % (len(names), len(module.PARAMETERS)))
    for k in ("reset", "step", "success", "final_error", "evaluation", "curriculum", "observe"):
        if hasattr(module, k) and not inspect.isfunction(getattr(module, k)):
            problems.append("%s must be a function" % k)
    if problems:
        raise TaskError("%s: %s" % (where, "; ".join(problems)))


class Found:
    """A resolved task: name (the registry's, the module's NAME, or the gymnasium id), and either
    module (a task module: compiled into the training loop) or gym_id / gym_env (gymnasium; a
    MuJoCo task with compiled formulas has its family too)."""

    def __init__(self, name, module=None, gym_id=None, gym_env=None, source=None, family=None):
        self.name = name
        self.module = module
        self.gym_id = gym_id
        self.gym_env = gym_env
        self.source = source  # the file a user's task came from
        self.family = family  # a MuJoCo task: its formulas' family in envs/mujoco.py

    @property
    def compiled(self):
        return self.module is not None

    @property
    def kind(self):
        """"task" (written against the task interface: compiled), "mujoco" (a MuJoCo family: PPO
        steps compiled copies) or "gym" (a gymnasium id or Env stepped from Python)."""
        return "task" if self.module is not None else "mujoco" if self.family else "gym"

    @property
    def gym(self):
        """What gymnasium makes the task from: the Env given, else its id."""
        return self.gym_env if self.gym_env is not None else self.gym_id

    @property
    def training(self):
        """The task's suggested training settings (its TRAINING), {} for none."""
        return dict(getattr(self.module, "TRAINING", None) or {})

    @property
    def algo(self):
        """The algorithm the task suggests when none is named: its ALGO; PPO for a MuJoCo family
        (whose compiled copies are PPO's); None for none."""
        return "ppo" if self.family else getattr(self.module, "ALGO", None)

    @property
    def training_ppo(self):
        """The task's suggested PPO settings (its TRAINING_PPO), {} for none."""
        return dict(getattr(self.module, "TRAINING_PPO", None) or {})

    def __repr__(self):
        return "Found(%r, %s)" % (self.name, self.source or (self.module.__name__ if self.module else self.gym_id or type(self.gym_env).__name__))


def builtin_folder():
    import microrl.tasks

    return os.path.dirname(microrl.tasks.__file__)


def builtin_names():
    """The built-in tasks' names (the modules of microrl/tasks/), sorted."""
    return sorted(f[:-3] for f in os.listdir(builtin_folder()) if f.endswith(".py") and not f.startswith("_"))


def builtin(name):
    """The built-in task module of that name."""
    return __import__("microrl.tasks." + name, None, None, (name,))


def is_task(obj):
    """Whether obj is a task module (it has the interface's NAME, reset and step)."""
    return all(hasattr(obj, k) for k in ("NAME", "OBS_DIM", "ACT_DIM", "reset", "step")) and not hasattr(obj, "action_space")


def importable(module):
    """module, entered in the interpreter's table of imported modules under its name if it is
    not there: numba's disk cache rebuilds a compiled function's environment by importing the
    function's module by name, and names a module it cannot find '<dynamic>', which no later
    process can load."""
    sys.modules.setdefault(module.__name__, module)
    return module


def load_file(path):
    """A user's task file, executed as a module named after its file (its folder on the import
    path while it loads, for what it imports)."""
    import importlib.util

    path = os.path.abspath(path)
    if not path.endswith(".py"):  # importlib has no loader for it
        raise TaskError("%s is not a Python file: a task file's name ends in .py (docs/tasks.md)" % path)
    stem = os.path.splitext(os.path.basename(path))[0]
    name = "microrl_user_task_" + "".join(c if c.isalnum() else "_" for c in stem)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # a later file of the same name takes its place (importable())
    folder = os.path.dirname(path)
    sys.path.insert(0, folder)
    bytecode = sys.dont_write_bytecode
    sys.dont_write_bytecode = True  # no __pycache__ beside the user's file from this import (a refused one least of all)
    try:
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
    except SyntaxError as e:
        raise TaskError("%s is not valid Python: %s (line %s)" % (path, e.msg, e.lineno)) from None
    except ImportError as e:
        if "relative import" in str(e):
            raise TaskError("%s failed to load: %s; a task file imports the device core's helpers as `from microrl.compat import const`" % (path, e)) from None
        raise TaskImportError("%s does not load on this host: %s (a hardware task, importing what only a board has, runs on the "
                              "board: microrl train-on-board --task, docs/tasks.md)" % (path, e), path) from None
    except SystemExit as e:
        raise TaskError("%s exited while it loaded (sys.exit(%r)); a task file only defines its task" % (path, e.code)) from None
    except Exception as e:
        raise TaskError("%s failed to load: %s: %s" % (path, type(e).__name__, e)) from None
    finally:
        sys.dont_write_bytecode = bytecode
        sys.path.remove(folder)
    return module


def _import(dotted):
    """A module by its dotted name, looked for in the current folder first (no PYTHONPATH
    needed, as `python -m` does)."""
    here = os.getcwd()
    if here not in sys.path:
        sys.path.insert(0, here)
    module = __import__(dotted)
    for part in dotted.split(".")[1:]:
        module = getattr(module, part)
    return module


def resolve(task):
    """Found for task: a task module, a gymnasium Env, or a string (a built-in name, a .py file,
    `pkg.mod` or `pkg.mod:attribute`, a gymnasium id or `module:EnvId`). UnknownTask says what
    was tried when it names nothing; a file that is not a task raises envs.task.TaskError's
    message as UnknownTask too. A Found is returned as it is (resolved once)."""
    if isinstance(task, Found):
        return task
    if is_task(task):
        check(task)
        return Found(str(task.NAME), module=importable(task), source=getattr(task, "__file__", None))
    if hasattr(task, "action_space") and hasattr(task, "step"):  # a gymnasium Env (or a wrapper)
        spec = getattr(task, "spec", None)
        return Found(spec.id if spec is not None else type(getattr(task, "unwrapped", task)).__name__, gym_env=task)
    if not isinstance(task, str) or not task.strip():
        raise UnknownTask("a task is a name (%s), a task file or module, a gymnasium id or Env; got %r" % (", ".join(builtin_names()), task))
    if task.lower() in builtin_names():
        return Found(task.lower(), module=builtin(task.lower()))
    gym_id = mujoco_id(task)
    if gym_id:
        return Found(gym_id, gym_id=gym_id, family=MUJOCO_FAMILIES[gym_id])
    if task.endswith(".py") or os.sep in task or (os.altsep and os.altsep in task):
        if not os.path.isfile(task):
            raise UnknownTask("no task file %s%s" % (task, " (it is a folder)" if os.path.isdir(task) else ""))
        module = load_file(task)
        check(module)
        return Found(str(module.NAME), module=module, source=os.path.abspath(task))
    if ":" in task:
        module_name, _, attr = task.partition(":")
        try:
            module = _import(module_name)
        except ImportError as e:
            raise UnknownTask("%s: cannot import %s from the current folder (%s)" % (task, module_name, e)) from None
        except Exception as e:
            raise TaskError("%s: module %s failed to import: %s: %s" % (task, module_name, type(e).__name__, e)) from None
        value = getattr(module, attr, None)
        if value is None and attr.isidentifier() and hasattr(module, "__path__"):  # a package's submodule
            try:
                value = _import(module_name + "." + attr)
            except ModuleNotFoundError:
                value = None
        if is_task(value):
            check(value)
            return Found(str(value.NAME), module=value, source=getattr(value, "__file__", None))
        return Found(attr if value is None else task, gym_id=attr if value is None else task)  # gymnasium: module imported, its ids registered
    if _looks_like_module(task):
        try:
            module = _import(task)
        except ModuleNotFoundError as e:
            if e.name is None or not (task == e.name or task.startswith(e.name + ".")):
                raise TaskError("module %s failed to import: %s" % (task, e)) from None
            module = None  # no such module: a gymnasium id, perhaps
        except Exception as e:
            raise TaskError("module %s failed to import: %s: %s" % (task, type(e).__name__, e)) from None
        if module is not None:
            check(module)
            return Found(str(module.NAME), module=module, source=getattr(module, "__file__", None))
    return Found(task, gym_id=task)


def _mujoco_key(name):
    # "Half_Cheetah-v4", "half-cheetah-v4", "halfcheetah" -> ("halfcheetah", "4" or None)
    import re

    m = re.match(r"^(.*?)(?:-v(\d+))?$", str(name).strip().lower())
    return re.sub(r"[-_ ]", "", m.group(1)), m.group(2)


def mujoco_id(name):
    """The gymnasium id of a MuJoCo task with compiled formulas, or None: exact ids ("Ant-v4"),
    any case or spelling ("ant-v4", "half_cheetah"), a bare name meaning the newest version
    ("ant" -> "Ant-v5")."""
    base, version = _mujoco_key(name)
    ids = [k for k in MUJOCO_FAMILIES if _mujoco_key(k)[0] == base]
    if version is None:
        return max(ids) if ids else None
    return next((k for k in ids if _mujoco_key(k)[1] == version), None)


def mujoco_names():
    """For messages: the MuJoCo tasks with compiled formulas."""
    return "%s (or a bare name such as 'ant' for the newest version)" % ", ".join(sorted(MUJOCO_FAMILIES))


def _looks_like_module(text):
    parts = text.split(".")
    return all(p.isidentifier() for p in parts) and text.lower() == text


def shapes():
    """For --help: 'cartpole 5 and 1, pendulum 3 and 1, ...': each built-in task's observation and
    action sizes, by which a policy file finds its task."""
    return ", ".join("%s %d and %d" % (name, builtin(name).OBS_DIM, builtin(name).ACT_DIM) for name in builtin_names())


def by_shape(obs_dim, act_dim):
    """The built-in tasks whose observations and actions have these sizes."""
    out = []
    for name in builtin_names():
        m = builtin(name)
        if m.OBS_DIM == obs_dim and m.ACT_DIM == act_dim:
            out.append(name)
    return out


def board_name(module):
    """A task module's (or a task file's path's) name on a board: its file's name (without .py),
    which deploy gives its copy in the board's microrl/tasks/ and ROLLOUT names; characters a
    module name cannot hold become _."""
    path = module if isinstance(module, str) else getattr(module, "__file__", None)
    stem = os.path.splitext(os.path.basename(path))[0] if path else str(module.NAME)
    name = "".join(c if (c.isascii() and c.isalnum()) or c == "_" else "_" for c in stem)
    return "task_" + name if name[:1].isdigit() else name


# ---------------------------------------------------------------- evaluation summaries


def has_summary(module):
    """Whether evaluations of the task report a success rate (its success() hook)."""
    return module is not None and hasattr(module, "success")


def summary_names(module):
    """(error key, termination key) of the task's evaluation summary."""
    return tuple(getattr(module, k, SUMMARY_DEFAULTS[k]) for k in ("ERROR_NAME", "TERMINATED_NAME"))


def summary(module, rows):
    """{success_rate, <ERROR_NAME>: median final error (when the task has final_error()),
    <TERMINATED_NAME>: the share of episodes that ended before EPISODE_STEPS} from evaluation
    rows of (return, success, final error, steps)."""
    import numpy as np

    rows = np.asarray(rows, dtype=np.float64).reshape(-1, 4)
    error, terminated = summary_names(module)
    out = {"success_rate": float(rows[:, 1].mean())}
    if hasattr(module, "final_error"):
        out[error] = float(np.median(rows[:, 2]))
    out[terminated] = float((rows[:, 3] < module.EPISODE_STEPS).mean())
    return out


def score(module, stats, mean_return):
    """What a run on a task with a success test keeps its best actor by: the success rate, then
    the smaller median final error (or, without final_error(), the larger mean return)."""
    error = summary_names(module)[0]
    second = -stats[error] if error in stats and not math.isnan(stats[error]) else mean_return
    return (stats["success_rate"], second)
