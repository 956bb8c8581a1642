# Writing the policy files (policy.py, fixedpoint.py): the shapes the header can hold and the
# atomic replace of a written file. Its own module, imported only by save and to_bytes, so that
# a board that only loads and runs a policy does not hold this code (a board that loads the 13-64-64-4 policy in a 52K heap has no byte to spare).
from .fileformat import NotAPolicyError

MAX_LAYERS = 255  # the header's u8 layer count
MAX_WIDTH = 65535  # a layer size is a u16


def check_shape(sizes):
    """ValueError unless the format can hold a network of these layer sizes (checked before a
    file is made, and by the host's commands before training one)."""
    if len(sizes) - 1 > MAX_LAYERS or max(sizes) > MAX_WIDTH:
        raise ValueError("a policy file holds at most %d layers of at most %d units each; this network has %d layers, the widest %d units"
                         % (MAX_LAYERS, MAX_WIDTH, len(sizes) - 1, max(sizes)))


def replace(src, dst):
    import os

    if hasattr(os, "replace"):
        os.replace(src, dst)
        return
    try:
        os.rename(src, dst)
    except OSError:  # FAT refuses to rename over an existing file
        os.remove(dst)
        os.rename(src, dst)


def _refuse_non_file(path):
    # a device, a named pipe, a socket, a folder or a symbolic link is never replaced (nor opened:
    # a pipe blocks; the rename would replace a link itself: /dev/stdout is one)
    import os

    try:
        mode = getattr(os, "lstat", os.stat)(path)[0] & 0o170000  # (MicroPython has no lstat)
    except OSError:
        return  # nothing there
    if mode == 0o120000:
        raise NotAPolicyError("%s: a symbolic link; give the file itself (a link is never replaced by a policy)" % path)
    if mode not in (0, 0o100000):
        from .refusals import not_a_file

        raise NotAPolicyError(not_a_file(path, mode) + "; only a regular file is replaced by a policy")


def write_atomic(path, parts):
    """Write the byte strings of parts, then their CRC-32 (little-endian u32, what ends every
    policy file), to path atomically: a temporary file path.tmp, then a rename over path; a reader
    sees the old file or the new one. NotAPolicyError when path (or path.tmp) is not a regular file
    or is a symbolic link; on any failure the temporary is removed and path is untouched."""
    import os
    import struct

    from .fileformat import crc32

    tmp = path + ".tmp"
    _refuse_non_file(path)
    _refuse_non_file(tmp)
    try:
        with open(tmp, "wb") as f:
            crc = 0
            for part in parts:
                f.write(part)
                crc = crc32(part, crc)
            f.write(struct.pack("<I", crc & 0xFFFFFFFF))
            try:
                f.flush()
                os.fsync(f.fileno())
            except (AttributeError, OSError):
                pass  # MicroPython: close() commits
        _refuse_non_file(path)  # again: something put there while writing is not replaced either
        replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise
    return path
