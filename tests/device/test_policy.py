# The policy file: round trip, and every way a file can be wrong is refused with the right error.
import struct

import microrl
from microrl import policy as pf
from microrl.nn import MLP
from microrl.rng import Rng
from tiny import assert_all_close, raises, tmp_path


def _policy(sizes=(3, 16, 16, 1), seed=0, norm=True):
    rng = Rng(seed)
    net = MLP(list(sizes), ("relu", "tanh"), trainable=False).init(rng)
    kw = {}
    if norm:
        kw = dict(obs_mean=[0.1 * i for i in range(sizes[0])], obs_std=[1.0 + i for i in range(sizes[0])], act_scale=[2.0] * sizes[-1], act_offset=[0.25] * sizes[-1])
    return pf.Policy(list(sizes), ["relu"] * (len(sizes) - 2) + ["tanh"], params=net.params, **kw)


def _write(name, data):
    path = tmp_path(name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def test_roundtrip_same_actions():
    p = _policy()
    path = microrl.save(tmp_path("rt.mrlp"), p)
    q = microrl.load(path)
    assert q.sizes == p.sizes and q.acts == p.acts
    rng = Rng(1)
    for _ in range(20):
        obs = [rng.uniform(-3, 3) for _ in range(3)]
        a = p(obs)[0]
        assert_all_close(q(obs), [a], 1e-6, 1e-7)
    # the bytes on disk are what to_bytes gives
    with open(path, "rb") as f:
        assert f.read() == pf.to_bytes(p)


def test_normalisation_and_scaling_are_applied():
    p = pf.Policy([2, 1], ["identity"], params=[1.0, 1.0, 0.0], obs_mean=[1.0, 2.0], obs_std=[2.0, 4.0], act_scale=[3.0], act_offset=[0.5])
    # ((5-1)/2 + (6-2)/4) * 3 + 0.5
    assert_all_close(p([5.0, 6.0]), [9.5])
    q = microrl.load(microrl.save(tmp_path("norm.mrlp"), p))
    assert_all_close(q([5.0, 6.0]), [9.5])


def test_wrong_observation_length():
    e = raises(ValueError, _policy(), [1.0, 2.0])
    assert "3" in str(e)


def test_every_truncation_is_refused():
    data = pf.to_bytes(_policy((3, 8, 1)))
    for n in range(len(data)):
        path = _write("trunc.mrlp", data[:n])
        e = raises(pf.PolicyFileError, microrl.load, path)
        assert isinstance(e, pf.TruncatedPolicyError), (n, e)


def test_random_bit_flips_are_refused():
    data = pf.to_bytes(_policy((3, 8, 8, 1)))
    rng = Rng(2024)
    kinds = {}
    for trial in range(1000):
        bit = rng.randint(len(data) * 8)
        corrupt = bytearray(data)
        corrupt[bit >> 3] ^= 1 << (bit & 7)
        path = _write("flip.mrlp", corrupt)
        e = raises(pf.PolicyFileError, microrl.load, path)
        name = type(e).__name__
        kinds[name] = kinds.get(name, 0) + 1
    # most flips land in the weights: the checksum catches them
    assert kinds.get("ChecksumError", 0) > 800, kinds


def test_foreign_files_are_not_policies():
    for data in (b"\x89PNG\r\n\x1a\n" + bytes(64), b'{"weights": [1, 2, 3]}', b"MRL"[:1] + b"Z" * 40):
        e = raises(pf.PolicyFileError, microrl.load, _write("foreign.mrlp", data))
        assert isinstance(e, pf.NotAPolicyError), e
        assert "not a microrl policy" in str(e)


def test_unknown_version_is_named():
    data = bytearray(pf.to_bytes(_policy((3, 4, 1))))
    data[4:6] = struct.pack("<H", 7)
    e = raises(pf.UnsupportedVersionError, microrl.load, _write("v7.mrlp", data))
    assert "version 7" in str(e)


def test_bad_checksum_is_named():
    data = bytearray(pf.to_bytes(_policy((3, 4, 1))))
    data[-1] ^= 0xFF
    e = raises(pf.ChecksumError, microrl.load, _write("crc.mrlp", data))
    assert "checksum" in str(e)


def test_extra_bytes_are_refused():
    data = pf.to_bytes(_policy((3, 4, 1))) + b"\x00"
    raises(pf.CorruptPolicyError, microrl.load, _write("extra.mrlp", data))


def test_save_replaces_atomically():
    path = tmp_path("atomic.mrlp")
    microrl.save(path, _policy((3, 4, 1), seed=1))
    microrl.save(path, _policy((3, 4, 1), seed=2))
    q = microrl.load(path)
    assert_all_close(q.params, _policy((3, 4, 1), seed=2).params)


def _with_float(data, index, value):
    # data with float number `index` after the header replaced, and its CRC made good again
    head_len = struct.unpack("<H", data[6:8])[0]
    out = bytearray(data[:-4])
    k = head_len + 4 * index
    out[k : k + 4] = struct.pack("<f", value)
    return bytes(out) + struct.pack("<I", pf.crc32(bytes(out)) & 0xFFFFFFFF)


def test_non_finite_numbers_are_refused_in_every_block():
    p = _policy((3, 4, 2))  # floats: obs_mean 3, obs_std 3, act_scale 2, act_offset 2, then params
    data = pf.to_bytes(p)
    cases = (("obs_mean[1]", 1), ("obs_std[2]", 5), ("act_scale[0]", 6), ("act_offset[1]", 9), ("layer 1 weight [0, 0]", 10),
             ("layer 1 weight [3, 2]", 10 + 11), ("layer 1 bias [2]", 10 + 12 + 2), ("layer 2 weight [1, 3]", 10 + 16 + 7), ("layer 2 bias [1]", 10 + 16 + 8 + 1))
    for value in (float("nan"), float("inf"), -float("inf")):
        for name, index in cases:
            e = raises(pf.InvalidValueError, microrl.load, _write("nonfinite.mrlp", _with_float(data, index, value)))
            assert isinstance(e, pf.PolicyFileError)
            text = str(e)
            assert name in text and "not a finite number" in text and "\n" not in text, text
    # the writers refuse them too: no non-finite policy reaches a file
    p.params[3] = float("nan")
    path = tmp_path("never.mrlp")
    e = raises(pf.InvalidValueError, microrl.save, path, p)
    assert "layer 1 weight [1, 0]" in str(e)  # W is [out, in]: index 3 of a 3-input layer
    raises(pf.InvalidValueError, pf.to_bytes, p)


def test_zero_or_negative_std_is_refused():
    data = pf.to_bytes(_policy((3, 4, 1)))
    for value in (0.0, -0.0, -1.5):
        e = raises(pf.InvalidValueError, microrl.load, _write("std.mrlp", _with_float(data, 3 + 1, value)))
        assert "obs_std[1]" in str(e) and "must be positive" in str(e), e


def test_a_directory_is_not_a_policy():
    import os

    path = tmp_path("dir.mrlp")
    try:
        os.mkdir(path)
    except OSError:
        pass  # left by an earlier run
    e = raises(pf.NotAPolicyError, microrl.load, path)
    assert "not a regular file" in str(e) and "directory" in str(e), e


def test_sizes_are_checked_before_the_file_is_read_through():
    # a header whose layer sizes do not add up to its declared length: refused from the header
    # alone (the checksum over the whole file, which would also fail, is not reached)
    data = bytearray(pf.to_bytes(_policy((3, 4, 1))))
    data[16:18] = struct.pack("<H", 5)  # 5 inputs: the layout no longer matches the length
    e = raises(pf.CorruptPolicyError, microrl.load, _write("sizes.mrlp", bytes(data)))
    assert "do not add up" in str(e), e


def test_non_finite_observations_are_refused_by_name():
    """NaN, inf and -inf at any position, in a list, a tuple or an array('f'), with and without
    normalisation: ValueError naming the index, for float policies (this run's backend) and int16
    ones (every integer kernel present); the policy still answers afterwards, unchanged."""
    from array import array

    from microrl import fixedpoint as fp

    nan, inf = float("nan"), float("inf")
    ok = [0.5, -0.5, 1.0]
    for norm in (False, True):
        p = _policy(norm=norm)
        policies = [("float " + microrl.backend_name(), p)]
        try:
            for name in fp.available():
                fp.use(name)
                policies.append(("int16 " + name, fp.quantise(p, [[0.1 * i, -0.2 * i, 0.3] for i in range(10)])))
        finally:
            fp.use(None)
        for what, pol in policies:
            before = list(pol(ok))
            for k in range(3):
                for bad in (nan, inf, -inf, 1e40):  # 1e40: beyond float32, normalised too (inf on float32 ports)
                    obs = list(ok)
                    obs[k] = bad
                    for o in (obs, tuple(obs), array("f", obs)):
                        e = raises(ValueError, pol, o)
                        assert "observation[%d]" % k in str(e), (what, e)
                        assert "nan" in str(e) or "inf" in str(e) or "float32" in str(e), (what, e)
            assert list(pol(ok)) == before, what
