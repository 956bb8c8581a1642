"""The host end of the serial protocol (microrl/protocol.py): talks to microrl.serve on a board.

Every wait has a deadline: a board that stops answering, resets or sends garbage ends in a
LinkError naming what happened, never a hang. The raw REPL is driven by mpremote's transport
(the same code `mpremote` uses); frames go over its pyserial port.

    with SerialLink(port) as link:
        link.load("policy.mrlp")
        action, compute_us = link.infer([1.0, 0.0, 0.0])
"""
import time

from microrl import protocol as P

from ..tasks import board_name


class LinkError(Exception):
    """The link failed: the message says what happened and what to do."""


class BoardResetError(LinkError):
    pass


class DeviceError(LinkError):
    """The board answered a request with an ERROR frame."""

    def __init__(self, code, message):
        self.code = code
        super().__init__("board error %d (%s): %s" % (code, P.ERROR_NAMES.get(code, "?"), message))


# what boards print when they restart (MicroPython's banner, ESP32's ROM boot messages)
RESET_SIGNS = (b"soft reboot", b"MicroPython ", b'Type "help()"', b"rst:0x", b"ets ")


def connect(port, timeout=10, soft_reset=False):
    """An mpremote SerialTransport on port in the raw REPL, or LinkError saying why not."""
    from mpremote.transport import TransportError
    from mpremote.transport_serial import SerialTransport
    import os

    if not port.startswith(("socket://", "rfc2217://")) and not os.path.exists(port):
        raise LinkError("no such port %s (is the board plugged in? list ports with `mpremote connect list`)" % port)
    try:
        # a read timeout, so that no read in mpremote's transport can block for ever
        transport = SerialTransport(port, baudrate=115200, timeout=timeout)
    except TransportError as e:
        raise LinkError("cannot open %s: %s (not a serial port, in use by another program, or no permission?)" % (port, e)) from None
    except Exception as e:  # serial.SerialException and the like
        raise LinkError("cannot open %s: %s" % (port, e)) from None
    try:
        enter_raw_repl(transport, soft_reset, timeout)
    except Exception as e:
        try:
            transport.close()
        except Exception:
            pass
        raise LinkError(
            "%s does not answer as a MicroPython board (no raw REPL after Ctrl-C: %s). If a program on it ignores "
            "Ctrl-C, press its reset button; if it has no MicroPython yet, flash it (the README's Boards section); "
            "and close other programs using the port." % (port, str(e).strip() or type(e).__name__)
        ) from None
    return transport


# a first try at the raw REPL, without a soft reset: any REPL answers Ctrl-C, Ctrl-A at once
FIRST_TRY = 1.5


def enter_raw_repl(transport, soft_reset, timeout):
    """mpremote's enter_raw_repl, which also reaches a board still running microrl.serve for a
    host that died: serve takes a Ctrl-C only after the line was quiet (microrl.server's
    IDLE_MS), so when a first try without a soft reset gets no REPL, the line has been quiet
    since and a second try's Ctrl-C stops the server. mpremote prints what it read when it fails:
    not on our stdout (--json)."""
    import contextlib
    import io

    from microrl.server import IDLE_MS

    with contextlib.redirect_stdout(io.StringIO()):
        first = min(timeout, max(FIRST_TRY, 2 * IDLE_MS / 1000.0))
        try:
            transport.enter_raw_repl(soft_reset=False, timeout_overall=first)
        except Exception:
            if first >= timeout:
                raise
            time.sleep(IDLE_MS / 1000.0)  # the read above was quiet for `first`; be sure
            transport.enter_raw_repl(soft_reset=soft_reset, timeout_overall=timeout)
            return
        if soft_reset:
            transport.enter_raw_repl(soft_reset=True, timeout_overall=timeout)


def disconnect(transport):
    """Leave the raw REPL and close the port; a board that reset or a line that dropped meanwhile
    is no error here (the port is closed all the same)."""
    try:
        transport.exit_raw_repl()
    except Exception:
        pass
    try:
        transport.close()
    except Exception:  # the port vanished (OSError EIO): it is closed all the same
        pass


# errors about a frame damaged on the line: sending the same request again can succeed
TRANSIT_ERRORS = (P.E_CRC, P.E_HEADER, P.E_TOO_LONG, P.E_TIMEOUT)
# seconds of silence after which a partly read frame is given up (the board's FRAME_TIMEOUT_MS)
QUIET = 0.2
# bytes per write call: each must be taken by the port within the link's timeout (4 kB leave a
# 115200-baud line 0.36 s), so a long burst is no error but a board that stops reading is
WRITE_CHUNK = 4096


class SerialLink:
    """Starts microrl.serve on the board (which must have microrl deployed) and sends requests.

    timeout: seconds to wait for each reply (a ROLLOUT waits longer, see rollout()); retries:
    how often a request without an answer is sent again (see request())."""

    def __init__(self, port, policy_path=None, timeout=5.0, transport=None, soft_reset=True, retries=1):
        if not 0.0 < timeout < float("inf"):  # refused before the board starts serving
            raise ValueError("timeout must be a positive number of seconds, got %r" % (timeout,))
        self.port = port
        self.timeout = timeout
        self.retries = retries
        self.retried = 0  # requests sent again so far
        self._last_byte = 0.0
        self.transport = transport
        self._own_transport = transport is None
        self.policy_path = policy_path
        self.decoder = P.Decoder()
        self.seq = 0
        self.board_info = None
        self.noise = bytearray()  # non-frame bytes seen (REPL text, boot messages)
        self.errors = []  # unsolicited error frames (garbage reports)
        self.serving = False
        self.soft_reset = soft_reset  # start from a clean heap (what an earlier session left is freed)

    # --- setup / teardown
    def open(self):
        if self.transport is None:
            self.transport = connect(self.port, soft_reset=self.soft_reset)
        self.serial = self.transport.serial
        code = "from microrl.server import serve\nserve(%r)\n" % (self.policy_path or "")
        try:
            self.transport.exec_raw_no_follow(code)
        except Exception as e:
            raise LinkError("could not start microrl.serve on %s: %s" % (self.port, e)) from None
        self.serial.timeout = 0.05  # reads return within 50 ms; every wait below has its own deadline
        self.serial.write_timeout = self.timeout  # a board that stops reading: LinkError, not a hang
        hello = self._wait_frame(lambda f: f[0] == P.HELLO, 10.0, "the server's hello")
        self.serving = True
        self.board_info = parse_info(hello[2])
        if self.board_info["protocol"] != P.VERSION:
            message = ("the microrl on the board at %s speaks serial protocol %d, this host's %d: deploy this microrl to it "
                       "(microrl deploy --port %s)" % (self.port, self.board_info["protocol"], P.VERSION, self.port))
            self.close()
            raise LinkError(message)
        return self

    def close(self):
        if self.transport is None:
            return
        try:
            if self.serving:
                try:
                    self.request(P.EXIT, b"", timeout=2.0)
                    self.transport.follow(2.0)  # the raw REPL's end-of-output markers
                except Exception:
                    pass
                self.serving = False
            if self._own_transport:
                disconnect(self.transport)
        finally:
            if self._own_transport:
                self.transport = None

    def __enter__(self):
        return self.open()

    def __exit__(self, *exc):
        self.close()

    # --- frames
    def send(self, type_, payload=b""):
        self.seq = self.seq % 255 + 1  # 1..255: seq 0 marks the board's errors about no request
        self.write(P.encode(type_, self.seq, payload))
        return self.seq

    def write(self, data):
        """Write data; LinkError when the port takes no part of it within the link's timeout."""
        from serial import SerialTimeoutException

        try:
            for k in range(0, len(data), WRITE_CHUNK):
                self.serial.write(data[k : k + WRITE_CHUNK])
        except SerialTimeoutException:
            raise LinkError("writing to %s stalled for %.1f s: the board stopped reading (hung, busy or reset?)" % (self.port, self.serial.write_timeout)) from None
        except Exception as e:
            raise LinkError("writing to %s failed: %s (board unplugged?)" % (self.port, e)) from None

    def read_frames(self, timeout):
        """Frames (and error codes of damaged ones) that arrive within timeout seconds; returns
        as soon as at least one did. A frame left partly read by QUIET seconds of silence is
        given up, and what followed its start is scanned again (as the board does)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                ser = self.serial
                n = ser.in_waiting
                data = ser.read(n if n else 1)
            except Exception as e:
                raise LinkError("reading from %s failed: %s (board unplugged?)" % (self.port, e)) from None
            now = time.monotonic()
            if data:
                self._last_byte = now
                out = self.decoder.feed_bytes(data)
                if self.decoder.skipped or self.decoder.in_frame():  # text, or bytes a cut frame may hold
                    self.decoder.take_skipped()
                    self._note_noise(data)
                if out:
                    return out
            elif self.decoder.in_frame() and now - self._last_byte > QUIET:
                out = self.decoder.flush()
                if out:
                    return out
            if now > deadline:
                return []

    def _note_noise(self, data):
        self.noise += data
        del self.noise[:-512]
        text = bytes(self.noise)
        if b"no module named 'microrl" in text:
            raise LinkError("microrl is not on the board at %s (or not complete): run `microrl deploy --port %s` first" % (self.port, self.port))
        if not self.serving and b"Traceback" in text and text.rstrip().endswith(b"\x04>"):
            raise LinkError("microrl.serve failed to start on the board: %s" % text.decode("utf-8", "replace").strip().splitlines()[-1].strip("\x04>"))
        for sign in RESET_SIGNS:
            if sign in text:
                self.serving = False
                raise BoardResetError("the board on %s reset (it printed %r, a boot message) and its server stopped" % (self.port, sign.decode()))

    def _wait_frame(self, match, timeout, what):
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise LinkError("no answer from %s within %.1f s while waiting for %s (board busy, reset, or not running microrl.serve)" % (self.port, timeout, what))
            for f in self.read_frames(min(left, 0.2)):
                if isinstance(f, int):
                    continue  # a frame damaged on the way to us; the request times out or is answered again
                if match(f):
                    return f
                if f[0] == P.ERROR:
                    self.errors.append(P.parse_error(f[2]))

    def request(self, type_, payload=b"", timeout=None, retries=None):
        """Send one request and return the reply's payload; DeviceError on an error reply.

        A request with no answer within the timeout, or one the board received damaged (its
        error frame carries the request's seq), is sent again, `retries` times (default
        self.retries), with the same seq: an answer to any try is the answer, and a late
        answer to an earlier try is never taken for a later request's (another seq)."""
        seq = self.send(type_, payload)
        frame = P.encode(type_, seq, payload)
        retries = self.retries if retries is None else retries
        timeout = timeout or self.timeout
        for attempt in range(retries + 1):
            if attempt:
                self.retried += 1
                self.write(frame)
            try:
                f = self._wait_frame(lambda f: f[1] == seq and f[0] in (type_ | P.REPLY, P.ERROR), timeout, "the reply to request %d" % seq)
            except BoardResetError:
                raise
            except LinkError:
                if attempt == retries:
                    raise
                continue
            if f[0] != P.ERROR:
                return f[2]
            code, message = P.parse_error(f[2])
            if code not in TRANSIT_ERRORS or attempt == retries:
                raise DeviceError(code, message)
        raise AssertionError("unreachable")

    # --- requests
    def ping(self):
        return parse_info(self.request(P.PING))

    def load(self, path):
        n_in, n_out, description = P.unpack_loaded(self.request(P.LOAD, path.encode(), timeout=max(self.timeout, 10.0)))
        self.n_in, self.n_out = n_in, n_out
        return n_in, n_out, description

    def infer(self, obs):
        """(action list, on-board compute time in microseconds)."""
        return P.unpack_action(self.request(P.INFER, P.pack_observation(obs)))

    def rollout(self, task, seed, episodes, timeout=None, per_step=0.05):
        """Closed loop on the board: the loaded policy against the board's own copy of task (its
        name in the board's microrl.tasks, or the task module), from its evaluation starts drawn
        from Rng(seed), as microrl.evaluate.rollouts(policy, Env(task, rng=Rng(seed),
        evaluation=True), episodes) on the host. Returns (rows of (return, success 1/0, final
        error, steps), steps, policy us, total us), over as many ROLLOUTs as the episodes need
        (P.ROLLOUT_EPISODES each: the reply fits a frame). Each waits `timeout` seconds, by
        default 60 and per_step (seconds of a step's work) plus the task's DT per step."""
        name = task if isinstance(task, str) else board_name(task)
        rows, steps, policy_us, total_us = [], 0, 0, 0
        first = 0
        while first < episodes:
            n = min(P.ROLLOUT_EPISODES, episodes - first)
            wait = timeout
            if wait is None:
                dt = float(getattr(task, "DT", 0.0)) if not isinstance(task, str) else 0.0
                limit = getattr(task, "EPISODE_STEPS", 1000) if not isinstance(task, str) else 1000
                wait = 60.0 + n * limit * (per_step + dt)
            part, s, pu, tu = P.unpack_rows(self.request(P.ROLLOUT, P.pack_rollout(seed, n, name, first), timeout=wait))
            rows += part
            steps += s
            policy_us += pu
            total_us += tu
            first += n
        return rows, steps, policy_us, total_us


def parse_info(payload):
    version, mem_free, board = P.unpack_info(payload)
    return {"protocol": version, "mem_free": mem_free, "board": board}
