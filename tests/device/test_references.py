# Version 2 of the policy files: input and action clipping, and reference vectors that
# microrl.load(path, check=True) runs on whatever runtime loads the file (CPython with numpy,
# CPython's plain backend, MicroPython: tests/test_device_suite.py runs this module on each).
import struct

import microrl
from microrl import fixedpoint
from microrl import policy as pf
from microrl.fileformat import check_header
from microrl.nn import MLP
from microrl.references import TOLERANCE, MissingReferencesError, ReferenceMismatchError, References
from microrl.rng import Rng
from tiny import assert_all_close, raises, tmp_path


def _policy(sizes=(3, 12, 12, 2), seed=0, **kw):
    net = MLP(list(sizes), ("relu", "tanh"), trainable=False).init(Rng(seed))
    return pf.Policy(list(sizes), ("relu", "tanh"), params=net.params, **kw)


def _observations(n, width, seed=1, r=3.0):
    rng = Rng(seed)
    return [[rng.uniform(-r, r) for _ in range(width)] for _ in range(n)]


def _with_references(p, n=8):
    obs = _observations(n, p.sizes[0])
    p.references = References(obs, [list(p(o)) for o in obs])
    return p


def _write(name, data):
    path = tmp_path(name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def _recrc(data):
    body = bytes(data[:-4])
    return body + struct.pack("<I", pf.crc32(body) & 0xFFFFFFFF)


def test_files_without_new_blocks_stay_version_1():
    # an older microrl reads them: only clipping or references make a version 2 file
    plain = pf.to_bytes(_policy(obs_mean=[0.0] * 3, obs_std=[1.0] * 3, act_scale=[2.0] * 2, act_offset=[0.0] * 2))
    assert struct.unpack("<H", plain[4:6])[0] == 1
    for kw in ({"act_low": [-1.0] * 2, "act_high": [1.0] * 2}, {"in_low": [-5.0] * 3, "in_high": [5.0] * 3}):
        assert struct.unpack("<H", pf.to_bytes(_policy(**kw))[4:6])[0] == 2
    assert struct.unpack("<H", pf.to_bytes(_with_references(_policy()))[4:6])[0] == 2


def test_an_older_reader_names_version_2_as_newer():
    # a version 1 reader is this header check with version=1 (what microrl before version 2 ran)
    data = pf.to_bytes(_with_references(_policy()))
    e = raises(pf.UnsupportedVersionError, check_header, data[:16], len(data), "p.mrlp", b"MRLP", 1)
    assert "version 2" in str(e) and "update microrl" in str(e), e
    v1 = pf.to_bytes(_policy())
    assert check_header(v1[:16], len(v1), "p.mrlp", b"MRLP", 1)[4] == 1


def test_version_1_file_with_version_2_flags_is_refused():
    data = bytearray(pf.to_bytes(_policy()))
    data[13] |= 8  # action clipping, which version 1 does not have
    e = raises(pf.CorruptPolicyError, microrl.load, _write("v1flags.mrlp", _recrc(data)))
    assert "flags" in str(e), e


def test_clipping_of_input_and_action():
    # identity network: the action is the (scaled) input, so both clips show
    p = pf.Policy([2, 2], ["identity"], params=[1.0, 0.0, 0.0, 1.0, 0.0, 0.0], obs_mean=[1.0, 0.0], obs_std=[2.0, 1.0],
                  in_low=[-1.0, -10.0], in_high=[1.0, 10.0], act_scale=[3.0, 1.0], act_offset=[0.0, 0.5], act_low=[-10.0, -2.0], act_high=[10.0, 2.0])
    # input 0: (9 - 1) / 2 = 4, clipped to 1, times 3; input 1: 7 + 0.5, clipped to 2
    assert_all_close(p([9.0, 7.0]), [3.0, 2.0])
    assert_all_close(p([-9.0, -7.0]), [-3.0, -2.0])
    assert_all_close(p([2.0, 0.25]), [1.5, 0.75])  # inside: untouched
    q = microrl.load(microrl.save(tmp_path("clip.mrlp"), p))
    for obs in ([9.0, 7.0], [-9.0, -7.0], [2.0, 0.25]):
        assert_all_close(q(obs), list(p(obs)))


def test_empty_clipping_range_is_refused():
    e = raises(pf.InvalidValueError, pf.to_bytes, _policy(act_low=[1.0, 0.0], act_high=[0.5, 1.0]))
    assert "act_low[0]" in str(e) and "act_high[0]" in str(e), e
    raises(ValueError, _policy, act_low=[0.0, 0.0])  # both bounds or neither


def test_references_check_on_this_runtime():
    p = _with_references(_policy(obs_mean=[0.5] * 3, obs_std=[2.0] * 3, act_scale=[2.0] * 2, act_offset=[0.1] * 2, act_low=[-1.5] * 2, act_high=[1.5] * 2))
    path = microrl.save(tmp_path("refs.mrlp"), p)
    q = microrl.load(path, check=True)
    assert q.reference_count == 8
    assert 0.0 <= q.reference_difference <= TOLERANCE
    assert abs(q.reference_tolerance - TOLERANCE) < 1e-9  # stored as float32
    # loading without check reads the same network and does not run the references
    r = microrl.load(path)
    assert r.reference_count == 8 and not hasattr(r, "reference_difference")
    obs = [0.3, -2.0, 1.0]
    assert_all_close(r(obs), list(p(obs)))


def test_a_wrong_reference_is_named_with_the_difference_and_tolerance():
    p = _with_references(_policy())
    data = bytearray(pf.to_bytes(p))
    # the last float before the CRC is the last reference's last action component
    k = len(data) - 8
    stored = struct.unpack("<f", data[k : k + 4])[0]
    data[k : k + 4] = struct.pack("<f", stored + 0.25)
    path = _write("badref.mrlp", _recrc(data))
    microrl.load(path)  # without check the file is a good policy
    e = raises(ReferenceMismatchError, microrl.load, path, True)
    text = str(e)
    assert isinstance(e, pf.PolicyFileError)
    assert "0.25" in text and "0.0001" in text and "reference 8 of 8, action[1]" in text and "\n" not in text, text
    # a tolerance given to load wins over the file's
    q = microrl.load(path, check=True, tolerance=0.5)
    assert 0.24 < q.reference_difference < 0.26


def test_check_without_references_says_so():
    path = microrl.save(tmp_path("norefs.mrlp"), _policy())
    e = raises(MissingReferencesError, microrl.load, path, True)
    assert "no reference vectors" in str(e)


def test_every_truncation_of_a_file_with_references_is_refused():
    data = pf.to_bytes(_with_references(_policy((3, 4, 1)), n=2))
    for n in range(len(data)):
        e = raises(pf.PolicyFileError, microrl.load, _write("trunc_refs.mrlp", data[:n]))
        assert isinstance(e, pf.TruncatedPolicyError), (n, e)


def test_a_reference_count_that_does_not_fit_is_refused():
    p = _with_references(_policy((3, 4, 1)), n=2)
    data = bytearray(pf.to_bytes(p))
    k = len(data) - 4 - 2 * 4 * (3 + 1) - 8  # the section's count
    assert struct.unpack("<I", data[k : k + 4])[0] == 2
    for count in (0, 3, 1 << 30):
        data[k : k + 4] = struct.pack("<I", count)
        e = raises(pf.CorruptPolicyError, microrl.load, _write("count.mrlp", _recrc(data)))
        assert "reference section" in str(e), e


def test_int16_policy_with_clipping_and_references():
    p = _policy((3, 16, 16, 2), obs_mean=[0.5] * 3, obs_std=[2.0] * 3, in_low=[-1.0] * 3, in_high=[1.0] * 3, act_scale=[2.0] * 2, act_offset=[0.0] * 2,
                act_low=[-0.5] * 2, act_high=[0.5] * 2)
    observations = _observations(200, 3, seed=3, r=4.0)
    q = fixedpoint.quantise(p, observations)
    for obs in observations[:50]:
        a = q(obs)
        for i in range(2):
            assert -0.5 <= a[i] <= 0.5
    refs = observations[:8]
    q.references = References(refs, [list(q(o)) for o in refs])
    path = fixedpoint.save(tmp_path("refs.mrlq"), q)
    r = microrl.load(path, check=True)
    assert isinstance(r, fixedpoint.QuantisedPolicy) and r.reference_count == 8
    assert r.reference_difference <= TOLERANCE
    for obs in observations[:20]:
        assert_all_close(r(obs), list(q(obs)))
    assert struct.unpack("<H", fixedpoint.to_bytes(fixedpoint.quantise(_policy((3, 16, 16, 2)), observations))[4:6])[0] == 1
