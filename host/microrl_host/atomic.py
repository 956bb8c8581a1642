"""Atomic file writes: a reader (or a process killed mid-write) sees the old file or the new
one, never a half-written one. Write to a temporary file in the same folder, fsync, rename."""
import io
import os
import tempfile


def write_bytes(path, data):
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            _set_mode(f.fileno(), path)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        _fsync_dir(folder)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


def _set_mode(fd, path):
    """mkstemp makes 0600: give the file the mode a plain open() would (the old file's, or the
    umask's default for a new one)."""
    try:
        mode = os.stat(path).st_mode & 0o7777
    except OSError:
        mode = 0o666 & ~_UMASK
    try:
        os.fchmod(fd, mode)
    except (OSError, AttributeError, NotImplementedError):  # no fchmod (Windows) or a filesystem without modes
        pass


def _read_umask():
    # once, at import: os.umask can only be read by setting it, which is not thread-safe
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _read_umask()


def write_text(path, text):
    return write_bytes(path, text.encode("utf-8"))


def write_npz(path, arrays, compress=False):
    """{name: array} as an .npz (numpy.savez, or savez_compressed), atomically."""
    import numpy as np

    buf = io.BytesIO()
    (np.savez_compressed if compress else np.savez)(buf, **arrays)
    return write_bytes(path, buf.getvalue())


def _fsync_dir(folder):
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def unwritable(path, folder=False):
    """Why a file (folder=True: a folder) cannot be written at path, or None when it can: checked
    before a command does any work. A folder that does not exist yet counts as writable when it
    can be made; the test is a real temporary file, not permission bits (root ignores those, a
    read-only filesystem does not)."""
    path = os.path.abspath(path)
    if folder:
        if os.path.exists(path) and not os.path.isdir(path):
            return "%s exists and is not a folder" % path
    elif os.path.isdir(path):
        return "%s is a folder; give a file name" % path
    probe = path if folder else os.path.dirname(path)
    while not os.path.exists(probe):  # the deepest part that exists must take new entries
        probe = os.path.dirname(probe)
    if not os.path.isdir(probe):
        return "%s cannot be made: %s is a file, not a folder" % (path, probe)
    try:
        fd, tmp = tempfile.mkstemp(prefix=".microrl-write-test.", dir=probe)
    except OSError as e:
        return "cannot write in %s: %s" % (probe, e.strerror or e)
    os.close(fd)
    os.unlink(tmp)
    return None
