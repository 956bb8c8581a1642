"""The quadrotor end to end through the command line: train (short: the shape of what it writes,
not whether it flies; bench/quadrotor.py measures that), eval, render, and the demo on a virtual
board (policy and simulation both in MicroPython, then over the serial line)."""
import json
import os

import pytest

from boardkit import cli_json, needs_board
from helpers import run_cpython

from microrl.tasks import quadrotor as Q
from microrl.policy import load


def microrl(*args, timeout=600):
    return run_cpython(["-m", "microrl_host.cli"] + [str(a) for a in args], timeout=timeout)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    folder = tmp_path_factory.mktemp("quad")
    out = folder / "quad.mrlp"
    # 20,000 steps: the 15,000 warm-up steps, 1,000 updates and two evaluations of 100 flights
    proc = microrl("train", "quadrotor", "--algo", "td3", "--steps", 20000, "--seed", 1, "--out", out, "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out, json.loads(proc.stdout.strip().splitlines()[-1])


def test_train_quadrotor_writes_a_25_input_policy_and_flight_figures(trained):
    out, r = trained
    assert r["task"] == "quadrotor" and r["steps"] == 20000
    policy = load(str(out))
    assert (policy.sizes[0], policy.sizes[-1]) == (Q.OBS_DIM, Q.ACT_DIM) == (25, 4)  # 22 state inputs and the integral
    assert [e[0] for e in r["evals"]] == [10000, 20000]
    for k in ("success_rate", "crash_rate", "final_success_rate"):
        assert 0.0 <= r[k] <= 1.0
    assert r["position_error_m"] >= 0.0
    # the policy written is the best evaluation's: no evaluation flew better
    assert r["policy_step"] in (10000, 20000)
    assert r["success_rate"] >= r["final_success_rate"]


def test_eval_flies_the_policy_and_reports_success(trained):
    out, r = trained
    proc = microrl("eval", out, "--episodes", 5, "--json")
    assert proc.returncode == 0, proc.stderr
    e = json.loads(proc.stdout.strip().splitlines()[-1])
    assert 0.0 <= e["success_rate"] <= 1.0 and e["position_error_m"] >= 0.0


def test_render_draws_the_flight(trained, tmp_path):
    out, r = trained
    gif = tmp_path / "fly.gif"
    proc = microrl("render", out, "--out", gif, "--episodes", 1)
    assert proc.returncode == 0, proc.stderr
    with open(gif, "rb") as f:
        assert f.read(6) in (b"GIF87a", b"GIF89a")


@needs_board
def test_demo_flies_on_the_virtual_board(tmp_path):
    r = cli_json("demo", "--task", "quadrotor", "--steps", 2000, "--episodes", 2, "--out", tmp_path / "q.mrlp", timeout=900, cwd=tmp_path)
    assert r["task"] == "quadrotor" and os.path.exists(tmp_path / "q.mrlp")
    assert r["algo"] == "ppo"  # the task's suggestion, as microrl train takes it
    # the board's MicroPython simulation and policy agree with the host's device core
    assert r["board_success_matches_host"] and r["board_return_max_diff"] < 1e-3
    assert r["board_policy_step_us"] > 0 and r["board_control_rate_hz"] > 0
    assert r["serial_steps"] > 0 and r["p50_us"] > 0


def test_a_seed_gives_the_same_policy_whatever_the_blas_thread_count(tmp_path):
    """OpenBLAS splits some of the batch-256 products across its threads, which changed their last
    bits and so the run; training holds BLAS to one thread (nn/blas.py)."""
    digests = []
    for threads in ("1", "2"):
        out = tmp_path / ("q%s.mrlp" % threads)
        proc = run_cpython(["-m", "microrl_host.cli", "train", "quadrotor", "--algo", "td3", "--steps", "30000", "--seed", "3", "--eval-every", "0", "--out", str(out)],
                           OPENBLAS_NUM_THREADS=threads, OMP_NUM_THREADS=threads)
        assert proc.returncode == 0, proc.stderr[-3000:]
        digests.append(out.read_bytes())
    assert digests[0] == digests[1]
