"""A training run's folder: run.json (what was run), progress.csv (one row per episode end or
evaluation), checkpoints. `microrl plot RUN` reads progress.csv."""
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
