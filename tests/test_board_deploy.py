"""microrl deploy against the virtual board, with the real mpremote transport."""
import hashlib
import os

import pytest

from boardkit import board, board_file, cli, cli_json, make_policy, mpremote, needs_board  # noqa: F401 (fixture)
from helpers import policy_with_bad_references

pytestmark = needs_board


def _board_hashes(b):
    folder = board_file(b, "lib/microrl")
    out = {}
    for top, _, names in os.walk(folder):
        for name in sorted(names):
            with open(os.path.join(top, name), "rb") as f:
                out[os.path.relpath(os.path.join(top, name), folder)] = hashlib.sha256(f.read()).hexdigest()
    return out


def test_deploy_twice_copies_nothing_the_second_time(board):
    # the fixture deployed once already
    report = cli_json("deploy", "--port", board.port, "--policy", board.policy_path)
    assert report["copied"] == []
    assert report["unchanged"] >= 15
    assert report["policy_max_diff"] < 1e-5


def test_changed_policy_is_the_only_file_copied(board, tmp_path):
    other = tmp_path / "other.mrlp"
    make_policy(other, seed=5)
    report = cli_json("deploy", "--port", board.port, "--policy", other)
    assert report["copied"] == ["policy.mrlp"]
    with open(board_file(board, "policy.mrlp"), "rb") as f, open(other, "rb") as g:
        assert f.read() == g.read()
    cli_json("deploy", "--port", board.port, "--policy", board.policy_path)  # back to the fixture's


def test_policy_parity_on_the_board(board):
    # the board's own microrl computes the actions; compare with the host's for many observations
    from microrl.rng import Rng

    rng = Rng(3)
    obs = [[rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(-8, 8)] for _ in range(50)]
    code = "from microrl import load\np = load('policy.mrlp')\nfor o in %r:\n print(repr(p(o)[0]))" % obs
    r = mpremote(board.port, "exec", code)
    assert r.returncode == 0, r.stderr
    got = [float(x) for x in r.stdout.split()]
    want = [board.policy(o)[0] for o in obs]
    assert len(got) == 50
    assert max(abs(a - b) for a, b in zip(got, want)) < 1e-5


def test_deploy_mpy_then_back_to_py(board):
    report = cli_json("deploy", "--port", board.port, "--mpy", "--policy", board.policy_path)
    assert report["format"] == "mpy" and len(report["copied"]) >= 15
    names = os.listdir(board_file(board, "lib/microrl"))
    assert "nn.mpy" in names and "nn.py" not in names  # stale .py removed: it would shadow the .mpy
    with open(board_file(board, "lib/microrl/nn.mpy"), "rb") as f:
        head = f.read(4)
    assert head[0] == ord("M") and head[1] == 6  # .mpy v6, as the board reads (sys.implementation._mpy)
    again = cli_json("deploy", "--port", board.port, "--mpy")
    assert again["copied"] == []
    back = cli_json("deploy", "--port", board.port)
    assert "nn.py" in os.listdir(board_file(board, "lib/microrl")) and "nn.mpy" not in os.listdir(board_file(board, "lib/microrl"))
    assert back["backend"] == "native"


def test_deploy_installs_the_native_kernels_the_board_loads(board):
    from microrl_host.board import native

    report = cli_json("deploy", "--port", board.port, "--policy", board.policy_path)
    assert report["backend"] == "native" and report["native"] == "x64 (.mpy 6.3)" and report["native_note"] is None
    with open(board_file(board, "lib/microrl_kernels.mpy"), "rb") as f, open(native.mpy_for_arch("x64"), "rb") as g:
        assert f.read() == g.read()
    # the board's own microrl reports it (a fresh session after deploy's soft reset)
    r = mpremote(board.port, "exec", "import microrl; print(microrl.backend_name())")
    assert r.stdout.split()[-1] == "native", r.stderr


def test_no_native_leaves_the_kernels_out_and_deploy_puts_them_back(board):
    r = cli("deploy", "--port", board.port, "--no-native")
    assert r.returncode == 0, r.stderr
    assert "native kernels left out (--no-native): using plain" in r.stdout and "backend on the board: plain" in r.stdout
    assert not os.path.exists(board_file(board, "lib/microrl_kernels.mpy"))
    report = cli_json("deploy", "--port", board.port)
    assert report["copied"] == ["lib/microrl_kernels.mpy"] and report["backend"] == "native"
    r = cli("deploy", "--port", board.port)
    assert "native kernels: /lib/microrl_kernels.mpy for x64 (.mpy 6.3)" in r.stdout and "backend on the board: native" in r.stdout


def test_interrupted_copy_leaves_previous_version_usable(board, tmp_path):
    from microrl_host.board import deploy as dep
    from microrl_host.board.serial_link import connect

    before = _board_hashes(board)
    transport = connect(board.port, timeout=3, soft_reset=True)  # the lost board is noticed within 3 s
    files = {dep.BOARD_LIB + "/" + name: b"# a new version\n" * 50 for name in ("nn.py", "td3.py", "policy.py")}
    copied = []

    def reset_after_first(msg):  # the board loses power while the second file is being copied
        copied.append(msg)
        if len(copied) == 2:
            board.hard_reset()

    try:
        with pytest.raises(dep.DeployError) as e:
            dep.copy_files(transport, files, log=reset_after_first)
        assert "previous version" in str(e.value) or "lost the board" in str(e.value)
    finally:
        transport.close()
    after = {k: v for k, v in _board_hashes(board).items() if not k.endswith(".new")}
    assert after == before  # nothing was swapped in
    assert len(copied) == 2  # the reset came in the middle of the copy
    r = mpremote(board.port, "exec", "import microrl; print(microrl.load('policy.mrlp').describe())")
    assert "3-64-64-1" in r.stdout, r.stderr
    report = cli_json("deploy", "--port", board.port, "--policy", board.policy_path)
    assert report["copied"] == []


def test_full_filesystem(tmp_path):
    # a board whose flash (a real littlefs image, 112 kB) cannot take the .py files: the copy fails
    # on the board's ENOSPC with a clear error, nothing is swapped in, and --mpy (smaller) fits
    from microrl_host.board.virtual import VirtualBoard

    with VirtualBoard(str(tmp_path / "fs"), flash="112K") as small:
        r = cli("deploy", "--port", small.port)
        assert r.returncode == 2 and "filesystem is full" in r.stderr and "Traceback" not in r.stderr, r.stderr
        r = mpremote(small.port, "exec", "import os\ntry:\n print(os.listdir('lib/microrl'))\nexcept OSError:\n print([])")
        assert ".new" not in r.stdout and ".py'" not in r.stdout  # the temporary copies were removed
        report = cli_json("deploy", "--port", small.port, "--mpy")
        assert report["format"] == "mpy" and len(report["copied"]) >= 15
        # and the refusal before copying, when statvfs already says it cannot fit
        big = tmp_path / "big.mrlp"
        make_policy(big, sizes=(13, 128, 128, 4))  # 70 kB
        r = cli("deploy", "--port", small.port, "--mpy", "--policy", big)
        assert r.returncode == 2 and "filesystem is full" in r.stderr and "bytes to copy" in r.stderr
        # issue 30 (9): --mpy does not help a policy bigger than the room: say what does
        assert "the policy alone" in r.stderr and "export --int16" in r.stderr and "deploy with --mpy" not in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1


def test_too_old_micropython_is_named():
    from microrl_host.board import deploy as dep

    info = {"name": "micropython", "version": (1, 12, 0), "sha256": True}
    with pytest.raises(dep.DeployError, match="1.12.0 on the board is too old.*1.20.0"):
        dep.check_board(info)


def test_no_such_port_and_not_micropython(tmp_path):
    r = cli("deploy", "--port", "/dev/ttyDOESNOTEXIST")
    assert r.returncode == 2 and "no such port" in r.stderr and "Traceback" not in r.stderr
    # a serial port where nothing answers as MicroPython would
    master, slave = os.openpty()
    try:
        r = cli("deploy", "--port", os.ttyname(slave), "--timeout", "2")
        assert r.returncode == 2 and "does not answer as a MicroPython board" in r.stderr, r.stderr
    finally:
        os.close(master)
        os.close(slave)


def test_bad_policy_file_is_named(board, tmp_path):
    bad = tmp_path / "bad.mrlp"
    bad.write_bytes(b"not a policy at all")
    r = cli("deploy", "--port", board.port, "--policy", bad)
    assert r.returncode == 2 and "not a microrl policy" in r.stderr
    # issue 30 (9): a folder, a symlink loop and a missing file are each named for what they are
    os.symlink(str(tmp_path / "loop-b"), str(tmp_path / "loop-a"))
    os.symlink(str(tmp_path / "loop-a"), str(tmp_path / "loop-b"))
    for path, said in ((tmp_path, "is a folder"), (tmp_path / "loop-a", "symlink loop"), (tmp_path / "none.mrlp", "no policy file")):
        for command in (("deploy", "--port", board.port), ("bench", "serial", "--port", board.port, "-n", "1")):
            r = cli(*command, "--policy", path)
            assert r.returncode == 2 and said in r.stderr and "Traceback" not in r.stderr, (command, path, r.stderr)
            assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_a_policy_too_big_for_the_heap_names_the_step_and_the_bytes(tmp_path):
    from microrl_host.board.deploy import DeployError, deploy
    from microrl_host.board.virtual import VirtualBoard

    big = tmp_path / "big.mrlp"
    make_policy(big, sizes=(13, 256, 256, 4))  # 280 kB of weights, a 160K heap
    with VirtualBoard(str(tmp_path / "fs")) as b:
        with pytest.raises(DeployError) as e:
            deploy(b.port, str(big))
    message = str(e.value)
    assert "loading the policy policy.mrlp failed on the board: MemoryError" in message, message
    assert "it needs about %d bytes of heap" % os.path.getsize(big) in message
    free = int(message.split(", ")[-1].split()[0])
    assert 0 < free < 160 * 1024


def test_deploy_to_a_64K_board_checks_the_policy_as_the_board_would_run_it(tmp_path):
    """Issue 30 (5): deploy --mpy to a 64K board said MemoryError (allocating the weights' 17,924
    bytes) though after a soft reset the board loads and runs that policy: deploy's own earlier
    programs (hashes, copies, the backend check) had fragmented the heap it checked the policy
    in. The checks now run after a soft reset, on the heap the board's own programs get. From .py
    files (compiled on the board) the board truly cannot load it: the error says what helps."""
    from microrl_host.board.deploy import DeployError, deploy
    from microrl_host.board.virtual import VirtualBoard

    policy = tmp_path / "p.mrlp"
    make_policy(policy)  # 3-64-64-1: 17,964 bytes
    # 68K since issue 39: the overflow guard and the reference checks took the last 1-2 kB of the
    # 64K board's heap (the weights' block no longer fitted after deploy's programs)
    with VirtualBoard(str(tmp_path / "fs"), heap="68K") as b:
        report = deploy(b.port, str(policy), mpy=True)
        assert report["policy_max_diff"] < 1e-5 and report["backend"] == "native"
        again = deploy(b.port, str(policy), mpy=True)  # nothing copied: the same answer
        assert again["copied"] == [] and again["policy_max_diff"] < 1e-5
        r = mpremote(b.port, "exec", "import microrl\np = microrl.load('policy.mrlp')\nprint(p([0.1, 0.2, 0.3])[0])")
        assert abs(float(r.stdout.split()[-1]) - make_policy(tmp_path / "q.mrlp")([0.1, 0.2, 0.3])[0]) < 1e-5, r.stderr
        with pytest.raises(DeployError) as e:
            deploy(b.port, str(policy))  # .py files: compiling them on the board leaves no 18 kB block
        assert "MemoryError" in str(e.value) and "--mpy" in str(e.value), str(e.value)


def _with_references(path, seed, tamper=0.0):
    """A policy file with 8 reference vectors; tamper: added to the last stored action (the CRC
    made good again, so that only the reference check can tell)."""
    import struct

    import numpy as np

    from microrl import policy as pf
    from microrl_host.references import attach

    p = make_policy(path, seed=seed)
    attach(p, np.random.default_rng(seed).uniform(-2.0, 2.0, size=(64, 3)))
    data = bytearray(pf.to_bytes(p))
    k = len(data) - 8
    data[k : k + 4] = struct.pack("<f", struct.unpack("<f", data[k : k + 4])[0] + tamper)
    body = bytes(data[:-4])
    with open(path, "wb") as f:
        f.write(body + struct.pack("<I", pf.crc32(body) & 0xFFFFFFFF))
    return p


def test_deploy_checks_the_files_reference_vectors_on_the_board(board, tmp_path):
    path = tmp_path / "refs.mrlp"
    _with_references(path, seed=6)
    try:
        report = cli_json("deploy", "--port", board.port, "--policy", path)
        assert report["policy_references"] == 8
        assert 0.0 <= report["policy_max_diff"] < 1e-5
        text = cli("deploy", "--port", board.port, "--policy", path).stdout
        assert "8 reference vectors on the board match" in text, text
        # a reference the host does not reproduce either: refused before the board's working
        # file is touched (issue 39, 8: a file whose references failed was copied over it, then
        # refused), named with the difference and the tolerance
        on_board = open(board_file(board, "policy.mrlp"), "rb").read()
        _with_references(path, seed=6, tamper=0.5)
        proc = cli("deploy", "--port", board.port, "--policy", path)
        assert proc.returncode == 2, proc.stderr
        assert "reference actions stored in the file by up to 0.5 " in proc.stderr and "reference 8 of 8, action[0]" in proc.stderr and "tolerance 0.0001" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr
        # reference vectors holding NaN, or an observation the policy refuses (CRC-valid files)
        for where, value in (("observation", float("nan")), ("action", float("nan")), ("observation", -3.4e38)):
            bad = policy_with_bad_references(tmp_path / "bad.mrlp", value, where)
            proc = cli("deploy", "--port", board.port, "--policy", bad)
            assert proc.returncode == 2 and "its reference section's %s 1 of 4" % where in proc.stderr, proc.stderr
            assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert open(board_file(board, "policy.mrlp"), "rb").read() == on_board
    finally:
        cli_json("deploy", "--port", board.port, "--policy", board.policy_path)  # back to the fixture's
