# microrl.serve(): answer framed requests (microrl/protocol.py) on the serial line (stdin/stdout)
# until an EXIT request, then return to the REPL. Damaged input never crashes it or leaves it
# waiting: garbage is skipped (and reported), partial frames time out, bad checksums and
# unknown requests get an ERROR frame, exceptions in a request are answered as errors.
#
#   >>> import microrl
#   >>> microrl.serve("policy.mrlp")   # (the code is in microrl.server)
import sys

from . import protocol as P

FRAME_TIMEOUT_MS = 200  # longest silence inside a frame before it is dropped as partial
IDLE_MS = 500  # how often an idle server reports skipped garbage

try:
    from time import ticks_diff, ticks_us
except ImportError:  # CPython
    from time import perf_counter_ns

    def ticks_us():
        return perf_counter_ns() // 1000

    def ticks_diff(a, b):
        return a - b


def _mem_free():
    try:
        import gc

        return gc.mem_free()
    except (ImportError, AttributeError):
        return 0


def _out_of_memory(step, path):
    # the MemoryError that names the step and the heap it needs (about the file's size)
    import os

    need = os.stat(path)[6]
    try:
        from .refusals import out_of_memory

        return out_of_memory(step, need)
    except MemoryError:  # not even room for the message's code
        return MemoryError("%s: out of memory (it needs about %d bytes of heap)" % (step, need))


def _describe_board():
    impl = sys.implementation
    version = ".".join(str(v) for v in impl.version[:3])
    return "%s %s on %s" % (impl.name, version, getattr(impl, "_machine", sys.platform))


class Server:
    def __init__(self, stream_in=None, stream_out=None):
        stdin = stream_in or sys.stdin.buffer
        self.inp = getattr(stdin, "raw", stdin)  # CPython: unbuffered, so poll() sees all data
        self.out = stream_out or sys.stdout.buffer
        import select

        self.poller = select.poll()
        self.poller.register(self.inp, select.POLLIN)
        self._ipoll = getattr(self.poller, "ipoll", None)
        self.byte = bytearray(1)
        self.byte_mv = memoryview(self.byte)
        self.decoder = P.Decoder(zero_copy=True)
        self.policy = None
        self.policy_path = None
        self.obs = None
        self.running = True

    # --- io
    def _readable(self, timeout_ms):
        if self._ipoll is not None:
            for _ in self._ipoll(timeout_ms):
                return True
            return False
        return bool(self.poller.poll(timeout_ms))

    def _read_byte(self, timeout_ms):
        """Next byte, or -1 when none came within timeout_ms; raises EOFError on a closed input."""
        if not self._readable(timeout_ms):
            return -1
        n = self.inp.readinto(self.byte_mv)
        if not n:
            raise EOFError
        return self.byte[0]

    def send(self, type_, seq, payload=b""):
        self.out.write(P.encode(type_, seq, payload))
        try:
            self.out.flush()
        except AttributeError:
            pass

    def error(self, seq, code, message=""):
        self.send(P.ERROR, seq, P.error_payload(code, message or P.ERROR_NAMES.get(code, "")))

    # --- requests
    def info(self):
        return P.pack_info(_mem_free(), _describe_board())

    def load(self, path):
        """Load the policy at path; on failure the policy loaded before stays in service."""
        from .policy import load

        try:
            try:
                policy = load(path)
            except MemoryError:
                if self.policy is None:
                    raise
                # no room for two policies: free the old one and try again; if that fails too,
                # reload the old one (it fitted before) and report the failure
                old = self.policy_path
                self.policy = self.obs = None
                try:
                    policy = load(path)
                except Exception:
                    self._install(load(old), old)
                    raise
        except MemoryError:
            raise _out_of_memory("loading the policy %s" % path, path)
        self._install(policy, path)
        return P.pack_loaded(policy.obs_dim, policy.act_dim, policy.describe())

    def _install(self, policy, path):
        from .compat import zeros

        self.policy = policy
        self.policy_path = path
        self.obs = zeros(policy.obs_dim)

    def infer(self, seq, payload):
        policy = self.policy
        if policy is None:
            return self.error(seq, P.E_NO_POLICY, "no policy loaded: send LOAD with its path first")
        n_in = policy.obs_dim
        if len(payload) != 4 * n_in:
            return self.error(seq, P.E_PAYLOAD, "observation of %d bytes, the policy takes %d floats (%d bytes)" % (len(payload), n_in, 4 * n_in))
        obs = self.obs
        values = P.unpack_observation(payload, n_in)
        for i in range(n_in):
            obs[i] = values[i]
        t0 = ticks_us()
        action = policy(obs)
        dt = ticks_diff(ticks_us(), t0)
        self.send(P.INFER | P.REPLY, seq, P.pack_action(dt, action))

    def rollout(self, seq, payload):
        if self.policy is None:
            return self.error(seq, P.E_NO_POLICY, "no policy loaded: send LOAD with its path first")
        if len(payload) not in (6, 7):
            return self.error(seq, P.E_PAYLOAD, "ROLLOUT takes seed u32, episodes u16 and optionally a task u8")
        task = payload[6] if len(payload) == 7 else P.TASK_PENDULUM
        seed, episodes = P.unpack_rollout(payload[:6])
        if task == P.TASK_QUADROTOR:
            return self.fly(seq, seed, episodes)
        if task != P.TASK_PENDULUM:
            return self.error(seq, P.E_PAYLOAD, "unknown ROLLOUT task %d" % task)
        if not 1 <= episodes <= 200:
            return self.error(seq, P.E_PAYLOAD, "episodes must be 1..200, got %d" % episodes)
        from .evaluate import evaluate
        from .task import Env
        from .tasks import pendulum

        timed = _Timed(self.policy)
        mean, std, returns = evaluate(timed, Env(pendulum), episodes, seed=seed)
        self.send(P.ROLLOUT | P.REPLY, seq, P.pack_returns(timed.calls, timed.us, returns))

    def fly(self, seq, seed, episodes):
        """The policy flying the board's own quadrotor (microrl.tasks.quadrotor.fly): steps, policy us,
        total us, then (return, success, final distance, steps) per episode."""
        if not 1 <= episodes <= P.MAX_FLIGHTS:
            return self.error(seq, P.E_PAYLOAD, "quadrotor episodes must be 1..%d, got %d" % (P.MAX_FLIGHTS, episodes))
        from .tasks.quadrotor import ACT_DIM, OBS_DIM, fly

        if self.policy.obs_dim != OBS_DIM or self.policy.act_dim != ACT_DIM:
            return self.error(seq, P.E_PAYLOAD, "the quadrotor needs a %d-in %d-out policy, this one is %d-in %d-out" % (OBS_DIM, ACT_DIM, self.policy.obs_dim, self.policy.act_dim))

        timed = _Timed(self.policy)
        t0 = ticks_us()
        rows = fly(timed, episodes, seed)
        total = ticks_diff(ticks_us(), t0)
        values = []
        for row in rows:
            values.extend(row)
        self.send(P.ROLLOUT | P.REPLY, seq, P.pack_flights(timed.calls, timed.us, total, values))

    def handle(self, type_, seq, payload):
        if type_ == P.INFER:
            return self.infer(seq, payload)
        if type_ == P.PING:
            return self.send(P.PING | P.REPLY, seq, self.info())
        if type_ == P.LOAD:
            try:
                path = bytes(payload).decode()
            except Exception:
                return self.error(seq, P.E_PAYLOAD, "policy path is not utf-8")
            return self.send(P.LOAD | P.REPLY, seq, self.load(path))
        if type_ == P.ROLLOUT:
            return self.rollout(seq, payload)
        if type_ == P.EXIT:
            self.running = False
            return self.send(P.EXIT | P.REPLY, seq)
        return self.error(seq, P.E_TYPE, "unknown request type 0x%02x" % type_)

    def run(self):
        dec = self.decoder
        self.send(P.HELLO, 0, self.info())
        while self.running:
            b = self._read_byte(FRAME_TIMEOUT_MS if dec.in_frame() else IDLE_MS)
            if b < 0:
                # silence: a partly held frame is given up, and what followed its start is
                # scanned again (a good frame after a cut one is answered now)
                r = dec.expire()
                if r is None and dec.skipped:
                    self.error(0, P.E_GARBAGE, "skipped %d bytes outside frames" % dec.take_skipped())
            else:
                r = dec.feed(b)
            while r is not None and self.running:
                self.result(r)
                r = dec.next()

    def result(self, r):
        dec = self.decoder
        if dec.skipped:
            self.error(0, P.E_GARBAGE, "skipped %d bytes outside frames" % dec.take_skipped())
        if isinstance(r, int):
            return self.error(dec.seq, r)
        type_, seq, payload = r
        try:
            self.handle(type_, seq, payload)
        except Exception as e:  # MemoryError, a missing or damaged policy file, ...
            try:
                self.error(seq, P.E_FAILED, "%s: %s" % (type(e).__name__, e))
            except Exception:
                pass


class _Timed:
    """A policy wrapper that sums the microseconds spent in the policy."""

    def __init__(self, policy):
        self.policy = policy
        self.us = 0
        self.calls = 0

    def __call__(self, obs):
        t0 = ticks_us()
        a = self.policy(obs)
        self.us += ticks_diff(ticks_us(), t0)
        self.calls += 1
        return a


def serve(policy_path=None, stream_in=None, stream_out=None):
    """Serve requests on stdin/stdout until EXIT. Ctrl-C is plain data meanwhile (a frame may
    contain 0x03), so stop it with an EXIT request or a reset."""
    try:
        import micropython

        micropython.kbd_intr(-1)
    except (ImportError, AttributeError):
        micropython = None
    server = Server(stream_in, stream_out)
    if policy_path:
        try:
            server.load(policy_path)
        except Exception:
            server.policy = None  # the host sees it in LOAD's reply; nothing to print here
    try:
        server.run()
    except EOFError:
        pass
    finally:
        if micropython is not None:
            micropython.kbd_intr(3)
