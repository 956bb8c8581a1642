"""microrl train-on-board against the virtual board."""
import os

from boardkit import board, cli, cli_json, needs_board  # noqa: F401 (fixture)

pytestmark = needs_board


def test_train_on_board_few_hundred_steps(board, tmp_path):
    out = tmp_path / "trained.mrlp"
    r = cli_json("train-on-board", "--port", board.port, "--steps", "300", "--hidden", "8,8", "--batch", "16", "--replay", "400",
                 "--out", out, "--episodes", "2", "--no-deploy")
    assert os.path.exists(out)
    import microrl

    p = microrl.load(str(out))
    assert p.sizes == [3, 8, 8, 1]
    assert r["steps_per_second"] > 0 and r["mem_free_start"] > r["estimate_bytes"]
    assert len(r["returns"]) >= 1  # at least one whole episode (200 steps) reported from the board
    assert -2000 < r["eval_return_mean"] < 0


def test_run_that_does_not_fit_is_refused_with_the_memory_it_needs(board, tmp_path):
    r = cli("train-on-board", "--port", board.port, "--steps", "10", "--hidden", "64,64", "--batch", "100", "--replay", "10000",
            "--out", tmp_path / "x.mrlp", "--no-deploy", "--quiet")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    from microrl_host.board.train import estimate_bytes

    need = estimate_bytes((64, 64), 100, 10000)["total"] / 1024.0
    assert "needs about %.1f kB" % need in r.stderr and "replay 351.6 kB" in r.stderr
    assert not os.path.exists(tmp_path / "x.mrlp")


def test_memory_estimate_matches_the_board(tmp_path):
    # the estimate (from the sizes) against what the board's allocator reports for the real objects,
    # built the way train-on-board builds them (on a roomy heap: this measures use, not fit)
    from microrl_host.board.virtual import VirtualBoard
    from microrl_host.board.train import _PREPARE, WORKING_MARGIN, estimate_bytes
    from microrl_host.board.deploy import board_exec, deploy
    from microrl_host.board.serial_link import connect

    with VirtualBoard(str(tmp_path / "fs"), heap="1M") as big:
        deploy(big.port)
        transport = connect(big.port, soft_reset=True)
        used = _used(transport, board_exec, _PREPARE)
    est = estimate_bytes((16, 16), 32, 500)["total"] - WORKING_MARGIN
    assert abs(est - used) < 0.1 * used, (est, used)


def _used(transport, board_exec, prepare):
    try:
        board_exec(transport, prepare)
        out = board_exec(transport, "gc.collect()\nf = gc.mem_free()\na = TD3(Pendulum(), TD3Config(hidden=(16, 16), batch=32, replay_capacity=500), 0)\n"
                                    "gc.collect()\nprint(f - gc.mem_free())")
    finally:
        transport.close()
    return int(out.split()[-1])
