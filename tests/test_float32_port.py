"""The device core on a single-precision MicroPython, as every board runs: the device test suite
with the plain backend and with the shipped native module, and the cross-runtime comparison with
float32 expectations (tests/test_cross_runtime.py states them).

Needs MICRORL_F32_MICROPYTHON: a unix-port micropython built with
MICROPY_FLOAT_IMPL=MICROPY_FLOAT_IMPL_FLOAT from MicroPython's own sources (its ports/unix build
documentation, plus CFLAGS_EXTRA=-DMICROPY_FLOAT_IMPL=MICROPY_FLOAT_IMPL_FLOAT; see
docs/native.md). Skipped with that reason otherwise."""
import glob
import json
import os

import pytest

from helpers import DEVICE_TESTS, run_port

F32 = os.environ.get("MICRORL_F32_MICROPYTHON")

pytestmark = pytest.mark.skipif(
    not F32 or not os.path.isfile(F32),
    reason="MICRORL_F32_MICROPYTHON not set: name a single-precision unix-port micropython (built from MicroPython's sources with MICROPY_FLOAT_IMPL_FLOAT) to run the device suite in float32",
)
MODULES = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(DEVICE_TESTS, "test_*.py")))


def _run(args, extra_path=None, backend=None, timeout=900, tmp=None):
    return run_port(F32, args, extra_path, backend, timeout, tmp)


def test_the_build_is_single_precision():
    proc = _run(["-c", "print(1.0 + 1e-10 == 1.0, repr(1 / 3))"])
    assert proc.stdout.split()[0] == "True", "%s computes in double precision: %s" % (F32, proc.stdout)


@pytest.mark.parametrize("backend", ["plain", "native"])
def test_device_suite_in_float32(backend, tmp_path):
    from test_native_module import shipped_folder

    folder = shipped_folder(F32) if backend == "native" else None
    assert _run(["-c", "import microrl; print(microrl.backend_name())"], folder, backend).stdout.strip() == backend
    proc = _run([os.path.join(DEVICE_TESTS, "run.py")] + MODULES, folder, backend, tmp=tmp_path)
    last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    assert proc.returncode == 0 and last.endswith(" 0 failed"), proc.stdout[-4000:] + proc.stderr[-2000:]


def test_same_seed_same_numbers_in_float32():
    from microrl import backend
    from test_cross_runtime import SCRIPT, _cpython, compare

    proc = _run(["-c", SCRIPT])
    assert proc.returncode == 0, proc.stderr
    compare(json.loads(proc.stdout), _cpython(), True, backend.name())
