"""Issue 39 (1): the virtual board's confinement holds against machine code. On the unix port a
viper function's code can be rewritten through uctypes, so board code runs any x86-64
instruction; bench/board_escape.py's attack does that and tries every way out with raw system
calls (files outside by path, `..` and open_by_handle_at; chmod/chown; links; mounts and
namespaces; unix, TCP and UDP sockets to the host's listeners; signals, ptrace and
process_vm_readv to a host process; fork loops; execve; io_uring, bpf, ...), from the REPL, from a
deployed .mpy and on a flash-image board, in every mode this machine allows, as this user and (as
root) as nobody. Each attempt must fail and the host must see nothing change; controls (getpid,
a file made inside the folder) must work, so that no attempt fails for nothing."""
import os
import re
import sys

import pytest

from boardkit import CONFINEMENTS, needs_board
from helpers import ROOT

sys.path.insert(0, os.path.join(ROOT, "bench"))
import board_escape  # noqa: E402

pytestmark = needs_board

USERS = ["this user"] + (["nobody"] if os.getuid() == 0 else [])
RUNS = [(m, u, v) for m in CONFINEMENTS for u in USERS for v in board_escape.VARIANTS]
with open(board_escape.ATTACK) as _f:
    NAMES = set(re.findall(r'^ *R\["([^"]+)"\]', _f.read(), re.M))
FLASH_ONLY = {"create a file beside the flash image", "open /flash.img from MicroPython"}
ATTEMPTS = {n for n in NAMES if not n.startswith("control: ")}
_reports = {}


def report(mode, user, variant):
    if (mode, user, variant) not in _reports:
        if user == "nobody":
            python, why = board_escape.unprivileged_python()
            if python is None:
                pytest.skip("the runs as nobody: " + why)
            for r in board_escape.as_nobody(python, [mode], board_escape.VARIANTS):
                _reports[(mode, user, r["variant"])] = r
        else:
            _reports[(mode, user, variant)] = board_escape.attack(mode, variant)
    r = _reports[(mode, user, variant)]
    if "skipped" in r:
        pytest.skip(r["skipped"])
    assert "error" not in r, r["error"]
    return r


@pytest.fixture(params=RUNS or [pytest.param(None, marks=pytest.mark.skip(reason="this machine allows no confinement (no bubblewrap with user namespaces, no Landlock)"))],
                ids=lambda run: "-".join(run).replace(" ", "_") if run else "none")
def run(request):
    return request.param


def test_the_machine_code_runs_on_the_board(run):
    """Not vacuous: the stub's getpid answers, and (without a flash image) a file it makes in the
    folder is there for the host."""
    r = report(*run)
    assert r["controls"]["control: getpid"] > 0, r["controls"]
    if run[2] != "flash":
        assert r["controls"]["control: create a file in the folder"] >= 0, r["controls"]
        assert r["control file seen by the host"]
    if r["uid"] == 0:
        assert r["handle opens on the host"]  # the shocker attempt is a real one: root on the host opens it


def test_every_attempt_fails(run):
    r = report(*run)
    expected = ATTEMPTS if run[2] == "flash" else ATTEMPTS - FLASH_ONLY
    assert set(r["attempts"]) == expected  # every attempt ran
    for name in sorted(expected):
        assert r["attempts"][name] < 0, "%s succeeded under %s (%s, %s): %d" % (name, run[0], run[1], run[2], r["attempts"][name])


def test_the_host_sees_nothing_change(run):
    """No file outside changed, no mode or owner, no connection to the host's listeners, the
    host's process alive."""
    assert report(*run)["effects"] == {}
