"""Files that are not policies, or policies that cannot run, on CPython, under the real micropython
and through `microrl eval`: a named pipe, a huge file with a plausible header, non-finite
numbers. Each is refused in one line, nothing hangs. (A board heap too small for a policy:
test_board_serial.py.)"""
import math
import os
import struct

import pytest

from boardkit import cli, make_policy
from helpers import MICROPYTHON, compile_device_mpy, needs_micropython, repo_env, run_micropython

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


# ---------------------------------------------------------------- the damaged-file sweep
# Every file below is either refused with a PolicyFileError, or loaded as exactly what it holds
# (the loaded policy written again gives the same bytes: nothing misread, nothing dropped). The
# ones that must be refused are: every truncation, every flipped bit (without a new checksum),
# extra bytes, and with a valid checksum: a NaN or infinite value anywhere, an observation std
# that is zero, negative or below the smallest normal float32 (1e-45 loaded and gave "return nan
# +- nan" before), non-zero reserved header bytes or padding (issue 30, item 11). CPython and
# MicroPython (the device core compiled to .mpy) must give the same verdict for each.

SPECIAL = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "zero": 0.0, "-zero": -0.0, "denormal": 1e-45, "-denormal": -1e-45,
           "subnormal": 1e-38, "tiny": 2e-38, "huge": 3e38, "one": 1.0, "-one": -1.0}


def _with_crc(data):
    data = bytes(data[:-4])
    return data + struct.pack("<I", pf.crc32(data) & 0xFFFFFFFF)


def _float_slots(p, start):
    """{'obs_std[1]': offset, ...} of a policy file's normalisation and scaling floats, which
    start at its header length; and the offset after them."""
    slots, k = {}, start
    if p.obs_mean is not None:
        for block, n in (("obs_mean", p.sizes[0]), ("obs_std", p.sizes[0]), ("act_scale", p.sizes[-1]), ("act_offset", p.sizes[-1])):
            for i in range(n):
                slots["%s[%d]" % (block, i)] = k
                k += 4
    return slots, k


def _bases():
    """{name: (file bytes, float slots {name: offset}, zero byte offsets)} of small float and int16 policies."""
    from microrl import fixedpoint
    from microrl.rng import Rng

    out = {}
    for name, kwargs in (("plain", {}), ("normalised", {"obs_mean": [0.5, -0.5, 1.0], "obs_std": [1.0, 2.0, 0.5], "act_scale": [2.0], "act_offset": [0.1]})):
        p = pf.Policy([3, 5, 1], ["relu", "tanh"], **kwargs)
        p.net.init(Rng(3))
        data = pf.to_bytes(p)
        H = struct.unpack("<H", data[6:8])[0]
        slots, k = _float_slots(p, H)
        for i in (0, 7, p.n_params - 1):  # a weight, a weight, the last bias
            slots["param[%d]" % i] = k + 4 * i
        out["float-" + name] = (data, slots, [14, 15] + list(range(16 + 3 * 2 + 2, H)))
        q = fixedpoint.quantise(p, [[0.3, -0.2, 0.9], [-1.0, 0.7, 0.1], [0.0, 0.0, 0.0]])
        qdata = fixedpoint.to_bytes(q)
        QH = struct.unpack("<H", qdata[6:8])[0]
        qslots, k = _float_slots(q, QH)
        # layer 1: 5 int32 biases, 15 int16 weights, 2 bytes of padding
        pad = k + 4 * 5 + 2 * 15
        out["int16-" + name] = (qdata, qslots, [14, 15] + list(range(16 + 3 * 2 + 2 + 3 + 2, QH)) + [pad, pad + 1])
    return out


def damaged_files():
    """[(name, bytes, must_refuse)]: the sweep's files."""
    import random

    rng = random.Random(30)
    files = []
    for base, (data, slots, zeros) in _bases().items():
        for n in range(len(data)):
            files.append(("%s truncated to %d" % (base, n), data[:n], True))
        files.append(("%s with a byte more" % base, data + b"\0", True))
        for _ in range(150):
            bit = rng.randrange(8 * len(data))
            bad = bytearray(data)
            bad[bit // 8] ^= 1 << (bit % 8)
            files.append(("%s bit %d flipped" % (base, bit), bytes(bad), True))
        for k in zeros:
            for value in (1, 0x80, 0xFF):
                bad = bytearray(data)
                bad[k] = value
                files.append(("%s zero byte %d set to %d (valid CRC)" % (base, k, value), _with_crc(bad), True))
        H = struct.unpack("<H", data[6:8])[0]
        for k in range(H):  # every header byte, with the checksum made valid again: refused or read exactly
            for value in (0, 1, 0x7F, 0xFF):
                if data[k] != value and k not in zeros:
                    bad = bytearray(data)
                    bad[k] = value
                    files.append(("%s header byte %d set to %d (valid CRC)" % (base, k, value), _with_crc(bad), None))
        for slot, k in slots.items():
            for label, v in SPECIAL.items():
                bad = bytearray(data)
                bad[k : k + 4] = struct.pack("<f", v)
                refuse = label in ("nan", "inf", "-inf") or (slot.startswith("obs_std") and label not in ("tiny", "huge", "one"))
                files.append(("%s %s = %s (valid CRC)" % (base, slot, label), _with_crc(bad), refuse))
    return files


def _cpython_verdict(path, data):
    from microrl import fixedpoint

    try:
        p = microrl.load(path)
    except microrl.PolicyFileError as e:
        return type(e).__name__
    again = fixedpoint.to_bytes(p) if isinstance(p, fixedpoint.QuantisedPolicy) else pf.to_bytes(p)
    return "ok" if again == data else "MISREAD"


def test_the_damaged_file_sweep(tmp_path, capsys):
    files = damaged_files()
    folder = tmp_path / "files"
    folder.mkdir()
    verdicts = {}
    wrong = []
    for i, (name, data, refuse) in enumerate(files):
        path = str(folder / ("%05d.mrlp" % i))
        with open(path, "wb") as f:
            f.write(data)
        v = verdicts[path] = _cpython_verdict(path, data)
        if v == "MISREAD" or (refuse and v == "ok") or (refuse is False and v != "ok"):
            wrong.append((name, v))
    refused = sum(1 for v in verdicts.values() if v not in ("ok", "MISREAD"))
    must = sum(1 for f in files if f[2])
    with capsys.disabled():
        print("\ndamaged-file sweep: %d files (%d must be refused), %d refused, %d loaded exactly, %d wrong on CPython"
              % (len(files), must, refused, len(files) - refused - sum(1 for v in verdicts.values() if v == "MISREAD"), len(wrong)))
    assert wrong == [], wrong[:20]
    assert must > 1000 and refused >= must
    if MICROPYTHON is None:
        return
    # the same files under micropython, the device core compiled to .mpy as deploy --mpy ships it
    mpy = compile_device_mpy(str(tmp_path / "mpy"))
    listing = folder / "list.txt"
    listing.write_text("\n".join(sorted(verdicts)) + "\n")
    code = ("import microrl\nfor line in open(%r):\n    path = line.strip()\n    try:\n        microrl.load(path)\n        v = 'ok'\n"
            "    except Exception as e:\n        v = type(e).__name__\n    print(path, v)\n") % str(listing)
    env = repo_env()
    env["MICROPYPATH"] = os.pathsep.join([mpy, ".frozen"])
    import subprocess

    proc = subprocess.run([MICROPYTHON, "-c", code], capture_output=True, text=True, timeout=900, env=env)
    got = dict(line.split(" ", 1) for line in proc.stdout.strip().splitlines())
    assert len(got) == len(verdicts), proc.stderr[-2000:]
    differ = [(p, verdicts[p], got[p]) for p in sorted(verdicts) if verdicts[p] != got[p]]
    with capsys.disabled():
        print("damaged-file sweep on micropython (.mpy): %d files, %d verdicts differ from CPython's" % (len(got), len(differ)))
    assert differ == [], differ[:20]
