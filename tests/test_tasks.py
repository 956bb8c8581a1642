"""The task interface (docs/tasks.md) on the host: every built-in task compiles to the device
core's numbers; the registry finds built-in names, a user's file and module from the current
folder (no PYTHONPATH), and gymnasium ids, `module:Id` and Env instances; a user's task trains,
evaluates, renders and exports through the commands as a built-in one does; an edited task
never runs stale compiled code."""
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from helpers import DEVICE, ROOT, repo_env

from microrl.rng import Rng
from microrl.task import Env
from microrl_host import tasks

BUILTIN = tasks.builtin_names()


def user_task_source(name):
    """The source of the built-in Pendulum as a user's own file would hold it, under another NAME."""
    with open(os.path.join(DEVICE, "microrl", "tasks", "pendulum.py")) as f:
        text = f.read()
    text = text.replace("from ..compat import const", "from microrl.compat import const")
    return text.replace('NAME = "pendulum"', "NAME = %r" % name)


def docs_example_source():
    """The task file docs/tasks.md walks through (slider.py)."""
    with open(os.path.join(ROOT, "docs", "tasks.md")) as f:
        return re.search(r"```python\n(# slider\.py.*?)```", f.read(), re.S).group(1)


def microrl(*args, cwd=None, **env):
    """The command in the folder cwd, with the checkout's code on the path (and nothing of cwd's)."""
    return subprocess.run([sys.executable, "-m", "microrl_host.cli"] + [str(a) for a in args], capture_output=True, text=True, timeout=600, env=repo_env(**env), cwd=cwd)


def test_the_builtin_tasks_are_the_device_cores_modules():
    assert {"pendulum", "quadrotor"} <= set(BUILTIN)
    for name in BUILTIN:
        found = tasks.resolve(name)
        assert found.compiled and found.module.NAME == name
        tasks.check(found.module)
    assert tasks.resolve("PENDULUM").name == "pendulum"


@pytest.mark.parametrize("name", BUILTIN + ["docs/tasks.md"])
def test_a_compiled_task_steps_as_the_device_core_does(name, tmp_path):
    """The task's reset and step compiled by numba (as the training loop compiles them) give the
    same numbers as the device core's runner, from the same uniforms and actions, bit for bit,
    actions beyond the range included: every built-in task, and the docs' example."""
    from numba import njit

    from microrl_host.envs.task import register

    if name == "docs/tasks.md":
        (tmp_path / "slider.py").write_text(docs_example_source())
        module = tasks.resolve(str(tmp_path / "slider.py")).module
    else:
        module = tasks.builtin(name)
    register(module)
    reset, step = njit(module.reset), njit(module.step)
    env = Env(module, rng=Rng(3))
    P = np.array(module.PARAMETERS, np.float64)
    s = np.zeros(module.STATE_DIM)
    obs = np.zeros(module.OBS_DIM, np.float32)
    low, high = np.array(module.ACTION_LOW), np.array(module.ACTION_HIGH)
    rng = np.random.default_rng(5)
    steps = 0
    for episode in range(3):
        ref = env.reset()
        reset(P, s, np.array(env.u), obs)
        assert np.array_equal(obs, np.array(ref, np.float32)) and np.array_equal(s, np.array(env.s))
        done = False
        while not done and steps < 1500:
            a = low + (high - low) * rng.uniform(-0.1, 1.1, module.ACT_DIM)
            ref, r_ref, term_ref, trunc_ref = env.step(list(a))
            r, term, trunc = step(P, s, np.array(env.a), np.array(env.u), obs)
            assert (r, term, trunc) == (r_ref, term_ref, trunc_ref)
            assert np.array_equal(s, np.array(env.s)) and np.array_equal(obs, np.array(ref, np.float32))
            done = term or trunc
            steps += 1
    assert steps > 100


def test_one_resolver_knows_every_kind_of_task():
    """tasks.resolve is the one place a task's name is read (issue 40): built-in names first,
    then MuJoCo families by any spelling (PPO's suggestion: their compiled copies are PPO's),
    then gymnasium ids; a Found passes through as it is."""
    quad = tasks.resolve("Quadrotor")
    assert (quad.kind, quad.name, quad.algo) == ("task", "quadrotor", "ppo")
    assert tasks.resolve("pendulum").kind == "task"  # not MuJoCo's InvertedPendulum
    for name, gym_id in (("ant", "Ant-v5"), ("ANT-V4", "Ant-v4"), ("half_cheetah", "HalfCheetah-v5"), ("inverted_pendulum", "InvertedPendulum-v5")):
        found = tasks.resolve(name)
        assert (found.kind, found.name, found.gym, found.algo) == ("mujoco", gym_id, gym_id, "ppo")
    gym = tasks.resolve("Pendulum-v1")
    assert (gym.kind, gym.gym, gym.algo) == ("gym", "Pendulum-v1", None)
    assert tasks.resolve(quad) is quad
    assert tasks.mujoco_id("antt") is None


def test_the_registry_finds_files_and_modules_from_the_current_folder(tmp_path, monkeypatch):
    (tmp_path / "mytask.py").write_text(user_task_source("mytask"))
    pkg = tmp_path / "robots"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "swing.py").write_text(user_task_source("swing"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    found = tasks.resolve("./mytask.py")
    assert found.compiled and found.name == "mytask" and found.source == str(tmp_path / "mytask.py")
    assert tasks.resolve(str(tmp_path / "mytask.py")).name == "mytask"
    assert tasks.resolve("robots:swing").name == "swing"  # an attribute (here a submodule) that is a task
    assert tasks.resolve("robots.swing").name == "swing"
    assert tasks.resolve("Pendulum-v1").gym_id == "Pendulum-v1"
    _refused(tasks.UnknownTask, "no task file", "./nothing.py")
    (tmp_path / "broken.py").write_text("NAME = 'broken'\nOBS_DIM = 3\n")
    _refused(tasks.TaskError, "lacks ACT_DIM", "broken.py")
    (tmp_path / "relative.py").write_text("from ..compat import const\n")
    _refused(tasks.TaskError, "microrl.compat", "./relative.py")


def _refused(error, match, spec):
    """tasks.resolve(spec) raises error, its message matching match."""
    with pytest.raises(error, match=match):
        tasks.resolve(spec)


def test_a_file_that_is_no_task_is_refused_in_one_line_and_leaves_nothing(tmp_path, monkeypatch):
    """Issue 30's rule for task files (found merging q-cli into m-core's registry): a file not
    ending in .py ended in a traceback (importlib gave no loader), a file calling sys.exit ended
    the command with its code, and one failing at import left a __pycache__ beside it."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("not a task\n")
    _refused(tasks.TaskError, "not a Python file", "./notes.txt")
    (tmp_path / "exits.py").write_text("import sys\nsys.exit(3)\n")
    _refused(tasks.TaskError, "exited", "./exits.py")
    (tmp_path / "raises.py").write_text("NAME = 'raises'\nraise RuntimeError('no robot here')\n")
    _refused(tasks.TaskError, "no robot here", "./raises.py")
    assert sorted(os.listdir(tmp_path)) == ["exits.py", "notes.txt", "raises.py"]
    for argv in (["eval", os.path.join(ROOT, "tests", "data", "pendulum_td3.mrlp"), "--task", "./notes.txt"], ["train", "./exits.py", "--steps", "100"]):
        r = subprocess.run([sys.executable, "-m", "microrl_host.cli"] + argv, capture_output=True, text=True, env=repo_env(), cwd=tmp_path)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
    assert sorted(os.listdir(tmp_path)) == ["exits.py", "notes.txt", "raises.py"]


def test_a_users_task_file_goes_through_every_command(tmp_path):
    """train, eval, render and export on a task file in the current folder, no PYTHONPATH for it;
    the run is the built-in Pendulum's run bit for bit (same source but its NAME)."""
    (tmp_path / "mypendulum.py").write_text(user_task_source("mypendulum"))
    proc = microrl("train", "./mypendulum.py", "--steps", 1200, "--seed", 4, "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    assert r["task"] == "mypendulum" and r["steps"] == 1200 and os.path.exists(tmp_path / "mypendulum-td3.mrlp")
    proc = microrl("train", "pendulum", "--steps", 1200, "--seed", 4, "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "mypendulum-td3.mrlp").read_bytes() == (tmp_path / "pendulum-td3.mrlp").read_bytes()
    proc = microrl("eval", "mypendulum-td3.mrlp", "--task", "mypendulum.py", "--episodes", 2, "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["env"] == "mypendulum"
    proc = microrl("render", "mypendulum-td3.mrlp", "--task", "./mypendulum.py", "--size", 64, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "mypendulum-td3.gif").read_bytes()[:3] == b"GIF"
    proc = microrl("export", "mypendulum-td3.mrlp", "--int16", "--task", "./mypendulum.py", "--eval-episodes", 2, "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["task"] == "mypendulum"


def test_the_docs_example_loads_from_numbas_cache_as_a_built_in_does(tmp_path):
    """docs/tasks.md's slider.py: trained in one process (compiling its loop and evaluation), then
    in another, which loads both from numba's disk cache (numba names a module it cannot import
    '<dynamic>', and no later process could load such code) and writes the same policy; eval
    reports its success rate from the cached evaluation."""
    (tmp_path / "slider.py").write_text(docs_example_source())
    outs = []
    for k in range(2):
        proc = microrl("train", "./slider.py", "--steps", 1500, "--eval-every", 1500, "--json", "--out", "s%d.mrlp" % k, cwd=tmp_path, NUMBA_DEBUG_CACHE="1")
        assert proc.returncode == 0, proc.stderr[-3000:]
        outs.append((tmp_path / ("s%d.mrlp" % k)).read_bytes())
    loaded = [line for line in proc.stdout.splitlines() if "data loaded from" in line]
    assert any("run_task_slider_" in line for line in loaded) and any("evaluate_task_slider_" in line for line in loaded), proc.stdout[-3000:]
    assert outs[0] == outs[1]
    proc = microrl("eval", "s1.mrlp", "--task", "./slider.py", "--episodes", 3, "--json", cwd=tmp_path, NUMBA_DEBUG_CACHE="1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "evaluate_task_slider_" in proc.stdout and 0.0 <= json.loads(proc.stdout.strip().splitlines()[-1])["success_rate"] <= 1.0


def test_an_edited_task_never_runs_stale_compiled_code(tmp_path):
    """The compiled loop and evaluation are cached under a hash of the task's source: after an
    edit (rewards doubled) a new process runs the edited task, not the disk cache's old code."""
    task = tmp_path / "edited.py"
    returns = []
    for factor in ("1.0", "2.0"):
        task.write_text(user_task_source("edited").replace("return newth, newthdot, -cost", "return newth, newthdot, -%s * cost" % factor))
        # 300 steps, all warm-up: the evaluated actor is the seed's initial one in both runs
        proc = microrl("train", "./edited.py", "--steps", 300, "--eval-every", 300, "--json", "--out", "e%s.mrlp" % factor, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr[-3000:]
        returns.append(json.loads(proc.stdout.strip().splitlines()[-1])["evals"][-1][1])
    assert returns[1] == 2.0 * returns[0] != 0.0


def test_a_gymnasium_env_by_module_and_id_from_the_current_folder(tmp_path):
    """`microrl train mymodule:MyEnv-v0`: the module registers its env on import and is found in
    the current folder without PYTHONPATH."""
    pytest.importorskip("gymnasium")
    (tmp_path / "myenvs.py").write_text(
        "import gymnasium as gym\n"
        "gym.register('MyPendulum-v0', entry_point='gymnasium.envs.classic_control.pendulum:PendulumEnv', max_episode_steps=50)\n")
    proc = microrl("train", "myenvs:MyPendulum-v0", "--steps", 150, "--eval-every", 150, "--eval-episodes", 1, "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    assert r["task"] == "MyPendulum-v0" and r["steps"] == 150 and os.path.exists(tmp_path / "mypendulum-v0-td3.mrlp")


def test_the_python_api_takes_a_gymnasium_env_instance():
    """An Env in place of a task name trains (the issue: AttributeError: 'TimeLimit' object has
    no attribute 'lower'), evaluates on a fresh copy made from its spec, and is left open."""
    gym = pytest.importorskip("gymnasium")
    from microrl_host.algos import td3

    env = gym.make("Pendulum-v1", max_episode_steps=40)
    run = td3.ALGO.run(env, steps=120, eval_every=120, eval_episodes=1, threads=1)
    assert run.stats["task"] == "Pendulum-v1" and run.stats["steps"] == 120 and len(run.evals) == 1
    env.reset(seed=0)  # still open: a user's Env stays theirs


def test_a_task_with_success_summarises_its_evaluations():
    from microrl.tasks import quadrotor

    rows = [(1.0, 1, 0.05, 500), (2.0, 0, 0.30, 120), (3.0, 1, 0.02, 500)]
    s = tasks.summary(quadrotor, rows)
    assert s == {"success_rate": 2 / 3, "position_error_m": 0.05, "crash_rate": 1 / 3}
    assert tasks.score(quadrotor, s, -5.0) == (2 / 3, -0.05)
    assert not tasks.has_summary(tasks.builtin("pendulum"))


def test_a_checkpoint_with_another_layout_of_the_task_is_refused(tmp_path):
    """A checkpoint whose task state has another length (main's Pendulum kept theta, speed, step
    and return; now its parameters, state, uniforms and action) is refused with a way out."""
    from microrl_host.algos import checkpoint, td3

    run_dir = tmp_path / "run"
    td3.ALGO.run("pendulum", steps=300, eval_every=0, eval_episodes=0, run_dir=str(run_dir), threads=1)
    path = str(run_dir / "checkpoint.npz")
    meta, arrays = checkpoint.read(path)
    arrays["env"] = arrays["env"][:4]
    checkpoint.write(path, meta, arrays)
    with pytest.raises(checkpoint.CheckpointError, match="another layout.*start a new run"):
        td3.ALGO.run("pendulum", steps=600, eval_every=0, eval_episodes=0, run_dir=str(run_dir), resume=True, threads=1)
