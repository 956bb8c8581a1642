"""Hostile settings for the host's trainers, through `microrl train` (real subprocesses): numbers
out of range and outputs that cannot be written are refused before any work; a run whose
networks become NaN stops, says at which step, keeps its last good checkpoint and writes no
policy; --resume with other settings than the checkpoint's is refused with the list."""
import json
import os
import re

import numpy as np
import pytest

from helpers import assert_refused
from helpers import run_microrl as microrl

from microrl_host.algos import checkpoint


@pytest.mark.parametrize("algo,args,words", [
    ("td3", ["--batch", "0"], ["batch must be a whole number >= 1, got 0"]),
    ("td3", ["--replay-capacity", "50", "--batch", "100"], ["replay_capacity (50) must be at least batch (100)"]),
    ("td3", ["--gamma", "5"], ["gamma must be in (0, 1], got 5.0"]),
    ("td3", ["--actor-lr", "nan", "--critic-lr", "inf"], ["actor_lr must be a finite number above 0, got nan", "critic_lr must be a finite number above 0, got inf"]),
    ("td3", ["--tau", "0", "--exploration-noise", "-1"], ["tau must be in (0, 1]", "exploration_noise must be a finite number >= 0"]),
    ("sac", ["--alpha-lr", "-1", "--initial-alpha", "0"], ["alpha_lr must be a finite number above 0", "initial_alpha must be a finite number above 0"]),
    ("ppo", ["--lr", "nan"], ["lr must be a finite number, got nan"]),
    # --lr-end was not checked: nan, inf, a negative share or one above 1 trained and wrote a policy
    ("td3", ["--set", "lr_end=nan"], ["lr_end must be a finite number from 0 to 1", "got nan"]),
    ("td3", ["--set", "lr_end=inf"], ["lr_end must be a finite number from 0 to 1", "got inf"]),
    ("td3", ["--set", "lr_end=-0.5"], ["lr_end must be a finite number from 0 to 1", "got -0.5"]),
    ("td3", ["--set", "lr_end=1.5"], ["lr_end must be a finite number from 0 to 1", "got 1.5"]),
])
def test_bad_settings_are_refused_before_any_work(tmp_path, algo, args, words):
    run = tmp_path / "run"
    proc = microrl("train", "pendulum" if algo != "ppo" else "inverted_pendulum", "--algo", algo, "--out", tmp_path / "p.mrlp", "--run-dir", run, *args)
    assert_refused(proc, *words)
    assert not run.exists()  # nothing was started


def test_outputs_that_cannot_be_written_are_refused_before_any_work(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    proc = microrl("train", "pendulum", "--out", blocker / "p.mrlp", "--run-dir", tmp_path / "run")
    assert_refused(proc, "--out", "is a file, not a folder")
    proc = microrl("train", "pendulum", "--out", tmp_path / "p.mrlp", "--run-dir", "/proc/microrl-run")
    assert_refused(proc, "--run-dir /proc/microrl-run", "cannot write in /proc")
    assert not (tmp_path / "run").exists() and not (tmp_path / "p.mrlp").exists()


@pytest.mark.parametrize("algo", ["td3", "sac"])
def test_a_diverging_run_stops_keeps_its_last_good_checkpoint_and_writes_no_policy(tmp_path, algo):
    run, out = tmp_path / "run", tmp_path / "p.mrlp"
    # the warm-up checkpoints at step 500; the first updates with learning rates of 1e30 blow
    # the networks up
    proc = microrl("train", "pendulum", "--algo", algo, "--steps", 3000, "--warmup", 1000, "--checkpoint-every", 500, "--eval-every", 0,
                   "--actor-lr", "1e30", "--critic-lr", "1e30", "--out", out, "--run-dir", run)
    assert proc.returncode == 2, proc.stderr
    found = re.search(r"diverged: \S+ became NaN or infinite between step (\d+) and step (\d+); stopped, no policy written; \S+ keeps the checkpoint of step (\d+)", proc.stderr)
    assert found, proc.stderr
    before, after, kept = (int(g) for g in found.groups())
    assert after == before + 500 and kept == before and before >= 500  # (SAC starts its updates before the warm-up ends)
    assert not out.exists()
    meta, arrays = checkpoint.read(str(run / "checkpoint.npz"))
    assert meta["step"] == kept
    assert all(np.isfinite(v).all() for k, v in arrays.items() if v.dtype.kind == "f")


def test_resume_with_other_settings_is_refused_and_lists_them(tmp_path):
    run, out = tmp_path / "run", tmp_path / "p.mrlp"
    proc = microrl("train", "pendulum", "--steps", 1500, "--hidden", "32,32", "--seed", 2, "--eval-episodes", 1, "--out", out, "--run-dir", run)
    assert proc.returncode == 0, proc.stderr
    proc = microrl("train", "pendulum", "--steps", 2000, "--resume", "--hidden", "64,64", "--seed", 3, "--actor-lr", "0.01", "--eval-episodes", 1, "--out", out, "--run-dir", run)
    assert_refused(proc, "other settings", "actor_lr: the checkpoint has 0.001, given 0.01", "hidden: the checkpoint has (32, 32), given (64, 64)", "seed: the checkpoint has 2, given 3")
    # the same settings, or none: resumed with the checkpoint's
    proc = microrl("train", "pendulum", "--steps", 2000, "--resume", "--hidden", "32,32", "--eval-episodes", 1, "--out", out, "--run-dir", run, "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["resumed_from"] == 1500 and result["seed"] == 2


def test_a_named_pipe_is_not_read_as_a_checkpoint(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    os.mkfifo(run / "checkpoint.npz")
    proc = microrl("train", "pendulum", "--steps", 2000, "--resume", "--out", tmp_path / "p.mrlp", "--run-dir", run, timeout=120)
    assert_refused(proc, "not a regular file")


def test_every_command_checks_its_output_before_any_work(tmp_path):
    from microrl import Policy, save

    policy = tmp_path / "p.mrlp"
    save(str(policy), Policy([3, 4, 1], ["relu", "tanh"]))
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    bad = blocker / "out"
    for args in (["export", policy, "--int16", "--out", bad], ["render", policy, "--out", bad],
                 ["train-on-board", "--port", "/dev/null", "--steps", 10, "--out", bad], ["demo", "--out", bad]):
        assert_refused(microrl(*args), "--out %s" % bad, "is a file, not a folder")


def test_json_nested_too_deep_for_the_parser_is_no_traceback(tmp_path):
    """bench/bad_command_lines.py's JSON nested 100,000 deep (Python's parser raises RecursionError,
    not ValueError), where a command reads JSON from the user's files: a run folder's run.json
    (plot: its title; train: what the folder holds; deploy: the policy's task) and an SB3 zip's
    'data'. Each ended in a RecursionError traceback."""
    import shutil
    import zipfile

    from helpers import PENDULUM_POLICY

    deep = "[" * 100000 + "]" * 100000
    plotted = tmp_path / "plotted"
    plotted.mkdir()
    (plotted / "progress.csv").write_text("step,episode_return,eval_mean,eval_std\n200,-1000,,\n1000,-800,-700,50\n")
    (plotted / "run.json").write_text(deep)
    proc = microrl("plot", plotted, "--out", tmp_path / "plot.png")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]  # the title falls back to the folder's name
    held = tmp_path / "held"
    held.mkdir()
    (held / "run.json").write_text(deep)
    (held / "checkpoint.npz").write_bytes(b"PK")
    assert_refused(microrl("train", "pendulum", "--steps", 300, "--out", tmp_path / "p.mrlp", "--run-dir", held), "holds", "--resume", "--overwrite")
    with zipfile.ZipFile(tmp_path / "model.zip", "w") as z:
        z.writestr("data", deep)
        z.writestr("policy.pth", b"x")
    # 'data' is read before torch is needed: the same line without the import extra (tests/test_import_hostile.py runs both)
    assert_refused(microrl("import", tmp_path / "model.zip", "--out", tmp_path / "i.mrlp"), "without readable 'data'")
    shutil.copy(PENDULUM_POLICY, tmp_path / "pr.mrlp")
    (tmp_path / "pr.run").mkdir()
    (tmp_path / "pr.run" / "run.json").write_text(deep)
    assert_refused(microrl("deploy", "--port", tmp_path / "no-port", "--policy", tmp_path / "pr.mrlp"), "no-port")
    assert not any((tmp_path / n).exists() for n in ("p.mrlp", "i.mrlp"))


@pytest.mark.parametrize("meta", [b"[" * 100000 + b"]" * 100000, b"[1]", b'"text"'], ids=["nested-100000-deep", "a-list", "a-string"])
def test_a_checkpoint_whose_meta_is_not_an_object_is_refused_in_one_line(tmp_path, meta):
    """--resume from a checkpoint.npz whose __meta__ is JSON nested too deep (RecursionError) or JSON
    but no object (meta.get: AttributeError): both ended in a traceback."""
    run = tmp_path / "run"
    run.mkdir()
    with open(run / "checkpoint.npz", "wb") as f:
        np.savez(f, __meta__=np.frombuffer(meta, np.uint8))
    proc = microrl("train", "pendulum", "--steps", 2000, "--resume", "--out", tmp_path / "p.mrlp", "--run-dir", run, timeout=120)
    assert_refused(proc, "is damaged or not a microrl checkpoint")
    assert not (tmp_path / "p.mrlp").exists()
