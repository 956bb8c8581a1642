"""Issue 30 (2): the virtual board stays in its folder. Every way out the issue lists, and the
others the unix port has, tried from the board's REPL, through mpremote and over the serial
protocol, under every confinement this machine allows (confine.py): the host's files outside
the folder are neither read nor written, no host command runs, no host environment is seen.
Machine code's ways out: tests/test_board_escape.py."""
import os
import subprocess
import sys

import pytest

from boardkit import CONFINEMENTS as MODES, cli, make_policy, mpremote, needs_board
from helpers import ROOT, repo_env

pytestmark = needs_board


SECRET = "microrl-secret-6d1f"


@pytest.fixture(scope="module", params=MODES or [pytest.param(None, marks=pytest.mark.skip(reason="this machine allows no confinement (no bubblewrap with user namespaces, no Landlock)"))])
def confined(request, tmp_path_factory):
    """A virtual board with microrl deployed, confined by one mode, a folder of the host's beside
    its own with a secret, a policy and a module in it, and symlinks from the board's folder to it."""
    from microrl_host.board.deploy import deploy
    from microrl_host.board.virtual import VirtualBoard

    base = tmp_path_factory.mktemp("confine-" + request.param)
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    (outside / "evil.py").write_text("X = %r\n" % SECRET)
    make_policy(outside / "policy.mrlp")
    folder = base / "fs"
    folder.mkdir()
    (folder / ".microrl-board").touch()  # a board's folder, that the host put links in
    os.symlink(str(outside), str(folder / "outlink"))
    os.symlink(str(outside / "secret.txt"), str(folder / "secretlink"))
    os.symlink("../outside", str(folder / "escape"))
    os.symlink(str(outside / "policy.mrlp"), str(folder / "policylink.mrlp"))
    os.environ["MICRORL_TEST_SECRET"] = SECRET  # the host's environment: the board must not see it
    try:
        with VirtualBoard(str(folder), confine=request.param) as b:
            assert b.confinement == request.param
            b.outside = str(outside)
            deploy(b.port, str(outside / "policy.mrlp"))
            yield b
    finally:
        os.environ.pop("MICRORL_TEST_SECRET", None)


def _outside_files(board):
    return sorted(os.listdir(board.outside)), sorted(os.listdir(os.path.dirname(board.folder)))


ESCAPES = r"""
import os, sys, io, vfs
OUT = %(out)r
SECRET_FILE = OUT + '/secret.txt'
def attempt(name, f):
    try:
        print(name, '->', repr(f()))
    except Exception as e:
        print(name, 'refused', repr(e))
def read(p):
    with open(p) as f:
        return f.read()
def write(p):
    with open(p, 'w') as f:
        f.write('written from the board')
for p in (SECRET_FILE, '/etc/hostname', '/etc/passwd', '../outside/secret.txt', '/../outside/secret.txt',
          '/../../../../../../..' + SECRET_FILE, 'outlink/secret.txt', '/outlink/secret.txt', 'secretlink',
          'escape/secret.txt', '/proc/self/environ', '/dev/mem'):
    attempt('read ' + p, lambda: read(p))
attempt('io.open', lambda: io.open(SECRET_FILE).read())
attempt('listdir /', lambda: sorted(os.listdir('/')))
attempt('listdir /..', lambda: os.listdir('/..'))
attempt('listdir outlink', lambda: os.listdir('outlink'))
attempt('listdir OUT', lambda: os.listdir(OUT))
def chdir_up():
    os.chdir('/..')
    os.chdir('..')
    try:
        return (os.getcwd(), sorted(os.listdir('.')))
    finally:
        os.chdir('/')
attempt('chdir ..', chdir_up)
attempt('VfsPosix(OUT)', lambda: vfs.VfsPosix(OUT).open('/secret.txt', 'r').read())
attempt('VfsPosix(/)', lambda: vfs.VfsPosix('/').open(SECRET_FILE, 'r').read())
attempt('os.VfsPosix', lambda: [e[0] for e in os.VfsPosix('/').ilistdir('/')])
def mount_out():
    vfs.mount(vfs.VfsPosix(OUT), '/mnt')
    try:
        return read('/mnt/secret.txt')
    finally:
        vfs.umount('/mnt')
attempt('mount OUT', mount_out)
def import_out():
    sys.path.insert(0, OUT)
    try:
        import evil
        return evil.X
    finally:
        sys.path.pop(0)
attempt('import from OUT', import_out)
for p in (OUT + '/w1', '../outside/w2', '/../outside/w3', 'outlink/w4', 'escape/w5', '/../w6'):
    attempt('write ' + p, lambda: write(p))
attempt('VfsPosix(OUT) write', lambda: vfs.VfsPosix(OUT).open('/w7', 'w').write('x'))
attempt('mkdir OUT', lambda: os.mkdir(OUT + '/d1'))
attempt('system', lambda: os.system('echo from-the-board > ' + OUT + '/w8'))
import uos
attempt('uos.system', lambda: uos.system('touch ' + OUT + '/w9'))
attempt('getenv', lambda: [os.getenv(k) for k in ('MICRORL_TEST_SECRET', 'HOME', 'PATH', 'USER')])
print('escapes tried')
"""


def test_the_board_repl_cannot_leave_its_folder(confined):
    before = _outside_files(confined)
    own = sorted(os.listdir(confined.folder))
    r = mpremote(confined.port, "exec", ESCAPES % {"out": confined.outside}, timeout=120)
    assert "escapes tried" in r.stdout, r.stdout + r.stderr
    assert SECRET not in r.stdout, r.stdout  # nothing outside was read, the environment unseen
    listing = [line for line in r.stdout.splitlines() if line.startswith("listdir / ->")][0]
    assert eval(listing.split("->", 1)[1]) == own, listing  # `/` is the folder
    assert "getenv -> [None, None, None, None]" in r.stdout
    assert _outside_files(confined) == before, r.stdout  # nothing written outside
    assert "system -> 0" not in r.stdout and "uos.system -> 0" not in r.stdout  # no shell ran


def test_mpremote_cannot_copy_outside_the_folder(confined, tmp_path):
    before = _outside_files(confined)
    local = tmp_path / "local.txt"
    local.write_text("from the host")
    for target in (":" + os.path.join(confined.outside, "m1"), ":../m2", ":../outside/m3", ":/../outside/m4", ":outlink/m5"):
        mpremote(confined.port, "fs", "cp", str(local), target)
    got = tmp_path / "got.txt"
    for source in (":" + os.path.join(confined.outside, "secret.txt"), ":../outside/secret.txt", ":secretlink"):
        mpremote(confined.port, "fs", "cp", source, str(got))
        assert not got.exists() or SECRET not in got.read_text()
    assert _outside_files(confined) == before


def test_the_serial_protocol_cannot_load_outside_the_folder(confined):
    from microrl_host.board.serial_link import DeviceError, SerialLink

    with SerialLink(confined.port) as link:
        for path in (os.path.join(confined.outside, "policy.mrlp"), "../outside/policy.mrlp", "/../outside/policy.mrlp",
                     "outlink/policy.mrlp", "policylink.mrlp", "../../../etc/hostname", "/etc/hostname"):
            with pytest.raises(DeviceError):
                link.load(path)
        n_in, n_out, _ = link.load("policy.mrlp")  # its own policy loads
        assert (n_in, n_out) == (3, 1)


def test_board_sim_says_how_it_is_confined(tmp_path):
    import signal

    from helpers import MICROPYTHON  # noqa: F401

    for unconfined, expected in ((False, "confined by"), (True, "NOT confined")):
        args = [sys.executable, "-m", "microrl_host.cli", "board", "sim", "--folder", str(tmp_path / "fs")]
        if unconfined:
            args += ["--unconfined"]
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=repo_env(), cwd=ROOT)
        try:
            port = proc.stdout.readline().strip()
            r = mpremote(port, "exec", "import os; print(sorted(os.listdir('/')))")
            assert r.stdout.strip() == repr(sorted(os.listdir(tmp_path / "fs"))), r.stderr
        finally:
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=20)
        assert expected in err, err
    help_text = cli("board", "sim", "--help").stdout
    assert "is the board's /" in " ".join(help_text.split())


# --- issue 39 (2, 3): no silent "none", no system or foreign folder, a flash that bounds the board

CLONE_NEWUSER = 0x10000000


def _kernel_refusing_every_mode():
    """Python code that installs a real seccomp filter refusing what both modes need (Landlock's
    system calls: ENOSYS, as on a kernel without it; new user namespaces: EPERM, as where they
    are not allowed), then runs the CLI with the rest of its arguments: a machine where no
    confinement works, made by the kernel."""
    return r"""
import ctypes, os, struct, sys
def op(code, k, jt=0, jf=0):
    return struct.pack('<HBBI', code, jt, jf, k)
LD, JEQ, JSET, RET = 0x20, 0x15, 0x45, 0x06
ALLOW, ERRNO = 0x7FFF0000, 0x00050000
prog = b''.join([
    op(LD, 0),                          # 0 nr
    op(JEQ, 444, 5), op(JEQ, 445, 4), op(JEQ, 446, 3),   # 1-3 landlock_* -> ENOSYS (7)
    op(JEQ, 272, 4), op(JEQ, 56, 5),    # 4 unshare -> EPERM (9); 5 clone -> 11
    op(RET, ALLOW),                     # 6
    op(RET, ERRNO | 38),                # 7 ENOSYS
    op(RET, ALLOW),                     # 8 (unused)
    op(RET, ERRNO | 1),                 # 9 EPERM
    op(RET, ALLOW),                     # 10 (unused)
    op(LD, 16),                         # 11 clone's flags
    op(JSET, %d, 0, 1),                 # 12 a new user namespace -> EPERM
    op(RET, ERRNO | 1),                 # 13
    op(RET, ALLOW),                     # 14
])
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(prog, len(prog))
class Fprog(ctypes.Structure):
    _fields_ = [('len', ctypes.c_ushort), ('filter', ctypes.c_void_p)]
assert libc.prctl(38, 1, 0, 0, 0) == 0
assert libc.prctl(22, 2, ctypes.byref(Fprog(len(prog) // 8, ctypes.addressof(buf))), 0, 0) == 0
sys.argv = ['microrl'] + sys.argv[1:]
from microrl_host.cli import main
sys.exit(main())
""" % CLONE_NEWUSER


def test_where_no_confinement_works_the_board_does_not_start_unless_unconfined(tmp_path):
    """Issue 39 (3): where the kernel refused every mode, `auto` ran the board unconfined with
    one warning (os.system ran as root). Now one line saying what to install and about
    --unconfined, exit 2, no board; with --unconfined typed, it starts and says it is not confined."""
    import signal

    code = _kernel_refusing_every_mode()
    r = subprocess.run([sys.executable, "-c", code, "board", "sim", "--folder", str(tmp_path / "fs")], capture_output=True, text=True,
                       env=repo_env(), cwd=ROOT, timeout=120)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
    assert "install bubblewrap" in r.stderr and "--unconfined" in r.stderr and r.stdout == "", r.stderr
    proc = subprocess.Popen([sys.executable, "-c", code, "board", "sim", "--folder", str(tmp_path / "fs"), "--unconfined"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=repo_env(), cwd=ROOT)
    try:
        port = proc.stdout.readline().strip()
        assert port.startswith("/dev/"), proc.stderr.read() if proc.poll() is not None else port
        said = proc.stderr.readline() + proc.stderr.readline()  # the board's line, then the warning
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)
    assert "confined by none" in said and "warning: the board is NOT confined" in said and "--unconfined" in said, said


@pytest.mark.parametrize("folder", ["/", "/tmp", "/dev", "/etc", "/usr", "/proc/self", "~", "/home"])
def test_a_system_folder_is_never_a_board_folder(folder):
    """Issue 39 (3): `board sim --folder /` (and /tmp, /dev) started and said "confined by
    chroot"; with / the board read /etc/hostname."""
    path = os.path.expanduser(folder)
    if not os.path.exists(path):
        pytest.skip("%s does not exist here" % path)
    before = sorted(os.listdir(path))
    r = cli("board", "sim", "--folder", path, timeout=60)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
    assert "system folder" in r.stderr or "not a board's folder" in r.stderr, r.stderr
    assert sorted(os.listdir(path)) == before or folder in ("/tmp", "/proc/self", "/dev")  # (others' files come and go there)
    assert ".microrl-board" not in os.listdir(path)


def test_a_folder_that_holds_other_files_is_refused_until_marked(tmp_path):
    """A folder of the user's (documents, a project) is not handed to board code: only a new or
    empty folder, or one a board has used (.microrl-board in it), is a board's."""
    import signal

    folder = tmp_path / "documents"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    r = cli("board", "sim", "--folder", folder, timeout=60)
    assert r.returncode == 2 and "not a board's folder" in r.stderr and ".microrl-board" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert os.listdir(folder) == ["notes.txt"]
    r = cli("demo", "--board-dir", folder, "--steps", "100", timeout=120)  # refused before it trains
    assert r.returncode == 2 and "not a board's folder" in r.stderr and not os.path.exists(ROOT + "/demo-policy.mrlp.tmp"), r.stderr
    (folder / ".microrl-board").touch()
    proc = subprocess.Popen([sys.executable, "-m", "microrl_host.cli", "board", "sim", "--folder", str(folder)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=repo_env(), cwd=ROOT)
    try:
        port = proc.stdout.readline().strip()
        r = mpremote(port, "exec", "print(open('notes.txt').read())")
        assert r.stdout.strip() == "mine", r.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)


def test_the_flash_bounds_what_the_board_writes(tmp_path):
    """Issue 39 (3): with --flash 64K, 1 MB was written beside /flash, and /flash.img was
    writable from the board (zeroed, the next start refused). Now the image is the board's whole
    filesystem: a full flash says so (ENOSPC), nothing lands beside it, the image is out of reach."""
    from microrl_host.board.virtual import VirtualBoard

    folder = tmp_path / "fs"
    code = ("import os\n"
            "def attempt(name, f):\n"
            "    try:\n        f()\n        print(name, 'done')\n"
            "    except OSError as e:\n        print(name, 'refused', e.errno)\n"
            "def fill(path):\n"
            "    with open(path, 'wb') as f:\n"
            "        for _ in range(1024):\n            f.write(bytes(1024))\n"
            "attempt('fill flash', lambda: fill('/flash/big'))\n"
            "attempt('write beside flash', lambda: fill('/big'))\n"
            "attempt('write ../big', lambda: fill('../big'))\n"
            "attempt('zero the image', lambda: open('/flash.img', 'wb').close())\n"
            "attempt('zero ../flash.img', lambda: open('../flash.img', 'wb').close())\n"
            "print(sorted(os.listdir('/')))\n")
    with VirtualBoard(str(folder), flash="64K") as b:
        r = mpremote(b.port, "exec", code)
    out = r.stdout
    assert "fill flash refused 28" in out, out  # ENOSPC: the 64K flash is full
    for what in ("write beside flash", "write ../big", "zero the image", "zero ../flash.img"):
        assert "%s refused" % what in out, out
    assert "['flash']" in out, out
    assert sorted(os.listdir(folder)) == [".microrl-board", "flash.img"] and os.path.getsize(folder / "flash.img") == 64 * 1024
    with VirtualBoard(str(folder), flash="64K") as b:  # the image survived: the next start mounts it
        r = mpremote(b.port, "exec", "import os; print(os.listdir('/flash'))")
    assert "big" in r.stdout, r.stdout + r.stderr


def test_unconfined_is_one_choice_of_its_own():
    """--unconfined is what the user types for no confinement (board sim and demo); with a
    --confine mode too it is refused, and `--confine none` is no longer a way to it."""
    for args in (["board", "sim", "--folder", "fs-never-made"], ["demo", "--steps", "100", "--out", "never.mrlp"]):
        r = cli(*args, "--unconfined", "--confine", "landlock", timeout=120)
        assert r.returncode == 2 and "--unconfined and --confine landlock: give one of them" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
        r = cli(*args, "--confine", "none", timeout=120)
        assert r.returncode == 2 and "invalid choice: 'none'" in r.stderr, r.stderr
    assert not os.path.exists(os.path.join(ROOT, "fs-never-made")) and not os.path.exists(os.path.join(ROOT, "never.mrlp"))
