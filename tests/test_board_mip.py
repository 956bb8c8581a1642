"""`microrl mip --out DIR` and `mpremote mip install` from it, served over HTTP on 127.0.0.1: on
the virtual board (the unix port behind a pty) with the real mpremote, and the package of an
emulated board's architecture (MicroPython's qemu port, MICRORL_QEMU_FIRMWARE) laid into its
ROMFS image, as those boards have no writable filesystem for mip to write to."""
import functools
import hashlib
import http.server
import json
import os
import subprocess
import sys
import threading

import pytest

from boardkit import cli, make_policy, mpremote, needs_board
from helpers import assert_refused


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    out = tmp_path_factory.mktemp("mip") / "index"
    proc = cli("mip", "--out", out, "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return str(out), json.loads(proc.stdout)


@pytest.fixture(scope="module")
def server(index):
    folder = index[0]

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=folder))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield "http://127.0.0.1:%d" % httpd.server_address[1]
    httpd.shutdown()
    thread.join()


def _package(folder, name, flavour="6"):
    with open(os.path.join(folder, "package", flavour, name, "latest.json")) as f:
        return json.load(f)


def test_index_has_a_package_per_shipped_arch_with_its_kernels(index):
    from microrl_host.board import native

    folder, described = index
    names = [p["name"] for p in described["packages"]]
    shipped = sorted(a for a in native.manifest(6, 3)["files"])
    assert sorted(names) == sorted(["microrl"] + ["microrl-" + a for a in shipped])
    for arch in shipped:
        files = dict(_package(folder, "microrl-" + arch)["hashes"])
        with open(native.mpy_for_arch(arch, 6 | 3 << 8 | native.MPY_ARCHS.index(arch) << 10), "rb") as f:
            kernels = f.read()
        assert files["microrl_kernels.mpy"] == hashlib.sha256(kernels).hexdigest()[:8]
        with open(os.path.join(folder, "file", files["microrl_kernels.mpy"][:2], files["microrl_kernels.mpy"]), "rb") as f:
            assert f.read() == kernels
        # the viper part is machine code of this arch (the .mpy header's arch field)
        viper = files["microrl/_fixedpoint_viper.mpy"]
        with open(os.path.join(folder, "file", viper[:2], viper), "rb") as f:
            assert native.MPY_ARCHS[f.read(3)[2] >> 2] == arch
    core = dict(_package(folder, "microrl")["hashes"])
    assert "microrl_kernels.mpy" not in core and "microrl/_fixedpoint_viper.py" in core  # compiled by the board for its own arch
    py = dict(_package(folder, "microrl-x64", "py")["hashes"])
    assert "microrl/nn.py" in py and "microrl_kernels.mpy" in py


def test_package_for_a_board_names_its_arch():
    from microrl_host.board import mip, native

    def mpy(arch):
        return 6 | 3 << 8 | native.MPY_ARCHS.index(arch) << 10

    assert mip.package_for(mpy("x64")) == "microrl-x64"
    assert mip.package_for(mpy("armv7emdp")) == "microrl-armv7emsp"  # a Teensy 4.1 loads the single-precision module
    assert mip.package_for(6 | 3 << 8) == "microrl"  # no native code at all


def test_out_holding_other_files_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    proc = cli("mip", "--out", tmp_path)
    assert_refused(proc, "--out", "index.json")
    assert os.listdir(tmp_path) == ["notes.txt"]


def test_unknown_arch_is_refused(tmp_path):
    proc = cli("mip", "--out", tmp_path / "idx", "--arch", "z80")
    assert_refused(proc, "z80", "xtensawin")


@needs_board
def test_mpremote_mip_install_on_the_virtual_board(index, server, tmp_path):
    from microrl_host.board.virtual import VirtualBoard

    policy_path = tmp_path / "policy.mrlp"
    policy = make_policy(policy_path)
    with VirtualBoard(str(tmp_path / "board")) as b:
        # the unix port's sys.path has 'lib' (not '/lib' as a board's): mip needs --target there
        r = mpremote(b.port, "mip", "install", "--target", "lib", "--index", server, "microrl-x64", timeout=300)
        assert r.returncode == 0 and "Done" in r.stdout, r.stdout[-2000:] + r.stderr[-2000:]
        installed = sorted(os.listdir(os.path.join(b.folder, "lib", "microrl")))
        assert "nn.mpy" in installed and "nn.py" not in installed
        r = mpremote(b.port, "exec", "import microrl; print(microrl.backend_name())")
        assert r.stdout.split()[-1] == "native", r.stdout + r.stderr
        r = mpremote(b.port, "fs", "cp", str(policy_path), ":policy.mrlp")
        assert r.returncode == 0, r.stderr
        obs = [[0.1, -0.5, 2.0], [-1.0, 0.3, -7.0]]
        r = mpremote(b.port, "exec", "import microrl\np = microrl.load('policy.mrlp')\nfor o in %r:\n print(repr(p(o)[0]))" % obs)
        got = [float(x) for x in r.stdout.split()]
        assert len(got) == 2, r.stdout + r.stderr
        assert max(abs(g - policy(o)[0]) for g, o in zip(got, obs)) < 1e-5
        # a second install finds every file there by its hash and copies none
        r = mpremote(b.port, "mip", "install", "--target", "lib", "--index", server, "microrl-x64", timeout=300)
        assert r.returncode == 0 and "Installing: " not in r.stdout and r.stdout.count("Exists: ") == len(_package(index[0], "microrl-x64")["hashes"])


@needs_board
def test_mpremote_mip_install_by_one_url(index, server, tmp_path):
    from microrl_host.board.virtual import VirtualBoard

    with VirtualBoard(str(tmp_path / "board")) as b:
        r = mpremote(b.port, "mip", "install", "--target", "lib", server + "/microrl-x64.json", timeout=300)
        assert r.returncode == 0 and "Done" in r.stdout, r.stdout[-2000:] + r.stderr[-2000:]
        r = mpremote(b.port, "exec", "import microrl; print(microrl.backend_name())")
        assert r.stdout.split()[-1] == "native", r.stdout + r.stderr


@pytest.mark.parametrize("arch", ["armv7m", "rv32imc"])
def test_the_package_of_an_emulated_board_runs_native_there(index, arch, tmp_path):
    """The files of microrl-ARCH, as mip would lay them under /lib, in the qemu board's ROMFS."""
    import shutil

    from microrl_host.board import qemu as qemu_board

    firmware = qemu_board.firmwares().get(arch)
    if firmware is None:
        pytest.skip("MICRORL_QEMU_FIRMWARE names no %s firmware (MicroPython's qemu port, ports/qemu/README.md)" % arch)
    if shutil.which(qemu_board.BOARDS[arch][0]) is None:
        pytest.skip("%s not found" % qemu_board.BOARDS[arch][0])
    folder = index[0]
    rom = tmp_path / "romfs"
    for path, h in _package(folder, "microrl-" + arch)["hashes"]:
        dest = rom / "lib" / path
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(os.path.join(folder, "file", h[:2], h), dest)
    image = str(tmp_path / "romfs.img")
    subprocess.run([sys.executable, "-m", "mpremote", "romfs", "-o", image, "--no-mpy", "build", str(rom)], check=True, capture_output=True)
    with qemu_board.QemuBoard(firmware, arch, image) as board:
        out = board.run("import microrl\nfrom microrl import fixedpoint\nprint('PATHS', microrl.backend_name(), fixedpoint.implementation())")
    assert "PATHS native native" in out, out[-2000:]
