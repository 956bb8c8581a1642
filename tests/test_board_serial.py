"""The serial protocol, microrl.serve on the virtual board, and `microrl bench serial`."""
import struct
import time

import pytest

from boardkit import board, board_file, cli, cli_json, make_policy, needs_board  # noqa: F401 (fixture)
from helpers import needs_micropython, run_micropython_code

from microrl import protocol as P


def test_frames_round_trip_and_damage_is_caught():
    d = P.Decoder()
    frame = P.encode(P.INFER, 7, struct.pack("<3f", 1.0, 2.0, 3.0))
    assert d.feed_bytes(b"junk" + frame) == [(P.INFER, 7, struct.pack("<3f", 1.0, 2.0, 3.0))]
    assert d.take_skipped() == 4
    bad = bytearray(frame)
    bad[-6] ^= 0x10  # payload
    assert d.feed_bytes(bytes(bad)) == [P.E_CRC]
    bad = bytearray(frame)
    bad[4] ^= 0x40  # length: caught by the header check at once, before any payload is swallowed
    assert d.feed_bytes(bytes(bad) + frame)[0] == P.E_HEADER
    assert d.feed_bytes(frame) == [(P.INFER, 7, struct.pack("<3f", 1.0, 2.0, 3.0))]
    long = bytearray(P.MAGIC + bytes((1, 1, 0xFF, 0xFF)))
    long.append(P.header_check(1, 1, 0xFFFF))
    assert d.feed_bytes(bytes(long)) == [P.E_TOO_LONG]
    assert d.feed_bytes(b"\xa5\xa5\x5a" + frame[2:]) == [(P.INFER, 7, struct.pack("<3f", 1.0, 2.0, 3.0))]


@needs_micropython
def test_micropython_encodes_the_same_frames():
    out = run_micropython_code("from microrl import protocol as P\nimport struct\nprint(P.encode(P.ROLLOUT, 200, struct.pack('<IH', 5, 3)).hex())")
    assert bytes.fromhex(out.strip()) == P.encode(P.ROLLOUT, 200, struct.pack("<IH", 5, 3))




@needs_board
def test_link_infer_matches_host_and_rollout_matches_evaluate(board):
    from microrl.evaluate import evaluate
    from microrl.task import Env
    from microrl.tasks import pendulum
    from microrl_host.board.serial_link import SerialLink

    with SerialLink(board.port) as link:
        n_in, n_out, described = link.load("policy.mrlp")
        assert (n_in, n_out) == (3, 1) and "3-64-64-1" in described
        action, compute_us = link.infer([0.5, -0.5, 1.0])
        assert abs(action[0] - board.policy([0.5, -0.5, 1.0])[0]) < 1e-5
        assert 0 < compute_us < 1e6
        rows, steps, compute, total = link.rollout("pendulum", 11, 2)
        returns = [row[0] for row in rows]
        assert steps == 400 and 0 < compute <= total and [row[3] for row in rows] == [200, 200]
        restarts = board.restarts
    # EXIT returned the board to its REPL: reachable without a reset (mpremote resume does none)
    from boardkit import mpremote

    r = mpremote(board.port, "resume", "exec", "print('repl', 'serve' in dir())")
    # the session that started the server is still there (its `serve` name): no reset happened
    assert r.stdout.split() == ["repl", "True"] and board.restarts == restarts
    _, _, host = evaluate(board.policy, Env(pendulum), 2, seed=11)
    assert max(abs(a - b) for a, b in zip(returns, host)) < 1e-2 * max(1.0, abs(host[0]))


@needs_board
def test_bench_serial_few_hundred_requests(board):
    r = cli_json("bench", "serial", "--port", board.port, "--policy", board.policy_path, "-n", "300")
    for key in ("p50_us", "p90_us", "p99_us", "max_us", "board_compute_us", "per_second"):
        assert r[key] > 0, key
    assert r["completed"] == 300 and r["error"] is None
    assert r["p50_us"] <= r["p90_us"] <= r["p99_us"] <= r["max_us"]
    assert r["board_compute_us"] < r["p50_us"]  # the round trip includes the compute
    table = cli("bench", "serial", "--port", board.port, "--policy", board.policy_path, "-n", "50", "--no-deploy", "--quiet")
    assert table.returncode == 0 and "round trip p99" in table.stdout and "on the host" in table.stdout


@needs_board
def test_bench_serials_bar_shows_the_rate_the_table_gives(board):
    # was (issue 34's friction list): the bar said 442 req/s where the table said 5,230/s, its
    # clock started before the link was opened, the policy loaded and the warm-up requests made
    import re

    proc = cli("bench", "serial", "--port", board.port, "--policy", board.policy_path, "-n", "400", "--no-deploy")
    assert proc.returncode == 0, proc.stderr[-3000:]
    bar = float(re.findall(r"([0-9.]+)req/s", proc.stderr)[-1])
    table = float(re.search(r"inferences per second\s+([0-9.,]+)", proc.stdout).group(1).replace(",", ""))
    assert 0.75 < bar / table < 1.33, (bar, table, proc.stderr[-500:], proc.stdout)


@needs_board
def test_board_reset_in_the_middle_of_a_benchmark(board):
    import subprocess
    import sys

    from helpers import ROOT, repo_env

    sent_before = board.bytes_from_host
    proc = subprocess.Popen([sys.executable, "-m", "microrl_host.cli", "bench", "serial", "--port", board.port, "--policy", board.policy_path,
                             "-n", "100000", "--no-deploy", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=repo_env(), cwd=ROOT)
    # reset once some hundreds of requests have gone out (a fixed sleep reset a loaded machine's
    # run while it was still starting, which is another error: exit 2); a request is 20-30 bytes
    deadline = time.monotonic() + 300
    while board.bytes_from_host - sent_before < 20000 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert proc.poll() is None, proc.communicate()[1][-3000:]
    board.hard_reset()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    result = __import__("json").loads(out.strip().splitlines()[-1])
    assert "reset" in result["error"]
    assert 0 < result["completed"] < 100000 and result["p50_us"] > 0  # partial results kept
    assert "partial results" in err and "Traceback" not in err
    # and the board is usable again afterwards
    r = cli_json("bench", "serial", "--port", board.port, "--policy", board.policy_path, "-n", "20")
    assert r["completed"] == 20


@needs_board
def test_every_good_request_is_answered_among_cut_and_damaged_frames(board):
    """The short fuzz (bench/serial_fuzz.py runs 10,000): 1,000 good requests with garbage, cut
    frames, bit flips and oversized headers between them, written while reading; every good
    request gets its correct answer, the board never restarts, and still serves its policy."""
    from microrl_host.board.serial_fuzz import fuzz
    from microrl_host.board.serial_link import SerialLink

    with SerialLink(board.port, policy_path="policy.mrlp") as link:
        restarts = board.restarts  # opening the link soft-resets the board: count from here
        result = fuzz(link, board.policy, 1000, seed=1234)
        action, _ = link.infer([0.5, -0.5, 1.0])
        assert abs(action[0] - board.policy([0.5, -0.5, 1.0])[0]) < 1e-5
    assert result["lost"] == 0, result["lost_examples"]
    assert min(result["noise_items"].values()) > 100 and result["error_frames"] > 1000
    assert board.restarts == restarts  # never crashed


@needs_board
@pytest.mark.timeout(120)  # a regression must fail, not hang the suite
def test_bursts_of_30_kb_with_many_error_replies_do_not_stall_the_board(board):
    """Issue 12's leftover: 3 noise items per request in batches of 200 (about 30 kB written at
    once, about 20 kB of error frames coming back). The virtual board's relay used to block
    writing the burst to the board while the board blocked writing its replies (a pty holds
    about 18 kB each way): every batch stalled, and then the host's write hung for ever."""
    from microrl_host.board.serial_fuzz import fuzz
    from microrl_host.board.serial_link import SerialLink

    with SerialLink(board.port, policy_path="policy.mrlp") as link:
        restarts = board.restarts
        t0 = time.monotonic()
        result = fuzz(link, board.policy, 400, seed=3, batch=200, noise_per_request=3.0, batch_timeout=20.0)
        seconds = time.monotonic() - t0
        action, _ = link.infer([0.5, -0.5, 1.0])
        assert abs(action[0] - board.policy([0.5, -0.5, 1.0])[0]) < 1e-5
    assert result["lost"] == 0, result["lost_examples"]
    assert sum(result["noise_items"].values()) > 800 and result["error_frames"] > 800
    assert seconds < 20.0, seconds  # both batches finished, none waited for its timeout
    assert board.restarts == restarts


@needs_board
@pytest.mark.timeout(60)
def test_a_board_that_stops_reading_ends_a_write_in_an_error(board):
    """The board's process stopped (as a hung board): once the line's buffers are full, a write
    ends in a LinkError within the link's timeout instead of blocking for ever; once the board
    runs again it skips what it was sent and answers."""
    import os
    import signal

    from microrl_host.board.serial_link import LinkError, SerialLink

    with SerialLink(board.port, policy_path="policy.mrlp", timeout=1.0) as link:
        pid = board.pid
        os.kill(pid, signal.SIGSTOP)
        try:
            t0 = time.monotonic()
            with pytest.raises(LinkError, match="stalled for 1.0 s: the board stopped reading"):
                link.write(bytes(1 << 20))  # 1 MB: far more than the relay and both ptys hold
            seconds = time.monotonic() - t0
        finally:
            os.kill(pid, signal.SIGCONT)
        assert seconds < 5.0, seconds
        link.timeout = 10.0  # the board first skips the zeros the line held
        action, _ = link.infer([0.5, -0.5, 1.0])
        assert abs(action[0] - board.policy([0.5, -0.5, 1.0])[0]) < 1e-5


@needs_board
def test_a_cut_frame_then_silence_is_reported_with_its_seq(board):
    """Issue 12: a request cut after its header, then silence: the board's timeout error carries
    the cut request's seq; a request cut inside its header and followed at once by a good one:
    the good one is answered."""
    from microrl_host.board.serial_link import SerialLink

    with SerialLink(board.port, policy_path="policy.mrlp") as link:
        infer = P.encode(P.INFER, 77, struct.pack("<3f", 0.5, -0.5, 1.0))
        for cut in (7, 9, 11):
            link.write(infer[:cut])
            f = link._wait_frame(lambda f: f[0] == P.ERROR and f[2][0] == P.E_TIMEOUT, 5.0, "the timeout error")
            assert f[1] == 77, (cut, f)
        for cut in (3, 5, 9, 11):
            link.write(infer[:cut] + P.encode(P.PING, 78))
            f = link._wait_frame(lambda f: f[1] == 78, 5.0, "the ping's reply")
            assert f[0] == P.PING | P.REPLY, (cut, f)


@needs_board
def test_board_out_of_memory_is_an_error_frame_not_a_crash(board, tmp_path):
    """A policy too big for the board's heap: an error frame naming the step and the heap it
    needs against the heap free; the policy loaded before stays in service."""
    import os
    import shutil

    from microrl_host.board.serial_link import DeviceError, SerialLink

    big = tmp_path / "big.mrlp"
    make_policy(big, sizes=(13, 256, 256, 4))  # 70k parameters: 280 kB, more than the 160K heap
    shutil.copy(big, board_file(board, "big.mrlp"))
    damaged = tmp_path / "damaged.mrlp"
    with open(board.policy_path, "rb") as f:
        damaged.write_bytes(f.read()[:-1] + b"\x00")  # its checksum broken
    shutil.copy(damaged, board_file(board, "damaged.mrlp"))
    with SerialLink(board.port) as link:
        restarts = board.restarts
        with pytest.raises(DeviceError, match="MemoryError") as e:
            link.load("big.mrlp")
        message = str(e.value)
        assert "loading the policy big.mrlp: out of memory: it needs about %d bytes of heap" % os.path.getsize(big) in message, message
        free = int(message.split(", ")[-1].split()[0])
        assert 0 < free < 160 * 1024
        with pytest.raises(DeviceError, match="no policy loaded"):
            link.infer([0.0, 0.0, 0.0])
        link.load("policy.mrlp")  # still serving
        expected = board.policy([0.5, -0.5, 1.0])[0]
        # a failed LOAD, for want of memory or a damaged file, keeps the policy loaded before
        for name, error in (("big.mrlp", "out of memory"), ("damaged.mrlp", "ChecksumError"), ("missing.mrlp", "OSError")):
            with pytest.raises(DeviceError, match=error):
                link.load(name)
            action, _ = link.infer([0.5, -0.5, 1.0])
            assert abs(action[0] - expected) < 1e-5, name
        # issue 30 (9): the board's error names the file it could not open
        with pytest.raises(DeviceError, match="no such file on the board: missing.mrlp"):
            link.load("missing.mrlp")
        with pytest.raises(DeviceError, match="lib: not a regular file"):
            link.load("lib")
    assert board.restarts == restarts


@pytest.mark.parametrize("backend_name", ["plain", "numpy"])
def test_infer_refuses_non_finite_observations_with_cpython_backends(backend_name, tmp_path):
    """The server's INFER on CPython's backends (the board test below: native): a NaN or infinite
    observation gets an E_PAYLOAD error frame naming the index, for float and int16 policies."""
    import io
    import os

    from microrl import backend
    from microrl import fixedpoint as fp
    from microrl.server import Server

    backend.use(backend_name)
    r, w = os.pipe()
    try:
        policy = make_policy(tmp_path / "p.mrlp")
        fp.save(str(tmp_path / "q.mrlq"), fp.quantise(policy, [[0.1 * k, -0.2 * k, 0.3] for k in range(10)]))
        out = io.BytesIO()
        with os.fdopen(r, "rb") as inp:
            server = Server(inp, out)
            for name in ("p.mrlp", "q.mrlq"):
                server.handle(P.LOAD, 1, str(tmp_path / name).encode())
                server.handle(P.INFER, 2, P.pack_observation([float("nan"), 0.0, 0.0]))
                server.handle(P.INFER, 3, P.pack_observation([0.0, 0.0, float("-inf")]))
                server.handle(P.INFER, 4, P.pack_observation([0.5, -0.5, 1.0]))
        frames = P.Decoder().feed_bytes(out.getvalue())
        assert [(t, seq) for t, seq, _ in frames] == [(P.LOAD | P.REPLY, 1), (P.ERROR, 2), (P.ERROR, 3), (P.INFER | P.REPLY, 4)] * 2
        errors = [P.parse_error(payload) for t, _, payload in frames if t == P.ERROR]
        assert [code for code, _ in errors] == [P.E_PAYLOAD] * 4
        assert [m.split(":")[0] for _, m in errors] == ["observation[0] is nan", "observation[2] is -inf"] * 2, errors
    finally:
        os.close(w)
        backend.use(None)


@needs_board
def test_non_finite_observations_are_refused_over_the_link(board, tmp_path):
    """INFER with a NaN or an infinity, to a float and an int16 policy on the board's native
    kernels: an E_PAYLOAD error frame naming the index (the native backend used to answer with a
    finite action, the int16 policy with "can't convert NaN to int"); the policy keeps serving."""
    import shutil

    from microrl import fixedpoint as fp
    from microrl_host.board.serial_link import DeviceError, SerialLink

    from boardkit import mpremote

    paths = mpremote(board.port, "resume", "exec", "import gc\ngc.collect()\nimport microrl\nfrom microrl import fixedpoint\nprint(microrl.backend_name(), fixedpoint.implementation())")
    assert paths.stdout.split() == ["native", "native"], paths.stdout + paths.stderr
    q = fp.quantise(board.policy, [[0.3 * k - 3.0, 0.05 * k - 0.5, 0.4 * k - 4.0] for k in range(20)])
    fp.save(str(tmp_path / "q.mrlq"), q)
    shutil.copy(tmp_path / "q.mrlq", board_file(board, "q.mrlq"))
    ok = [0.5, -0.5, 1.0]
    nan, inf = float("nan"), float("inf")
    with SerialLink(board.port) as link:
        for name, local in (("policy.mrlp", board.policy), ("q.mrlq", q)):
            link.load(name)
            good, _ = link.infer(ok)
            assert abs(good[0] - local(ok)[0]) < 1e-5, name
            for k, bad in ((0, nan), (2, inf), (1, -inf)):
                obs = list(ok)
                obs[k] = bad
                with pytest.raises(DeviceError) as e:
                    link.infer(obs)
                assert e.value.code == P.E_PAYLOAD and "observation[%d] is %s" % (k, "nan" if bad != bad else repr(bad)) in str(e.value), (name, str(e.value))
            assert link.infer(ok)[0] == good, name


@needs_board
def test_a_failed_load_keeps_the_policy_whose_file_is_gone(board, tmp_path):
    """Issue 30 (10): `load a; rm a; load big`: big does not fit beside a, so the server used to
    free a, fail on big, and reload a from its file, which was gone: the next INFER got "no
    policy loaded". The policy in service now stays unless its file is there as it was loaded."""
    import os
    import shutil

    from microrl_host.board.serial_link import DeviceError, SerialLink

    big = tmp_path / "big.mrlp"
    make_policy(big, sizes=(13, 256, 256, 4))
    shutil.copy(big, board_file(board, "big.mrlp"))
    other = tmp_path / "other.mrlp"
    policy_b = make_policy(other, seed=9)
    expected = board.policy([0.5, -0.5, 1.0])[0]
    with SerialLink(board.port) as link:
        for change in ("removed", "replaced"):
            shutil.copy(board.policy_path, board_file(board, "a.mrlp"))
            link.load("a.mrlp")
            if change == "removed":
                os.remove(board_file(board, "a.mrlp"))
            else:  # another policy now at the path: reloading it would serve the wrong one
                shutil.copy(other, board_file(board, "a.mrlp"))
            with pytest.raises(DeviceError, match="out of memory"):
                link.load("big.mrlp")
            action, _ = link.infer([0.5, -0.5, 1.0])
            assert abs(action[0] - expected) < 1e-5, change
            assert abs(action[0] - policy_b([0.5, -0.5, 1.0])[0]) > 1e-3
        link.load("policy.mrlp")


@needs_board
def test_board_without_microrl_is_named(tmp_path):
    from microrl_host.board.virtual import VirtualBoard

    policy = tmp_path / "p.mrlp"
    make_policy(policy)
    with VirtualBoard(str(tmp_path / "fs")) as empty:
        r = cli("bench", "serial", "--port", empty.port, "--policy", policy, "-n", "5", "--no-deploy", timeout=60)
    assert r.returncode == 2 and "microrl is not on the board" in r.stderr and "microrl deploy" in r.stderr


class _CuttingLine:
    """The real serial port, with the line damaging the first `count` writes: each is cut to its
    first `keep` bytes (keep 0: lost whole)."""

    def __init__(self, serial, keep, count=1):
        self.serial, self.keep, self.count = serial, keep, count

    def write(self, data):
        if self.count > 0:
            self.count -= 1
            data = data[: self.keep]
        return self.serial.write(data) if data else 0

    def __getattr__(self, name):
        return getattr(self.serial, name)


@needs_board
def test_a_request_damaged_on_the_line_is_sent_again_and_answered(board):
    from microrl_host.board.serial_link import LinkError, SerialLink

    expected = board.policy([0.5, -0.5, 1.0])[0]
    with SerialLink(board.port, policy_path="policy.mrlp", timeout=1.0) as link:
        real = link.serial
        # cut after 9 bytes: the board's timeout error names the request, which is sent again
        # at once; lost whole: the host's timeout sends it again
        for keep in (9, 0):
            link.serial = _CuttingLine(real, keep)
            before = link.retried
            action, _ = link.infer([0.5, -0.5, 1.0])
            assert abs(action[0] - expected) < 1e-5 and link.retried == before + 1, keep
        # without retries the loss is reported, and the next request is answered as its own
        link.serial = _CuttingLine(real, 0)
        with pytest.raises(LinkError, match="no answer"):
            link.request(P.INFER, struct.pack("<3f", 0.5, -0.5, 1.0), retries=0)
        link.serial = real
        action, _ = link.infer([0.1, 0.2, 0.3])
        assert abs(action[0] - board.policy([0.1, 0.2, 0.3])[0]) < 1e-5


@needs_board
def test_a_late_answer_is_not_taken_for_a_later_request(board):
    """The board busy with a ROLLOUT: a request with a short timeout is sent again and again with
    the same seq; the first answer to any try is its answer, and the duplicate answers to the
    other tries, arriving afterwards, are not taken for the next requests' answers."""
    from microrl_host.board.serial_link import SerialLink

    import time

    with SerialLink(board.port, policy_path="policy.mrlp") as link:
        # the longest rollout the board takes in one request, and a request timeout a quarter of
        # the time it keeps the board busy, timed here (30 episodes took 34 ms on one machine)
        start = time.perf_counter()
        link.rollout("pendulum", 3, 4)
        busy = (time.perf_counter() - start) / 4 * P.ROLLOUT_EPISODES
        link.seq = 10
        link.write(P.encode(P.ROLLOUT, 200, P.pack_rollout(3, P.ROLLOUT_EPISODES, "pendulum")))
        before = link.retried
        obs = [0.5, -0.5, 1.0]
        action, _ = P.unpack_action(link.request(P.INFER, P.pack_observation(obs), timeout=min(0.05, busy / 4), retries=10000))
        assert link.retried > before  # sent again while the board was busy
        assert abs(action[0] - board.policy(obs)[0]) < 1e-5
        link.timeout = 60.0
        for obs in ([0.1, 0.2, 0.3], [-1.0, 0.0, 0.5], [0.3, 0.3, -2.0]):
            action, _ = link.infer(obs)  # duplicate answers to the retried request arrive meanwhile
            assert abs(action[0] - board.policy(obs)[0]) < 1e-5


def _pending_policy(path, pending=2):
    """A Pendulum-shaped policy that observes its pending actions (as `microrl train --action-delay`
    writes one), saved at path."""
    from microrl import Policy, save
    from microrl.rng import Rng

    p = Policy([3 + pending, 16, 1], ["relu", "tanh"], act_scale=[2.0], act_offset=[0.0])
    p.net.init(Rng(4))
    p.pending = pending
    save(str(path), p)
    return p


def test_a_policy_with_pending_actions_on_the_board(board, tmp_path):
    """A policy that observes its pending actions, on the virtual board (MicroPython): LOAD says
    it takes the task's 3 observations, INFER adds the commands the board itself sent (the
    host's microrl.perturb.PendingActions gives the same actions), and ROLLOUT runs it under its
    own delay, as the host's evaluation does."""
    import shutil

    from microrl.evaluate import evaluate
    from microrl.perturb import PendingActions
    from microrl.task import policy_env
    from microrl.tasks import pendulum
    from microrl_host.board.serial_link import SerialLink

    path = tmp_path / "late.mrlp"
    policy = _pending_policy(path)
    shutil.copy(path, board_file(board, "late.mrlp"))
    host = PendingActions(policy)
    observations = [[0.5, -0.5, 1.0], [0.4, 0.2, -2.0], [-0.9, 0.1, 0.3], [0.0, 1.0, 4.0], [0.7, -0.7, -1.0]]
    with SerialLink(board.port) as link:
        n_in, n_out, _ = link.load("late.mrlp")
        assert (n_in, n_out) == (3, 1)
        for obs in observations:
            action, _ = link.infer(obs)
            assert abs(action[0] - host(obs)[0]) < 1e-5
        rows, steps, _, _ = link.rollout("pendulum", 11, 2)
        link.load("policy.mrlp")
    _, _, returns = evaluate(policy, policy_env(pendulum, policy), 2, seed=11)
    assert steps == 400 and max(abs(row[0] - r) for row, r in zip(rows, returns)) < 1e-2 * max(1.0, abs(returns[0]))
