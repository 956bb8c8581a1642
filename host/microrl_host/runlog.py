"""A training run's folder: run.json (what was run), progress.csv (one row per episode end or
evaluation), checkpoints. `microrl plot RUN` reads progress.csv."""
import contextlib
import csv
import json
import os
import time

from . import atomic

COLUMNS = ("step", "time_s", "episode_return", "eval_mean", "eval_std")


class RunLog:
    def __init__(self, folder, meta=None, resume=False):
        self.folder = folder
        os.makedirs(folder, exist_ok=True)
        self.csv_path = os.path.join(folder, "progress.csv")
        if meta is not None:
            atomic.write_text(os.path.join(folder, "run.json"), json.dumps(meta, indent=2, sort_keys=True, default=str))
        fresh = not (resume and os.path.exists(self.csv_path))
        self._file = open(self.csv_path, "w" if fresh else "a", newline="")
        self._writer = csv.writer(self._file)
        if fresh:
            self._writer.writerow(COLUMNS)
            self._file.flush()
        self.start = time.perf_counter()

    def row(self, step, episode_return=None, eval_mean=None, eval_std=None, time_s=None):
        t = time.perf_counter() - self.start if time_s is None else time_s
        self._writer.writerow([step, "%.3f" % t] + ["" if v is None else "%.6g" % v for v in (episode_return, eval_mean, eval_std)])
        self._file.flush()

    def close(self):
        self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


CHECKPOINT = "checkpoint.npz"  # what --resume continues from (TD3, SAC and PPO alike)
RUN_FILES = ("run.json", "progress.csv", CHECKPOINT, "policy.mrlp")  # what a run folder holds (PPO's keeps its last policy too)
LOCK = "run.lock"  # held (flock) by the one process that writes the folder; removed when it ends


class RunLocked(Exception):
    """Another process holds the lock of a run folder (or of an output): str() is one line."""

    def __init__(self, what, pid):
        self.what, self.pid = what, pid
        super().__init__("another run%s is writing %s" % (" (pid %d)" % pid if pid else "", what))


# a lock found taken is tried again for this long: a process that only looks (probe()) holds it
# for microseconds, a run for its whole life
_RETRY_S, _RETRY_EVERY_S = 0.5, 0.05


@contextlib.contextmanager
def runlock(folder):
    """Hold the run folder's lock for the with block: one process writes a run folder at a
    time (a second `microrl train`, a --resume or a sweep into it is refused). An OS lock
    (flock) on FOLDER/run.lock, which holds this process's pid: the kernel drops it when the
    process ends, killed included, so a lock is never left stale; the file is removed at the
    block's end. Makes the folder (one level, as RunLog does). RunLocked, nothing written, when
    another process holds it. Where the OS has no flock (Windows) or the file system refuses
    locks, the block runs unlocked."""
    with hold(os.path.join(folder, LOCK), folder):
        yield


@contextlib.contextmanager
def filelock(path):
    """Hold the lock of a file that one run writes (a policy file, --out) for the with block:
    .NAME.lock beside it, as runlock."""
    with hold(_file_lock_path(path), path):
        yield


def _file_lock_path(path):
    folder, name = os.path.split(os.path.abspath(path))
    return os.path.join(folder, "." + name + ".lock")


def probe(folder=None, file=None):
    """The pid of the process that holds a run folder's lock (runlock) or a file's (filelock)
    (0: one does, its pid not yet written), or None when none does. Writes nothing (no lock
    file: no holder)."""
    fcntl = _fcntl()
    try:
        fd = os.open(os.path.join(folder, LOCK) if file is None else _file_lock_path(file), os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError):
        return None
    try:
        if fcntl is None:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _pid_in(fd)
        except OSError:
            return None
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


@contextlib.contextmanager
def hold(path, what):
    """Hold an exclusive flock on the file at path (made if missing, holding our pid while held,
    removed at the end) for the with block; RunLocked(what, pid) when another process holds it.
    Makes the folder that holds path if missing (one level: checked by the caller), and removes
    it again at the end if nothing else was written there (a refusal, a run that failed first)."""
    fcntl = _fcntl()
    folder = os.path.dirname(os.path.abspath(path))
    made = not os.path.isdir(folder)
    os.makedirs(folder, exist_ok=True)
    fd = None
    try:
        fd = _acquire(fcntl, path, what) if fcntl is not None else None
        yield
    finally:
        if fd is not None:
            try:
                os.unlink(path)  # still locked: a process that opened it meanwhile finds it gone and opens anew
            except OSError:
                pass
            os.close(fd)
        if made:
            try:
                os.rmdir(folder)  # (only when empty)
            except OSError:
                pass


def _fcntl():
    try:
        import fcntl
    except ImportError:  # Windows
        return None
    return fcntl


def _acquire(fcntl, path, what):
    deadline = time.monotonic() + _RETRY_S
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError:  # a name too long for the lock's: unlocked (the run's own writes say what is wrong)
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _pid_in(fd)
            os.close(fd)
            if time.monotonic() < deadline:
                time.sleep(_RETRY_EVERY_S)
                continue
            raise RunLocked(what, pid) from None
        except OSError:  # a file system without locks (ENOLCK, EOPNOTSUPP): unlocked, as before locks existed
            os.close(fd)
            return None
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except OSError:
            same = False
        if same:
            break
        os.close(fd)  # its holder removed it between our open and our lock: open the new one
    try:
        os.ftruncate(fd, 0)
        os.write(fd, b"%d\n" % os.getpid())
    except OSError:  # a full disk: the lock holds all the same, its holder's pid unsaid
        pass
    return fd


def _pid_in(fd):
    try:
        return int(os.pread(fd, 32, 0).split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def run_folder_of(policy_path):
    """The run folder `microrl train` keeps beside a policy file by default: its path without
    .mrlp (or .mrl, what earlier versions wrote), plus .run. Train writes there; deploy reads the
    task from it."""
    stem = policy_path
    for ext in (".mrlp", ".mrl"):
        if stem.endswith(ext):
            stem = stem[: -len(ext)]
            break
    return stem + ".run"


def previous_run(folder):
    """What a run folder holds of an earlier run, in a few words ("td3 on pendulum, seed 0, 10000
    steps"), or None when it holds no checkpoint: a run killed before its first checkpoint left
    nothing --resume could continue, and starting again in its place loses nothing."""
    if not os.path.lexists(os.path.join(folder, CHECKPOINT)):
        return None
    held = [n for n in RUN_FILES if os.path.lexists(os.path.join(folder, n))]
    try:
        with open(os.path.join(folder, "run.json")) as f:
            meta = json.load(f)
        config = meta.get("config") or {}  # PPO keeps its seed and steps there
        return "%s on %s, seed %s, %s steps" % (meta["algo"], meta["task"], meta.get("seed", config.get("seed")), meta.get("steps", config.get("steps")))
    except (OSError, ValueError, KeyError, TypeError, RecursionError):  # (RecursionError: JSON nested thousands deep)
        return "its " + ", ".join(held)


def read_progress(folder_or_csv):
    """Rows of a run's progress.csv as dicts of floats (None where empty)."""
    path = folder_or_csv
    if os.path.isdir(path):
        path = os.path.join(path, "progress.csv")
    if not os.path.exists(path):
        raise FileNotFoundError("no progress.csv at %s (is this a run folder written by microrl train?)" % folder_or_csv)
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            rows.append({k: (float(v) if v not in ("", None) else None) for k, v in r.items()})
    return rows
