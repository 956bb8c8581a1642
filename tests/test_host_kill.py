"""A training process killed with SIGKILL at random moments never leaves a half-written
checkpoint or policy, and resuming (as often as it takes) ends with exactly the policy of an
uninterrupted run."""
import os
import random
import signal
import subprocess
import sys
import time

from helpers import ROOT, repo_env

STEPS = 6000
EVERY = 250


def command(out, resume):
    cmd = [sys.executable, "-m", "microrl_host.cli", "train", "pendulum", "--steps", str(STEPS), "--seed", "2", "--checkpoint-every", str(EVERY), "--eval-every", "500", "--out", str(out), "--quiet"]
    return cmd + (["--resume"] if resume else [])


def wait_for_training(proc, log, size0, timeout=120):
    """Until the run logs its first episode (progress.csv grows past its size at launch)."""
    end = time.time() + timeout
    while time.time() < end and proc.poll() is None:
        if os.path.exists(log) and os.path.getsize(log) > max(size0, 60):
            return
        time.sleep(0.02)


def check_whole(out, ckpt):
    """Whatever is on disk after a kill loads completely."""
    from microrl.policy import load
    from microrl_host.algos.checkpoint import read as read_checkpoint

    if os.path.exists(ckpt):
        meta, arrays = read_checkpoint(str(ckpt))
        assert meta["step"] % EVERY == 0 and int(arrays["counters"][0]) == meta["step"]
    if os.path.exists(out):
        load(str(out))


def test_sigkill_at_random_moments_always_resumes(tmp_path):
    ref = tmp_path / "ref.mrlp"
    proc = subprocess.run(command(ref, False), env=repo_env(), cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rnd = random.Random(1234)
    kills = 0
    resumed = 0
    for trial in range(4):
        out = tmp_path / ("t%d.mrlp" % trial)
        ckpt = tmp_path / ("t%d.run" % trial) / "checkpoint.npz"
        for attempt in range(10):
            resume = os.path.exists(ckpt)
            resumed += resume
            log = tmp_path / ("t%d.run" % trial) / "progress.csv"
            size0 = os.path.getsize(log) if resume and os.path.exists(log) else 0
            p = subprocess.Popen(command(out, resume), env=repo_env(), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            if attempt < 2:
                wait_for_training(p, log, size0)  # however long start-up takes on a loaded machine
                time.sleep(rnd.uniform(0.0, 0.3))  # training takes about 0.7 s after that
                if p.poll() is None:
                    p.send_signal(signal.SIGKILL)
                    kills += 1
                p.wait()
                p.stderr.close()
                check_whole(out, ckpt)
                continue
            _, err = p.communicate(timeout=300)
            assert p.returncode == 0, err.decode()
            break
        assert out.read_bytes() == ref.read_bytes(), "trial %d: resumed run differs from the uninterrupted one" % trial
        from microrl_host.runlog import read_progress

        evals = [r["step"] for r in read_progress(str(tmp_path / ("t%d.run" % trial))) if r["eval_mean"] is not None]
        assert evals == sorted(set(evals)) and evals[-1] == STEPS  # no duplicate rows after resumes
    assert kills >= 4 and resumed >= 2, (kills, resumed)  # the kills really landed mid-run
