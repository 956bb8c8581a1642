"""Property-based tests of the serial link's decoder (microrl/protocol.py, the code the board runs)
on CPython: streams of arbitrary bytes, cut frames and damaged frames with good frames between
them. Every good frame that is whole on the wire is decoded, with its own type, seq and payload,
in order, whatever came before it, however the stream is chunked, and wherever the line goes
quiet between frames."""
import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from microrl import protocol as P

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

payloads = st.binary(max_size=64) | st.binary(min_size=P.MAX_PAYLOAD - 8, max_size=P.MAX_PAYLOAD)
frames = st.builds(lambda t, s, p: P.encode(t, s, p), st.integers(0, 255), st.integers(0, 255), payloads)


@st.composite
def noise(draw):
    """Bytes that are not a good frame: garbage (often with start markers in it), a frame cut
    anywhere, a frame with one bit flipped, a header declaring too long a payload."""
    kind = draw(st.sampled_from(("garbage", "markers", "cut", "flip", "too_long")))
    if kind == "garbage":
        return draw(st.binary(min_size=1, max_size=80))
    if kind == "markers":  # start markers and header-like bytes: the worst garbage for a resync
        parts = draw(st.lists(st.sampled_from((P.MAGIC, P.MAGIC[:1], P.MAGIC[1:], b"\x00", b"\xff", b"\x02\x01")), min_size=1, max_size=12))
        return b"".join(parts)
    if kind == "cut":
        f = draw(frames)
        return f[: draw(st.integers(1, len(f) - 1))]
    if kind == "flip":
        f = bytearray(draw(frames))
        bit = draw(st.integers(0, 8 * len(f) - 1))
        f[bit >> 3] ^= 1 << (bit & 7)
        return bytes(f)
    n = draw(st.integers(P.MAX_PAYLOAD + 1, 0xFFFF))
    t, s = draw(st.integers(0, 255)), draw(st.integers(0, 255))
    return P.MAGIC + bytes((t, s, n & 0xFF, n >> 8, P.header_check(t, s, n))) + draw(st.binary(max_size=40))


@st.composite
def streams(draw):
    """(segments, good frames): segments are byte strings, good frames (type, seq, payload) the
    good ones among them, each with its own seq."""
    plan = draw(st.lists(st.booleans(), min_size=1, max_size=40))
    segments, good = [], []
    for is_good in plan:
        if is_good:
            t = draw(st.integers(0, 255))
            payload = draw(payloads)
            seq = len(good) + 1
            good.append((t, seq, payload))
            segments.append(P.encode(t, seq, payload))
        else:
            segments.append(draw(noise()))
    return segments, good


def _good(results):
    return [(r[0], r[1], bytes(r[2])) for r in results if not isinstance(r, int)]


@SETTINGS
@given(streams())
def test_every_good_frame_is_decoded_whatever_surrounds_it(stream):
    segments, good = stream
    dec = P.Decoder()
    results = dec.feed_bytes(b"".join(segments)) + dec.flush()  # flush: the line goes quiet at the end
    assert _good(results) == good
    assert all(isinstance(r, tuple) or r in (P.E_CRC, P.E_HEADER, P.E_TOO_LONG, P.E_TIMEOUT) for r in results)
    assert not dec.in_frame()


@SETTINGS
@given(streams(), st.lists(st.integers(1, 200), max_size=30), st.booleans())
def test_chunking_and_zero_copy_change_nothing(stream, chunk_sizes, zero_copy):
    segments, good = stream
    data = b"".join(segments)
    dec = P.Decoder(zero_copy=zero_copy)
    got = []
    k = 0
    for n in chunk_sizes + [len(data)]:
        chunk = data[k : k + n]
        k += n
        for b in chunk:  # byte at a time, as the board's server feeds it
            r = dec.feed(b)
            while r is not None:
                if isinstance(r, tuple):
                    got.append((r[0], r[1], bytes(r[2])))  # a zero-copy payload lives until the next feed
                r = dec.next()
    got += _good(dec.flush())
    assert got == good


@SETTINGS
@given(streams(), st.data())
def test_silences_between_frames_lose_nothing(stream, data):
    """The server gives up a partly held frame when the line goes quiet (expire()); a silence
    after any segment, even inside a cut frame that has swallowed good frames, loses none."""
    segments, good = stream
    quiet = data.draw(st.lists(st.booleans(), min_size=len(segments), max_size=len(segments)))
    dec = P.Decoder()
    results = []
    for segment, silence in zip(segments, quiet):
        results += dec.feed_bytes(segment)
        if silence:
            r = dec.expire()
            while r is not None:
                results.append(r)
                r = dec.next()
    results += dec.flush()
    assert _good(results) == good


@SETTINGS
@given(frames, st.integers(4, 200), st.binary(max_size=30))
def test_errors_carry_the_seq_of_the_frame_they_are_about(frame, cut, junk):
    """A frame cut after its seq byte arrived, then silence: E_TIMEOUT with its seq. A frame with
    a bad checksum: E_CRC with its seq. Junk after either does not hide the next good frame."""
    seq = frame[3]
    cut = min(cut, len(frame) - 1)
    follow = P.encode(P.PING, (seq + 1) & 0xFF)
    dec = P.Decoder()
    assert dec.feed_bytes(frame[:cut]) == []
    assert dec.expire() == P.E_TIMEOUT and dec.seq == seq
    assert _good(dec.feed_bytes(junk + follow) + dec.flush()) == [(P.PING, (seq + 1) & 0xFF, b"")]
    bad = bytearray(frame)
    bad[-1] ^= 0x01
    dec = P.Decoder()
    first = None
    for b in bytes(bad):  # the first result is the checksum error, about this frame's seq
        r = dec.feed(b)
        if r is not None:
            first = (r, dec.seq)
            break
    assert first == (P.E_CRC, seq)
    # (start markers inside its payload may make more errors as the rest is scanned again)
    assert _good(dec.feed_bytes(follow) + dec.flush()) == [(P.PING, (seq + 1) & 0xFF, b"")]


def test_the_cut_frames_of_the_issue_do_not_swallow_the_next_request():
    """Issue 12's cases: an INFER cut after 9 or 11 bytes, or inside its 7-byte header, followed
    at once by a good frame, which used to be read as the rest of the cut one."""
    infer = P.encode(P.INFER, 3, struct.pack("<3f", 0.1, 0.2, 0.3))
    ping = P.encode(P.PING, 4)
    for cut in list(range(1, 7)) + [9, 11]:
        dec = P.Decoder()
        got = _good(dec.feed_bytes(infer[:cut] + ping))
        if not got:  # the cut frame's declared length is not reached yet: the silence after the ping ends it
            got = _good(dec.flush())
        assert got == [(P.PING, 4, b"")], cut
