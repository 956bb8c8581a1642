"""microrl train-on-board against the virtual board: sizes chosen to fit, refusals, and the memory
estimate against the board's allocator across heaps (a run the estimate passes never runs out)."""
import os
import re

import pytest

from boardkit import board, cli, cli_json, needs_board  # noqa: F401 (fixture)
from helpers import assert_refused

pytestmark = needs_board
BAR = re.compile(r"training on the board: +\d+%\|")  # tqdm's bar (the errors say "training on the board ..." too)


def test_train_on_board_few_hundred_steps(board, tmp_path):
    out = tmp_path / "trained.mrlp"
    r = cli_json("train-on-board", "--port", board.port, "--steps", "300", "--hidden", "8,8", "--batch", "16", "--replay", "400",
                 "--out", out, "--episodes", "2", "--no-deploy")
    assert os.path.exists(out)
    import microrl

    p = microrl.load(str(out))
    assert p.sizes == [3, 8, 8, 1]
    assert (r["hidden"], r["batch"], r["replay"]) == ([8, 8], 16, 400)
    assert r["steps_per_second"] > 0 and r["mem_free_start"] > r["estimate_bytes"]
    assert len(r["returns"]) >= 1  # at least one whole episode (200 steps) reported from the board
    assert -2000 < r["eval_return_mean"] < 0


@pytest.mark.parametrize("flag, what", [("--actor-lr", "the actor's"), ("--critic-lr", "a critic's weights")])
def test_a_run_that_diverges_stops_with_a_clear_error_and_writes_nothing(board, tmp_path, flag, what):
    """Issue 12: a learning rate of 1e30 makes the board's run NaN or infinite within a few
    updates (on the native and the plain backend). The board stops it and the command exits 2
    with one line naming what diverged and when; no policy is written. (A diverged critic used to
    pass: only the actor was checked, and it stayed finite; a diverged actor ended in 'ValueError:
    can't convert NaN to int' from the replay.)"""
    out = tmp_path / "diverged.mrlp"
    # one of the two with its progress bar: drawn once the board trains, closed before the error
    quiet = ["--quiet"] if flag == "--critic-lr" else []
    r = cli("train-on-board", "--port", board.port, "--steps", "300", "--hidden", "8,8", "--batch", "16", "--replay", "500",
            flag, "1e30", "--out", out, "--episodes", "1", "--no-deploy", *quiet, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert bool(BAR.search(r.stderr)) == (not quiet), r.stderr[-2000:]
    error = r.stderr.strip().splitlines()[-1]
    assert "training on the board diverged: %s" % what in error and "became NaN or infinite by step" in error, error
    assert "no policy written" in error
    assert not os.path.exists(out)


@pytest.mark.parametrize("value", ["nan", "inf", "0", "-1e-3"])
def test_learning_rates_that_cannot_train_are_refused_before_any_work(tmp_path, value):
    r = cli("train-on-board", "--port", tmp_path / "no-such-port", "--steps", "10", "--critic-lr=" + value, "--out", tmp_path / "x.mrlp", "--quiet")
    assert r.returncode == 2 and "--critic-lr must be a finite number above 0" in r.stderr and "Traceback" not in r.stderr, r.stderr[-2000:]


def test_policy_from_the_boards_weights_acts_as_the_boards_actor(tmp_path):
    # the weights come back as hex of the board's float32 array: the policy built from them on the
    # host is the device core's TD3.policy() of the same actor
    from array import array

    from microrl.task import Env

    from microrl.tasks import pendulum
    from microrl.policy import Policy, load
    from microrl.td3 import TD3, TD3Config

    from microrl_host.board.train import policy_bytes

    agent = TD3(Env(pendulum), TD3Config(hidden=(8, 8), batch=8, replay_capacity=50), 3)
    hexed = bytes(array("f", agent.actor.params)).hex()
    (tmp_path / "p.mrlp").write_bytes(policy_bytes((8, 8), hexed))
    p = load(str(tmp_path / "p.mrlp"))
    q = agent.policy()
    assert isinstance(p, Policy) and p.sizes == q.sizes
    for obs in ([1.0, 0.0, 0.5], [-0.3, 0.95, -4.0]):
        assert list(p(obs)) == list(q(obs))


def test_run_that_does_not_fit_is_refused_with_the_memory_it_needs(board, tmp_path):
    # without --quiet: the refusal is the one line on stderr, no progress bar drawn before it (the
    # bar used to be drawn first: "training on the board: 0%|" then the refusal)
    r = cli("train-on-board", "--port", board.port, "--steps", "10", "--hidden", "64,64", "--batch", "100", "--replay", "10000",
            "--out", tmp_path / "x.mrlp", "--no-deploy")
    assert_refused(r, "this run needs about")
    assert not BAR.search(r.stderr) and r.stdout == "", (r.stdout, r.stderr)
    assert not os.path.exists(tmp_path / "x.mrlp")
    from microrl_host.board.train import estimate_bytes

    est = estimate_bytes((64, 64), 100, 10000)
    assert "needs about %.1f kB" % (est["total"] / 1024.0) in r.stderr and "replay %.1f kB" % (est["replay"] / 1024.0) in r.stderr
    assert "11 bytes per transition" in r.stderr
    assert not os.path.exists(tmp_path / "x.mrlp")


def test_sizes_are_chosen_from_the_free_heap():
    from microrl_host.board.train import LADDER, MIN_REPLAY, BoardTrainError, choose, estimate_bytes, largest_replay, rows_for

    # a roomy board takes the top rung and a replay that holds the whole run
    h, b, r, why = choose(20000, 4 << 20, 4 << 20)
    assert (h, b) == LADDER[0] and r == rows_for(20000) and "every step" in why
    # less room: a lower rung, with the replay filling what is left, and the run fits
    for free in (90 * 1024, 130 * 1024, 200 * 1024):
        h, b, r, why = choose(20000, free, free)
        assert r >= MIN_REPLAY or all(largest_replay(hh, bb, free, free) < MIN_REPLAY for hh, bb in LADDER)
        assert estimate_bytes(h, b, r)["total"] <= free < estimate_bytes(h, b, r + 200)["total"] or r == rows_for(20000)
    # the largest block limits the replay rows (one array)
    h, b, r, _ = choose(20000, 200 * 1024, 40 * 1024)
    assert r * 10 <= 40 * 1024
    with pytest.raises(BoardTrainError, match="needs about"):
        choose(20000, 20 * 1024, 20 * 1024)


def _read_board(port):
    from microrl_host.board.train import read_board
    from microrl_host.board.serial_link import connect, disconnect

    transport = connect(port, soft_reset=True)
    try:
        return read_board(transport)
    finally:
        disconnect(transport)


@pytest.mark.parametrize("heap", ["112K", "160K", "256K"])
def test_chosen_sizes_train_without_running_out(heap, tmp_path):
    # the sizes chosen for a long run (the largest replay that fits) on each heap, run for a few
    # training steps (everything is allocated before the first step); and a run one rung larger
    # than fits is refused before it starts rather than running out
    from microrl_host.board.virtual import VirtualBoard
    from microrl_host.board.train import LADDER, choose
    from microrl_host.board.deploy import deploy

    with VirtualBoard(str(tmp_path / "fs"), heap=heap) as vb:
        deploy(vb.port, mpy=True, tasks=["pendulum"])
        info = _read_board(vb.port)
        h, b, r, _ = choose(20000, info["usable"], info["largest"], info["gc_block"])
        assert info["usable"] <= info["free"]
        res = cli_json("train-on-board", "--port", vb.port, "--steps", "60", "--warmup", "40", "--hidden", ",".join(map(str, h)), "--batch", b,
                       "--replay", r, "--out", tmp_path / "p.mrlp", "--episodes", "1", "--no-deploy", "--quiet")
        assert (res["hidden"], res["batch"], res["replay"]) == (list(h), b, r)
        # what the run took: TD3's buffers and objects (the estimate) and the run's own code, compiled
        # on the board (4-7 kB on this 64-bit port), inside the margin
        taken = res["mem_free_start"] - res["mem_after_alloc"]
        allocated = res["estimate_parts"]["total"] - res["estimate_parts"]["margin"]
        assert allocated <= taken <= allocated + res["estimate_parts"]["margin"], (taken, allocated)
        k = LADDER.index((h, b)) if (h, b) in LADDER else len(LADDER)
        if k > 0:
            bigger = LADDER[k - 1]
            proc = cli("train-on-board", "--port", vb.port, "--steps", "60", "--hidden", ",".join(map(str, bigger[0])), "--batch", bigger[1],
                       "--replay", r, "--out", tmp_path / "q.mrlp", "--no-deploy", "--quiet")
            assert proc.returncode == 2 and "needs about" in proc.stderr and "MemoryError" not in proc.stderr


def test_readme_example_runs_as_written_at_112k(tmp_path):
    # README: `microrl train-on-board --port PORT --steps N`, no size flags, on the smallest heap
    from microrl_host.board.virtual import VirtualBoard

    with VirtualBoard(str(tmp_path / "fs"), heap="112K") as vb:
        res = cli_json("train-on-board", "--port", vb.port, "--steps", "150", "--out", tmp_path / "p.mrlp", "--episodes", "1", "--quiet")
        assert res["mem_free_start"] >= res["estimate_bytes"] and res["replay"] >= 150


def test_memory_estimate_matches_the_board(tmp_path):
    # the estimate (from the sizes) against what the board's allocator reports for the real objects,
    # built the way train-on-board builds them (on a roomy heap: this measures use, not fit)
    from microrl_host.board.virtual import VirtualBoard
    from microrl_host.board.train import estimate_bytes, prepare_program
    from microrl_host.board.deploy import board_exec, deploy
    from microrl_host.board.serial_link import connect, disconnect

    with VirtualBoard(str(tmp_path / "fs"), heap="1M") as big:
        deploy(big.port, mpy=True, tasks=["pendulum"])
        transport = connect(big.port, soft_reset=True)
        try:
            board_exec(transport, prepare_program("pendulum"))  # the task imported as `task`
            for hidden, batch, replay in (((16, 16), 32, 500), ((24, 24), 32, 3000), ((8,), 8, 100)):
                out = board_exec(transport, "gc.collect()\nf = gc.mem_free()\na = TD3(Env(task), TD3Config(hidden=%r, batch=%d, replay_capacity=%d), 0)\n"
                                            "gc.collect()\nprint(f - gc.mem_free())\na = None" % (hidden, batch, replay))
                used = int(out.split()[-1])
                est = estimate_bytes(hidden, batch, replay)
                allocated = est["total"] - est["margin"]
                assert 0 <= allocated - used < 1024, (hidden, allocated, used)  # never under, within 1 KB
        finally:
            disconnect(transport)
