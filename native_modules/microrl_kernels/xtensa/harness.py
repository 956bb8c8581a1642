"""Run the C kernels as compiled for the ESP32 on an emulated Xtensa core, without a board.

kernels.c is compiled exactly as for the xtensawin module (the Makefile's flags, Debian's LLVM 22
through cc.py), linked with this folder's bare-metal start-up (start.S, link.ld) and job
interpreter (harness.c) by Debian 12's xtensa-lx106-elf-ld, and run under Debian's
`qemu-system-xtensa -M sim -cpu de233_fpu -semihosting` (windowed registers and a single-precision
FPU with fused multiply-add, like the ESP32's; qemu has no ESP32 machine). A Job holds float32
arrays and kernel calls; run() returns the arrays as the kernels left them and the instructions
each call took (qemu -icount: instructions, not ESP32 cycles).

    job = Job()
    W = job.array(np.ones((4, 3))) ...
    job.dense(W, b, x, y, None, n=1, n_out=4, n_in=3, act=2)
    out = job.run(build(workdir))
    out[y], out.instructions[0]

    python3 harness.py bench     # instructions of a 13-64-64-4 forward (float, int16) and an Adam step

Tools: the folder toolchain.sh made ($MICRORL_XTENSA_LLVM, else ~/.cache/microrl/xtensa-llvm),
xtensa-lx106-elf-ld (binutils-xtensa-lx106) and qemu-system-xtensa (qemu-system-misc)."""
import os
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import cc  # noqa: E402  (this folder's compiler driver: the same steps as the module's build)

JOB_ADDR = 0x00400000
NO_ARRAY = 0xFFFFFFFF
ICOUNT_SHIFT = 10
CALIBRATION_INSNS = 2 * 10000
OPS = {"dense": 1, "dense_backward": 2, "adam": 3, "polyak": 4, "copy": 5, "div": 6, "sqrt": 7, "math": 8, "dense_int16": 9}
MATH = {"exp": 0, "tanh": 1, "normal_cdf": 2, "expm1": 3}
LINKER = "xtensa-lx106-elf-ld"
QEMU = "qemu-system-xtensa"


def missing_tools():
    """What is missing to build and run the harness here (empty when everything is)."""
    missing = []
    bin_dir = os.path.join(cc.toolchain_dir(), "bin")
    for name in ("clang", "llc", "llvm-mc"):
        if not os.path.isfile(os.path.join(bin_dir, name)):
            missing.append("Debian's LLVM 22 in %s (native_modules/microrl_kernels/xtensa/toolchain.sh)" % cc.toolchain_dir())
            break
    if not shutil.which(LINKER):
        missing.append("%s (apt-get install binutils-xtensa-lx106)" % LINKER)
    if not shutil.which(QEMU):
        missing.append("%s (apt-get install qemu-system-misc)" % QEMU)
    return missing


def module_flags():
    """(C flags, llc flags) of the xtensawin module, from the Makefile (the one definition)."""
    out = subprocess.run(["make", "-s", "-C", KERNELS, "ARCH=xtensawin", "xtensawin-flags"],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    cflags = [f for f in shlex.split(out[0]) if not f.startswith("-DMICRORL_SOURCE_HASH")]
    return cflags, shlex.split(out[1])


def build(workdir):
    """Compile and link the harness into workdir; returns the ELF's path."""
    cflags, llc_flags = module_flags()
    base = ["-std=c99", "-Wall", "-Werror", "-DNDEBUG", "-fno-common", "-I" + KERNELS] + cflags
    objects = []
    for src in (os.path.join(KERNELS, "kernels.c"), os.path.join(HERE, "harness.c")):
        obj = os.path.join(workdir, os.path.basename(src)[:-2] + ".o")
        cc.compile_c(base, src, obj, llc_flags)
        objects.append(obj)
    start = os.path.join(workdir, "start.o")
    pre = os.path.join(workdir, "start.s")
    cc.run([cc.tool("clang"), "--target=xtensa", "-E", "-P", "-x", "assembler-with-cpp", os.path.join(HERE, "start.S"), "-o", pre])
    cc.run([cc.tool("llvm-mc"), "-triple=xtensa", "-mcpu=esp32", "-filetype=obj", pre, "-o", start])
    elf = os.path.join(workdir, "harness.elf")
    cc.run([LINKER, "-T", os.path.join(HERE, "link.ld"), "--no-warn-rwx-segments", start] + objects + ["-o", elf])
    return elf


class Result:
    def __init__(self, data, instructions):
        self.data = data
        self.instructions = instructions

    def __getitem__(self, handle):
        """The array a handle of Job.array names, as the kernels left it."""
        offset, shape, dtype = handle
        size = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        return np.frombuffer(bytes(self.data[offset:offset + size]), dtype=dtype).reshape(shape)


class Job:
    """Arrays and kernel calls; the kernels' arguments as in kernels.h. Arrays are float32 unless
    a dtype is given (int16 or int32 for integer kernels: little-endian, as on the ESP32)."""

    def __init__(self):
        self.data = bytearray()
        self.words = []

    def array(self, values, dtype=np.float32):
        """Copy values into the job; returns the handle kernel calls and Result take."""
        values = np.ascontiguousarray(values, dtype=np.dtype(dtype).newbyteorder("<"))
        offset = len(self.data)
        self.data += values.tobytes()
        self.data += b"\0" * (-len(self.data) % 4)  # every array 4-byte aligned
        return offset, values.shape, values.dtype

    def zeros(self, *shape, dtype=np.float32):
        return self.array(np.zeros(shape), dtype)

    def _op(self, name, *args):
        self.words.append(OPS[name])
        for a in args:
            if a is None:
                self.words.append(NO_ARRAY)
            elif isinstance(a, tuple):
                self.words.append(a[0])
            elif isinstance(a, float):
                self.words.append(struct.unpack("<I", struct.pack("<f", a))[0])
            else:
                self.words.append(int(a) & 0xFFFFFFFF)

    def dense(self, W, b, x, y, z, n, n_out, n_in, act):
        self._op("dense", W, b, x, y, z, n, n_out, n_in, act)

    def dense_backward(self, W, x, y, z, dy, n, n_out, n_in, act, dW, db, dx):
        self._op("dense_backward", W, x, y, z, dy, n, n_out, n_in, act, dW, db, dx)

    def adam(self, p, g, m, v, n, lr, beta1, beta2, eps, step):
        self._op("adam", p, g, m, v, n, float(lr), float(beta1), float(beta2), float(eps), step)

    def polyak(self, target, source, n, tau):
        self._op("polyak", target, source, n, float(tau))

    def copy(self, target, source, n):
        self._op("copy", target, source, n)

    def dense_int16(self, W, b, x, y, n_in, n_out, act, s_out, s_14, s_14_out, T, P):
        """fixedpoint.py's int16 layer (W, x, y, T, P int16 arrays, b int32)."""
        self._op("dense_int16", W, b, x, y, n_in, n_out, act, s_out, s_14, s_14_out, T, P)

    def div(self, a, b, out, n):
        self._op("div", a, b, out, n)

    def sqrt(self, x, out, n):
        self._op("sqrt", x, out, n)

    def math(self, fn, x, out, n):
        self._op("math", MATH[fn], x, out, n)

    def image(self):
        head = struct.pack("<III", 0x4A4C524D, len(self.words), len(self.data))
        return head + struct.pack("<%dI" % len(self.words), *self.words) + bytes(self.data)

    def run(self, elf, timeout=120):
        """Run under qemu; Result (arrays by handle, .instructions per call). RuntimeError with
        qemu's exit status if the harness failed (100 + EXCCAUSE on a CPU exception)."""
        with tempfile.TemporaryDirectory() as tmp:
            image = os.path.join(tmp, "job.bin")
            with open(image, "wb") as f:
                f.write(self.image())
            cmd = [QEMU, "-M", "sim", "-cpu", "de233_fpu", "-semihosting", "-nographic", "-monitor", "none",
                   "-icount", "shift=%d" % ICOUNT_SHIFT, "-kernel", elf,
                   "-device", "loader,file=%s,addr=0x%x,force-raw=on" % (image, JOB_ADDR)]
            proc = subprocess.run(cmd, capture_output=True, timeout=timeout)
        out = proc.stdout
        start = out.find(b"MRLX")
        if proc.returncode != 0 or start < 0 or not out.endswith(b"END!"):
            raise RuntimeError("the xtensa harness failed (qemu exit status %d%s): %s" % (
                proc.returncode, ", CPU exception %d" % (proc.returncode - 100) if proc.returncode >= 100 else "",
                proc.stderr.decode(errors="replace")[-500:]))
        data_bytes, n_ops, calibration = struct.unpack_from("<III", out, start + 4)
        ticks = struct.unpack_from("<%dI" % n_ops, out, start + 16)
        data = out[start + 16 + 4 * n_ops:start + 16 + 4 * n_ops + data_bytes]
        per_insn = calibration / CALIBRATION_INSNS
        return Result(bytearray(data), [t / per_insn for t in ticks])


def bench(argv=None):
    """Instructions of the 13-64-64-4 forward (tanh, tanh, identity; relu, relu, identity), of one
    Adam step over its parameters, and of the same forward in int16, on the emulated core: an
    estimate of ESP32 work, not of its time."""
    rng = np.random.default_rng(0)
    sizes = [13, 64, 64, 4]
    job = Job()
    x = job.array(rng.standard_normal((1, 13)))
    layers = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        W = job.array(rng.standard_normal((n_out, n_in)) / np.sqrt(n_in))
        b = job.array(rng.standard_normal(n_out) * 0.1)
        layers.append((W, b, job.zeros(1, n_out), n_in, n_out))
    for hidden_act in (2, 2, 1):  # tanh twice (the first run warms nothing: qemu counts instructions), relu
        inp = x
        for k, (W, b, y, n_in, n_out) in enumerate(layers):
            job.dense(W, b, inp, y, None, 1, n_out, n_in, 0 if k == len(layers) - 1 else hidden_act)
            inp = y
    n_params = sum(n_in * n_out + n_out for _, _, _, n_in, n_out in layers)
    p = job.array(rng.standard_normal(n_params))
    g = job.array(rng.standard_normal(n_params))
    m, v = job.zeros(n_params), job.zeros(n_params)
    job.adam(p, g, m, v, n_params, 1e-3, 0.9, 0.999, 1e-8, 1)
    # the same 13-64-64-4 (relu, relu, identity) in int16, Q14 weights and activations, twice
    T = job.array(np.zeros(513), np.int16)
    xq = job.array(np.clip(rng.standard_normal(13) * 16384, -32767, 32767), np.int16)
    q_layers = []
    for _, _, _, n_in, n_out in layers:
        Wq = job.array(np.clip(rng.standard_normal((n_out, n_in)) / np.sqrt(n_in) * 16384, -32767, 32767), np.int16)
        bq = job.array(rng.standard_normal(n_out) * 0.1 * (1 << 28), np.int32)
        q_layers.append((Wq, bq, job.zeros(n_out, dtype=np.int16), n_in, n_out))
    for _ in range(2):
        inp = xq
        for k, (Wq, bq, yq, n_in, n_out) in enumerate(q_layers):
            job.dense_int16(Wq, bq, inp, yq, n_in, n_out, 0 if k == len(q_layers) - 1 else 1, 14, 14, 0, T, T)
            inp = yq
    with tempfile.TemporaryDirectory() as tmp:
        result = job.run(build(tmp))
    forward = [sum(result.instructions[3 * r:3 * r + 3]) for r in range(3)]
    for r, name in ((1, "tanh, tanh, identity"), (2, "relu, relu, identity")):
        print("13-64-64-4 forward (%s; one row): %.0f instructions (layers %s)" % (
            name, forward[r], ", ".join("%.0f" % i for i in result.instructions[3 * r:3 * r + 3])))
    adam = result.instructions[9]
    print("Adam over its %d parameters: %.0f instructions (%.1f per parameter)" % (n_params, adam, adam / n_params))
    q = result.instructions[13:16]
    print("13-64-64-4 forward in int16 (relu, relu, identity; the native module's dense_int16): %.0f instructions (layers %s)" % (
        sum(q), ", ".join("%.0f" % i for i in q)))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "bench":
        bench(sys.argv[2:])
    else:
        sys.exit(__doc__)
