"""The native module and the viper fixed-point kernel on a 32-bit microcontroller: MicroPython's
qemu port (Cortex-M3, MPS2-AN385 board) under qemu-system-arm, with the armv7m
microrl_kernels.mpy shipped in the package and the device core and device tests precompiled
(-march=armv7m) into a ROMFS image.

Needs MICRORL_QEMU_FIRMWARE: the firmware.elf of MicroPython's qemu port for BOARD=MPS2_AN385,
built from MicroPython's sources by its own documentation (ports/qemu/README.md; tried with
v1.28.0), and qemu-system-arm; skipped with the reason otherwise. That board has no writable
filesystem, so the tests that write files are left out here (they run on the unix port)."""
import glob
import os
import re
import shutil

import pytest

from helpers import DEVICE_TESTS
from microrl_host.board import qemu as qemu_board

FIRMWARE = os.environ.get("MICRORL_QEMU_FIRMWARE")


def _why_not():
    if not FIRMWARE or not os.path.isfile(FIRMWARE):
        return "MICRORL_QEMU_FIRMWARE not set: name MicroPython's qemu port firmware.elf (BOARD=MPS2_AN385) to run the kernels on an emulated Cortex-M3"
    if shutil.which("qemu-system-arm") is None:
        return "qemu-system-arm not found (apt-get install qemu-system-arm)"
    return None


pytestmark = pytest.mark.skipif(_why_not() is not None, reason=_why_not() or "")

# run on the board: which paths are active, then the device test modules that need no files
_BOARD_CODE = """
import microrl
from microrl import fixedpoint
print("PATHS", microrl.backend_name(), fixedpoint.implementation())
import gc, run
for m in ("test_fixedpoint", "test_nn", "test_rng", "test_pendulum", "test_replay"):
    gc.collect()
    run.run([m])
"""


@pytest.fixture(scope="module")
def board_output(tmp_path_factory):
    work = str(tmp_path_factory.mktemp("qemu"))
    image = qemu_board.build_romfs(work, "armv7m", glob.glob(os.path.join(DEVICE_TESTS, "*.py")))
    with qemu_board.QemuBoard(FIRMWARE, "armv7m", image) as board:
        return board.run(_BOARD_CODE, timeout=900)


def _results(out):
    return {name: kind for kind, name in re.findall(r"^(PASS|FAIL) ([\w.]+)", out, re.M)}


def test_native_and_viper_are_the_paths_on_the_board(board_output):
    assert "PATHS native viper" in board_output, board_output[-3000:]


def test_fixed_point_integers_on_32_bits(board_output):
    results = _results(board_output)
    for name in ("viper_and_plain_kernels_give_the_same_integers", "int16_policy_tracks_the_float_policy_for_every_activation", "accumulators_stay_within_32_bits_for_any_input"):
        assert results.get("test_fixedpoint.test_" + name) == "PASS", board_output[-4000:]


def test_device_suite_with_native_kernels_on_cortex_m3(board_output):
    """Everything passes in this port's single precision (the gradient checks with their float32
    step and tolerances) but the tests that write files: that board has no writable filesystem."""
    results = _results(board_output)
    assert len(results) >= 20, board_output[-3000:]
    # a test that writes a file fails there with OSError ENODEV (no filesystem), and only that way
    no_fs = set(re.findall(r"^FAIL ([\w.]+): OSError: \[Errno 19\] ENODEV", board_output, re.M))
    failed = sorted(name for name, r in results.items() if r == "FAIL")
    assert [n for n in failed if n not in no_fs] == [], board_output[-6000:]
