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
            os.fchmod(f.fileno(), 0o666 & ~_umask())  # mkstemp makes 0600; a plain open() would not
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


def _umask():
    mask = os.umask(0)  # reading it means setting it: put it straight back
    os.umask(mask)
    return mask


def write_text(path, text):
    return write_bytes(path, text.encode("utf-8"))


def write_npz(path, **arrays):
    """numpy.savez_compressed, atomically."""
    import numpy as np

    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
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
