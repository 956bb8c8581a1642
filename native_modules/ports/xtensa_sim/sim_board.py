"""The xtensa_sim port's firmware as a board: qemu-system-xtensa -M sim -cpu de233_fpu running
MicroPython, its console on qemu's stdin/stdout (semihosting), a ROMFS image (the device core,
microrl_kernels.mpy, tests) put at ROMFS_ADDR by qemu's loader and mounted at /rom; code runs
through MicroPython's raw REPL.

    with SimBoard(firmware, image, icount=0) as board:
        out = board.run("print(1)")

icount: qemu's -icount shift (time advances 2**shift ns per emulated instruction, so ticks are
instruction counts, deterministic); None runs in real time."""
import os
import select
import shutil
import subprocess
import time

QEMU = "qemu-system-xtensa"
ROMFS_ADDR = 0x00800000  # mpconfigport.h
CPU_MHZ = 40  # Makefile: XTENSA_SIM_CPU_MHZ, the CCOUNT rate time.ticks_us divides by


def firmware_from_env():
    """MICRORL_XTENSA_FIRMWARE: the firmware.elf this port's Makefile built, or None."""
    path = os.environ.get("MICRORL_XTENSA_FIRMWARE", "")
    return path if path and os.path.isfile(path) else None


def missing():
    return None if shutil.which(QEMU) else "%s not found (apt-get install qemu-system-misc)" % QEMU


class SimBoard:
    def __init__(self, firmware, image=None, icount=None, boot_timeout=60, qemu_args=()):
        cmd = [QEMU, "-M", "sim", "-cpu", "de233_fpu", "-semihosting", "-nographic", "-monitor", "none", "-kernel", firmware]
        if icount is not None:
            cmd += ["-icount", "shift=%d" % icount]
        if image:
            cmd += ["-device", "loader,file=%s,addr=0x%x,force-raw=on" % (image, ROMFS_ADDR)]
        cmd += list(qemu_args)
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=0)
        self.buf = b""
        self._read_until(b">>> ", boot_timeout)
        self.proc.stdin.write(b"\x01")  # raw REPL
        self._read_until(b"raw REPL; CTRL-B to exit\r\n>", boot_timeout)

    def _read_until(self, marker, timeout):
        end = time.time() + timeout
        while marker not in self.buf:
            left = end - time.time()
            if left <= 0 or self.proc.poll() is not None and not select.select([self.proc.stdout], [], [], 0)[0]:
                raise RuntimeError("the xtensa_sim board stopped or timed out (qemu status %s) waiting for %r; output: %r"
                                   % (self.proc.poll(), marker, self.buf[-3000:]))
            if select.select([self.proc.stdout], [], [], min(left, 1.0))[0]:
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                if not chunk and self.proc.poll() is not None:
                    continue
                self.buf += chunk
        head, self.buf = self.buf.split(marker, 1)
        return head

    def run(self, code, timeout=600):
        """Run code in the raw REPL; its output and any traceback, as text."""
        self.proc.stdin.write(code.encode() + b"\x04")
        self._read_until(b"OK", 30)
        out = self._read_until(b"\x04", timeout)
        err = self._read_until(b"\x04", timeout)
        # the prompt; after a SystemExit (a test's SKIP) the raw REPL soft-reboots first and
        # prints its banner before it
        self._read_until(b">", 30)
        return (out + err).decode(errors="replace").replace("\r\n", "\n")

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()  # the firmware exits when its stdin ends
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
