"""`microrl demo` on its defaults: trains on the host, runs on a virtual board, and leaves
nothing behind but the policy file it names."""
import os

from boardkit import cli_json, needs_board

pytestmark = needs_board


def test_demo_defaults(tmp_path):
    r = cli_json("demo", timeout=600, cwd=tmp_path)
    assert r["steps"] == 10000 and r["task"] == "pendulum" and r["board_task"] == "pendulum"
    # the one file it says it wrote; the virtual board's files went to a temporary folder
    assert r["policy"] == str(tmp_path / "demo-policy.mrlp") and r["board_dir"] is None
    assert sorted(os.listdir(tmp_path)) == ["demo-policy.mrlp"]
    # the board's closed loop (policy and Pendulum on MicroPython) reproduces the host's episodes
    assert abs(r["board_return_mean"] - r["host_return_mean"]) < 0.02 * abs(r["host_return_mean"]) + 1.0
    # Pendulum learnt in 10k steps (random play: about -1200). Far outside the measured spread, not
    # a learning check: the host TD3's 10k-step returns ranged -110 to -196 over 10 seeds and three
    # BLAS kernel settings (tests/test_learning.py asserts on a quorum of seeds)
    assert r["host_return_mean"] > -400
    for key in ("p50_us", "p99_us", "board_compute_us", "per_second", "board_policy_step_us"):
        assert r[key] > 0
    assert r["board_backend"] == "native"  # the shipped x64 kernels, installed by deploy


def test_demo_keeps_board_files_where_asked(tmp_path):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    board = tmp_path / "board"
    r = cli_json("demo", "--steps", 300, "--episodes", 1, "--requests", 5, "--out", tmp_path / "p.mrlp", "--board-dir", board, timeout=600, cwd=cwd)
    assert os.listdir(cwd) == []
    assert r["policy"] == str(tmp_path / "p.mrlp") and os.path.exists(r["policy"])
    assert r["board_dir"] == str(board)
    assert os.path.isdir(board / "lib" / "microrl") and os.path.exists(board / "policy.mrlp")
