"""MicroPython's qemu port as an emulated microcontroller, for tests and benchmarks: the device
core (and any extra .py files) precompiled for the board's architecture, with the shipped
microrl_kernels.mpy, in a ROMFS image that the firmware mounts at /rom (on its sys.path).

The firmware is yours: built from MicroPython's sources by their own documentation
(ports/qemu/README.md); this project ships none. Boards known here: MPS2_AN385 (Cortex-M3,
armv7m, qemu-system-arm) and VIRT_RV32 (rv32imc, qemu-system-riscv32)."""
import os
import re
import shutil
import subprocess
import sys
import time

from . import native
from .deploy import core_name, core_sources, mpy_cross
from .serial_link import disconnect

# arch -> (qemu executable, extra arguments, ROMFS partition address of the board's linker script)
BOARDS = {
    "armv7m": ("qemu-system-arm", ["-machine", "mps2-an385", "-semihosting"], "0x21000000"),
    "rv32imc": ("qemu-system-riscv32", ["-machine", "virt", "-bios", "none", "-semihosting"], "0x80610000"),
}


def firmware_arch(path):
    """The BOARDS architecture a firmware.elf is built for, from its ELF header (32-bit ARM:
    armv7m, 32-bit RISC-V: rv32imc), or None for anything else."""
    with open(path, "rb") as f:
        head = f.read(20)
    if len(head) < 20 or head[:4] != b"\x7fELF" or head[4] != 1:  # 32-bit ELF only
        return None
    machine = int.from_bytes(head[18:20], "little")
    return {40: "armv7m", 243: "rv32imc"}.get(machine)


def firmwares(value=None):
    """{arch: firmware path} from MICRORL_QEMU_FIRMWARE (or value): one or more firmware.elf
    paths separated by os.pathsep, each board's architecture read from its file; the first for
    an architecture wins. Paths that are missing or not a known board's are left out."""
    value = os.environ.get("MICRORL_QEMU_FIRMWARE", "") if value is None else value
    found = {}
    for path in value.split(os.pathsep):
        if path and os.path.isfile(path):
            arch = firmware_arch(path)
            if arch and arch not in found:
                found[arch] = path
    return found


def board_mpy(arch):
    """The sys.implementation._mpy of a board of this arch running .mpy 6.3 firmware."""
    return 6 | (3 << 8) | (native.MPY_ARCHS.index(arch) << 10)


def build_romfs(work, arch, extra_py=(), with_native=True):
    """A ROMFS image: lib/microrl/*.mpy, lib/microrl_kernels.mpy (unless with_native is False),
    and extra_py compiled to the image's top (on sys.path too). Returns its path."""
    rom = os.path.join(work, "romfs")
    shutil.rmtree(rom, ignore_errors=True)
    os.makedirs(os.path.join(rom, "lib", "microrl"))
    if with_native:
        shipped = native.mpy_for_arch(arch, board_mpy(arch))
        if not shipped:
            raise RuntimeError("no shipped microrl_kernels.mpy for %s" % arch)
        shutil.copy(shipped, os.path.join(rom, "lib"))
    for src in core_sources():
        mpy_cross(src, os.path.join(rom, "lib", "microrl", *core_name(src, ".mpy").split("/")), arch, "microrl/" + core_name(src))
    for src in extra_py:
        mpy_cross(src, os.path.join(rom, os.path.basename(src)[:-3] + ".mpy"), arch, os.path.basename(src))
    image = os.path.join(work, "romfs.img")
    subprocess.run([sys.executable, "-m", "mpremote", "romfs", "-o", image, "--no-mpy", "build", rom], check=True, capture_output=True)
    return image


class QemuBoard:
    """with QemuBoard(firmware, arch, image) as board: board.run(code) -> its output."""

    def __init__(self, firmware, arch, image, boot_timeout=30):
        exe, args, romfs_addr = BOARDS[arch]
        cmd = [exe] + args + ["-nographic", "-monitor", "null", "-device", "loader,file=%s,addr=%s,force-raw=on" % (image, romfs_addr), "-serial", "pty", "-kernel", firmware]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        line, start = "", time.time()
        while "/dev/pts/" not in line and time.time() - start < boot_timeout and self.proc.poll() is None:
            line = self.proc.stdout.readline()
        match = re.search(r"(/dev/pts/\d+)", line)
        if not match:
            self.close()
            raise RuntimeError("qemu did not open a serial pty: %r" % line)
        from mpremote.transport_serial import SerialTransport

        self.transport = SerialTransport(match.group(1), baudrate=115200)
        self.transport.enter_raw_repl(soft_reset=False)

    def run(self, code, timeout=600):
        out, err = self.transport.exec_raw(code, timeout=timeout)
        return out.decode(errors="replace") + err.decode(errors="replace")

    def close(self):
        transport = getattr(self, "transport", None)
        if transport is not None:
            disconnect(transport)
        self.proc.terminate()
        self.proc.wait(timeout=30)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
