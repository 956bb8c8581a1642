# microrl.serve(): answer framed requests (microrl/protocol.py) on the serial line (stdin/stdout)
# until an EXIT request, then return to the REPL. Damaged input never crashes it or leaves it
# waiting: garbage is skipped (and reported), partial frames time out, bad checksums and
# unknown requests get an ERROR frame, exceptions in a request are answered as errors.
# A host that dies cannot wedge it: a Ctrl-C after the line was quiet (see BREAK_BYTES) stops it
# as Ctrl-C stops any program, so the next tool (mpremote, deploy) finds the REPL.
#
#   >>> import microrl
#   >>> microrl.serve("policy.mrlp")   # (the code is in microrl.server)
import sys

from . import protocol as P

FRAME_TIMEOUT_MS = 200  # longest silence inside a frame before it is dropped as partial
IDLE_MS = 500  # how often an idle server reports skipped garbage
# Ctrl-C is data while serving (a frame may hold 0x03), so a break is a Ctrl-C outside a frame
# among the first BREAK_BYTES bytes after IDLE_MS of silence: what mpremote, Thonny or a person
# sends first ("\r\x03") to a board whose host died, never a host in mid-session (it sends frames,
# which start with the magic byte) nor line noise inside a burst. The board cannot see a host go
# (no end of file on a UART, none reliably on USB-CDC, and a host may pause as long as it likes
# between requests), so the next host's Ctrl-C is the signal rather than an idle timeout.
BREAK_BYTES = 2
CTRL_C = 3

try:
    from time import ticks_diff, ticks_us
except ImportError:  # CPython
    from time import perf_counter_ns

    def ticks_us():
        return perf_counter_ns() // 1000

    def ticks_diff(a, b):
        return a - b


def _collect():
    try:
        import gc

        gc.collect()
    except ImportError:
        pass


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


def _file_mark(path):
    """(size, CRC-32 trailer) of the file at path, or None: whether the policy loaded from it
    can be loaded again as it was."""
    try:
        import os

        size = os.stat(path)[6]
        with open(path, "rb") as f:
            f.seek(max(0, size - 4))
            return size, f.read(4)
    except (OSError, ValueError):
        return None


def _load(load, path):
    """load(path), its OSError naming the file (the board's own says only ENOENT)."""
    try:
        return load(path)
    except OSError as e:
        code = e.args[0] if e.args and isinstance(e.args[0], int) else None
        if code == 2:
            raise OSError("no such file on the board: %s" % path)
        raise OSError("cannot read %s: %s" % (path, e))


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
        self.policy_mark = None
        self.obs = None
        self.controller = None  # a policy that observes its pending actions: perturb.PendingActions over it
        self.last_rollout = None  # the last ROLLOUT's (task, seed, first, rng state then, next episode, env)
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
                policy = _load(load, path)
            except MemoryError:
                old = self.policy_path
                if self.policy is None or _file_mark(old) != self.policy_mark:
                    raise  # no old policy, or its file is gone or changed: it cannot make room
                # no room for two policies: free the old one and try again; if that fails too,
                # reload the old one from its file (unchanged: it fitted before) and report
                self.policy = self.obs = self.controller = None
                try:
                    policy = _load(load, path)
                except Exception:
                    self._install(load(old), old)
                    raise
        except MemoryError:
            raise _out_of_memory("loading the policy %s" % path, path)
        self._install(policy, path)
        return P.pack_loaded(len(self.obs), policy.act_dim, policy.describe())

    def _install(self, policy, path):
        from .compat import zeros

        self.policy_mark = _file_mark(path)
        self.policy = policy
        self.policy_path = path
        self.controller = None
        n_in = policy.obs_dim
        if getattr(policy, "pending", 0):
            # INFER takes the task's observation; the board adds the commands it sent itself
            from .perturb import PendingActions

            self.controller = PendingActions(policy)
            n_in = self.controller.n_obs
        self.obs = zeros(n_in)

    def infer(self, seq, payload):
        policy = self.policy
        if policy is None:
            return self.error(seq, P.E_NO_POLICY, "no policy loaded: send LOAD with its path first")
        n_in = len(self.obs)
        if len(payload) != 4 * n_in:
            return self.error(seq, P.E_PAYLOAD, "observation of %d bytes, the policy takes %d floats (%d bytes)" % (len(payload), n_in, 4 * n_in))
        obs = self.obs
        values = P.unpack_observation(payload, n_in)
        for i in range(n_in):
            obs[i] = values[i]
        t0 = ticks_us()
        try:
            action = (self.controller or policy)(obs)
        except ValueError as e:  # a NaN or infinite observation, refused by name
            return self.error(seq, P.E_PAYLOAD, str(e))
        dt = ticks_diff(ticks_us(), t0)
        self.send(P.INFER | P.REPLY, seq, P.pack_action(dt, action))

    def rollout(self, seq, payload):
        """The policy in closed loop against the board's own copy of a task (microrl.tasks.NAME):
        steps, policy us, total us, then (return, success, final error, steps) per episode."""
        if self.policy is None:
            return self.error(seq, P.E_NO_POLICY, "no policy loaded: send LOAD with its path first")
        try:
            seed, episodes, first, name = P.unpack_rollout(payload)
        except ValueError as e:
            hint = ": a host speaking protocol 1 sent it, update microrl on the host" if len(payload) in (6, 7) else ""
            return self.error(seq, P.E_PAYLOAD, str(e) + hint)
        if not 1 <= episodes <= P.ROLLOUT_EPISODES:
            return self.error(seq, P.E_PAYLOAD, "episodes must be 1..%d per ROLLOUT, got %d" % (P.ROLLOUT_EPISODES, episodes))
        if not P.is_task_name(name):
            return self.error(seq, P.E_PAYLOAD, "%r is not a task's name (letters, digits and _)" % name)
        _collect()  # a task's module compiled on the board (.py) needs room in one piece
        try:
            task = __import__("microrl.tasks." + name, None, None, (name,))
        except ImportError as e:
            return self.error(seq, P.E_PAYLOAD, "task %s does not import on the board (%s): deploy it with microrl deploy --task" % (name, e))
        from .task import task_obs_dim

        policy = self.policy
        n_obs = task_obs_dim(policy)
        if n_obs != task.OBS_DIM or policy.act_dim != task.ACT_DIM:
            from .refusals import count

            return self.error(seq, P.E_PAYLOAD, "task %s has %s and %s, the policy takes %d and gives %d"
                              % (name, count(task.OBS_DIM, "observation"), count(task.ACT_DIM, "action"), n_obs, policy.act_dim))
        env = self._episodes(task, name, seed, first)
        if env is None:
            run = self.last_rollout
            return self.error(seq, P.E_PAYLOAD, "episode %d of task %s from seed %d: the board's run %s; start at episode 0"
                              % (first, name, seed, "of it is at episode %d" % run[4] if run and run[:2] == (name, seed) else "is another one"))
        from .evaluate import rollouts

        start = env.rng.getstate()
        timed = _Timed(policy)
        t0 = ticks_us()
        rows = rollouts(timed, env, episodes)
        total = ticks_diff(ticks_us(), t0)
        self.last_rollout = (name, seed, first, start, first + episodes, env)
        self.send(P.ROLLOUT | P.REPLY, seq, P.pack_rows(timed.calls, timed.us, total, rows))

    def _episodes(self, task, name, seed, first):
        """The environment whose next episodes are episodes first.. of the run of task from
        seed: a new one at first 0; the last run's, carried on or (the same request again, its
        reply lost) wound back to where that request started; None for any other first."""
        if first == 0:
            from .rng import Rng
            from .task import policy_env

            # a policy that observes its pending actions: under its own delay, observing the
            # commands this board sent in simulation
            return policy_env(task, self.policy, rng=Rng(seed), evaluation=True)
        run = self.last_rollout
        if run is None or run[0] != name or run[1] != seed:
            return None
        env = run[5]
        if first == run[4]:
            return env
        if first == run[2]:
            env.rng.setstate(run[3])
            return env
        return None

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
        """Serve until EXIT; KeyboardInterrupt on a break (a Ctrl-C after quiet: BREAK_BYTES)."""
        dec = self.decoder
        self.send(P.HELLO, 0, self.info())
        after_quiet = 0  # bytes left of the window after silence in which a Ctrl-C is a break
        while self.running:
            framing = dec.in_frame()
            b = self._read_byte(FRAME_TIMEOUT_MS if framing else IDLE_MS)
            if b < 0:
                if not framing:
                    after_quiet = BREAK_BYTES
                # silence: a partly held frame is given up, and what followed its start is
                # scanned again (a good frame after a cut one is answered now)
                r = dec.expire()
                if r is None and dec.skipped:
                    self.error(0, P.E_GARBAGE, "skipped %d bytes outside frames" % dec.take_skipped())
            else:
                if after_quiet:
                    if b == CTRL_C and not framing:
                        raise KeyboardInterrupt
                    after_quiet -= 1
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
    contain 0x03), except after the line was quiet for IDLE_MS: then it raises
    KeyboardInterrupt, as Ctrl-C does in any program (a host that died is no reason to reset)."""
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
