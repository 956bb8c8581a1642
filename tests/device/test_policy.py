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
