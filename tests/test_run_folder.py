"""`microrl train` and `microrl sweep` never replace an earlier run without a word: a run folder
that holds a checkpoint is refused unless --resume continues it or --overwrite starts again."""
import json
import os

from helpers import run_cpython


def microrl(*args, timeout=300):
    return run_cpython(["-m", "microrl_host.cli"] + [str(a) for a in args], timeout=timeout)


SHORT = ("--steps", 1100, "--eval-every", 1100, "--eval-episodes", 1)


def _files(folder):
    return {n: (folder / n).read_bytes() for n in sorted(os.listdir(str(folder)))}


def test_train_refuses_a_folder_that_holds_a_run_then_resumes_or_overwrites_it(tmp_path):
    out = tmp_path / "p.mrlp"
    run = tmp_path / "p.run"
    first = microrl("train", "pendulum", "--seed", 1, "--out", out, *SHORT)
    assert first.returncode == 0, first.stderr
    before, policy = _files(run), out.read_bytes()
    again = microrl("train", "pendulum", "--seed", 2, "--out", out, *SHORT)
    assert again.returncode == 2 and "Traceback" not in again.stderr, again.stderr
    assert len(again.stderr.strip().splitlines()) == 1, again.stderr
    for words in ("already holds a run", "td3 on pendulum, seed 1, 1100 steps", "--resume", "--overwrite"):
        assert words in again.stderr, (words, again.stderr)
    assert _files(run) == before and out.read_bytes() == policy  # nothing touched
    both = microrl("train", "pendulum", "--out", out, "--resume", "--overwrite", *SHORT)
    assert both.returncode == 2 and "give one" in both.stderr, both.stderr
    # --overwrite: a new run in its place (its seed and steps), a fresh learning curve
    fresh = microrl("train", "pendulum", "--seed", 2, "--out", out, "--overwrite", "--json", "--steps", 1200, "--eval-every", 1200, "--eval-episodes", 1)
    assert fresh.returncode == 0, fresh.stderr
    with open(str(run / "run.json")) as f:
        meta = json.load(f)
    assert meta["seed"] == 2 and meta["steps"] == 1200
    evals = [line.split(",")[0] for line in (run / "progress.csv").read_text().splitlines()[1:] if line.split(",")[3]]
    assert evals == ["1200"], evals
    # --resume continues it
    more = microrl("train", "pendulum", "--out", out, "--resume", "--json", "--steps", 1300, "--eval-every", 1300, "--eval-episodes", 1)
    assert more.returncode == 0 and json.loads(more.stdout.strip().splitlines()[-1])["resumed_from"] == 1200, more.stderr


def test_a_run_killed_before_its_first_checkpoint_is_started_again(tmp_path):
    # run.json and progress.csv but no checkpoint: nothing --resume could continue, nothing to lose
    run = tmp_path / "k.run"
    run.mkdir()
    (run / "run.json").write_text("{}")
    (run / "progress.csv").write_text("step,time_s,episode_return,eval_mean,eval_std\n")
    proc = microrl("train", "pendulum", "--out", tmp_path / "k.mrlp", *SHORT)
    assert proc.returncode == 0, proc.stderr
    assert (run / "checkpoint.npz").exists()


def test_sweep_refuses_a_folder_whose_runs_it_would_replace(tmp_path):
    first = tmp_path / "seed0"
    first.mkdir()
    (first / "checkpoint.npz").write_bytes(b"a run's checkpoint")
    proc = microrl("sweep", "pendulum", "--algo", "td3", "--seeds", "0-1", "--steps", 1100, "--run-dir", tmp_path, "--quiet")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "already holds" in proc.stderr and "seed0" in proc.stderr and "--run-dir" in proc.stderr, proc.stderr
    assert (first / "checkpoint.npz").read_bytes() == b"a run's checkpoint" and sorted(os.listdir(str(tmp_path))) == ["seed0"]
