"""`microrl train / eval / plot / render` end to end (real subprocesses, short runs), resume,
and the errors a user gets for bad input."""
import json
import os

import pytest

from helpers import run_cpython, trained_pendulum_policy


def microrl(*args, cwd=None, timeout=300):
    proc = run_cpython(["-m", "microrl_host.cli"] + [str(a) for a in args], timeout=timeout)
    return proc


def assert_user_error(proc, *words):
    """Exit 2 with one line naming the problem, no traceback."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    for w in words:
        assert w in proc.stderr, (w, proc.stderr)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One short TD3 run on the compiled Pendulum, shared by the tests below."""
    folder = tmp_path_factory.mktemp("train")
    out = folder / "pendulum.mrlp"
    proc = microrl("train", "pendulum", "--algo", "td3", "--steps", 1500, "--seed", 3, "--out", out, "--eval-every", 500, "--checkpoint-every", 500, "--json")
    assert proc.returncode == 0, proc.stderr
    return out, json.loads(proc.stdout)


def test_train_writes_policy_run_folder_and_json(trained):
    out, result = trained
    run = str(out)[:-len(".mrlp")] + ".run"
    assert result["steps"] == 1500 and result["algo"] == "td3" and result["task"] == "pendulum"
    assert result["train_s"] > 0 and result["compile_s"] >= 0 and result["eval_mean"] < 0
    assert os.path.exists(os.path.join(run, "checkpoint.npz"))
    meta = json.load(open(os.path.join(run, "run.json")))
    assert meta["algo"] == "td3" and meta["seed"] == 3
    from microrl_host.runlog import read_progress

    rows = read_progress(run)
    assert [r["step"] for r in rows if r["eval_mean"] is not None] == [500, 1000, 1500]
    assert sum(r["episode_return"] is not None for r in rows) == 7  # 200-step episodes


ONE_SHAPE_RUNS = {
    "td3": ("pendulum", 300, ["--warmup", 100]),
    "sac": ("pendulum", 300, []),
    "ppo": ("inverted_pendulum", 128, ["--envs", 4, "--rollout-steps", 16, "--hidden", "8,8"]),
}


@pytest.mark.parametrize("algo", sorted(ONE_SHAPE_RUNS))
def test_train_json_has_one_shape_for_every_algorithm(tmp_path, algo):
    """`microrl train --json` gives the same keys (docs/training.md, "Results") for every algorithm."""
    from microrl_host.algos.results import KEYS, PACKAGES

    task, steps, extra = ONE_SHAPE_RUNS[algo]
    if algo == "ppo":
        pytest.importorskip("mujoco", reason="mujoco not installed: pip install 'microrl[mujoco]'")
    out = tmp_path / ("%s.mrlp" % algo)
    proc = microrl("train", task, "--algo", algo, "--steps", steps, "--seed", 2, "--eval-every", steps, "--eval-episodes", 1, "--out", out, "--json", *extra)
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert sorted(r) == sorted(KEYS)
    assert r["algo"] == algo and r["steps"] == steps and r["seed"] == 2 and r["resumed_from"] is None
    assert r["policy"] == str(out) and out.exists() and os.path.exists(os.path.join(r["run_dir"], "progress.csv"))
    assert r["wall_s"] >= r["train_s"] + r["compile_s"] + r["eval_s"] - 1e-6 and r["train_s"] > 0 and r["train_cpu_s"] > 0
    assert r["steps_per_s"] == pytest.approx(steps / r["train_s"])
    assert r["evals"] == [[steps, r["eval_mean"], r["eval_std"]]]
    assert sorted(r["versions"]) == sorted(("microrl", "python") + PACKAGES)
    assert r["versions"]["numpy"] and r["versions"]["microrl"]
    assert r["versions"]["numba" if algo != "ppo" else "mujoco"]
    # the policy file carries 8 reference vectors (observations the run met, the policy's actions)
    from microrl.policy import load

    policy = load(str(out), check=True)
    assert policy.reference_count == 8 and policy.reference_difference <= 1e-4


def test_eval_json_on_device_core_and_gymnasium():
    out = trained_pendulum_policy()
    proc = microrl("eval", out, "--episodes", 3, "--json")
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert r["env"] == "pendulum" and len(r["returns"]) == 3
    assert abs(r["mean"] - sum(r["returns"]) / 3) < 1e-6 and r["std"] >= 0
    proc = microrl("eval", out, "--episodes", 2, "--env", "Pendulum-v1")
    assert proc.returncode == 0, proc.stderr
    assert "Pendulum-v1" in proc.stdout and "+-" in proc.stdout


def test_plot_writes_png(trained, tmp_path):
    out, _ = trained
    png = tmp_path / "curve.png"
    proc = microrl("plot", str(out)[:-len(".mrlp")] + ".run", "--out", png)
    assert proc.returncode == 0, proc.stderr
    from PIL import Image

    with Image.open(png) as im:
        assert im.format == "PNG" and im.size[0] >= 400


def test_render_writes_gif(tmp_path):
    out = trained_pendulum_policy()
    gif = tmp_path / "p.gif"
    proc = microrl("render", out, "--out", gif, "--size", 64)
    assert proc.returncode == 0, proc.stderr
    from PIL import Image

    with Image.open(gif) as im:
        assert im.format == "GIF" and im.n_frames == 201 and im.size == (64, 64)


@pytest.mark.parametrize("algo", ["td3", "sac"])
def test_resume_continues_exactly(tmp_path, algo):
    """600 steps, then --resume to 1200, gives the very policy of 1200 steps in one go."""
    a, b = tmp_path / "a.mrlp", tmp_path / "b.mrlp"
    common = ["--algo", algo, "--seed", 1, "--quiet", "--eval-every", 400]
    assert microrl("train", "pendulum", "--steps", 600, "--out", a, *common).returncode == 0
    proc = microrl("train", "pendulum", "--steps", 1200, "--out", a, "--resume", "--json", *common)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["resumed_from"] == 600
    assert microrl("train", "pendulum", "--steps", 1200, "--out", b, *common).returncode == 0
    assert a.read_bytes() == b.read_bytes()
    from microrl_host.runlog import read_progress

    steps = [r["step"] for r in read_progress(str(a)[:-len(".mrlp")] + ".run") if r["eval_mean"] is not None]
    assert steps == [400, 600, 800, 1200]


def test_gymnasium_env_trains_and_evaluates(tmp_path):
    out = tmp_path / "mc.mrlp"
    proc = microrl("train", "MountainCarContinuous-v0", "--steps", 300, "--warmup", 150, "--batch", 32, "--out", out, "--eval-every", 0, "--eval-episodes", 1, "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["task"] == "MountainCarContinuous-v0"
    from microrl.policy import load

    p = load(str(out))
    assert (p.obs_dim, p.act_dim) == (2, 1)
    assert_user_error(microrl("eval", out), "--task")  # --env, its earlier name, still works below
    proc = microrl("eval", out, "--env", "MountainCarContinuous-v0", "--episodes", 1, "--json")
    assert proc.returncode == 0, proc.stderr


def test_bad_command_lines(tmp_path):
    assert_user_error(microrl("train", "pendulum", "--steps", "many", "--out", tmp_path / "x.mrlp"), "--steps")
    assert_user_error(microrl("train", "pendulum", "--hidden", "64,abc", "--out", tmp_path / "x.mrlp"), "--hidden")
    assert_user_error(microrl("train", "NoSuchEnv-v9", "--out", tmp_path / "x.mrlp"), "unknown task", "pendulum")
    assert_user_error(microrl("train", "CartPole-v1", "--out", tmp_path / "x.mrlp"), "continuous")
    assert_user_error(microrl("train", "pendulum", "--algo", "nope", "--out", tmp_path / "x.mrlp"), "td3", "sac")
    assert_user_error(microrl("train", "pendulum", "--algo", "sac", "--policy-delay", 3, "--out", tmp_path / "x.mrlp"), "--policy-delay")
    assert_user_error(microrl("eval", tmp_path / "missing.mrlp"), "no policy file")
    assert_user_error(microrl("plot", tmp_path), "progress.csv")


def test_ppo_unavailable_says_so(tmp_path):
    from microrl_host.commands import train

    if "ppo" in train.available():
        pytest.skip("PPO is installed here")
    assert_user_error(microrl("train", "pendulum", "--algo", "ppo", "--out", tmp_path / "x.mrlp"), "ppo", "not available")


def test_missing_corrupt_or_foreign_checkpoint(tmp_path, trained):
    out = tmp_path / "r.mrlp"
    assert_user_error(microrl("train", "pendulum", "--out", out, "--resume"), "no checkpoint", "without --resume")
    os.makedirs(tmp_path / "r.run")
    ckpt = tmp_path / "r.run" / "checkpoint.npz"
    ckpt.write_bytes(b"not a checkpoint at all")
    assert_user_error(microrl("train", "pendulum", "--out", out, "--resume"), "damaged")
    good = open(str(trained[0])[:-len(".mrlp")] + ".run/checkpoint.npz", "rb").read()
    ckpt.write_bytes(good[: len(good) // 2])  # cut short
    assert_user_error(microrl("train", "pendulum", "--out", out, "--resume"), "damaged")
    ckpt.write_bytes(good)
    assert_user_error(microrl("train", "pendulum", "--algo", "sac", "--out", out, "--resume"), "td3")
    assert_user_error(microrl("train", "pendulum", "--out", out, "--resume", "--steps", 100), "beyond --steps")
    bad = tmp_path / "bad.mrlp"
    bad.write_bytes(open(trained[0], "rb").read()[:100])
    assert_user_error(microrl("eval", bad), "truncated")


def test_compile_notice_shows_only_when_compiling_takes_long():
    """While the training loop compiles the command says so; a quick cache load shows nothing."""
    import io
    import time

    from microrl_host.commands.progress import CompileNotice

    text = "compiling the training loop, first run only (numba caches it)"
    slow = io.StringIO()
    notice = CompileNotice(text, stream=slow, delay=0.05)
    time.sleep(0.3)
    notice.stop()
    lines = slow.getvalue().splitlines()
    assert lines[0] == text + "..." and lines[1].startswith("ready after ")
    quick = io.StringIO()
    CompileNotice(text, stream=quick, delay=5.0).stop()
    assert quick.getvalue() == ""


def test_console_script_returns_the_command_code_and_freezes_the_heap(monkeypatch):
    # entry() is what `microrl` and `python -m microrl_host.cli` run: main()'s exit code, with the
    # objects left frozen so that the interpreter's exit does not scan them again
    from microrl_host import cli

    frozen = []
    monkeypatch.setattr(cli.gc, "freeze", lambda: frozen.append(True))
    monkeypatch.setattr(cli.sys, "argv", ["microrl", "train", "pendulum", "--algo", "nonsense"])
    assert cli.entry() == 2 and frozen == [True]  # a user error's code
    monkeypatch.setattr(cli.sys, "argv", ["microrl"])
    assert cli.entry() == 0 and frozen == [True, True]
