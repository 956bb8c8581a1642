"""The device tests (tests/device) run by pytest on CPython with numpy; here they also run under
the real micropython executable and on CPython's plain-Python backend, each as a subprocess."""
import glob
import os

import pytest

from helpers import DEVICE_TESTS, needs_micropython, run_cpython, run_micropython

MODULES = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(DEVICE_TESTS, "test_*.py")))


def _check(proc):
    out = proc.stdout + proc.stderr
    last = [line for line in proc.stdout.splitlines() if line.endswith("failed")]
    assert last, "no summary line:\n" + out[-3000:]
    passed, failed = [int(w) for w in last[-1].replace(",", "").split() if w.isdigit()]
    assert failed == 0 and proc.returncode == 0, out[-6000:]
    assert passed > 0
    return passed


@needs_micropython
@pytest.mark.parametrize("module", MODULES)
def test_device_module_on_micropython(module):
    proc = run_micropython([os.path.join(DEVICE_TESTS, "run.py"), module], check=False)
    _check(proc)
    assert "plain" in run_micropython(["-c", "import microrl; print(microrl.backend_name())"]).stdout


@pytest.mark.parametrize("module", MODULES)
def test_device_module_on_cpython_plain_backend(module):
    _check(run_cpython([os.path.join(DEVICE_TESTS, "run.py"), module], MICRORL_BACKEND="plain"))
