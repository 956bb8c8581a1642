# The serial protocol between the host and microrl.serve() on a board, defined once: the board's
# server and the host's client (microrl_host/board/serial_link.py) both encode and decode with this.
#
# Frame (little-endian):
#   0  2  magic b"\xa5\x5a"
#   2  1  type       requests < 0x80; a reply has the request's type | 0x80; ERROR = 0x7f
#   3  1  seq        a reply carries its request's seq; requests use 1..255, so that 0 marks
#                    errors about no request (garbage, a frame cut before its seq arrived)
#   4  2  payload length n (at most MAX_PAYLOAD)
#   6  1  header check: low byte of CRC-32 of bytes 2..5, so a damaged length is caught at once
#   7  n  payload
#   7+n 4 CRC-32 of bytes 2 .. 6+n (type, seq, length, check, payload)
import struct

from .fileformat import crc32

MAGIC = b"\xa5\x5a"
_MAGIC0 = MAGIC[0]
_MAGIC1 = MAGIC[1]
HEADER = 7
TRAILER = 4
OVERHEAD = HEADER + TRAILER
MAX_PAYLOAD = 1024
# 2: ROLLOUT names the task (a module of the board's microrl.tasks) and answers a row per episode;
# 1 had a task byte (Pendulum or the quadrotor) and a reply per task. Both ends refuse the other's.
VERSION = 2

# requests (replies are type | REPLY)
# (the bodies are packed and unpacked by the pack_*/unpack_* pairs below, on both ends)
PING = 0x01  # -> version u8, free heap u32, then the board's description (utf-8)
INFER = 0x02  # float32 observation -> compute time u32 (us), float32 action
LOAD = 0x03  # policy path (utf-8) -> n_in u16, n_out u16, description (utf-8)
ROLLOUT = 0x04  # seed u32, episodes u16, first u16, task (utf-8: a module of the board's microrl.tasks)
#                 -> steps u32, policy us u32, total us u32, then float32 (return, success,
#                 final error, steps) per episode: the loaded policy in closed loop against the
#                 board's own copy of the task, from its evaluation starts drawn from Rng(seed)
#                 (microrl.evaluate.rollouts). first: the episode of that run this request starts
#                 at, so that a longer run is split over several requests (0 starts it)
EXIT = 0x05  # -> empty reply, then the server returns to the REPL
ROLLOUT_FIELDS = 4  # floats per episode in ROLLOUT's reply
ROLLOUT_EPISODES = (MAX_PAYLOAD - 12) // (4 * ROLLOUT_FIELDS)  # episodes per ROLLOUT: the reply fits MAX_PAYLOAD
TASK_NAME_MAX = 64  # bytes of a task's name in ROLLOUT
REPLY = 0x80
HELLO = 0x7E  # sent once by the server when it starts: as PING's reply
ERROR = 0x7F  # code u8, message (utf-8)

# error codes
E_CRC = 1  # frame checksum wrong
E_HEADER = 2  # header check wrong (damaged type/seq/length)
E_TOO_LONG = 3  # declared payload longer than MAX_PAYLOAD
E_TIMEOUT = 4  # a frame started but did not finish in time
E_GARBAGE = 5  # bytes outside any frame were skipped
E_TYPE = 6  # unknown request type
E_PAYLOAD = 7  # payload of the wrong size or content
E_NO_POLICY = 8  # INFER/ROLLOUT before a policy is loaded
E_FAILED = 9  # the request raised on the board (message says what)

ERROR_NAMES = {
    E_CRC: "bad checksum",
    E_HEADER: "bad header",
    E_TOO_LONG: "payload too long",
    E_TIMEOUT: "partial frame timed out",
    E_GARBAGE: "garbage skipped",
    E_TYPE: "unknown request type",
    E_PAYLOAD: "bad payload",
    E_NO_POLICY: "no policy loaded",
    E_FAILED: "request failed",
}


def header_check(type_, seq, n):
    return crc32(bytes((type_, seq, n & 0xFF, n >> 8))) & 0xFF


def encode(type_, seq, payload=b""):
    n = len(payload)
    if n > MAX_PAYLOAD:
        raise ValueError("payload of %d bytes exceeds %d" % (n, MAX_PAYLOAD))
    head = bytes((type_ & 0xFF, seq & 0xFF, n & 0xFF, n >> 8, header_check(type_ & 0xFF, seq & 0xFF, n)))
    crc = crc32(payload, crc32(head)) & 0xFFFFFFFF
    return MAGIC + head + payload + struct.pack("<I", crc)


# ---- message bodies: pack_X builds a payload, unpack_X reads one (struct.error on a wrong size)
def _text(payload):
    return bytes(payload).decode("utf-8", "replace")


def pack_info(mem_free, description):  # PING reply, HELLO
    return struct.pack("<BI", VERSION, mem_free) + description.encode()


def unpack_info(payload):
    """(protocol version, free heap, board description)."""
    version, mem_free = struct.unpack("<BI", payload[:5])
    return version, mem_free, _text(payload[5:])


def pack_loaded(n_in, n_out, description):  # LOAD reply
    return struct.pack("<HH", n_in, n_out) + description.encode()


def unpack_loaded(payload):
    """(inputs, outputs, policy description)."""
    n_in, n_out = struct.unpack("<HH", payload[:4])
    return n_in, n_out, _text(payload[4:])


def pack_observation(obs):  # INFER request
    return struct.pack("<%df" % len(obs), *obs)


def unpack_observation(payload, n):
    return struct.unpack("<%df" % n, payload)


def pack_action(compute_us, action):  # INFER reply
    return struct.pack("<I%df" % len(action), compute_us, *action)


def unpack_action(payload):
    """(action list, on-board compute time in microseconds)."""
    values = struct.unpack("<I%df" % ((len(payload) - 4) // 4), payload)
    return list(values[1:]), values[0]


def pack_rollout(seed, episodes, task, first=0):  # ROLLOUT request
    return struct.pack("<IHH", seed, episodes, first) + task.encode()


def unpack_rollout(payload):
    """(seed, episodes, first, task name); ValueError on a payload of another shape (protocol 1's
    ROLLOUT named no task)."""
    n = len(payload)
    if n < 9 or n > 8 + TASK_NAME_MAX:
        raise ValueError("ROLLOUT takes seed u32, episodes u16, first u16 and a task's name (protocol %d), got %d bytes" % (VERSION, n))
    seed, episodes, first = struct.unpack("<IHH", payload[:8])
    return seed, episodes, first, _text(payload[8:])


def is_task_name(name):
    """Whether name can be a task's module in the board's microrl.tasks (a Python identifier of
    ASCII letters, digits and underscores)."""
    if not 0 < len(name) <= TASK_NAME_MAX or name[0].isdigit():
        return False
    for c in name:
        if not (c == "_" or ("a" <= c <= "z") or ("A" <= c <= "Z") or ("0" <= c <= "9")):
            return False
    return True


def pack_rows(steps, policy_us, total_us, rows):  # ROLLOUT reply: rows of ROLLOUT_FIELDS numbers
    values = []
    for row in rows:
        values.extend(row)
    return struct.pack("<III%df" % len(values), steps, policy_us, total_us, *values)


def unpack_rows(payload):
    """(rows of (return, success, final error, steps), steps, policy us, total us)."""
    n = (len(payload) - 12) // 4
    values = struct.unpack("<III%df" % n, payload)
    k = ROLLOUT_FIELDS
    rows = [tuple(values[3 + k * i : 3 + k * (i + 1)]) for i in range(n // k)]
    return rows, values[0], values[1], values[2]


def error_payload(code, message=""):
    return bytes((code,)) + message.encode()[: MAX_PAYLOAD - 1]


def parse_error(payload):
    """(code, message) of an ERROR frame's payload."""
    if not payload:
        return 0, "empty error frame"
    return payload[0], bytes(payload[1:]).decode("utf-8", "replace")


class Decoder:
    """Frame decoder that resynchronises on the magic bytes.

    feed(byte) adds one byte and returns the first result it completes: None while no frame is
    complete, a tuple (type, seq, payload) for a whole good frame, or an int error code (E_CRC,
    E_HEADER, E_TOO_LONG, and E_TIMEOUT from expire()) for a damaged one. A failed frame is
    dropped from its start marker only: the bytes after it are scanned again for the next
    marker, so a good frame that followed a cut frame, garbage or a bad checksum is found. One
    byte can complete several results: call next() after feed() until it returns None.
    `seq` is the seq byte of the frame the last error is about (0 when it never arrived);
    `skipped` counts bytes dropped outside frames since the last take_skipped(); in_frame() says
    whether a frame is partly held (for timeouts: then call expire()).
    Preallocated: decoding allocates only the payload handed out (a memoryview of its buffer
    when zero_copy is set: valid until the next feed)."""

    def __init__(self, max_payload=MAX_PAYLOAD, zero_copy=False):
        self.size = HEADER + max_payload + TRAILER
        self.buf = bytearray(self.size)
        self.mv = memoryview(self.buf)
        self.max_payload = max_payload
        self.zero_copy = zero_copy
        self.head = 0  # the held bytes are buf[head:end]; a frame candidate starts at head
        self.end = 0
        self.need = 0  # length of the candidate frame once its header checked out, else 0
        self.skipped = 0
        self.seq = 0

    def in_frame(self):
        return self.end > self.head

    def reset(self):
        self.head = self.end = self.need = 0

    def take_skipped(self):
        n = self.skipped
        self.skipped = 0
        return n

    def _drop(self, n):
        # give up the candidate at head; what follows its first n bytes is scanned again
        self.head += n
        self.need = 0

    def feed(self, b):
        buf = self.buf
        end = self.end
        if end == self.size:  # held bytes reach the end: move them to the front
            head = self.head
            if head == 0:  # only when results were left unread: the oldest byte goes
                head = 1
                self.skipped += 1
            for i in range(end - head):
                buf[i] = buf[head + i]
            end -= head
            self.head = 0
        buf[end] = b
        end += 1
        self.end = end
        held = end - self.head
        need = self.need
        if need:
            if held < need:  # inside a frame whose header checked out
                return None
        elif 2 < held < HEADER:  # inside a header whose start marker checked out
            return None
        return self.next()

    def next(self):
        """The next result the held bytes give without another byte, or None."""
        buf = self.buf
        while True:
            head = self.head
            avail = self.end - head
            if avail <= 0:
                self.head = self.end = 0
                return None
            if buf[head] != _MAGIC0 or (avail > 1 and buf[head + 1] != _MAGIC1):
                self.skipped += 1
                self.head = head + 1
                continue
            if avail < HEADER:
                return None
            need = self.need
            if not need:
                n = buf[head + 4] | (buf[head + 5] << 8)
                if header_check(buf[head + 2], buf[head + 3], n) != buf[head + 6]:
                    self.seq = buf[head + 3]
                    self._drop(2)
                    return E_HEADER
                if n > self.max_payload:
                    self.seq = buf[head + 3]
                    self._drop(2)
                    return E_TOO_LONG
                need = self.need = HEADER + n + TRAILER
            if avail < need:
                return None
            end = head + need - TRAILER
            crc = crc32(self.mv[head + 2 : end]) & 0xFFFFFFFF
            if crc != (buf[end] | (buf[end + 1] << 8) | (buf[end + 2] << 16) | (buf[end + 3] << 24)):
                self.seq = buf[head + 3]
                self._drop(2)
                return E_CRC
            self._drop(need)
            payload = self.mv[head + HEADER : end] if self.zero_copy else bytes(self.mv[head + HEADER : end])
            return (buf[head + 2], buf[head + 3], payload)

    def expire(self):
        """Give up a partly held frame (the line went quiet inside it): returns E_TIMEOUT, with
        `seq` set to its seq when that byte arrived (else 0); the bytes after its start marker
        are scanned again by next(). None when no frame is held."""
        head = self.head
        avail = self.end - head
        if avail <= 0:
            return None
        self.seq = self.buf[head + 3] if avail > 3 else 0
        self._drop(2 if avail > 1 else 1)
        return E_TIMEOUT

    def feed_bytes(self, data):
        """Feed many bytes; returns the list of results that are not None."""
        out = []
        for b in data:
            r = self.feed(b)
            while r is not None:
                out.append(r)
                r = self.next()
        return out

    def flush(self):
        """The results of giving up every partly held frame (end of a stream): a list."""
        out = []
        while True:
            r = self.next()
            if r is None:
                r = self.expire()
                if r is None:
                    return out
            out.append(r)
