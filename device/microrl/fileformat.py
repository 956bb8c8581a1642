# What the two policy file formats share (float: policy.py, b"MRLP"; int16: fixedpoint.py,
# b"MRLQ"): the 16-byte fixed header, its checks, the errors a reader raises, the CRC-32 that
# ends every file (and frames the serial protocol). What only writers need is in filewrite.py: a
# board that only loads policies does not hold it.
#
#  0  4  magic                    12  1  number of layers L
#  4  2  format version (1 or 2)  13  1  flags: 1 = observation normalisation, 2 = action scaling,
#  6  2  header bytes H                  4 = input clipping, 8 = action clipping, 16 = references
#  8  4  file bytes, CRC included 14  2  zero (version 3: pending actions, below)
# Version 2 is version 1 with the flags 4, 8 and 16; a file that needs none of them is written as
# version 1, so that an older microrl still loads it (and names a version 2 file as newer).
# Version 3 is version 2 with bytes 14-15 the policy's pending actions d (1..32, a u16): trained
# under an action delay of d control steps, it takes the task's observation followed by the d
# commands sent but not yet applied (d * n_out numbers, the oldest first, in [-1, 1] units).
import struct

FIXED = 16  # bytes of the fixed header
# float32's largest finite value: a policy's input (after its normalisation) must lie within it
FLOAT32_MAX = 3.4028234663852886e38
NEG_FLOAT32_MAX = -3.4028234663852886e38

try:
    from binascii import crc32
except ImportError:  # pragma: no cover - ports without binascii.crc32

    def crc32(data, crc=0):
        crc ^= 0xFFFFFFFF
        for byte in bytes(data):
            crc ^= byte
            for _ in range(8):
                crc = (crc >> 1) ^ (0xEDB88320 & -(crc & 1))
        return crc ^ 0xFFFFFFFF


class PolicyFileError(ValueError):
    """A file that cannot be loaded as a policy; the subclass says why."""


class NotAPolicyError(PolicyFileError):
    pass


class TruncatedPolicyError(PolicyFileError):
    pass


class ChecksumError(PolicyFileError):
    pass


class UnsupportedVersionError(PolicyFileError):
    pass


class CorruptPolicyError(PolicyFileError):
    pass


class InvalidValueError(PolicyFileError):
    """Numbers a policy cannot run with: NaN or infinite values, a std that is not positive."""


def blocks_of(flags, sizes):
    """[(name, values)] of the optional float blocks before the network that a file with these flags
    holds, in file order (flags 31: all of them). Block i is there when the flag 1 << (i >> 1) is set
    (1 normalisation, 2 scaling, 4 input clipping, 8 action clipping); obs_* and in_* hold n_in
    values, act_* n_out. Flag 16: the reference section after the network."""
    # one string, split when asked: a tuple of names would stay on the heap (half a KB here)
    names = "obs_mean obs_std act_scale act_offset in_low in_high act_low act_high".split()
    return [(names[i], sizes[-1] if names[i][0] == "a" else sizes[0]) for i in range(8) if flags & (1 << (i >> 1))]


def references_bytes(f, size, total, sizes, where):
    """Bytes of the reference section at offset `size` (the size of the file before it; its count
    read from the file); CorruptPolicyError when they do not fit the file's length."""
    n = -1
    if size + 12 <= total:
        f.seek(size)
        count = struct.unpack("<I", f.read(4))[0]
        if count:
            n = 8 + 4 * count * (sizes[0] + sizes[-1])
    if n < 0 or size + n + 4 != total:
        refuse(CorruptPolicyError, "references", where)
    return n


def file_size(path):
    """Size of the regular file at path; NotAPolicyError for anything else (a named pipe would
    block the first read for ever, a device never end). Mode 0: a port whose stat does not say."""
    import os

    st = os.stat(path)
    if st[0] & 0o170000 not in (0, 0o100000):
        from .refusals import not_a_file

        raise NotAPolicyError(not_a_file(path, st[0]))
    return st[6]


def check_values(policy, where):
    """Refuse a policy that cannot give finite actions: NaN or infinite weights, biases,
    normalisation, scaling or clipping, an observation std below the smallest normal float32, or a clipping
    range whose low is above its high: InvalidValueError naming the first bad number (of a
    Policy, or of a QuantisedPolicy's floats)."""
    std = policy.obs_std
    bad = False
    for name, _ in blocks_of(31, policy.sizes) + [("params", 0)]:
        block = getattr(policy, name, None)
        if block is not None:
            for i in range(len(block)):
                v = block[i]
                # v - v: nan for nan and inf; a std below the smallest normal float32 (a subnormal, or
                # zero) makes (obs - mean) / std overflow, and the actions NaN; a clipping range's
                # low must not be above its high
                if v - v != 0.0 or (block is std and not v >= 1.1754943508222875e-38) or (name[-4:] == "_low" and v > getattr(policy, name[:-3] + "high")[i]):
                    bad = True
    if bad:
        from .refusals import invalid_values

        raise InvalidValueError(invalid_values(policy, where))


def refuse(cls, why, *values):
    """Raise cls (a PolicyFileError) with the message refusals.HEADER[why] % values: the texts live
    in refusals.py, which a board imports only when it refuses a file."""
    from .refusals import HEADER

    raise cls(HEADER[why] % values)


def check_header(head, size, where="policy", magic=b"MRLP", version=2, kind="policy"):
    """Validate the first bytes of a file of `size` bytes of the format with this magic and a
    version from 1 to `version` (kind names it in messages); return (header_len, total, L, flags,
    found version). Raises the PolicyFileError subclass that says what is wrong."""
    if size == 0:
        refuse(TruncatedPolicyError, "empty", where)
    n = min(len(head), 4)
    if head[:n] != magic[:n]:
        refuse(NotAPolicyError, "magic", where, kind, bytes(head[:4]), magic)
    if len(head) < FIXED:
        refuse(TruncatedPolicyError, "short", where, size, FIXED)
    _, found, header_len, total, L, flags, _ = struct.unpack("<4sHHIBBH", head[:FIXED])
    if not 1 <= found <= version:
        refuse(UnsupportedVersionError, "version", where, kind, found, version)
    if size < total:
        refuse(TruncatedPolicyError, "truncated", where, size, total)
    if size > total:
        refuse(CorruptPolicyError, "long", where, size, total)
    if flags & ~(3 if found == 1 else 31):  # version 2 added the flags 4, 8 and 16
        refuse(CorruptPolicyError, "flags", where, flags, found)
    return header_len, total, L, flags, found



def check_zero_bytes(f, header_len, meta_len, where, version=1):
    # the reserved bytes 14-15 (before version 3) and the header's padding must be zero (every
    # writer wrote zeros); checked after the checksum: a damaged file is a ChecksumError first
    f.seek(14)
    bad = any(f.read(2)) and version < 3
    f.seek(FIXED + meta_len)
    if bad or any(f.read(header_len - FIXED - meta_len)):
        from .refusals import not_zero

        raise CorruptPolicyError(not_zero(where))


def checksum_file(f, size, where):
    buf = bytearray(256)
    mv = memoryview(buf)
    remaining = size - 4
    crc = 0
    f.seek(0)
    while remaining > 0:
        k = f.readinto(mv[: min(256, remaining)])
        if not k:
            raise TruncatedPolicyError("%s: file ended early while reading" % where)
        crc = crc32(mv[:k], crc)
        remaining -= k
    stored = struct.unpack("<I", f.read(4))[0]
    if (crc & 0xFFFFFFFF) != stored:
        raise ChecksumError("%s: checksum mismatch (stored %08x, computed %08x): the file is damaged" % (where, stored, crc & 0xFFFFFFFF))
