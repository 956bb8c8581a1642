"""The prebuilt native kernels shipped in this package, and which one a board can load.

Layout (package data, rebuilt by native_modules/microrl_kernels/build_dist.py):
    mpy<version>.<sub>/<arch>/microrl_kernels.mpy   one file per architecture
    mpy<version>.<sub>/manifest.json                arch, .mpy version, size, sha256, source hash
A later .mpy version gets its own mpy<v>.<s>/ folder beside this one. $MICRORL_NATIVE_DIR, when
set, is searched first and holds <arch>/microrl_kernels.mpy (a build of your own)."""
import hashlib
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
MODULE = "microrl_kernels"
MPY_NAME = MODULE + ".mpy"
MANIFEST = "manifest.json"

# sys.implementation._mpy >> 10 & 15 on a board (MicroPython's py/persistentcode.h, MP_NATIVE_ARCH_*)
MPY_ARCHS = (None, "x86", "x64", "armv6", "armv6m", "armv7m", "armv7em", "armv7emsp", "armv7emdp", "xtensa", "xtensawin", "rv32imc", "rv64imc")
# MicroPython loads an ARM module on any ARM board from armv6m up to the module's own arch or later
_ARM = ("armv6m", "armv7m", "armv7em", "armv7emsp", "armv7emdp")

# Boards whose core has no floating-point unit: the float kernels run there in software floating
# point (correct, many times slower), so a policy runs faster as int16 fixed point
NO_FPU = {"armv6m": "RP2040 and other Cortex-M0+", "armv7m": "Cortex-M3", "armv7em": "Cortex-M4 without FPU",
          "rv32imc": "ESP32-C3, ESP32-C6", "xtensa": "ESP8266"}
INT16_ADVICE = "for speed use `microrl export --int16` and `deploy --mpy` (integer code: no floating point needed)"
# What a board without a fitting module should do instead
DEFAULT_ADVICE = "for speed use `microrl export --int16` and `deploy --mpy`, or build the module for this board (native_modules/microrl_kernels/README.md)"
# The ESP32 module: built with Debian's LLVM for the ESP32's FPU, checked on an emulated core
XTENSAWIN_NOTE = ("the xtensawin kernels use the ESP32's FPU (ESP32, ESP32-S3); MicroPython's own loader runs them as the plain code "
                  "computes on an emulated windowed Xtensa core with an FPU (docs/native.md), but no chip has run them yet: if importing "
                  "microrl resets the board or deploy's check fails, deploy again with --no-native")

# the C sources whose hash the shipped files carry (build flags included: they change the code),
# and the ESP32 build's compiler driver (it rewrites llc's output before assembling it)
SOURCE_PATTERNS = (".c", ".h", "Makefile")
BUILD_TOOLS = ("xtensa/cc.py",)


def arch_from_mpy(mpy_value):
    """Architecture name from a board's sys.implementation._mpy (None: no native code)."""
    if mpy_value is None:
        return None
    code = (int(mpy_value) >> 10) & 0x0F
    return MPY_ARCHS[code] if code < len(MPY_ARCHS) else None


def mpy_version(mpy_value):
    """(version, sub-version) from sys.implementation._mpy or a .mpy header's first bytes."""
    return int(mpy_value) & 0xFF, (int(mpy_value) >> 8) & 3


def mpy_header(path):
    """(version, sub_version, arch) of a native .mpy file; ValueError if it is not one."""
    with open(path, "rb") as f:
        head = f.read(4)
    if len(head) < 4 or head[0:1] != b"M":
        raise ValueError("%s is not a .mpy file" % path)
    version, flags = head[1], head[2]
    arch_code = flags >> 2
    return version, flags & 3, MPY_ARCHS[arch_code] if arch_code < len(MPY_ARCHS) else None


def version_dir(version, sub):
    return os.path.join(HERE, "mpy%d.%d" % (version, sub))


def shipped_versions():
    """(version, sub) of every shipped folder, newest first."""
    found = []
    for name in os.listdir(HERE):
        if name.startswith("mpy") and os.path.isfile(os.path.join(HERE, name, MANIFEST)):
            v, s = name[3:].split(".")
            found.append((int(v), int(s)))
    return sorted(found, reverse=True)


def manifest(version, sub):
    with open(os.path.join(version_dir(version, sub), MANIFEST)) as f:
        return json.load(f)


def loadable_archs(board_arch):
    """Module architectures a board of board_arch loads, best first."""
    if board_arch in _ARM:
        return list(reversed(_ARM[: _ARM.index(board_arch) + 1]))
    return [board_arch] if board_arch else []


def _fits(path, arch, board_mpy):
    try:
        version, sub, file_arch = mpy_header(path)
    except (OSError, ValueError):
        return False
    if file_arch != arch:
        return False
    return board_mpy is None or (version, sub) == mpy_version(board_mpy)


def mpy_for_arch(arch, board_mpy=None):
    """Path of a microrl_kernels.mpy for an `arch` board, or None: $MICRORL_NATIVE_DIR/<arch>/
    first, then the shipped files. With board_mpy (the board's sys.implementation._mpy), files of
    another .mpy version are skipped (MicroPython refuses them), and an ARM board gets the best
    ARM module it can load (armv7emsp on an armv7emdp Teensy 4)."""
    for candidate in loadable_archs(arch):
        if os.environ.get("MICRORL_NATIVE_DIR"):
            path = os.path.join(os.environ["MICRORL_NATIVE_DIR"], candidate, MPY_NAME)
            if _fits(path, candidate, board_mpy):
                return path
        versions = [mpy_version(board_mpy)] if board_mpy is not None else shipped_versions()
        for version, sub in versions:
            path = os.path.join(version_dir(version, sub), candidate, MPY_NAME)
            if _fits(path, candidate, board_mpy):
                return path
    return None


def is_esp32s2(machine):
    """Whether sys.implementation._machine (or os.uname().machine) names an ESP32-S2: an xtensawin
    board like the ESP32, but without an FPU ("... with ESP32S2")."""
    return "ESP32S2" in (machine or "").upper().replace("-", "").replace("_", "")


def for_board(board_mpy, machine=None):
    """(path, note) for a board with this sys.implementation._mpy (and _machine): the module it
    loads and one line for the user or None; (None, one line saying why there is none and what to
    do). The note with a module: on a board without FPU, that the float kernels run in software
    and int16 is faster; on an ESP32, how the module was checked."""
    arch = arch_from_mpy(board_mpy)
    if arch is None:
        return None, "no native kernels: this MicroPython runs no native code (no architecture in sys.implementation._mpy); using plain; %s" % DEFAULT_ADVICE
    if arch == "xtensawin" and is_esp32s2(machine):
        return None, "no native kernels for the ESP32-S2: it has no FPU, which the xtensawin kernels (built for the ESP32's) need; using plain; %s" % INT16_ADVICE
    path = mpy_for_arch(arch, board_mpy)
    if path:
        if arch in NO_FPU:
            return path, "this board has no FPU (%s): the native float kernels run in software floating point; %s" % (NO_FPU[arch], INT16_ADVICE)
        if arch == "xtensawin":
            return path, XTENSAWIN_NOTE
        return path, None
    advice = INT16_ADVICE if arch in NO_FPU else DEFAULT_ADVICE
    version, sub = mpy_version(board_mpy)
    shipped = ["%d.%d" % v for v in shipped_versions()]
    if (version, sub) not in shipped_versions():
        why = "the board loads .mpy v%d.%d and the shipped kernels are .mpy v%s" % (version, sub, ", v".join(shipped) or " (none)")
        return None, "no native kernels for %s: %s; using plain; %s" % (arch, why, advice)
    return None, "no native kernels for %s: using plain; %s" % (arch, advice)


def source_files(source_dir):
    names = sorted(n for n in os.listdir(source_dir) if n.endswith(SOURCE_PATTERNS[:2]) or n == SOURCE_PATTERNS[2])
    return names + [t for t in BUILD_TOOLS if os.path.isfile(os.path.join(source_dir, t))]


def source_hash(source_dir):
    """sha256 over the C sources, Makefile and build tools of native_modules/microrl_kernels (names
    and bytes)."""
    h = hashlib.sha256()
    for name in source_files(source_dir):
        with open(os.path.join(source_dir, name), "rb") as f:
            data = f.read()
        h.update(name.encode() + b"\0" + str(len(data)).encode() + b"\0" + data)
    return h.hexdigest()


def file_sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()
