"""The kernels' harness (xtensa/harness.c and harness.py's Job) on emulated Cortex-M cores, for
instruction counts: kernels.c compiled as for the armv7m module (Cortex-M3, soft float) and the
armv7emsp one (Cortex-M4F: single-precision FPU, doubles in libgcc), by Debian's
arm-none-eabi-gcc with MicroPython's dynruntime.mk CPU flags and the Makefile's, linked with this
folder's start-up, run under `qemu-system-arm -M mps2-an385|an386|an500 -icount shift=0`. Cortex-M
has no instruction counter qemu models: SysTick, clocked by the CPU clock, counts emulated time,
which -icount ties to instructions; harness.c's calibration loop (two instructions a turn, `subs`
and `bne`) gives the ticks per instruction. The armv7emsp build also runs on the Cortex-M7 board
(AN500), as a Teensy 4 loads it. Soft-float and double helpers are counted too.

    job = harness.Job() ...; result = run(job, build(workdir, "m3"), "m3"); result.instructions

Tools: arm-none-eabi-gcc (apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi: its libgcc),
qemu-system-arm (apt-get install qemu-system-arm)."""
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(KERNELS, "riscv"))
import harness_rv  # noqa: E402  (its semihosted run; harness.py's Job and Result through it)

CC = "arm-none-eabi-gcc"
QEMU = "qemu-system-arm"
JOB_ADDR = 0x20000000
# core: (board, the module architecture, dynruntime.mk's flags for it)
CORES = {
    "m3": ("mps2-an385", "armv7m", ["-mthumb", "-mcpu=cortex-m3"]),
    "m4f": ("mps2-an386", "armv7emsp", ["-mthumb", "-mcpu=cortex-m4", "-mfpu=fpv4-sp-d16", "-mfloat-abi=hard"]),
    "m7": ("mps2-an500", "armv7emsp", ["-mthumb", "-mcpu=cortex-m4", "-mfpu=fpv4-sp-d16", "-mfloat-abi=hard"]),
}
FLAGS = ["-O2", "-fno-math-errno", "-fno-tree-loop-distribute-patterns", "-ffreestanding"]


def missing_tools():
    return ["%s (apt-get install %s)" % (t, p) for t, p in ((CC, "gcc-arm-none-eabi"), (QEMU, "qemu-system-arm")) if not shutil.which(t)]


def build(workdir, core):
    elf = os.path.join(workdir, "harness_%s.elf" % core)
    cmd = [CC] + CORES[core][2] + FLAGS + ["-std=c99", "-Wall", "-Werror", "-DNDEBUG", "-fno-common", "-I" + KERNELS, "-nostdlib",
                                           "-static", "-T", os.path.join(HERE, "link.ld"), os.path.join(HERE, "start.S"),
                                           os.path.join(KERNELS, "kernels.c"), os.path.join(KERNELS, "xtensa", "harness.c"), "-lgcc",
                                           "-o", elf]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return elf


def run(job, elf, core, timeout=600):
    """Run the job; harness.Result (arrays by handle, .instructions per call)."""
    cmd = [QEMU, "-M", CORES[core][0], "-nographic", "-monitor", "none", "-icount", "shift=0",
           "-semihosting-config", "enable=on,target=native", "-kernel", elf]
    return harness_rv.run_semihosted(cmd, job, JOB_ADDR, "arm " + core, timeout)
