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
