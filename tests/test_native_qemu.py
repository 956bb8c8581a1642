"""The native module, the viper fixed-point kernel and the native int16 kernel on emulated 32-bit
microcontrollers: MicroPython's qemu port on the MPS2-AN385 (Cortex-M3, no FPU, under
qemu-system-arm) with the shipped armv7m microrl_kernels.mpy, and on the RISC-V virt board (under
qemu-system-riscv32) with the shipped rv32imc one; the device core and device tests precompiled
for the board into a ROMFS image (microrl_host/board/qemu.py).

Needs MICRORL_QEMU_FIRMWARE: one or more firmware.elf files of MicroPython's qemu port, separated
by os.pathsep (BOARD=MPS2_AN385, BOARD=VIRT_RV32; each board's architecture is read from its
file), built from MicroPython's sources by its own documentation (ports/qemu/README.md; tried
with the v1.29 preview, whose boards mount a ROMFS image), and the qemu executable; each board is
skipped with the reason otherwise. These boards have no writable filesystem, so the device tests
that write files fail there with ENODEV and are left out of the verdict (they run on the unix
port)."""
import glob
import os
import re
import shutil
import textwrap

import pytest

from backend_compare import compare_code
from helpers import DEVICE_TESTS
from microrl_host.board import qemu as qemu_board

FIRMWARES = qemu_board.firmwares()
BOARD_NAMES = {"armv7m": "MPS2_AN385 (Cortex-M3)", "rv32imc": "VIRT_RV32 (RISC-V)"}


def _why_not(arch):
    if arch not in FIRMWARES:
        return "MICRORL_QEMU_FIRMWARE names no %s firmware: name MicroPython's qemu port firmware.elf for BOARD=%s to run the kernels there" % (arch, BOARD_NAMES[arch].split()[0])
    exe = qemu_board.BOARDS[arch][0]
    if shutil.which(exe) is None:
        return "%s not found (apt-get install %s)" % (exe, "qemu-system-arm" if arch == "armv7m" else "qemu-system-misc")
    return None


# run on the board: which paths are active, float native against plain (nn.MLP forward, backward,
# Adam, Polyak, every activation; in a function, so that its floats are gone after), then the
# device test modules
_BOARD_CODE = """
import microrl
from microrl import fixedpoint
print("PATHS", microrl.backend_name(), fixedpoint.implementation(), " ".join(fixedpoint.available()))
def compare():
""" + textwrap.indent(compare_code("native"), "    ") + """
compare()
microrl.backend.use(None)
import gc, run, sys
for m in ("test_fixedpoint", "test_policy", "test_nn", "test_rng", "test_pendulum", "test_replay"):
    gc.collect()
    run.run([m])
    del sys.modules[m]  # a module done with gives its heap back (the RISC-V board's is small)
"""


@pytest.fixture(scope="module", params=sorted(BOARD_NAMES))
def board_output(request, tmp_path_factory):
    arch = request.param
    why = _why_not(arch)
    if why:
        pytest.skip(why)
    work = str(tmp_path_factory.mktemp("qemu-" + arch))
    image = qemu_board.build_romfs(work, arch, glob.glob(os.path.join(DEVICE_TESTS, "*.py")))
    with qemu_board.QemuBoard(FIRMWARES[arch], arch, image) as board:
        return board.run(_BOARD_CODE, timeout=1800)


def _results(out):
    return {name: kind for kind, name in re.findall(r"^(PASS|FAIL) ([\w.]+)", out, re.M)}


def _assert_float_kernels_agree(board_output):
    """backend_compare's worst difference, native against plain, printed by _BOARD_CODE."""
    worst = re.findall(r"^worst (\S+)", board_output, re.M)
    assert worst, board_output[-3000:]
    assert float(worst[0]) < 1e-4, worst


def _assert_int16_kernels_pass(board_output):
    """The device suite's integer-kernel tests all passed on the board."""
    results = _results(board_output)
    for name in ("integer_kernels_agree_on_random_layers_and_their_edges", "policies_give_the_same_actions_with_every_integer_kernel",
                 "viper_and_plain_kernels_give_the_same_integers", "int16_policy_tracks_the_float_policy_for_every_activation",
                 "accumulators_stay_within_32_bits_for_any_input", "scales_and_weights_outside_the_32_bit_domain_are_refused"):
        assert results.get("test_fixedpoint.test_" + name) == "PASS", board_output[-4000:]


def _assert_device_suite_passes(board_output):
    """The device suite ran (30 tests or more) and failed only where a test writes a file."""
    results = _results(board_output)
    assert len(results) >= 30, board_output[-3000:]
    # a test that writes a file fails there with OSError ENODEV (no filesystem), and only that way
    no_fs = set(re.findall(r"^FAIL ([\w.]+): OSError: \[Errno 19\] ENODEV", board_output, re.M))
    failed = sorted(name for name, r in results.items() if r == "FAIL")
    assert [n for n in failed if n not in no_fs] == [], board_output[-6000:]


def test_native_kernels_are_the_paths_on_the_board(board_output):
    assert "PATHS native native native viper plain" in board_output, board_output[-3000:]


def test_float_native_kernels_agree_with_plain_on_the_board(board_output):
    """backend_compare's comparison in the board's single precision: forward, backward, Adam and
    Polyak with every activation, native against plain."""
    _assert_float_kernels_agree(board_output)


def test_int16_kernels_bit_for_bit_on_32_bits(board_output):
    """The native int16 kernel and the viper one against plain Python's integers on a 32-bit core:
    the property test over random layers at the domain's edges, quantised policies, whole calls."""
    _assert_int16_kernels_pass(board_output)


def test_non_finite_observations_are_refused_on_the_board(board_output):
    assert _results(board_output).get("test_policy.test_non_finite_observations_are_refused_by_name") == "PASS", board_output[-4000:]


def test_device_suite_with_native_kernels_on_the_board(board_output):
    """Everything passes in the port's single precision (the gradient checks with their float32
    step and tolerances) but the tests that write files: that board has no writable filesystem."""
    _assert_device_suite_passes(board_output)
