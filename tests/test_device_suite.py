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
def test_device_module_on_micropython(module, tmp_path):
    proc = run_micropython([os.path.join(DEVICE_TESTS, "run.py"), module], check=False, MICRORL_TEST_TMP=str(tmp_path))
    _check(proc)
    assert "plain" in run_micropython(["-c", "import microrl; print(microrl.backend_name())"]).stdout


@pytest.mark.parametrize("module", MODULES)
def test_device_module_on_cpython_plain_backend(module, tmp_path):
    _check(run_cpython([os.path.join(DEVICE_TESTS, "run.py"), module], MICRORL_BACKEND="plain", MICRORL_TEST_TMP=str(tmp_path)))


def test_device_tests_write_their_files_in_the_folder_given(tmp_path):
    _check(run_cpython([os.path.join(DEVICE_TESTS, "run.py"), "test_policy"], MICRORL_BACKEND="plain", MICRORL_TEST_TMP=str(tmp_path)))
    assert any(name.endswith(".mrlp") for name in os.listdir(str(tmp_path))), os.listdir(str(tmp_path))


def test_device_tests_run_by_hand_get_a_folder_no_other_run_shares(tmp_path):
    # run.py without pytest (as on a board): each run makes a new folder under $TMPDIR, never a fixed name
    code = "import sys; sys.path.insert(0, %r); import tiny; print(tiny.tmp_path('a')); print(tiny.tmp_path('b'))" % DEVICE_TESTS
    runs = [run_cpython(["-c", code], TMPDIR=str(tmp_path), MICRORL_TEST_TMP="").stdout.split() for _ in range(2)]
    folders = [os.path.dirname(a) for a, b in runs]
    assert all(os.path.dirname(b) == os.path.dirname(a) for a, b in runs), runs
    assert folders[0] != folders[1] and all(os.path.dirname(f) == str(tmp_path) and os.path.isdir(f) for f in folders), runs
