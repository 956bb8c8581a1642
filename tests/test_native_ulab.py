"""The ulab backend on a ulab-enabled micropython named by MICRORL_ULAB_MICROPYTHON (a unix port
built with ulab; docs/native.md says how). The device suite runs on it with the ulab backend
picked automatically, and the ulab kernels are compared with the plain ones in one process."""
import glob
import os
import re

import pytest

from backend_compare import compare_code
from helpers import DEVICE_TESTS, run_port

ULAB_MICROPYTHON = os.environ.get("MICRORL_ULAB_MICROPYTHON")

pytestmark = pytest.mark.skipif(
    not ULAB_MICROPYTHON or not os.path.isfile(ULAB_MICROPYTHON),
    reason="MICRORL_ULAB_MICROPYTHON not set (or not a file): name a micropython executable built with ulab to test the ulab backend",
)


def _run(args, backend=None, timeout=900, tmp=None):
    return run_port(ULAB_MICROPYTHON, args, backend=backend, timeout=timeout, tmp=tmp)


@pytest.fixture(scope="module")
def float32_ulab():
    out = _run(["-c", "from ulab import numpy as np; print(np.zeros(1).itemsize)"]).stdout.strip()
    if out != "4":
        pytest.skip("this ulab build has double floats: the ulab backend rightly stays unused there; build the unix port with single-precision floats, as ESP32 and Pico firmware are (docs/native.md)")


def _single_precision():
    out = _run(["-c", "print(1.0 + 1e-9 == 1.0)"]).stdout.strip()
    return out == "True"


def test_ulab_backend_is_picked_when_its_float_is_float32():
    proc = _run(["-c", "import microrl; from ulab import numpy as np; print(microrl.backend_name(), np.zeros(1).itemsize)"])
    assert proc.returncode == 0, proc.stderr
    name, itemsize = proc.stdout.split()
    # a double-precision ulab cannot share array('f') memory: the seam must skip it then
    assert name == ("ulab" if itemsize == "4" else "plain"), proc.stdout


def _failures(tmp, backend=None):
    modules = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(DEVICE_TESTS, "test_*.py")))
    proc = _run([os.path.join(DEVICE_TESTS, "run.py")] + modules, backend=backend, tmp=tmp)
    summary = [line for line in proc.stdout.splitlines() if re.match(r"^\d+ passed, \d+ failed$", line)]
    assert summary, proc.stdout[-3000:] + proc.stderr[-3000:]
    return set(re.findall(r"^FAIL (\S+):", proc.stdout, re.M)), summary[-1], proc.stdout


def test_device_suite_on_ulab(tmp_path):
    """Everything passes with ulab that passes with the plain backend on the same executable. On a
    single-precision build (as ESP32 and Pico firmware are) the finite-difference gradient checks
    of test_nn fail for every backend, plain included: their step (1e-6) is below float32's
    resolution; those are the only failures allowed, and only when plain fails them too."""
    ulab_failed, summary, out = _failures(tmp_path)
    if not ulab_failed:
        return
    assert _single_precision(), "failures on a double-precision build:\n" + out[-4000:]
    plain_failed, _, _ = _failures(tmp_path, "plain")
    assert ulab_failed <= plain_failed, "ulab fails where plain passes: %s\n%s" % (sorted(ulab_failed - plain_failed), out[-4000:])
    assert all(name.startswith("test_nn.test_gradients") for name in ulab_failed), sorted(ulab_failed)




def test_ulab_kernels_agree_with_plain(float32_ulab):
    proc = _run(["-c", compare_code("ulab")])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert float(proc.stdout.split()[-1]) < 1e-3, proc.stdout


def test_td3_steps_on_ulab(float32_ulab):
    code = (
        "from microrl.td3 import TD3, TD3Config\nfrom microrl.task import Env\nfrom microrl.tasks import pendulum\nimport microrl\n"
        "agent = TD3(Env(pendulum), TD3Config(warmup=20, batch=32, replay_capacity=500), 0)\n"
        "for _ in range(60):\n    agent.step()\n"
        "a = agent.policy()([1.0, 0.0, 0.0])\nprint(microrl.backend_name(), a[0])\n"
    )
    proc = _run(["-c", code])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    name, action = proc.stdout.split()
    assert name == "ulab" and -2.0 <= float(action) <= 2.0
