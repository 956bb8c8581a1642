"""bench/board_train.py --qemu: train-on-board's training (its code path and BOARD_LEARNING) on
MicroPython's qemu port named by MICRORL_QEMU_FIRMWARE. Without such a firmware the bench says in
one line what to set and exits 2 (fast, always run); with a Cortex-M3 (MPS2_AN385) firmware named,
two short seeds side by side end to end (about a minute), else skipped saying so."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from helpers import ROOT, assert_refused, repo_env
from microrl_host.board import qemu as qemu_board

BENCH = os.path.join(ROOT, "bench", "board_train.py")


def bench(args, cwd, firmware=None, timeout=120):
    env = repo_env()
    env.pop("MICRORL_QEMU_FIRMWARE", None)
    if firmware is not None:
        env["MICRORL_QEMU_FIRMWARE"] = firmware
    return subprocess.run([sys.executable, BENCH] + list(args), capture_output=True, text=True, timeout=timeout, env=env, cwd=str(cwd))


def fake_elf(path, machine):
    """The 20 bytes of a 32-bit ELF header that firmware_arch reads (e_machine: 40 ARM, 243 RISC-V)."""
    path.write_bytes(b"\x7fELF\x01\x01\x01" + bytes(11) + machine.to_bytes(2, "little"))
    return str(path)


def test_without_a_firmware_it_says_what_to_set_in_one_line(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    proc = bench(["--qemu", "--seeds", "1", "--steps", "10"], work)
    assert_refused(proc, "MICRORL_QEMU_FIRMWARE is not set", "BOARD=MPS2_AN385", "ports/qemu/README.md")
    # a firmware of another board only: named as such
    riscv = fake_elf(tmp_path / "rv32.elf", 243)
    proc = bench(["--qemu", "armv7m", "--seeds", "1", "--steps", "10"], work, firmware=riscv)
    assert_refused(proc, "MICRORL_QEMU_FIRMWARE names no armv7m firmware (%s)" % riscv)
    assert qemu_board.firmwares(riscv) == {"rv32imc": riscv}  # the fake is read as the RISC-V board's
    assert os.listdir(work) == [] and proc.stdout == ""


ARM = qemu_board.firmwares().get("armv7m")


@pytest.mark.skipif(ARM is None, reason="MICRORL_QEMU_FIRMWARE names no armv7m firmware: name MicroPython's qemu port firmware.elf for "
                                        "BOARD=MPS2_AN385 to train on the emulated Cortex-M3")
@pytest.mark.skipif(shutil.which("qemu-system-arm") is None, reason="qemu-system-arm not found (apt-get install qemu-system-arm)")
def test_two_short_seeds_train_on_the_emulated_cortex_m3(tmp_path):
    from microrl_host.board.train import BOARD_LEARNING, choose

    proc = bench(["--qemu", "--seeds", "2", "--jobs", "2", "--steps", "300", "--json"], tmp_path, firmware=ARM, timeout=900)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert report["board"] == "qemu armv7m" and report["threshold"] == -200.0
    (res,) = report["heaps"]
    assert res["firmware"] == ARM and [r["seed"] for r in res["runs"]] == [0, 1]
    for r in res["runs"]:
        # train-on-board's own settings, and the sizes it chooses for this board's heap
        assert r["learning"] == BOARD_LEARNING and r["learning"]["reward_scale"] == 0.1
        hidden, batch, replay, _ = choose(300, r["mem_usable_start"], r["largest_free_block"], r["gc_block"])
        assert (r["hidden"], r["batch"], r["replay"]) == (list(hidden), batch, replay)
        assert r["steps"] == 300 and r["backend"] == "native" and r["eval_episodes"] == 10
        assert -2000 < r["eval_return"] < 0 and r["eval_std"] >= 0 and r["wall_seconds"] >= r["seconds"] > 0
        assert "seed %d:" % r["seed"] in proc.stderr  # each seed's line as it ends
    assert res["solved"] == sum(r["eval_return"] >= -200 for r in res["runs"])
    assert os.listdir(tmp_path) == []  # the policies stay in the bench's own temporary folder
