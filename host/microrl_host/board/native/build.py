"""Building the native kernels (native_modules/microrl_kernels) from this source tree: the
.mpy for one architecture from a MicroPython source tree (tests, benchmarks; the shipped files
come from native_modules/microrl_kernels/build_dist.py), and the same C kernels as a host shared
library (tests, benchmarks). Finding the shipped .mpy for a board is this package's __init__.
See docs/native.md."""
import os
import shutil
import subprocess

from .. import native

# the checkout: host/microrl_host/board/native/build.py -> five levels up
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
SOURCE_DIR = os.path.join(ROOT, "native_modules", "microrl_kernels")

# Flags for the host build of the kernels: the -O2 of the module build, and double kernels
HOST_CFLAGS = ["-std=c99", "-O2", "-fno-math-errno", "-Wall", "-DMICRORL_KERNELS_DOUBLE=1"]
KERNEL_C = os.path.join(SOURCE_DIR, "kernels.c")


def build_mpy(mpy_dir, arch, out_dir, timeout=600):
    """Build microrl_kernels.mpy for `arch` with MicroPython's py/dynruntime.mk from the source tree
    `mpy_dir`, in a copy of the sources under out_dir; returns the .mpy path. RuntimeError with the
    compiler's output when the build fails (missing cross compiler, pyelftools, ...)."""
    work = os.path.join(out_dir, "microrl_kernels-" + arch)
    if os.path.exists(work):
        shutil.rmtree(work)
    shutil.copytree(SOURCE_DIR, work, ignore=shutil.ignore_patterns("build", "build-*", "*.mpy", "__pycache__"))
    cmd = ["make", "MPY_DIR=" + os.path.abspath(mpy_dir), "ARCH=" + arch, "MICRORL_SOURCE_HASH=" + native.source_hash(SOURCE_DIR)]
    proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=timeout)
    path = os.path.join(work, native.MPY_NAME)
    if proc.returncode != 0 or not os.path.isfile(path):
        raise RuntimeError("building %s for %s failed:\n%s\n%s" % (native.MPY_NAME, arch, proc.stdout[-3000:], proc.stderr[-3000:]))
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
    h, i32 = ctypes.POINTER(ctypes.c_int16), ctypes.POINTER(ctypes.c_int32)
    lib.mrl_dense_int16.argtypes = [h, i32, h, h, c_int, c_int, c_int, c_int, c_int, c_int, h, h]
    lib.mrl_dense_int16.restype = None
    return lib
