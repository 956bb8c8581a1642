"""A hostile serial line for microrl.serve: good requests with garbage, cut frames and damaged
frames between them, written as fast as the line takes them; every good request must get its
correct answer (the board's reply, or the error its content deserves). Used by
tests/test_board_serial.py (a short run) and bench/serial_fuzz.py (the 10,000-request figure).

The oracle is independent of the decoder: the fuzzer knows which frames it wrote whole and what
each one's answer must be."""
import random
import struct
import threading
import time

from microrl import protocol as P
from microrl.fileformat import crc32

SENTINEL_SEQS = (250, 251, 252, 253, 254, 255)  # a batch's requests use 1..249
UNKNOWN_TYPES = (0x00, 0x06, 0x10, 0x42, 0x7D, 0x81, 0xC3, 0xFF)


def _garbage(rng):
    data = bytearray(rng.randrange(256) for _ in range(rng.randrange(1, 48)))
    for _ in range(rng.randrange(3)):  # start markers inside: the worst garbage for a resync
        k = rng.randrange(len(data))
        data[k : k + 2] = P.MAGIC[: rng.choice((1, 2))]
    return bytes(data)


def _random_frame(rng, obs_dim):
    t = rng.choice((P.INFER, P.PING, P.LOAD, P.ROLLOUT) + UNKNOWN_TYPES)
    n = 4 * obs_dim if t == P.INFER else rng.randrange(0, 40)
    return P.encode(t, rng.randrange(256), bytes(rng.randrange(256) for _ in range(n)))


def noise_item(rng, obs_dim):
    """Bytes that are no good frame: garbage, a frame cut anywhere, a frame with one bit flipped,
    a header declaring a payload longer than the board takes."""
    kind = rng.randrange(4)
    if kind == 0:
        return "garbage", _garbage(rng)
    if kind == 1:
        f = _random_frame(rng, obs_dim)
        return "cut", f[: rng.randrange(1, len(f))]
    if kind == 2:
        f = bytearray(_random_frame(rng, obs_dim))
        k = rng.randrange(len(f) * 8)
        f[k >> 3] ^= 1 << (k & 7)
        return "flip", bytes(f)
    n = rng.randrange(P.MAX_PAYLOAD + 1, 0x10000)
    t, s = rng.randrange(256), rng.randrange(256)
    return "too long", P.MAGIC + bytes((t, s, n & 0xFF, n >> 8, P.header_check(t, s, n))) + _garbage(rng)


def request_item(rng, seq, obs_dim):
    """(frame, expected): expected is ('reply', type, obs or None) or ('error', code)."""
    kind = rng.randrange(10)
    if kind < 6:
        obs = [rng.uniform(-2.0, 2.0) for _ in range(obs_dim)]
        return P.encode(P.INFER, seq, struct.pack("<%df" % obs_dim, *obs)), ("reply", P.INFER | P.REPLY, obs)
    if kind < 8:
        return P.encode(P.PING, seq), ("reply", P.PING | P.REPLY, None)
    if kind == 8:
        return P.encode(rng.choice(UNKNOWN_TYPES), seq, bytes(rng.randrange(20))), ("error", P.E_TYPE)
    n = rng.choice([0, 1, 4 * obs_dim - 1, 4 * obs_dim + 4, 64])
    return P.encode(P.INFER, seq, bytes(n)), ("error", P.E_PAYLOAD)


def batch_stream(rng, n, obs_dim, noise_per_request, kinds):
    """The bytes of one batch: n good requests (seqs 1..n), each after noise items (on average
    noise_per_request), perhaps noise at the end. Returns (stream, {seq: expected}, {seq: its
    frame}, shortened); counts the noise items per kind into kinds."""
    items = []  # (is noise, bytes)
    expected = {}
    frames = {}
    for i in range(n):
        while rng.random() < noise_per_request / (1.0 + noise_per_request):  # geometric, mean noise_per_request
            kind, data = noise_item(rng, obs_dim)
            kinds[kind] = kinds.get(kind, 0) + 1
            items.append((True, data))
        frame, want = request_item(rng, i + 1, obs_dim)
        expected[i + 1] = want
        frames[i + 1] = frame
        items.append((False, frame))
    if rng.random() < 0.5:  # the batch may end inside a cut frame: the board's timeout ends it
        kind, data = noise_item(rng, obs_dim)
        kinds[kind] = kinds.get(kind, 0) + 1
        items.append((True, data))
    # no noise item may be the start of a valid frame that the bytes after it complete (a frame
    # cut one byte short, whose missing byte is 0xA5, and the next request's first byte): line
    # noise that happens to spell a frame is the fuzzer's mistake, not the board's. Such an item
    # loses its last byte until it cannot; from the end, so each sees its final successors.
    shortened = 0
    after = P.encode(P.PING, SENTINEL_SEQS[0])  # the sentinel follows the batch at once
    for k in range(len(items) - 1, -1, -1):
        noise, data = items[k]
        while noise and data and _completes(data, after):
            data = data[:-1]
            shortened += 1
        items[k] = (noise, data)
        after = (data + after)[: P.HEADER + P.MAX_PAYLOAD + P.TRAILER]
    return b"".join(data for _, data in items), expected, frames, shortened


def _frame_length(data, k):
    """The length of the valid frame that starts at data[k] (protocol.py's layout), or 0."""
    if data[k : k + 2] != P.MAGIC or len(data) - k < P.HEADER:
        return 0
    t, s, lo, hi, check = data[k + 2 : k + P.HEADER]
    n = lo | (hi << 8)
    end = k + P.HEADER + n + P.TRAILER
    if n > P.MAX_PAYLOAD or P.header_check(t, s, n) != check or end > len(data):
        return 0
    return end - k if struct.unpack("<I", data[end - 4 : end])[0] == crc32(data[k + 2 : end - 4]) & 0xFFFFFFFF else 0


def _completes(item, after):
    """True when a valid frame starts inside item and ends in the bytes after it."""
    data = item + after
    for k in range(len(item)):
        if item[k] == P.MAGIC[0]:
            n = _frame_length(data, k)
            if n and k + n > len(item):
                return True
    return False


def _correct(frame, expected, policy, tolerance):
    type_, seq, payload = frame
    if expected[0] == "error":
        return type_ == P.ERROR and len(payload) > 0 and payload[0] == expected[1]
    if type_ != expected[1]:
        return False
    obs = expected[2]
    if obs is None:
        return True
    n = (len(payload) - 4) // 4
    action = struct.unpack("<I%df" % n, payload)[1:]
    want = policy(obs)
    return len(action) == len(want) and all(abs(a - b) <= tolerance * (1.0 + abs(b)) for a, b in zip(action, want))


def _write(link, data, failed):
    try:
        link.write(data)
    except Exception as e:  # LinkError: handed to the reading thread
        failed.append(e)


def fuzz(link, policy, requests, seed=0, batch=200, noise_per_request=1.0, tolerance=1e-5, batch_timeout=60.0, progress=None):
    """Write `requests` good requests on an open SerialLink (microrl.serve running with `policy`
    loaded), each preceded by noise items (on average noise_per_request), in batches written
    while the replies are read. Returns a dict: requests, lost (good requests without their
    correct answer), lost_examples, noise_items (count per kind), noise_shortened (bytes taken off
    noise items that would have completed into a frame with what followed), error_frames, seconds.
    Raises LinkError when the board stops reading (every write has a deadline): never hangs."""
    rng = random.Random(seed)
    obs_dim = policy.obs_dim
    lost = 0
    examples = []
    kinds = {}
    error_frames = 0
    shortened = 0  # noise bytes dropped so that no noise item completes into a frame (batch_stream)
    t0 = time.time()
    done_requests = 0
    while done_requests < requests:
        n = min(batch, requests - done_requests, SENTINEL_SEQS[0] - 1)
        stream, expected, _, cut_short = batch_stream(rng, n, obs_dim, noise_per_request, kinds)
        shortened += cut_short
        answered = set()
        write_failed = []  # the writer's LinkError (a board that stopped reading), raised below
        writer = threading.Thread(target=_write, args=(link, bytes(stream), write_failed))
        writer.start()  # write while reading: replies must not back up into the board
        sentinel = None
        deadline = time.time() + batch_timeout
        last_activity = time.time()
        resent = 0
        finished = False
        while not finished and not write_failed and time.time() < deadline:
            # the sentinel goes out once the batch is written (joining the writer earlier could
            # deadlock: the board stops reading while its replies wait for us to read them)
            if not writer.is_alive() and (sentinel is None or time.time() - last_activity > 1.0):
                sentinel = SENTINEL_SEQS[resent % len(SENTINEL_SEQS)]
                resent += 1
                link.write(P.encode(P.PING, sentinel))  # its answer ends the batch
                last_activity = time.time()
            frames = link.read_frames(0.1)
            if frames:
                last_activity = time.time()
            for f in frames:
                if isinstance(f, int):
                    continue  # a reply damaged on the way back (none on a pty)
                type_, seq, payload = f
                if type_ == P.ERROR:
                    error_frames += 1
                if seq in SENTINEL_SEQS:
                    finished = finished or (seq == sentinel and type_ == P.PING | P.REPLY)
                elif seq in expected and _correct(f, expected[seq], policy, tolerance):
                    answered.add(seq)
        writer.join()  # ends: link.write has a deadline
        if write_failed:
            raise write_failed[0]
        missing = sorted(set(expected) - answered)
        lost += len(missing)
        if missing and len(examples) < 10:
            examples.append({"batch_start": done_requests, "seqs": missing[:10], "finished": finished})
        done_requests += n
        if progress:
            progress(n)
    return {"requests": requests, "lost": lost, "lost_examples": examples, "noise_items": kinds, "noise_shortened": shortened,
            "error_frames": error_frames, "seconds": time.time() - t0}
