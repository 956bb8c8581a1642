"""Shared by bench/device_forward.py and bench/train_step.py: this checkout's code on the path,
MicroPython runs per path (plain, native, viper fixed point, ulab), and C references built with
gcc -O2 on this machine."""
import json
import os
import shutil
import subprocess
import tempfile

from _paths import DEVICE, HOST, ROOT, on_path

on_path(HOST, DEVICE)

from microrl_host.board import native  # noqa: E402
from microrl_host.board.native import build as native_build  # noqa: E402
from microrl_host.board.virtual import micropython_path  # noqa: E402

MICROPYTHON = micropython_path()  # as the virtual board finds it: beside this Python, then PATH


def native_mpy_folder(workdir, log=print):
    """A folder holding microrl_kernels.mpy for x64: the shipped one (or $MICRORL_NATIVE_DIR's,
    native.mpy_for_arch) or one built from $MPY_DIR; None (with a note) when neither is there."""
    path = native.mpy_for_arch("x64")
    if path:
        return os.path.dirname(path)
    mpy_dir = os.environ.get("MPY_DIR")
    if not mpy_dir:
        log("native: skipped (no prebuilt x64 microrl_kernels.mpy and MPY_DIR not set)")
        return None
    try:
        return os.path.dirname(native_build.build_mpy(mpy_dir, "x64", workdir))
    except RuntimeError as e:
        log("native: build failed: %s" % str(e).splitlines()[0])
        return None


def run_micropython(code, executable=None, extra_path=None, backend=None, heap=None, timeout=1800):
    """Run code under micropython with the device core (plus extra_path first); returns the
    JSON object printed on its last line."""
    exe = executable or MICROPYTHON
    env = dict(os.environ)
    env["MICROPYPATH"] = os.pathsep.join(([extra_path] if extra_path else []) + [DEVICE, ".frozen"])
    env.pop("MICRORL_BACKEND", None)
    if backend:
        env["MICRORL_BACKEND"] = backend
    cmd = [exe] + (["-X", "heapsize=" + heap] if heap else []) + ["-c", code]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError("micropython failed:\n%s\n%s" % (proc.stdout[-2000:], proc.stderr[-2000:]))
    return json.loads(proc.stdout.strip().splitlines()[-1])


def compile_c(source, name, workdir, extra_sources=(), flags=("-O2",)):
    """Compile a C benchmark with gcc (the kernels' include folder on the path); returns the
    executable's path, or None when gcc is missing."""
    if shutil.which("gcc") is None:
        return None
    src = os.path.join(workdir, name + ".c")
    with open(src, "w") as f:
        f.write(source)
    exe = os.path.join(workdir, name)
    cmd = ["gcc", "-std=c99", "-fno-math-errno", "-I", native_build.SOURCE_DIR] + list(flags) + [src] + list(extra_sources) + ["-o", exe, "-lm"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError("%s failed:\n%s" % (" ".join(cmd), proc.stderr))
    return exe


def run_json(cmd, timeout=600):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def workdir():
    return tempfile.mkdtemp(prefix="microrl-bench-")


def median(values):
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def table(rows, headers):
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(headers)]
    line = "  ".join(str(h).ljust(w) for h, w in zip(headers, widths))
    out = [line, "-" * len(line)]
    for r in rows:
        out.append("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))
    return "\n".join(out)
