"""Atomic file writes: a reader (or a process killed mid-write) sees the old file or the new
one, never a half-written one. Write to a temporary file in the same folder, fsync, rename.

Also the one check of an output path that every command makes before any work (unwritable):
only a regular file is ever replaced (never a device, a named pipe, a socket or a folder), and
at most one missing folder is made, inside a folder that exists."""
import errno
import io
import os
import stat
import tempfile

_KINDS = {stat.S_IFDIR: "a folder", stat.S_IFIFO: "a named pipe", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
          stat.S_IFSOCK: "a socket", stat.S_IFREG: "a regular file", stat.S_IFLNK: "a symbolic link"}


def kind(mode):
    """'a named pipe', 'a character device', ... for an os.stat mode."""
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


# OSErrors that are the machine's doing, not a bug's: a full disk or quota, a file system that
# is read-only or failing, a file's permissions. The commands say them in one line.
ENVIRONMENT_ERRORS = {getattr(errno, name) for name in ("ENOSPC", "EDQUOT", "EFBIG", "EROFS", "EIO", "EACCES", "EPERM") if hasattr(errno, name)}


class WriteError(OSError):
    """A file that was not written (the old one, if any, is intact); str() is one line."""

    def __init__(self, path, reason, errno=None, note=""):
        super().__init__(errno, reason, path)
        self.message = "%s not written: %s%s" % (path, reason, note)

    def __str__(self):
        return self.message


def write_bytes(path, data):
    """Write data to path atomically. WriteError (nothing replaced, no temporary left) when path
    is anything but a regular file or a name not yet taken, or when the write fails (a full
    disk: the old file is intact)."""
    folder = os.path.dirname(os.path.abspath(path))
    why = not_replaceable(path)
    if why:
        raise WriteError(path, why)
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=folder)
    except OSError as e:
        raise WriteError(path, e.strerror or str(e), e.errno) from None
    try:
        with os.fdopen(fd, "wb") as f:
            _set_mode(f.fileno(), path)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        # checked again just before the rename: something put there since the check above (a
        # race, or a caller that never checked) is not replaced
        why = not_replaceable(path)
        if why:
            raise WriteError(path, why)
        os.replace(tmp, path)
        _fsync_dir(folder)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError) and not isinstance(e, WriteError):
            raise WriteError(path, e.strerror or str(e), e.errno, " (the old file is intact)" if os.path.isfile(path) else "") from None
        raise
    return path


def not_replaceable(path):
    """Why path must not be replaced by a new file (it exists and is not a regular file: a device,
    a named pipe, a socket, a folder, a symbolic link; or it cannot be looked at), or None. A
    link is refused whatever it points to: the rename would replace the link itself (/dev/stdout
    is a link: to a regular file when output is redirected, and replacing it would break the
    machine's /dev/stdout), and writing through it would change a file the user did not name."""
    try:
        link = os.lstat(path)
        if stat.S_ISLNK(link.st_mode):
            return "it is a symbolic link (to %s), not a regular file; give the file itself (a link is never replaced)" % os.readlink(path)
        mode = link.st_mode
    except FileNotFoundError:
        return None  # nothing there yet
    except (OSError, ValueError) as e:  # a name too long, a NUL byte
        return "the path cannot be used: %s" % (getattr(e, "strerror", None) or e)
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "it is a folder; give a file name"
    return "it is %s, not a regular file (only a regular file is ever replaced)" % kind(mode)


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
    before a command does any work. Only a regular file is replaced: a device, a named pipe, a
    socket or a folder at a file's path is refused, and so is anything but a folder at a
    folder's. Missing folders are made one level deep at most: the folder that holds the output
    (for folder=True, the output's parent) must exist or be one new folder inside one that
    exists (a typo in a path's middle is refused, not made). The write test is a real temporary
    file, not permission bits (root ignores those, a read-only filesystem does not)."""
    if not path:
        return "give a path"
    if "\0" in path:
        return "%r contains a NUL byte" % path
    absolute = os.path.abspath(path)
    try:
        mode = os.stat(absolute).st_mode
    except (FileNotFoundError, NotADirectoryError):  # (a part that is a file: refused below)
        mode = None if folder or not os.path.islink(absolute) else stat.S_IFLNK  # a dangling link: refused below
    except OSError as e:  # a link loop, a name too long
        return "%s cannot be used: %s" % (absolute, e.strerror or e)
    if mode is not None and folder and not stat.S_ISDIR(mode):
        return "%s is %s, not a folder" % (absolute, kind(mode))
    if mode is not None and not folder:
        why = not_replaceable(absolute)
        if why:
            return "%s: %s" % (absolute, why)
    holder = absolute if folder and mode is not None else os.path.dirname(absolute)  # where a new entry is made
    probe = holder
    while not os.path.exists(probe):  # the deepest part that exists must take new entries
        probe = os.path.dirname(probe)
    if not os.path.isdir(probe):
        return "%s cannot be made: %s is a file, not a folder" % (absolute, probe)
    if probe != holder and os.path.dirname(holder) != probe:
        missing = holder
        while os.path.dirname(missing) != probe:
            missing = os.path.dirname(missing)
        return ("%s cannot be made: %s does not exist (microrl makes one missing folder at most: create the folders "
                "first, or check the path for a typo)" % (absolute, missing))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".microrl-write-test.", dir=probe)
    except OSError as e:
        return "cannot write in %s: %s" % (probe, e.strerror or e)
    os.close(fd)
    os.unlink(tmp)
    return None
