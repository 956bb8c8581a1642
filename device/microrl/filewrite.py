# Writing policy files, both formats (float: policy.py, int16: fixedpoint.py): the shapes the
# header can hold, its flags and version, the float format's bytes, the atomic replace of a
# written file. Its own module, imported only by save and to_bytes, so that a board that only
# loads and runs a policy does not hold this code (fileformat.py has what readers need; a board
# that loads the 13-64-64-4 policy in a 52K heap has no byte to spare).
import struct
import sys

from .fileformat import FIXED, NotAPolicyError, blocks_of, check_values, crc32

MAX_LAYERS = 255  # the header's u8 layer count
MAX_WIDTH = 65535  # a layer size is a u16


def check_shape(sizes):
    """ValueError unless the format can hold a network of these layer sizes (checked before a
    file is made, and by the host's commands before training one)."""
    if len(sizes) - 1 > MAX_LAYERS or max(sizes) > MAX_WIDTH:
        raise ValueError("a policy file holds at most %d layers of at most %d units each; this network has %d layers, the widest %d units"
                         % (MAX_LAYERS, MAX_WIDTH, len(sizes) - 1, max(sizes)))


def flags_of(policy):
    """The header's flags for a policy (float or int16): which optional blocks it has (1
    normalisation, 2 scaling, 4 input clipping, 8 action clipping), 16 for reference vectors."""
    flags = 0
    for i, name in enumerate(("obs_mean", "act_scale", "in_low", "act_low", "references")):
        if getattr(policy, name, None) is not None:
            flags |= 1 << i
    return flags


def version_for(flags, pending=0):
    """The oldest format version that holds these flags and pending actions: version 1 files
    load in every microrl, version 2 (flags 4, 8, 16) in those from version 2 on, version 3
    (pending actions) from version 3 on."""
    if pending:
        return 3
    return 1 if flags & ~3 == 0 else 2


def pack_fixed(magic, version, header_len, total, L, flags, pending=0):
    return struct.pack("<4sHHIBBH", magic, version, header_len, total, L, flags, pending)


def reference_section(policy):
    """The reference section's bytes (b"" for a policy without references)."""
    if getattr(policy, "references", None) is None:
        return b""
    from .references import section

    return section(policy.references, policy.sizes)


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

    _refuse_non_file(path)
    tmp, f = _temporary(os, path)
    try:
        with f:
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
    except BaseException as e:
        try:
            os.remove(tmp)
        except OSError:
            pass
        if isinstance(e, OSError) and getattr(e, "filename", 0) is None and getattr(e, "strerror", None):
            raise OSError(e.errno, e.strerror, path) from None  # a full disk: say which file was not written
        raise
    return path


_made = [0]  # temporaries made by this process (their names' last part)


def _temporary(os, path):
    """(name, open file) of a new temporary beside path. CPython: a name of this process's own,
    made with O_EXCL, so that two processes saving one path at once never write into one
    temporary (the file renamed in place is one of them, whole). MicroPython: path.tmp, after
    the check that it is no pipe or device (a board runs one program)."""
    if not hasattr(os, "getpid") or not hasattr(os, "O_EXCL"):
        tmp = path + ".tmp"
        _refuse_non_file(tmp)
        return tmp, open(tmp, "wb")
    while True:
        _made[0] += 1
        tmp = "%s.%d-%d.tmp" % (path, os.getpid(), _made[0])
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
        except FileExistsError:
            continue
        except OSError as e:
            if e.filename is None:
                raise OSError(e.errno, e.strerror, path) from None
            raise
        return tmp, os.fdopen(fd, "wb")


def _le_bytes(block):
    # float32 little-endian bytes of an array('f'); Policy keeps every block float32
    if sys.byteorder == "big":  # pragma: no cover - every supported board is little-endian
        from array import array

        block = array("f", block)
        block.byteswap()
    return memoryview(block)


def _float_parts(policy):
    """The float format's file before its CRC, in parts (bytes or memoryviews); ValueError for a
    shape the format cannot hold, before any part is made."""
    from .layout import param_count

    check_shape(policy.sizes)
    L = len(policy.acts)
    flags = flags_of(policy)
    body = struct.pack("<%dH%dB" % (L + 1, L), *(list(policy.sizes) + list(policy.acts)))
    header_len = (FIXED + len(body) + 3) & ~3
    names = [name for name, _ in blocks_of(31, policy.sizes) if getattr(policy, name, None) is not None]
    tail = reference_section(policy)
    n_floats = param_count(policy.sizes) + sum(len(getattr(policy, name)) for name in names)
    total = header_len + 4 * n_floats + len(tail) + 4
    pending = getattr(policy, "pending", 0)
    if pending and not (1 <= pending <= 32 and pending * policy.sizes[-1] < policy.sizes[0]):
        raise ValueError("a policy of %d inputs and %d outputs cannot take %d steps of pending actions" % (policy.sizes[0], policy.sizes[-1], pending))
    head = pack_fixed(b"MRLP", version_for(flags, pending), header_len, total, L, flags, pending) + body + bytes(header_len - FIXED - len(body))
    return [head] + [_le_bytes(getattr(policy, name)) for name in names] + [_le_bytes(policy.params), tail]


def save(path, policy):
    """policy.save: write a float policy atomically (write_atomic)."""
    check_values(policy, "%s not written" % path)
    return write_atomic(path, _float_parts(policy))


def to_bytes(policy):
    """policy.to_bytes: a float policy's file as bytes."""
    check_values(policy, "policy")
    data = b"".join(bytes(part) for part in _float_parts(policy))
    return data + struct.pack("<I", crc32(data) & 0xFFFFFFFF)
