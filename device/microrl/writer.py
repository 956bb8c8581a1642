# Writing policy files, both formats (float: policy.py, int16: fixedpoint.py): the header's flags
# and version, the float format's bytes, the atomic replace. Imported when a file is written: a
# board that only loads policies never holds this code (fileformat.py has what readers need).
import struct
import sys

from .fileformat import FIXED, blocks_of, check_values, crc32


def flags_of(policy):
    """The header's flags for a policy (float or int16): which optional blocks it has (1
    normalisation, 2 scaling, 4 input clipping, 8 action clipping), 16 for reference vectors."""
    flags = 0
    for i, name in enumerate(("obs_mean", "act_scale", "in_low", "act_low", "references")):
        if getattr(policy, name, None) is not None:
            flags |= 1 << i
    return flags


def version_for(flags):
    """The oldest format version that holds these flags: version 1 files load in every microrl,
    version 2 (flags 4, 8, 16) in those from version 2 on."""
    return 1 if flags & ~3 == 0 else 2


def pack_fixed(magic, version, header_len, total, L, flags):
    return struct.pack("<4sHHIBBH", magic, version, header_len, total, L, flags, 0)


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


def _le_bytes(block):
    # float32 little-endian bytes of an array('f'); Policy keeps every block float32
    if sys.byteorder == "big":  # pragma: no cover - every supported board is little-endian
        from array import array

        block = array("f", block)
        block.byteswap()
    return memoryview(block)


def _float_parts(policy):
    """The float format's file before its CRC, in parts (bytes or memoryviews)."""
    from .layout import param_count

    L = len(policy.acts)
    flags = flags_of(policy)
    body = struct.pack("<%dH%dB" % (L + 1, L), *(list(policy.sizes) + list(policy.acts)))
    header_len = (FIXED + len(body) + 3) & ~3
    names = [name for name, _ in blocks_of(31, policy.sizes) if getattr(policy, name, None) is not None]
    tail = reference_section(policy)
    n_floats = param_count(policy.sizes) + sum(len(getattr(policy, name)) for name in names)
    total = header_len + 4 * n_floats + len(tail) + 4
    head = pack_fixed(b"MRLP", version_for(flags), header_len, total, L, flags) + body + bytes(header_len - FIXED - len(body))
    return [head] + [_le_bytes(getattr(policy, name)) for name in names] + [_le_bytes(policy.params), tail]


def save(path, policy):
    """policy.save: write a float policy atomically (a temporary file, then a rename)."""
    check_values(policy, "%s not written" % path)
    parts = _float_parts(policy)
    tmp = path + ".tmp"
    crc = 0
    with open(tmp, "wb") as f:
        for data in parts:
            f.write(data)
            crc = crc32(data, crc)
        f.write(struct.pack("<I", crc & 0xFFFFFFFF))
        try:
            f.flush()
            import os

            os.fsync(f.fileno())
        except (AttributeError, ImportError, OSError):
            pass  # MicroPython: close() commits
    replace(tmp, path)
    return path


def to_bytes(policy):
    """policy.to_bytes: a float policy's file as bytes."""
    check_values(policy, "policy")
    data = b"".join(bytes(part) for part in _float_parts(policy))
    return data + struct.pack("<I", crc32(data) & 0xFFFFFFFF)
