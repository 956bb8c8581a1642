"""The native kernels (native_modules/microrl_kernels) from the host side: finding a prebuilt
microrl_kernels.mpy for a board's architecture (for `microrl deploy`), telling a board's
architecture from its sys.implementation._mpy, and building the same C kernels as a host shared
library (tests, benchmarks). See docs/native.md."""
import os
import shutil
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))  # the checkout
SOURCE_DIR = os.path.join(ROOT, "native_modules", "microrl_kernels")
MODULE = "microrl_kernels"
MPY_NAME = MODULE + ".mpy"

# The architectures the Makefile builds, and the boards they are for
ARCHS = {
    "x64": "MicroPython unix port on x86-64 (tests)",
    "armv6m": "Cortex-M0/M0+ (Raspberry Pi Pico RP2040)",
    "armv7m": "Cortex-M3",
    "armv7emsp": "Cortex-M4F/M7 single-precision FPU (STM32F4/F7, Teensy 4, Pixhawk)",
    "xtensawin": "ESP32, ESP32-S3",
    "rv32imc": "ESP32-C3",
}

# sys.implementation._mpy >> 10 & 15 on a board (py/persistentcode.h, MP_NATIVE_ARCH_*)
_MPY_ARCHS = (None, "x86", "x64", "armv6", "armv6m", "armv7m", "armv7em", "armv7emsp", "armv7emdp", "xtensa", "xtensawin", "rv32imc", "rv64imc")

# Flags for the host build of the kernels: the -O2 of the module build, and double kernels
HOST_CFLAGS = ["-std=c99", "-O2", "-fno-math-errno", "-Wall", "-DMICRORL_KERNELS_DOUBLE=1"]
KERNEL_C = os.path.join(SOURCE_DIR, "kernels.c")


def arch_from_mpy(mpy_value):
    """Architecture name from a board's sys.implementation._mpy (None: no native code)."""
    if mpy_value is None:
        return None
    code = (int(mpy_value) >> 10) & 0x0F
    return _MPY_ARCHS[code] if code < len(_MPY_ARCHS) else None


def mpy_header(path):
    """(version, sub_version, arch) of a native .mpy file; ValueError if it is not one."""
    with open(path, "rb") as f:
        head = f.read(4)
    if len(head) < 4 or head[0:1] != b"M":
        raise ValueError("%s is not a .mpy file" % path)
    version, flags = head[1], head[2]
    arch_code = flags >> 2
    return version, flags & 3, _MPY_ARCHS[arch_code] if arch_code < len(_MPY_ARCHS) else None


def search_dirs():
    """Where prebuilt modules are looked for, first match wins: $MICRORL_NATIVE_DIR, then the
    Makefile's `make dist` output in the source tree. Each holds <arch>/microrl_kernels.mpy."""
    dirs = []
    if os.environ.get("MICRORL_NATIVE_DIR"):
        dirs.append(os.environ["MICRORL_NATIVE_DIR"])
    dirs.append(os.path.join(SOURCE_DIR, "dist"))
    return dirs


def mpy_for_arch(arch, board_mpy=None):
    """Path of a prebuilt microrl_kernels.mpy for `arch` (e.g. 'armv7emsp'), or None when there is
    none (the board then runs the ulab, viper fixed-point or plain path). With board_mpy (the
    board's sys.implementation._mpy), a file of another .mpy version or architecture is skipped:
    MicroPython refuses to import it."""
    if arch is None:
        return None
    for folder in search_dirs():
        path = os.path.join(folder, arch, MPY_NAME)
        if not os.path.isfile(path):
            continue
        try:
            version, sub, file_arch = mpy_header(path)
        except (OSError, ValueError):
            continue
        if file_arch != arch:
            continue
        if board_mpy is not None and (version != (board_mpy & 0xFF) or sub != ((board_mpy >> 8) & 3)):
            continue
        return path
    return None


def build_mpy(mpy_dir, arch, out_dir, timeout=600):
    """Build microrl_kernels.mpy for `arch` with MicroPython's py/dynruntime.mk from the source tree
    `mpy_dir`, in a copy of the sources under out_dir; returns the .mpy path. RuntimeError with the
    compiler's output when the build fails (missing cross compiler, pyelftools, ...)."""
    work = os.path.join(out_dir, "microrl_kernels-" + arch)
    if os.path.exists(work):
        shutil.rmtree(work)
    shutil.copytree(SOURCE_DIR, work, ignore=shutil.ignore_patterns("build-*", "dist", "*.mpy"))
    proc = subprocess.run(["make", "MPY_DIR=" + os.path.abspath(mpy_dir), "ARCH=" + arch], cwd=work, capture_output=True, text=True, timeout=timeout)
    path = os.path.join(work, MPY_NAME)
    if proc.returncode != 0 or not os.path.isfile(path):
        raise RuntimeError("building %s for %s failed:\n%s\n%s" % (MPY_NAME, arch, proc.stdout[-3000:], proc.stderr[-3000:]))
    return path


def build_host_library(out_dir, cc="gcc"):
    """Compile the kernels into a host shared library (float and double kernels) for ctypes;
    returns its path. RuntimeError with the compiler's message on failure."""
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "libmicrorl_kernels.so")
    cmd = [cc] + HOST_CFLAGS + ["-shared", "-fPIC", KERNEL_C, "-o", path]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError("%s failed:\n%s" % (" ".join(cmd), proc.stderr))
    return path


def load_host_library(path):
    """The shared library through ctypes, with argument types set for every kernel."""
    import ctypes

    lib = ctypes.CDLL(path)
    c_int, c_double = ctypes.c_int, ctypes.c_double
    for sfx, real in (("f", ctypes.c_float), ("d", ctypes.c_double)):
        p = ctypes.POINTER(real)
        getattr(lib, "mrl_dense_" + sfx).argtypes = [p, p, p, p, p, c_int, c_int, c_int, c_int]
        getattr(lib, "mrl_dense_backward_" + sfx).argtypes = [p, p, p, p, p, c_int, c_int, c_int, c_int, p, p, p]
        getattr(lib, "mrl_adam_" + sfx).argtypes = [p, p, p, p, c_int, c_double, c_double, c_double, c_double, c_int]
        getattr(lib, "mrl_polyak_" + sfx).argtypes = [p, p, c_int, c_double]
        getattr(lib, "mrl_copy_" + sfx).argtypes = [p, p, c_int]
        for name in ("dense", "dense_backward", "adam", "polyak", "copy"):
            getattr(lib, "mrl_%s_%s" % (name, sfx)).restype = None
    return lib
