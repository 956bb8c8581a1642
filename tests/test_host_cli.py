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
    assert_user_error(microrl("eval", out), "--env")
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
