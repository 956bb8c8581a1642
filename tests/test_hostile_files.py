"""Files that are not policies, or policies that cannot run, on CPython, under the real micropython
and through `microrl eval`: a named pipe, a huge file with a plausible header, non-finite
numbers. Each is refused in one line, nothing hangs. (A board heap too small for a policy:
test_board_serial.py.)"""
import math
import os
import struct

import pytest

from boardkit import cli, make_policy
from helpers import needs_micropython, run_micropython

import microrl
from microrl import policy as pf


def _micropython_load(path, heap=None):
    """(exception type name, message) of microrl.load(path) under micropython, or ('ok', describe)."""
    code = ("import microrl\ntry:\n    p = microrl.load(%r)\n    print('ok')\n    print(p.describe())\n"
            "except Exception as e:\n    print(type(e).__name__)\n    print(e)\n") % str(path)
    out = run_micropython(["-c", code], heap=heap, timeout=60).stdout.strip().splitlines()
    return out[0], out[-1]


def _nan_policy_file(path):
    p = make_policy(path, sizes=(3, 8, 1))
    data = bytearray(pf.to_bytes(p)[:-4])
    head_len = struct.unpack("<H", data[6:8])[0]
    data[head_len + 4 * 2 : head_len + 4 * 3] = struct.pack("<f", math.nan)  # after act_scale[1], act_offset[1]: layer 1 W[0, 0]
    data += struct.pack("<I", pf.crc32(bytes(data)) & 0xFFFFFFFF)
    with open(path, "wb") as f:
        f.write(data)


def test_a_named_pipe_is_refused_at_once(tmp_path):
    fifo = str(tmp_path / "pipe.mrlp")
    os.mkfifo(fifo)  # nobody writes to it: opening it for reading would block for ever
    with pytest.raises(pf.NotAPolicyError, match="not a regular file .*named pipe"):
        microrl.load(fifo)
    r = cli("eval", fifo, timeout=60)
    assert r.returncode == 2 and "named pipe" in r.stderr and "Traceback" not in r.stderr, r.stderr


@needs_micropython
def test_micropython_refuses_a_named_pipe_too(tmp_path):
    fifo = str(tmp_path / "pipe.mrlp")
    os.mkfifo(fifo)
    kind, message = _micropython_load(fifo)
    assert kind == "NotAPolicyError" and "named pipe" in message


def _huge(path, declared):
    # a sparse file of `declared` bytes whose header is plausible but whose layer sizes give
    # another length: refused from its header, before a byte of the rest is read
    data = bytearray(pf.to_bytes(make_policy(str(path) + ".src", sizes=(3, 8, 1))))
    data[8:12] = struct.pack("<I", declared)
    with open(path, "wb") as f:
        f.write(data[:64])
        f.truncate(declared)


def test_a_huge_file_is_refused_from_its_header(tmp_path):
    path = tmp_path / "huge.mrlp"
    _huge(path, 2**32 - 1)  # 4 GB, sparse: reading it through would take minutes
    with pytest.raises(pf.CorruptPolicyError, match="do not add up"):
        microrl.load(str(path))
    r = cli("eval", path, timeout=60)
    assert r.returncode == 2 and "do not add up" in r.stderr


@needs_micropython
def test_micropython_refuses_a_huge_file_from_its_header(tmp_path):
    path = tmp_path / "huge.mrlp"
    _huge(path, 2**31 - 1)  # the unix port's stat size is a signed machine word: any size is fine
    kind, message = _micropython_load(path)  # 60 s timeout: a read through would take far longer
    assert kind == "CorruptPolicyError" and "do not add up" in message


def test_eval_of_a_non_finite_policy_cannot_happen(tmp_path):
    path = tmp_path / "nan.mrlp"
    _nan_policy_file(path)
    r = cli("eval", path, "--episodes", "1", timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "layer 1 weight [0, 0] is nan, not a finite number" in r.stderr and "return" not in r.stdout
    r = cli("export", path, "--int16", "--out", tmp_path / "q.mrlq", timeout=120)
    assert r.returncode == 2 and "not a finite number" in r.stderr and "Traceback" not in r.stderr, r.stderr


@needs_micropython
def test_micropython_refuses_a_non_finite_policy(tmp_path):
    path = tmp_path / "nan.mrlp"
    _nan_policy_file(path)
    kind, message = _micropython_load(path)
    assert kind == "InvalidValueError" and "layer 1 weight [0, 0] is nan" in message


@needs_micropython
def test_a_replay_buffer_too_big_for_the_heap_names_the_step_and_the_bytes():
    code = ("from microrl.replay import ReplayBuffer\ntry:\n    ReplayBuffer(5000, 3, 1)\nexcept MemoryError as e:\n    print(e)\n")
    out = run_micropython(["-c", code], heap="64K", timeout=60).stdout.strip()
    from microrl.replay import bytes_per_transition

    need = 5000 * bytes_per_transition(3, 1, fixed=False)  # float32 rows: no bounds given
    assert out.startswith("allocating the replay buffer (5000 transitions): out of memory: it needs about %d bytes of heap, " % need), out
    assert 0 < int(out.split(", ")[-1].split()[0]) < 64 * 1024
