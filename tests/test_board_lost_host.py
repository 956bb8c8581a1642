"""Issue 30 (3, 4, 8): a host that dies while the board serves does not wedge the board, and a
board that vanishes under the host ends in one line, its partial results kept."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from boardkit import board, cli, cli_json, make_policy, mpremote, needs_board  # noqa: F401 (fixture)
from helpers import ROOT, repo_env

pytestmark = needs_board

SERVING_HOST = """
import sys, time
from microrl_host.board.serial_link import SerialLink
link = SerialLink(sys.argv[1]).open()
link.load('policy.mrlp')
link.infer([0.1, 0.2, 0.3])
print('serving', flush=True)
if sys.argv[2] == 'busy':  # dies while it writes requests
    while True:
        link.infer([0.1, 0.2, 0.3])
time.sleep(600)
"""


def _start_serving_host(port, mode="idle"):
    proc = subprocess.Popen([sys.executable, "-c", SERVING_HOST, port, mode], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=repo_env(), cwd=ROOT)
    line = proc.stdout.readline().strip()
    assert line == "serving", proc.stderr.read() if proc.poll() is not None else line
    return proc


@pytest.mark.timeout(300)
@pytest.mark.parametrize("mode", ["idle", "busy"])
def test_a_host_killed_while_the_board_serves_does_not_wedge_it(board, mode):
    from microrl_host.board.deploy import deploy

    proc = _start_serving_host(board.port, mode)
    time.sleep(0.3)
    proc.kill()  # SIGKILL: no close(), no EXIT request
    proc.wait()
    restarts = board.restarts
    t0 = time.monotonic()
    report = deploy(board.port, board.policy_path)  # at once, before the line was quiet for long
    assert report["copied"] == [] and report["policy_max_diff"] < 1e-5
    assert time.monotonic() - t0 < 20
    # the board was interrupted, not reset behind deploy's back (deploy soft-resets it itself)
    assert board.restarts - restarts <= 2


@pytest.mark.timeout(300)
def test_mpremote_reaches_a_board_whose_host_died(board):
    proc = _start_serving_host(board.port)
    proc.kill()
    proc.wait()
    time.sleep(1.0)  # a person typing the next command: the line has been quiet
    r = mpremote(board.port, "exec", "print('back at the REPL')", timeout=30)
    assert r.stdout.strip() == "back at the REPL", r.stderr


@pytest.mark.timeout(300)
def test_a_serving_board_keeps_serving_a_host_that_pauses(board):
    """A Ctrl-C (0x03) only breaks the server after quiet and outside a frame: a host that pauses
    and then sends frames (some holding 0x03) is answered."""
    import struct

    from microrl import protocol as P
    from microrl_host.board.serial_link import SerialLink

    with SerialLink(board.port, policy_path="policy.mrlp") as link:
        time.sleep(1.2)
        obs = list(struct.unpack("<3f", b"\x03\x00\x80\x3f" * 3))  # every float begins with 0x03
        link.seq = 2  # the next request's seq is 3 (0x03)
        action, _ = link.infer(obs)
        assert abs(action[0] - board.policy(obs)[0]) < 1e-5
        time.sleep(1.2)
        link.write(b"\xa5\x03")  # a frame's start, then 0x03: inside a frame, no break
        time.sleep(0.5)
        link.write(b"xyz\x03")  # 0x03 as the fourth byte after quiet: line noise, no break
        action, _ = link.infer([0.5, -0.5, 1.0])
        assert abs(action[0] - board.policy([0.5, -0.5, 1.0])[0]) < 1e-5
        assert link.ping()["protocol"] == P.VERSION


@pytest.mark.timeout(300)
def test_bench_serial_refuses_a_timeout_that_makes_no_sense(board):
    for bad in ("-1", "0", "nan", "inf", "x"):
        r = cli("bench", "serial", "--port", board.port, "--policy", board.policy_path, "-n", "5", "--timeout", bad, timeout=60)
        assert r.returncode == 2 and "--timeout" in r.stderr.strip().splitlines()[-1] and "Traceback" not in r.stderr, (bad, r.stderr)
    r = cli_json("bench", "serial", "--port", board.port, "--policy", board.policy_path, "-n", "5")
    assert r["completed"] == 5


def test_deploy_refuses_a_timeout_that_makes_no_sense(board):
    t0 = time.monotonic()
    for bad in ("nan", "-1", "0", "inf"):
        r = cli("deploy", "--port", board.port, "--timeout", bad, timeout=60)
        assert r.returncode == 2 and "--timeout" in r.stderr and "Traceback" not in r.stderr, (bad, r.stderr)
    assert time.monotonic() - t0 < 30  # refused at once, no wait on the board


@pytest.mark.timeout(300)
def test_a_board_that_vanishes_during_bench_serial_ends_in_one_line(tmp_path):
    policy = tmp_path / "p.mrlp"
    make_policy(policy)
    sim = subprocess.Popen([sys.executable, "-m", "microrl_host.cli", "board", "sim", "--folder", str(tmp_path / "fs")],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=repo_env(), cwd=ROOT)
    try:
        port = sim.stdout.readline().strip()
        bench = subprocess.Popen([sys.executable, "-m", "microrl_host.cli", "bench", "serial", "--port", port, "--policy", str(policy),
                                  "-n", "1000000", "--json", "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env=repo_env(), cwd=ROOT)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not os.path.exists(tmp_path / "fs" / "policy.mrlp"):
            time.sleep(0.2)
        time.sleep(4.0)  # deployed, serving, some hundreds of requests
    finally:
        sim.send_signal(signal.SIGTERM)  # the board and its port are gone (unplugged)
        sim.wait(20)
    out, err = bench.communicate(timeout=120)
    assert bench.returncode == 1, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "partial results" in err
    result = json.loads(out.strip().splitlines()[-1])
    assert 0 < result["completed"] < 1000000 and result["p50_us"] > 0 and result["error"]


@pytest.mark.timeout(120)
def test_serial_link_close_after_the_board_vanished(tmp_path):
    from microrl_host.board.deploy import deploy
    from microrl_host.board.serial_link import LinkError, SerialLink
    from microrl_host.board.virtual import VirtualBoard

    policy = tmp_path / "p.mrlp"
    make_policy(policy)
    vb = VirtualBoard(str(tmp_path / "fs")).start()
    try:
        deploy(vb.port, str(policy))
        link = SerialLink(vb.port, policy_path="policy.mrlp", timeout=1.0).open()
        link.infer([0.1, 0.2, 0.3])
    finally:
        vb.stop()  # the port vanishes under the open link
    with pytest.raises(LinkError):
        link.infer([0.1, 0.2, 0.3])
    link.close()  # no OSError: the port is closed all the same
    assert link.transport is None
