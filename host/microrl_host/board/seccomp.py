"""A seccomp filter for the virtual board: the system calls that lead out of a sandbox refused.

On the unix port, board code can run any machine instruction (viper code sits in writable and
executable memory), so what the process may ask of the kernel is what holds it. This builds the
classic-BPF program the kernel runs on each system call (x86-64 only: the wheel's port is):
any other architecture's calls (int 0x80, x32) kill the process; the calls in DENIED fail with
EPERM; clone only makes threads (no fork, no namespaces); clone3 says ENOSYS (its flags are out
of the filter's reach, and the C library then falls back to clone); with own_pid, signals go to
this process only; with no_exec, nothing is executed. Only the standard library (confine.py
imports it before microrl is importable)."""
import ctypes
import errno
import struct

AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
RET_KILL_PROCESS, RET_ALLOW, RET_ERRNO = 0x80000000, 0x7FFF0000, 0x00050000
LD_W_ABS, JEQ_K, JGE_K, JSET_K, RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
# struct seccomp_data: nr (u32), arch (u32), instruction pointer (u64), args (6 x u64, little endian)
NR, ARCH, ARG0, ARG1 = 0, 4, 16, 24

# x86-64 numbers of the calls that reach outside a process's own files, memory and threads
DENIED = {
    "socket": 41, "socketpair": 53, "fork": 57, "vfork": 58, "ptrace": 101,
    "syslog": 103, "chmod": 90, "fchmod": 91, "chown": 92, "fchown": 93, "lchown": 94,
    "link": 86, "symlink": 88, "mknod": 133, "uselib": 134, "personality": 135, "vhangup": 153,
    "modify_ldt": 154, "pivot_root": 155, "adjtimex": 159, "chroot": 161, "acct": 163,
    "settimeofday": 164, "mount": 165, "umount2": 166, "swapon": 167, "swapoff": 168,
    "reboot": 169, "sethostname": 170, "setdomainname": 171, "iopl": 172, "ioperm": 173,
    "init_module": 175, "delete_module": 176, "quotactl": 179, "lookup_dcookie": 212,
    "clock_settime": 227, "mq_open": 240, "mq_unlink": 241, "kexec_load": 246, "add_key": 248,
    "request_key": 249, "keyctl": 250, "migrate_pages": 256, "mknodat": 259, "fchownat": 260,
    "linkat": 265, "symlinkat": 266, "fchmodat": 268, "unshare": 272, "move_pages": 279,
    "perf_event_open": 298, "fanotify_init": 300, "name_to_handle_at": 303,
    "open_by_handle_at": 304, "clock_adjtime": 305, "setns": 308, "process_vm_readv": 310,
    "process_vm_writev": 311, "kcmp": 312, "finit_module": 313, "kexec_file_load": 320,
    "bpf": 321, "userfaultfd": 323, "pidfd_send_signal": 424, "io_uring_setup": 425,
    "io_uring_enter": 426, "io_uring_register": 427, "open_tree": 428, "move_mount": 429,
    "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "pidfd_open": 434,
    "pidfd_getfd": 438, "mount_setattr": 442, "quotactl_fd": 443, "fchmodat2": 452,
    # System V IPC: another user's (or the host's) shared memory, semaphores and queues
    "shmget": 29, "shmat": 30, "shmctl": 31, "semget": 64, "semop": 65, "semctl": 66,
    "msgget": 68, "msgsnd": 69, "msgrcv": 70, "msgctl": 71, "semtimedop": 220,
}
EXEC = (59, 322)  # execve, execveat
CLONE, CLONE3, IOCTL = 56, 435, 16
CLONE_THREAD = 0x00010000
CLONE_NAMESPACES = 0x7E020000 | 0x00000080  # NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET; NEWTIME
SIGNALS = (62, 200, 234, 129, 297)  # kill, tkill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo: target pid first
TERMINAL_INJECTION = (0x5412, 0x541C)  # TIOCSTI (type into a terminal), TIOCLINUX


def program(own_pid=None, no_exec=False, allowed=()):
    """The filter as bytes (struct sock_filter[]), the form bwrap's --seccomp and the kernel take;
    allowed: names in DENIED let through (bwrap's launcher chroots before it adds the full filter)."""
    code = []  # (op, jump-if-true label or offset, jump-if-false, k)

    def op(o, k=0, jt=0, jf=0):
        code.append([o, jt, jf, k])

    op(LD_W_ABS, ARCH)
    op(JEQ_K, AUDIT_ARCH_X86_64, jt=1)
    op(RET_K, RET_KILL_PROCESS)
    op(LD_W_ABS, NR)
    op(JGE_K, X32_SYSCALL_BIT, jt="kill")
    denied = {nr for name, nr in DENIED.items() if name not in allowed}
    for nr in sorted(denied | (set(EXEC) if no_exec else set())):
        op(JEQ_K, nr, jt="deny")
    op(JEQ_K, CLONE3, jt="nosys")
    op(JEQ_K, CLONE, jt="clone")
    op(JEQ_K, IOCTL, jt="ioctl")
    if own_pid is not None:
        for nr in SIGNALS:
            op(JEQ_K, nr, jt="signal")
    op(RET_K, RET_ALLOW)
    labels = {}
    labels["clone"] = len(code)
    op(LD_W_ABS, ARG0)  # clone's flags (low word: every CLONE_ flag is there)
    op(JSET_K, CLONE_THREAD, jf="deny")  # a new process: refused
    op(JSET_K, CLONE_NAMESPACES, jt="deny")
    op(RET_K, RET_ALLOW)
    labels["ioctl"] = len(code)
    op(LD_W_ABS, ARG1)
    for request in TERMINAL_INJECTION:
        op(JEQ_K, request, jt="deny")
    op(RET_K, RET_ALLOW)
    if own_pid is not None:
        labels["signal"] = len(code)
        op(LD_W_ABS, ARG0)  # the target: this process (its main thread) and no other
        op(JEQ_K, own_pid, jf="deny")
        op(RET_K, RET_ALLOW)
    labels["deny"] = len(code)
    op(RET_K, RET_ERRNO | errno.EPERM)
    labels["nosys"] = len(code)
    op(RET_K, RET_ERRNO | errno.ENOSYS)
    labels["kill"] = len(code)
    op(RET_K, RET_KILL_PROCESS)
    out = b""
    for i, (o, jt, jf, k) in enumerate(code):
        jt, jf = (labels[j] - i - 1 if isinstance(j, str) else j for j in (jt, jf))
        assert 0 <= jt < 256 and 0 <= jf < 256, "a jump too far for classic BPF"
        out += struct.pack("<HBBI", o, jt, jf, k)
    return out


class _Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install(prog, libc):
    """Install prog on this process (no_new_privs must be set): from here on, and for good."""
    buf = ctypes.create_string_buffer(prog, len(prog))
    fprog = _Fprog(len(prog) // 8, ctypes.addressof(buf))
    PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        e = ctypes.get_errno()
        raise OSError(e, "seccomp: " + __import__("os").strerror(e))
