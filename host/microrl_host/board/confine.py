"""Keeps the virtual board inside its folder: the kernel, not MicroPython, holds it there.

The virtual board is the MicroPython unix port, a program of the host: its `open`, `os.listdir`,
`os.system`, `vfs.VfsPosix` and `uctypes` reach whatever the host user can. Before the port
starts (the wheel runs it inside a CPython process: this file is that process's launcher), the
process is confined by the first way this machine allows:

- "chroot": as root, the folder becomes the process's `/` (chroot), in a network namespace of its
  own (no network), with no_new_privs and every capability dropped but the five that reach files
  inside the folder. Every path (absolute, `..`, a symlink pointing out) resolves inside the
  folder; no host program exists in it to run.
- "userns": the same for any user, inside a user namespace (where the kernel allows them).
- "landlock": Linux's Landlock (5.13+, any user): the process may read and write files beneath
  the folder and nothing else, and execute nothing (its TCP is refused on kernels with Landlock
  ABI 4, signals to outside processes from ABI 6); capabilities as under "chroot". The board's `/` is the folder by a VfsPosix
  mount (support/boot.py); a path leading out fails with EACCES.
- "none": a machine with none of these. The board's `/` is still the folder (the same mount), but
  code on the board can reach the host (`..`, symlinks, os.system): say so to the user.

Run as a script with CPython's -I (nothing of the board's folder or the environment on its path):
    python -I confine.py FOLDER MODE ARGS...   run the unix port with ARGS, confined by MODE
    python -I confine.py --probe FOLDER        print the first MODE that works here (then exits)
Only the standard library: it runs before any of microrl is importable."""
import ctypes
import os
import sys

MODES = ("chroot", "userns", "landlock", "none")
EXIT_CONFINE_FAILED = 110  # the launcher could not confine as asked: the board does not start

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
# kept: reading and writing the folder's files whoever owns them (CHOWN, DAC_OVERRIDE,
# DAC_READ_SEARCH, FOWNER, FSETID); gone: chroot (a way out), mknod, mount, ptrace, kill, ...
KEPT_CAPS = (0, 1, 2, 3, 4)
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


class ConfineError(OSError):
    pass


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _check(result, what):
    if result == -1:
        e = ctypes.get_errno()
        raise ConfineError(e, "%s: %s" % (what, os.strerror(e)))
    return result


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def drop_privileges(libc):
    """no_new_privs, and every capability but KEPT_CAPS gone from the bounding, effective,
    permitted, inheritable and ambient sets (a program run later cannot get them back)."""
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    for cap in range(64):
        if cap not in KEPT_CAPS and libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == -1 and ctypes.get_errno() == 22:
            break  # EINVAL: past the last capability this kernel knows
    header = (ctypes.c_uint32 * 2)(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # (effective, permitted, inheritable) for capabilities 0-31, then 32-63
    _check(libc.capget(header, data), "capget")
    kept = sum(1 << c for c in KEPT_CAPS) & data[1]  # of those it has (none for a user)
    data[0], data[1], data[2], data[3], data[4], data[5] = kept, kept, 0, 0, 0, 0
    _check(libc.capset(header, data), "capset")


def chroot(folder, user_namespace=False):
    """The folder becomes / (in a user namespace for a user other than root), no network."""
    libc = _libc()
    folder = os.path.realpath(folder)
    uid, gid = os.getuid(), os.getgid()
    if user_namespace:
        _check(libc.unshare(CLONE_NEWUSER | CLONE_NEWNET), "user namespace")
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", "0 %d 1" % uid)
        _write("/proc/self/gid_map", "0 %d 1" % gid)
    else:
        _check(libc.unshare(CLONE_NEWNET), "network namespace")
    os.chroot(folder)
    os.chdir("/")
    drop_privileges(libc)


def landlock_abi():
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION))
    return abi if abi > 0 else 0


def landlock(folder):
    """Read and write beneath folder, nothing else; no execution; TCP and outside signals refused
    where the kernel's Landlock knows them."""
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    abi = landlock_abi()
    if abi < 1:
        raise ConfineError(38, "Landlock is not available on this kernel")
    handled = (1 << 13) - 1
    allowed = FOLDER_RIGHTS
    if abi >= 2:
        handled |= FS_REFER
        allowed |= FS_REFER  # rename between the folder's own subfolders
    if abi >= 3:
        handled |= FS_TRUNCATE
        allowed |= FS_TRUNCATE
    if abi >= 5:
        handled |= 1 << 15  # IOCTL_DEV: none on new files (the terminal was opened before)
    attr = (ctypes.c_uint64 * 3)(handled, 3 if abi >= 4 else 0, 3 if abi >= 6 else 0)  # fs, net (TCP bind/connect), scoped
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    ruleset = _check(libc.syscall(SYS_LANDLOCK_CREATE_RULESET, attr, ctypes.c_size_t(size), ctypes.c_uint32(0)), "landlock ruleset")
    fd = os.open(folder, os.O_PATH | os.O_DIRECTORY)
    try:
        rule = (ctypes.c_uint8 * 12).from_buffer_copy(allowed.to_bytes(8, sys.byteorder) + fd.to_bytes(4, sys.byteorder, signed=True))
        _check(libc.syscall(SYS_LANDLOCK_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(LANDLOCK_RULE_PATH_BENEATH), rule, ctypes.c_uint32(0)), "landlock rule")
    finally:
        os.close(fd)
    drop_privileges(libc)  # no_new_privs (Landlock wants it), and root's other powers
    _check(libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)), "landlock")
    os.close(ruleset)


def confine(folder, mode):
    if mode == "chroot":
        chroot(folder)
    elif mode == "userns":
        chroot(folder, user_namespace=True)
    elif mode == "landlock":
        landlock(folder)
    elif mode != "none":
        raise ConfineError(22, "unknown confinement %r" % mode)


def probe(folder):
    """The first of MODES that works here, tried for real in this (throwaway) process."""
    order = ("chroot",) if os.geteuid() == 0 else ()
    for mode in order + ("userns", "landlock"):
        pid = os.fork()
        if pid == 0:  # each try in a child: a half-done one must not spoil the next
            try:
                confine(folder, mode)
                os._exit(0)
            except BaseException:
                os._exit(1)
        _, status = os.waitpid(pid, 0)
        if status == 0:
            return mode
    return "none"


def main(argv):
    if argv[:1] == ["--probe"]:
        sys.stdout.write(probe(argv[1]) + "\n")
        return 0
    folder, mode, args = argv[0], argv[1], argv[2:]
    import signal

    # CPython's own SIGINT handler would turn a Ctrl-C at the prompt into a delayed
    # KeyboardInterrupt that kills the process: the unix port starts with SIGINT at its default
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    from micropython_run import run_main  # loaded before the process loses sight of it

    os.chdir(folder)
    try:
        confine(folder, mode)
    except OSError as e:
        sys.stderr.write("the virtual board could not be confined to %s (%s): %s\r\n" % (folder, mode, e))
        return EXIT_CONFINE_FAILED
    return run_main(["micropython"] + args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
