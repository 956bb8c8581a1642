"""The shipped ESP32 module (host/microrl_host/board/native/mpy6.3/xtensawin/microrl_kernels.mpy)
loaded by MicroPython's own .mpy loader on an emulated windowed Xtensa core with an FPU: the
project's MicroPython port native_modules/ports/xtensa_sim (qemu-system-xtensa -M sim -cpu
de233_fpu, the xtensawin native emitter, float32 like the ESP32), with the device core and the
device tests precompiled for xtensawin in a ROMFS image (microrl_host/board/qemu.py's). There it
runs the same checks as the ARM and RISC-V boards (test_native_qemu.py): native against plain in
float, the int16 kernels bit for bit, and the device suite.

Needs MICRORL_XTENSA_FIRMWARE: the firmware.elf that native_modules/ports/xtensa_sim's Makefile
builds from MicroPython v1.28.0's sources (its README), and qemu-system-xtensa; skips saying
which is missing otherwise. The board has no writable filesystem: device tests that write files
fail there with ENODEV and are left out of the verdict (they run on the unix port)."""
import glob
import os
import re
import sys

import pytest

from helpers import DEVICE_TESTS, ROOT
from microrl_host.board import native
from microrl_host.board import qemu as qemu_board
from test_native_qemu import _BOARD_CODE, _assert_device_suite_passes, _assert_float_kernels_agree, _assert_int16_kernels_pass

sys.path.insert(0, os.path.join(ROOT, "native_modules", "ports", "xtensa_sim"))
import sim_board  # noqa: E402

FIRMWARE = sim_board.firmware_from_env()

_PRELUDE = """
import sys, microrl_kernels
print("MPY", sys.implementation._mpy, microrl_kernels.__file__, microrl_kernels.SOURCE_HASH)
"""


def _why_not():
    if not FIRMWARE:
        return ("MICRORL_XTENSA_FIRMWARE names no firmware: build native_modules/ports/xtensa_sim "
                "(its README: MicroPython v1.28.0's sources, Debian's LLVM 22) and name its firmware.elf")
    return sim_board.missing()


@pytest.fixture(scope="module")
def board_output(tmp_path_factory):
    why = _why_not()
    if why:
        pytest.skip(why)
    work = str(tmp_path_factory.mktemp("xtensa-sim"))
    image = qemu_board.build_romfs(work, "xtensawin", glob.glob(os.path.join(DEVICE_TESTS, "*.py")))
    with sim_board.SimBoard(FIRMWARE, image) as board:
        return board.run(_PRELUDE + _BOARD_CODE, timeout=3600)


def test_the_shipped_xtensawin_module_is_what_micropython_loaded(board_output):
    match = re.search(r"^MPY (\d+) (\S+) (\S+)", board_output, re.M)
    assert match, board_output[-3000:]
    mpy, path, source_hash = int(match.group(1)), match.group(2), match.group(3)
    assert native.arch_from_mpy(mpy) == "xtensawin" and native.mpy_version(mpy) == (6, 3), mpy
    assert path == "/rom/lib/microrl_kernels.mpy"
    # the file the image got is the shipped one, of this architecture and version
    shipped = native.mpy_for_arch("xtensawin", mpy)
    assert native.mpy_header(shipped) == (6, 3, "xtensawin"), shipped
    assert "mpy6.3" in shipped and source_hash not in ("", "None")


def test_native_kernels_are_the_paths_on_the_board(board_output):
    assert "PATHS native native native viper plain" in board_output, board_output[-3000:]


def test_float_native_kernels_agree_with_plain_on_the_board(board_output):
    _assert_float_kernels_agree(board_output)


def test_int16_kernels_bit_for_bit_on_the_board(board_output):
    _assert_int16_kernels_pass(board_output)


def test_device_suite_with_native_kernels_on_the_board(board_output):
    _assert_device_suite_passes(board_output)


def test_a_program_ending_in_system_exit_gives_its_output_and_the_board_goes_on():
    """MicroPython's own tests print SKIP and raise SystemExit when the firmware lacks a feature;
    the raw REPL then soft-reboots before its prompt. run_native_tests.py counted those as crashes
    (native_fun_attrs_code.py and native_marshal.py: this firmware has no function.__code__)."""
    why = _why_not()
    if why:
        pytest.skip(why)
    with sim_board.SimBoard(FIRMWARE) as board:
        assert board.run("print('SKIP')\nraise SystemExit", timeout=60).strip() == "SKIP"
        assert board.run("print(6 * 7)", timeout=60).strip() == "42"


def test_the_bench_finds_its_workload():
    """bench.py takes bench/qemu_board.py's workload; it looked for it one folder too high and
    could not start (issue 43's native/plain ratios come from it)."""
    import subprocess

    bench = os.path.join(ROOT, "native_modules", "ports", "xtensa_sim", "bench.py")
    proc = subprocess.run([sys.executable, bench, "--help"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "FIRMWARE" in proc.stdout.upper(), proc.stderr[-2000:]
