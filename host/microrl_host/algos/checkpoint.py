"""The training checkpoint, one format for every algorithm: an .npz of named arrays plus
`__meta__`, a JSON object that names the format and its version, the algorithm and the task
(and whatever else the algorithm needs to resume). Written atomically; read with checks."""
import json
import os
import zipfile

import numpy as np

from .. import atomic

FORMAT = "microrl-checkpoint"
VERSION = 1


class CheckpointError(ValueError):
    """A checkpoint that is missing, damaged, or for another run."""


class CheckpointWriteError(CheckpointError):
    """A checkpoint that could not be written (a full disk): the previous one is intact."""


def write(path, meta, arrays, compress=False):
    """Write arrays and meta (format and version added) to path atomically. compress: worth it
    for network parameters; a replay buffer of random floats does not compress. A failed write
    (a full disk, a file system gone read-only) leaves the previous checkpoint as it was and
    raises CheckpointWriteError, one line saying so."""
    arrays = dict(arrays)
    meta = dict(meta, format=FORMAT, version=VERSION)
    arrays["__meta__"] = np.frombuffer(json.dumps(meta, sort_keys=True).encode(), dtype=np.uint8)
    try:
        atomic.write_npz(path, arrays, compress)
    except OSError as e:
        at = " of step %s" % meta["step"] if "step" in meta else ""
        raise CheckpointWriteError("the checkpoint%s was not written (%s: %s); %s; free some space and continue with --resume"
                                   % (at, path, e.strerror or e, kept(path))) from None


def kept(path):
    """What the checkpoint file at path holds, said after a failure: 'PATH keeps the checkpoint
    of step N (intact)', or that there is none yet."""
    if not os.path.isfile(path):
        return "no earlier checkpoint was written"
    try:
        with np.load(path, allow_pickle=False) as data:  # reads only the small __meta__ member
            step = json.loads(bytes(data["__meta__"]).decode()).get("step")
        return "%s keeps the checkpoint of step %s, intact" % (path, step)
    except Exception:  # noqa: BLE001 - only a message depends on it
        return "%s keeps the previous checkpoint" % path


def read(path):
    """(meta, {name: array}); CheckpointError if missing, damaged or of another format/version."""
    if not os.path.exists(path):
        raise CheckpointError("no checkpoint at %s (train without --resume to start a new run)" % path)
    if not os.path.isfile(path):  # a named pipe would block the read for ever
        raise CheckpointError("%s is not a regular file, not a checkpoint" % path)
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
        meta = json.loads(bytes(arrays.pop("__meta__")).decode())
        if not isinstance(meta, dict):
            raise ValueError("its __meta__ is JSON but not an object")
    except (zipfile.BadZipFile, ValueError, KeyError, EOFError, OSError, UnicodeDecodeError, RecursionError) as e:  # (RecursionError: JSON nested thousands deep)
        raise CheckpointError("checkpoint %s is damaged or not a microrl checkpoint (%s: %s); start a new run without --resume" % (path, type(e).__name__, e))
    if meta.get("format") != FORMAT or meta.get("version") != VERSION:
        raise CheckpointError("%s is not a microrl checkpoint of version %d" % (path, VERSION))
    return meta, arrays


def saved_settings(run_dir):
    """The settings ({name: value}) the checkpoint of run_dir was made with; {} where there is
    none (or an older one that does not record them)."""
    from ..runlog import CHECKPOINT

    path = os.path.join(run_dir, CHECKPOINT)
    return dict(read(path)[0].get("config") or {}) if os.path.exists(path) else {}
