# What the two policy file formats share (float: policy.py, b"MRLP"; int16: fixedpoint.py,
# b"MRLQ"): the 16-byte fixed header, its checks, the errors a reader raises, the CRC-32 that
# ends every file (and frames the serial protocol), and the atomic replace of a written file.
#
#  0  4  magic                    12  1  number of layers L
#  4  2  format version (1)       13  1  flags: 1 = observation normalisation, 2 = action scaling
#  6  2  header bytes H           14  2  zero
#  8  4  file bytes, CRC included
import struct

FIXED = 16  # bytes of the fixed header
FLAG_OBS_NORM = 1
FLAG_ACT_SCALE = 2
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


def flags_of(policy):
    """The header's flags for a policy (float or int16) with or without normalisation/scaling."""
    return (FLAG_OBS_NORM if policy.obs_mean is not None else 0) | (FLAG_ACT_SCALE if policy.act_scale is not None else 0)


def pack_fixed(magic, version, header_len, total, L, flags):
    return struct.pack("<4sHHIBBH", magic, version, header_len, total, L, flags, 0)


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
    normalisation or scaling, or an observation std that is not positive: InvalidValueError
    naming the first bad number (of a Policy, or of a QuantisedPolicy's floats)."""
    std = policy.obs_std
    for block in (policy.obs_mean, std, policy.act_scale, policy.act_offset, getattr(policy, "params", None)):
        if block is not None:
            for v in block:
                # v - v: nan for nan and inf; a std below the smallest normal float32 (a
                # subnormal, or zero) makes (obs - mean) / std overflow, and the actions NaN
                if v - v != 0.0 or (block is std and not v >= 1.1754943508222875e-38):
                    from .refusals import invalid_values

                    raise InvalidValueError(invalid_values(policy, where))


def check_header(head, size, where="policy", magic=b"MRLP", version=1, kind="policy"):
    """Validate the first bytes of a file of `size` bytes of the format with this magic and
    version (kind names it in messages); return (header_len, total, L, flags). Raises the
    PolicyFileError subclass that says what is wrong."""
    if size == 0:
        raise TruncatedPolicyError("%s: empty file, not a whole policy" % where)
    n = min(len(head), 4)
    if head[:n] != magic[:n]:
        raise NotAPolicyError("%s: not a microrl %s file (its first bytes are %r, expected %r)" % (where, kind, bytes(head[:4]), magic))
    if len(head) < FIXED:
        raise TruncatedPolicyError("%s: truncated: %d bytes, shorter than the %d-byte header" % (where, size, FIXED))
    _, found, header_len, total, L, flags, _ = struct.unpack("<4sHHIBBH", head[:FIXED])
    if found != version:
        raise UnsupportedVersionError("%s: %s format version %d; this microrl reads version %d (update microrl or re-export the policy)" % (where, kind, found, version))
    if size < total:
        raise TruncatedPolicyError("%s: truncated: %d bytes of %d" % (where, size, total))
    if size > total:
        raise CorruptPolicyError("%s: %d bytes where the header says %d (extra data after the policy)" % (where, size, total))
    return header_len, total, L, flags


def check_zero_bytes(f, header_len, meta_len, where):
    # the reserved bytes 14-15 and the header's padding must be zero (every writer wrote zeros);
    # checked after the checksum: a damaged file is a ChecksumError first
    f.seek(14)
    bad = any(f.read(2))
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
