"""The kernels' harness (xtensa/harness.c and harness.py's Job) on an emulated RV32IMC core, for
instruction counts: kernels.c compiled for the ESP32-C3's instruction set with Debian's
riscv64-unknown-elf-gcc (-march=rv32imc -mabi=ilp32, the Makefile's -O2 flags and single-precision
hyperparameters, as MicroPython's rv32imc firmware has), linked with this folder's start-up, run
under `qemu-system-riscv32 -M virt -bios none -semihosting -icount shift=0`, where the instret
CSR counts instructions. Floats are soft-float calls into libgcc (the C3 has no FPU), counted too.

    job = harness.Job() ...; result = run(job, build(workdir)); result.instructions

Tools: riscv64-unknown-elf-gcc (apt-get install gcc-riscv64-unknown-elf), qemu-system-riscv32
(qemu-system-misc)."""
import os
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(KERNELS, "xtensa"))
import harness  # noqa: E402  (the Job format and the harness's C are shared)

CC = "riscv64-unknown-elf-gcc"
QEMU = "qemu-system-riscv32"
JOB_ADDR = 0x80400000
FLAGS = ["-march=rv32imc", "-mabi=ilp32", "-mno-relax", "-O2", "-fno-math-errno", "-fno-tree-loop-distribute-patterns",
         "-ffreestanding", "-DMRL_HYPER_FLOAT=1"]


def missing_tools():
    return ["%s (apt-get install %s)" % (t, p) for t, p in ((CC, "gcc-riscv64-unknown-elf"), (QEMU, "qemu-system-misc")) if not shutil.which(t)]


def build(workdir):
    elf = os.path.join(workdir, "harness_rv.elf")
    cmd = [CC] + FLAGS + ["-std=c99", "-Wall", "-Werror", "-DNDEBUG", "-fno-common", "-I" + KERNELS, "-nostdlib", "-static",
                          "-T", os.path.join(HERE, "link.ld"), os.path.join(HERE, "start.S"), os.path.join(KERNELS, "kernels.c"),
                          os.path.join(KERNELS, "xtensa", "harness.c"), "-lgcc", "-o", elf]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return elf


def run(job, elf, timeout=600):
    """Run the job; harness.Result (arrays by handle, .instructions per call)."""
    cmd = [QEMU, "-M", "virt", "-bios", "none", "-nographic", "-monitor", "none", "-icount", "shift=0",
           "-semihosting-config", "enable=on,target=native", "-kernel", elf]
    return run_semihosted(cmd, job, JOB_ADDR, "riscv", timeout)


def run_semihosted(cmd, job, job_addr, name, timeout=600):
    """Run qemu's cmd with the job loaded at job_addr; the harness writes harness.out in qemu's
    folder (harness_arch.h). Returns harness.Result."""
    with tempfile.TemporaryDirectory() as tmp:
        image = os.path.join(tmp, "job.bin")
        with open(image, "wb") as f:
            f.write(job.image())
        cmd = cmd + ["-device", "loader,file=%s,addr=0x%x,force-raw=on" % (image, job_addr)]
        proc = subprocess.run(cmd, capture_output=True, timeout=timeout, cwd=tmp)
        try:
            with open(os.path.join(tmp, "harness.out"), "rb") as f:
                out = f.read()
        except OSError:
            out = b""
    start = out.find(b"MRLX")
    if proc.returncode != 0 or start < 0 or not out.endswith(b"END!"):
        raise RuntimeError("the %s harness failed (qemu exit status %d): %s" % (name, proc.returncode, proc.stderr.decode(errors="replace")[-500:]))
    data_bytes, n_ops, calibration = struct.unpack_from("<III", out, start + 4)
    ticks = struct.unpack_from("<%dI" % n_ops, out, start + 16)
    data = out[start + 16 + 4 * n_ops:start + 16 + 4 * n_ops + data_bytes]
    per_insn = calibration / harness.CALIBRATION_INSNS
    return harness.Result(bytearray(data), [t / per_insn for t in ticks])
