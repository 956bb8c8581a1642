"""microrl train-on-board --init RUN (issue 34, 4): the board's TD3 starts from a host TD3 run
(actor, critics, targets, Adam state), checked on the board, refused clearly when it cannot."""
import json
import os

import numpy as np
import pytest

from boardkit import cli, cli_json, needs_board


def _host_run(folder, hidden, steps=300, seed=2):
    """A host TD3 Pendulum run in folder: (policy path, run folder)."""
    proc = cli("train", "pendulum", "--steps", steps, "--warmup", 200, "--hidden", hidden, "--seed", seed, "--out", folder / "h.mrlp", "--quiet", timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return folder / "h.mrlp", folder / "h.run"


def test_what_cannot_start_the_board_is_refused_in_one_line(tmp_path):
    from microrl_host.algos import checkpoint

    (tmp_path / "empty.run").mkdir()
    checkpoint.write(str(tmp_path / "sac.npz"), {"algo": "sac", "task": "pendulum"},
                     {"actor.params": np.zeros(3, np.float32)})
    for given, says in ((tmp_path / "empty.run", "has no checkpoint.npz"), (tmp_path / "nothing", "no run folder or checkpoint"),
                        (tmp_path / "sac.npz", "the board trains TD3")):
        proc = cli("train-on-board", "--port", "/dev/null", "--steps", 10, "--init", given, "--out", tmp_path / "o.mrlp", "--no-deploy")
        assert proc.returncode == 2 and says in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
    assert not os.path.exists(tmp_path / "o.mrlp")


@needs_board
def test_the_board_starts_from_the_host_runs_networks(tmp_path):
    """With learning rates too small to move a float32 weight, the actor the board sends back is
    the host run's, bit for bit (written on the board, its sums checked there, trained 64 steps);
    a run whose networks do not fit the board's heap is refused before any step."""
    from microrl_host.algos import checkpoint
    from microrl_host.board.virtual import VirtualBoard

    import microrl

    _, run = _host_run(tmp_path, "16,16", steps=400)
    _, arrays = checkpoint.read(str(run / "checkpoint.npz"))
    with VirtualBoard(str(tmp_path / "fs"), heap="160K") as vb:
        r = cli_json("train-on-board", "--port", vb.port, "--init", run, "--steps", 64, "--actor-lr", 1e-30, "--critic-lr", 1e-30,
                     "--episodes", 1, "--out", tmp_path / "b.mrlp", "--quiet", timeout=600)
        assert r["hidden"] == [16, 16] and r["warmup"] == r["batch"] and r["init_updates"] == int(arrays["counters"][1]) > 0
        back = microrl.load(str(tmp_path / "b.mrlp"))
        assert np.array_equal(np.asarray(back.net.params, np.float32), arrays["actor.params"])
        # networks of 64,64 (with a useful replay) do not fit a 160K board
        big = tmp_path / "big"
        big.mkdir()
        _, big_run = _host_run(big, "64,64", steps=250)
        proc = cli("train-on-board", "--port", vb.port, "--init", big_run, "--steps", 1000, "--out", tmp_path / "c.mrlp", "--no-deploy", "--quiet")
        assert proc.returncode == 2 and "do not fit on this board" in proc.stderr and "smaller --hidden" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr and not os.path.exists(tmp_path / "c.mrlp")
    assert json.loads((run / "run.json").read_text())["algo"] == "td3"
