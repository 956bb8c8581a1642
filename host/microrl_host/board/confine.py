"""Keeps the virtual board inside its folder: the kernel, not MicroPython, holds it there.

The virtual board is the MicroPython unix port, a program of the host, and code on it can run any
machine instruction (viper code sits in writable and executable memory, `uctypes` rewrites it):
what holds it is what the kernel lets the process do. Before the port starts (the wheel runs it
inside a CPython process: this file is that process's launcher), the process is confined by one
of MODES (docs/virtual-board.md says what holds in each):

- "bwrap": Debian's bubblewrap (the sandbox Flatpak uses) starts it in user, mount, pid, network,
  ipc, uts and cgroup namespaces of its own, as uid 65534 with no capabilities, in a new session,
  killed with its parent. bwrap's filesystem holds, read-only, the Python and libraries the port
  is made of, and the folder (read-write; with a flash image, that one file alone) at /board;
  the launcher inside loads the port, then makes /board its root (chroot, the one capability it
  is given for that, in its own user namespace) before it drops every capability: the folder is
  the board's whole filesystem, `/` to the kernel as to MicroPython.
- "landlock": Linux's Landlock alone (any user, no namespaces): files beneath the folder only
  (with a flash image, that one file); TCP (ABI 4), abstract unix sockets and signals to other
  processes (ABI 6) refused; every capability dropped. Names and metadata (stat) of host files
  stay visible: Landlock does not govern them.
- "none": nothing (only with the user's --unconfined): code on the board reaches what the user can.

In both confined modes the process then also gets, before the port runs: Landlock beneath the
board's folder, no capabilities and no_new_privs, the seccomp filter of
seccomp.py (no new processes, sockets, chmod/chown, links, mounts, namespaces, ptrace,
open_by_handle_at, io_uring, execve, signals but to itself, ...), and rlimits: no new processes,
no file larger than the flash (or MAX_FILE), a bounded address space, no core dumps.

Run as a script with CPython's -I (nothing of the board's folder or the environment on its path):
    python -I confine.py FOLDER MODE FLASH_BYTES ARGS...  run the unix port with ARGS, confined by MODE
Only the standard library: it runs before any of microrl is importable."""
import ctypes
import importlib.util
import os
import resource
import shutil
import signal
import sys

MODES = ("bwrap", "landlock", "none")
EXIT_CONFINE_FAILED = 110  # the launcher could not confine as asked: the board does not start
HERE = os.path.dirname(os.path.abspath(__file__))
SANDBOX_UID = 65534  # nobody
MAX_FILE = 64 << 20  # the largest file the board may write without --flash (the largest --flash)
ELF_INTERPRETER = "/lib64/ld-linux-x86-64.so.2"  # x86-64's (the only one seccomp.py knows): programs name it
INSIDE = "/board"  # where bwrap mounts the folder; the launcher then makes it its root (chroot)
ADDRESS_SPACE = 2 << 30  # the heap (--heap: at most 1 GB), CPython, the port's own code and stacks

PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
_LINUX_CAPABILITY_VERSION_3 = 0x20080522

SYS_LANDLOCK_CREATE_RULESET = 444  # the same number on every Linux architecture
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1
# filesystem rights (ABI 1: bits 0-12; 2: REFER; 3: TRUNCATE; 5: IOCTL_DEV)
FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
FS_REMOVE_DIR, FS_REMOVE_FILE, FS_MAKE_DIR, FS_MAKE_REG = 1 << 4, 1 << 5, 1 << 7, 1 << 8
FS_REFER, FS_TRUNCATE = 1 << 13, 1 << 14
FOLDER_RIGHTS = FS_WRITE_FILE | FS_READ_FILE | FS_READ_DIR | FS_REMOVE_DIR | FS_REMOVE_FILE | FS_MAKE_DIR | FS_MAKE_REG
IMAGE_RIGHTS = FS_WRITE_FILE | FS_READ_FILE  # the flash image: read and write in place, never truncated
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1, 2


class ConfineError(OSError):
    pass


def _load_seccomp():
    spec = importlib.util.spec_from_file_location("microrl_board_seccomp", os.path.join(HERE, "seccomp.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _check(result, what):
    if result == -1:
        e = ctypes.get_errno()
        raise ConfineError(e, "%s: %s" % (what, os.strerror(e)))
    return result


def drop_privileges(libc):
    """no_new_privs, and every capability gone from the bounding, effective, permitted,
    inheritable and ambient sets (as root too: root without capabilities reads no other
    user's files and opens no file by handle)."""
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == -1 and ctypes.get_errno() == 22:
            break  # EINVAL: past the last capability this kernel knows
    header = (ctypes.c_uint32 * 2)(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()
    _check(libc.capset(header, data), "capset")


def landlock_abi():
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION))
    return abi if abi > 0 else 0


def landlock(path, rights, libc):
    """Files beneath path (a folder, or one file) with rights, nothing else anywhere; nothing
    executed; TCP, abstract unix sockets and outside signals refused where Landlock knows them."""
    libc.syscall.restype = ctypes.c_long
    abi = landlock_abi()
    if abi < 1:
        raise ConfineError(38, "Landlock is not available on this kernel")
    handled = (1 << 13) - 1
    if abi >= 2:
        handled |= FS_REFER
        rights |= FS_REFER if rights & FS_MAKE_REG else 0  # rename between the folder's own subfolders
    if abi >= 3:
        handled |= FS_TRUNCATE
        rights |= FS_TRUNCATE if rights & FS_MAKE_REG else 0
    if abi >= 5:
        handled |= 1 << 15  # IOCTL_DEV: none on new files (the terminal was opened before)
    attr = (ctypes.c_uint64 * 3)(handled, 3 if abi >= 4 else 0, SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    ruleset = _check(libc.syscall(SYS_LANDLOCK_CREATE_RULESET, attr, ctypes.c_size_t(size), ctypes.c_uint32(0)), "landlock ruleset")
    fd = os.open(path, os.O_PATH)
    try:
        rule = (ctypes.c_uint8 * 12).from_buffer_copy(rights.to_bytes(8, sys.byteorder) + fd.to_bytes(4, sys.byteorder, signed=True))
        _check(libc.syscall(SYS_LANDLOCK_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(LANDLOCK_RULE_PATH_BENEATH), rule, ctypes.c_uint32(0)), "landlock rule")
    finally:
        os.close(fd)
    _check(libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)), "landlock")
    os.close(ruleset)


def set_limits(flash_bytes):
    """No new process (nor thread), no file beyond the flash's size, a bounded address space,
    no core dump. A write past the file size limit fails with EFBIG (SIGXFSZ ignored)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    biggest = flash_bytes or MAX_FILE
    for limit, value in ((resource.RLIMIT_NPROC, 0), (resource.RLIMIT_FSIZE, biggest), (resource.RLIMIT_CORE, 0),
                         (resource.RLIMIT_AS, ADDRESS_SPACE), (resource.RLIMIT_NOFILE, 64)):
        resource.setrlimit(limit, (value, value))


def confine_self(root, flash_bytes, seccomp=None):
    """This process, for good: Landlock beneath root (or its flash image alone), no
    capabilities, rlimits, the seccomp filter (signals to this process only, no execve)."""
    libc = _libc()
    seccomp = seccomp or _load_seccomp()  # loaded while the file can still be read
    drop_privileges(libc)
    if flash_bytes:
        landlock(os.path.join(root, "flash.img"), IMAGE_RIGHTS, libc)
    else:
        landlock(root, FOLDER_RIGHTS, libc)
    set_limits(flash_bytes)
    seccomp.install(seccomp.program(own_pid=os.getpid(), no_exec=True), libc)


def _mapped_files():
    """The files this process has mapped (the Python, libraries and extension modules the port
    needs), and the links beside them by which the loader finds them (libffi.so.8 ->
    libffi.so.8.1.2), as a sandbox made of them has to hold them."""
    found = set()
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) == 6 and parts[5].startswith("/") and os.path.isfile(parts[5].strip()):
                found.add(parts[5].strip())
    for path in list(found):  # libffi.so.8.1.2: libffi.so.8.1, libffi.so.8 (its soname) and libffi.so, where they link to it
        link = path
        while link.rsplit(".", 1)[-1].isdigit():
            link = link.rsplit(".", 1)[0]
            if os.path.islink(link) and os.path.realpath(link) == path:
                found.add(link)
    return sorted(found)


def _reach(path, cmd, made):
    """Add to cmd what makes path in the sandbox what it is on the host: each symbolic link on
    the way (/lib -> usr/lib, say) as a link, then the file or folder itself, read-only."""
    parts = path.strip("/").split("/")
    at = ""
    for i, part in enumerate(parts):
        at += "/" + part
        if os.path.islink(at):
            target = os.readlink(at)
            if at not in made:
                made.add(at)
                cmd += ["--symlink", target, at]
            rest = os.path.join(os.path.dirname(at), target, *parts[i + 1 :])
            return _reach(os.path.normpath(rest), cmd, made)
    if path not in made:
        made.add(path)
        cmd += ["--ro-bind", path, path]


def bwrap_command(folder, flash_bytes, args, seccomp_fd):
    """The bwrap command line that runs this file again inside the sandbox (--inside)."""
    import micropython_run  # mapped now: its libraries show in /proc/self/maps

    bwrap = shutil.which("bwrap", path="/usr/bin:/bin:/usr/local/bin")
    if bwrap is None:
        raise ConfineError(2, "bubblewrap (bwrap) is not installed")
    stdlib = os.path.dirname(os.__file__)
    module = os.path.realpath(micropython_run.__file__)
    cmd = [bwrap, "--unshare-all", "--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--hostname", "board",
           "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--cap-add", "CAP_SYS_CHROOT", "--clearenv"]
    for name in ("MICROPYPATH", "LD_LIBRARY_PATH"):
        if name in os.environ:
            cmd += ["--setenv", name, os.environ[name]]
    python = os.path.realpath(sys.executable)
    binds = _mapped_files() + [python, ELF_INTERPRETER, stdlib, os.path.join(HERE, "confine.py"), os.path.join(HERE, "seccomp.py")]
    made = set()
    for path in binds:
        if os.path.exists(path):
            _reach(path, cmd, made)
    for sub in ("site-packages", "dist-packages"):  # the stdlib's code only, not every installed package
        if os.path.isdir(os.path.join(stdlib, sub)):
            cmd += ["--tmpfs", os.path.join(stdlib, sub)]
    cmd += ["--ro-bind", module, module]
    if flash_bytes:
        cmd += ["--dir", INSIDE, "--bind", os.path.join(folder, "flash.img"), INSIDE + "/flash.img"]
    else:
        cmd += ["--bind", folder, INSIDE]
    cmd += ["--remount-ro", "/", "--chdir", INSIDE, "--seccomp", str(seccomp_fd), "--",
            python, "-I", "-S", os.path.join(HERE, "confine.py"), "--inside", os.path.dirname(module), str(flash_bytes)] + args
    return cmd


def run_bwrap(folder, flash_bytes, args):
    """Replace this process with bwrap (its outer process keeps this pid)."""
    seccomp = _load_seccomp()
    read, write = os.pipe()
    prog = seccomp.program(allowed=("chroot",))  # bwrap's own, as it starts the launcher inside; the launcher adds the rest
    os.write(write, prog)  # a few hundred bytes: the pipe holds them
    os.close(write)
    os.set_inheritable(read, True)
    cmd = bwrap_command(folder, flash_bytes, args, read)
    os.execv(cmd[0], cmd)


def inside(module_dir, flash_bytes, args):
    """In the sandbox: the port loaded, the folder made the root, then this process confined
    for good, then the port run."""
    sys.path.insert(0, module_dir)
    from micropython_run import run_main

    seccomp = _load_seccomp()  # before the chroot hides it
    os.chroot(INSIDE)
    os.chdir("/")
    confine_self("/", flash_bytes, seccomp)
    return run_main(["micropython"] + args)


def main(argv):
    # CPython's own SIGINT handler would turn a Ctrl-C at the prompt into a delayed
    # KeyboardInterrupt that kills the process: the unix port starts with SIGINT at its default
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        if argv[:1] == ["--inside"]:
            return inside(argv[1], int(argv[2]), argv[3:])
        folder, mode, flash_bytes, args = argv[0], argv[1], int(argv[2]), argv[3:]
        if mode == "bwrap":
            run_bwrap(folder, flash_bytes, args)  # returns only if it could not start bwrap
        from micropython_run import run_main  # loaded before the process loses sight of it

        os.chdir(folder)
        if mode == "landlock":
            confine_self(folder, flash_bytes)
        elif mode != "none":
            raise ConfineError(22, "unknown confinement %r" % mode)
    except OSError as e:
        sys.stderr.write("the virtual board could not be confined to its folder: %s\r\n" % e)
        return EXIT_CONFINE_FAILED
    return run_main(["micropython"] + args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
