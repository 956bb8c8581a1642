"""A mip package index of microrl: the device core and the native kernels of each architecture,
laid out as micropython-lib's index is, so that `mpremote mip install --index URL microrl-ARCH`
(and a networked board's own `mip.install("microrl-ARCH", index=URL)`) install them.

Why one package per architecture: mip (mpremote 1.29's and micropython-lib's) asks the board
only its .mpy version (`sys.implementation._mpy & 0xFF`, the index's package/<6|py>/ folder), not
its architecture, and substitutes nothing in a package's URLs ({MPY_ARCH} is a proposal:
micropython#19478, micropython-lib#1140). mpremote downloads on the host and copies the files, so
an installer run on the board could only pick its kernels on a board with a network.

Layout of DIR (static files for any HTTP server):
    package/<mpy major>/<name>/{latest,<version>}.json  bytecode .mpy (mip's default)
    package/py/<name>/{latest,<version>}.json           .py files (mip --no-mpy)
    file/<h[:2]>/<h>                                    every file by its short SHA-256 h: mip
                                                        skips a file the board has with that hash
    <name>.json                                         the .mpy package by one URL (relative urls)
    index.json                                          the packages, their arch and the boards
<name>: `microrl` (the core, plain Python kernels: any board) and `microrl-<arch>` (the core and
the kernels microrl_kernels.mpy of that architecture; the viper part of fixedpoint compiled for
it). The package's files are those deploy copies: the core with every built-in task."""
import hashlib
import json
import os
import shutil
import tempfile

from . import native
from .deploy import core_name, core_sources, mpy_cross, mpy_cross_version

HASH_CHARS = 8  # micropython-lib's short hash
NEEDS_ARCH = ("_fixedpoint_viper.py",)  # viper code: machine code of one architecture
BOARDS = {  # which package a board installs (docs/boards.md has the table)
    "xtensawin": "ESP32, ESP32-S3 (not the ESP32-S2: no FPU; it takes `microrl`)",
    "armv7emsp": "Teensy 4.x, Pyboard, STM32 with FPU (Cortex-M4F/M7)",
    "armv7m": "Cortex-M3",
    "armv6m": "RP2040 (Raspberry Pi Pico), Cortex-M0+",
    "rv32imc": "ESP32-C3, ESP32-C6",
    "xtensa": "ESP8266",
    "x64": "the unix port on x86-64 (the virtual board)",
    "x86": "the unix port on 32-bit x86",
}


class MipError(Exception):
    pass


def package_name(arch=None):
    return "microrl-%s" % arch if arch else "microrl"


def archs_shipped(mpy):
    """Architectures with shipped kernels of the .mpy version mpy ((6, 3))."""
    found = []
    for arch in native.MPY_ARCHS[1:]:
        path = os.path.join(native.version_dir(*mpy), arch, native.MPY_NAME)
        if os.path.isfile(path) and native.mpy_header(path) == (mpy[0], mpy[1], arch):
            found.append(arch)
    return found


def package_for(board_mpy):
    """The package a board with this sys.implementation._mpy installs (None: `microrl`)."""
    arch = native.arch_from_mpy(board_mpy)
    for candidate in native.loadable_archs(arch):
        if os.path.isfile(os.path.join(native.version_dir(*native.mpy_version(board_mpy)), candidate, native.MPY_NAME)):
            return package_name(candidate)
    return package_name(None)


class _Store:
    """The file/ folder: each file once, by its short hash."""

    def __init__(self, root):
        self.root = root

    def put(self, data):
        h = hashlib.sha256(data).hexdigest()[:HASH_CHARS]
        path = os.path.join(self.root, "file", h[:2], h)
        if os.path.exists(path):
            with open(path, "rb") as f:
                if f.read() != data:
                    raise MipError("two files share the short hash %s: build the index again with a longer hash" % h)
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
        return h


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def _write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True)
        f.write("\n")


def _package_files(sources, compiled, arch, mpy_flavour, tmp):
    """{path under the target ('microrl/nn.mpy'): bytes} of one package."""
    files = {}
    for name, src in sources.items():
        if not mpy_flavour:
            files["microrl/" + name] = _read(src)
        elif name in NEEDS_ARCH and arch is None:
            files["microrl/" + name] = _read(src)  # compiled on the board, for its own arch
        elif name in NEEDS_ARCH:
            out = os.path.join(tmp, arch, name[:-3] + ".mpy")
            mpy_cross(src, out, arch, "microrl/" + name)
            files["microrl/" + name[:-3] + ".mpy"] = _read(out)
        else:
            files["microrl/" + name[:-3] + ".mpy"] = _read(compiled[name])
    return files


def build(out_dir, archs=None):
    """Write the index into out_dir (made; a file/ and package/ of a former build are replaced);
    returns its description (index.json's content). archs: the architectures to package (default:
    every one with shipped kernels for mpy-cross's .mpy version)."""
    import microrl

    try:
        mpy = mpy_cross_version()
    except Exception as e:  # DeployError: mpy-cross missing or unreadable
        raise MipError(str(e)) from None
    shipped = archs_shipped(mpy)
    if not shipped:
        raise MipError("no native kernels of .mpy v%d.%d are shipped (mpy-cross writes that version): install the mpy-cross of "
                       "the shipped kernels' MicroPython (%s)" % (mpy[0], mpy[1], ", ".join("v%d.%d" % v for v in native.shipped_versions())))
    chosen = shipped if archs is None else list(archs)
    for arch in chosen:
        if arch not in shipped:
            raise MipError("no native kernels for %s of .mpy v%d.%d: choose among %s" % (arch, mpy[0], mpy[1], ", ".join(shipped)))
    version = microrl.__version__
    sources = {core_name(p): p for p in core_sources(None)}
    for part in ("file", "package"):
        shutil.rmtree(os.path.join(out_dir, part), ignore_errors=True)
    os.makedirs(out_dir, exist_ok=True)
    store = _Store(out_dir)
    packages = []
    with tempfile.TemporaryDirectory() as tmp:
        compiled = {}
        for name, src in sources.items():
            if name not in NEEDS_ARCH:
                compiled[name] = os.path.join(tmp, "core", name[:-3] + ".mpy")
                mpy_cross(src, compiled[name], None, "microrl/" + name)
        for arch in [None] + chosen:
            name = package_name(arch)
            entry = {"name": name, "version": version, "arch": arch, "boards": BOARDS.get(arch, "any MicroPython board (plain Python kernels)"),
                     "versions": {}, "bytes": {}}
            for flavour, folder in ((mpy, str(mpy[0])), (None, "py")):
                files = _package_files(sources, compiled, arch, flavour, tmp)
                if arch:
                    files[native.MPY_NAME] = _read(os.path.join(native.version_dir(*mpy), arch, native.MPY_NAME))
                hashes = [[path, store.put(files[path])] for path in sorted(files)]
                body = {"v": 1, "version": version, "hashes": hashes}
                for tag in ("latest", version):
                    _write_json(os.path.join(out_dir, "package", folder, name, tag + ".json"), body)
                entry["versions"][folder] = [version]
                entry["bytes"][folder] = sum(len(d) for d in files.values())
                if flavour:  # the same package by one URL: its files relative to it
                    _write_json(os.path.join(out_dir, name + ".json"),
                                {"v": 1, "version": version, "urls": [[p, "file/%s/%s" % (h[:2], h)] for p, h in hashes]})
            packages.append(entry)
    index = {"v": 2, "mpy": "%d.%d" % mpy, "packages": packages}
    _write_json(os.path.join(out_dir, "index.json"), index)
    return index
