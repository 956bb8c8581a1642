"""microrl sweep: the jobs it makes, and a real local sweep of short PPO runs of 'microrl train'."""
import json
import os
import subprocess
import sys

import pytest

from helpers import ROOT, repo_env, run_cpython

def sweep(*argv, timeout=300):
    return run_cpython(["-m", "microrl_host.cli", "sweep"] + list(argv), timeout=timeout)


def test_jobs_are_seeds_times_grid(tmp_path):
    proc = sweep("ant", "--seeds", "1-3", "--grid", "lr=1e-4,3e-4", "--grid", "obs_norm=true,false", "--set", "envs=32", "--set", "hidden=64,64", "--steps", "1000", "--run-dir", str(tmp_path), "--dry-run")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 3 * 2 * 2
    assert sum("--set obs_norm=false" in l for l in lines) == 6
    assert all("--envs 32" in l and "--hidden 64,64" in l and "--steps 1000" in l for l in lines)
    assert sorted({l.split("--seed ")[1].split()[0] for l in lines}) == ["1", "2", "3"]


@pytest.mark.parametrize("argv, message", [
    (["--seeds", "a-b"], "--seeds takes a list"),
    (["--grid", "lr"], "--grid takes OPTION=V1,V2"),
    (["--grid", "seed=1,2"], "the sweep sets --seed itself"),
    (["--set", "envs="], "--set takes OPTION=VALUE"),
])
def test_bad_options_are_clear_errors(argv, message, tmp_path):
    proc = sweep("ant", "--run-dir", str(tmp_path), "--dry-run", *argv)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr


def test_local_sweep_runs_everything(tmp_path):
    pytest.importorskip("mujoco", reason="mujoco not installed: pip install 'microrl[mujoco]'")
    before = set(os.listdir(ROOT))
    proc = sweep("inverted_pendulum", "--seeds", "1,2", "--grid", "lr=3e-4,1e-3", "--steps", "1024", "--workers", "2", "--run-dir", str(tmp_path), "--quiet",
                 "--set", "envs=8", "--set", "hidden=16,16", "--set", "eval-every=1024", "--set", "eval-episodes=2", "--set", "threads=1")
    assert proc.returncode == 0, proc.stderr
    assert set(os.listdir(ROOT)) == before  # every job writes only inside its own run folder
    with open(tmp_path / "summary.json") as f:
        runs = json.load(f)["runs"]
    assert len(runs) == 4 and all(r["exit_code"] == 0 and r["final_eval"] is not None for r in runs)
    for r in runs:
        assert os.path.exists(os.path.join(r["run_dir"], "policy.mrlp"))
        with open(os.path.join(r["run_dir"], "run.json")) as f:
            config = json.load(f)["config"]
        assert config["lr"] == float(r["--lr"]) and config["seed"] == r["seed"] and config["envs"] == 8


def test_an_unknown_task_or_a_bad_train_setting_is_refused_before_any_run(tmp_path):
    run = tmp_path / "sweep"
    proc = sweep("antt", "--seeds", "1", "--run-dir", str(run), "--quiet")
    assert proc.returncode == 2 and "unknown task 'antt'" in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    proc = sweep("pendulum", "--algo", "td3", "--seeds", "1", "--set", "batch=0", "--run-dir", str(run), "--quiet")
    assert proc.returncode == 2 and "the runs' train arguments: batch must be a whole number >= 1, got 0" in proc.stderr, proc.stderr
    assert not run.exists()


def test_a_failing_run_fails_the_sweep_with_its_message(tmp_path):
    # learning rates of 1e30 pass every check and blow the networks up at the first updates
    proc = sweep("pendulum", "--algo", "td3", "--seeds", "1", "--steps", "3000", "--set", "warmup=1000", "--set", "actor-lr=1e30",
                 "--set", "critic-lr=1e30", "--set", "eval-every=0", "--run-dir", str(tmp_path), "--quiet")
    assert proc.returncode == 2 and "1 of 1 runs failed" in proc.stderr and "diverged" in proc.stderr, proc.stderr


def test_ray_missing_or_present(tmp_path):
    """Without Ray: a clear error. With Ray installed: a real local Ray run of two short jobs."""
    try:
        import ray  # noqa: F401
    except ImportError:
        proc = sweep("inverted_pendulum", "--seeds", "1", "--run-dir", str(tmp_path), "--ray", "local", "--quiet")
        assert proc.returncode == 2 and "pip install 'microrl[ray]'" in proc.stderr
        return
    pytest.importorskip("mujoco", reason="mujoco not installed: pip install 'microrl[mujoco]'")
    before = set(os.listdir(ROOT))
    proc = sweep("inverted_pendulum", "--seeds", "1,2", "--steps", "1024", "--run-dir", str(tmp_path), "--ray", "local", "--quiet",
                 "--set", "envs=8", "--set", "hidden=16,16", "--set", "eval-every=1024", "--set", "eval-episodes=2", "--set", "threads=1", timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(tmp_path / "summary.json") as f:
        runs = json.load(f)["runs"]
    assert all(r["exit_code"] == 0 and r["final_eval"] is not None for r in runs)
    assert all(os.path.exists(os.path.join(r["run_dir"], "policy.mrlp")) for r in runs)


def test_folders_of_a_module_id_task_have_portable_names(tmp_path):
    # a gymnasium `module:Id` task: no colon (refused by Windows filesystems) in the default folder
    pytest.importorskip("gymnasium")
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "mypkg" / "envs.py").write_text(
        "import gymnasium as gym\n"
        "gym.register('Swing-v0', entry_point='gymnasium.envs.classic_control.pendulum:PendulumEnv', max_episode_steps=50)\n")
    proc = subprocess.run([sys.executable, "-m", "microrl_host.cli", "sweep", "mypkg.envs:Swing-v0", "--algo", "td3", "--seeds", "0",
                           "--grid", "exploration-noise=0.1,0.3", "--dry-run"], capture_output=True, text=True, timeout=300, env=repo_env(), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    folders = [line.split("--run-dir ")[1] for line in proc.stdout.strip().splitlines()]
    assert len(folders) == 2
    for folder in folders:
        parts = folder.split(os.sep)
        assert parts[0] == "sweeps" and parts[1].startswith("mypkg.envs_swing-v0-td3-"), folder
        assert not any(c in folder for c in ':*?"<>|\\ '), folder
    assert sorted(os.path.basename(f) for f in folders) == ["exploration-noise=0.1_seed0", "exploration-noise=0.3_seed0"]


def test_a_sweep_resolves_its_task_as_train_does(tmp_path):
    """`microrl sweep quadrotor` said "unknown MuJoCo task 'quadrotor'" (issue 40): a sweep takes
    every task train takes, and its algorithm is the task's suggestion unless --algo names one."""
    proc = sweep("quadrotor", "--seeds", "0-1", "--steps", "1000", "--run-dir", str(tmp_path / "q"), "--quiet", timeout=900)
    assert proc.returncode == 0, proc.stderr
    with open(tmp_path / "q" / "summary.json") as f:
        summary = json.load(f)
    assert summary["algo"] == "ppo" and [r["exit_code"] for r in summary["runs"]] == [0, 0]
    proc = sweep("pendulum", "--seeds", "0", "--run-dir", str(tmp_path / "p"), "--dry-run")
    assert proc.returncode == 0 and "--algo td3" in proc.stdout, proc.stderr
    proc = sweep("hopper", "--seeds", "0", "--set", "envs=32", "--run-dir", str(tmp_path / "h"), "--dry-run")
    assert proc.returncode == 0 and "--algo ppo" in proc.stdout, proc.stderr
