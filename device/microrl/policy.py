# The policy file: one binary format for a trained actor, written and read here, on the host and
# on boards alike. Format described in docs/policy-format.md. Little-endian throughout.
#
#  0  4  magic b"MRLP"            12  1  number of layers L
#  4  2  format version (1)       13  1  flags: 1 = observation normalisation, 2 = action scaling
#  6  2  header bytes H           14  2  zero
#  8  4  file bytes, CRC included 16  2*(L+1) layer sizes, then L activation codes, zero pad to H
#  H  ...  float32: [obs mean, obs std], [action scale, action offset], then the parameters
#          in the network layout (W_l [out, in] row-major, b_l) ... last 4: CRC-32 of all before.
import struct
import sys
from array import array

from .activations import GELU, NAMES, code
from .compat import zeros
from .fileformat import FIXED as _FIXED
from .fileformat import FLAG_ACT_SCALE, FLAG_OBS_NORM
from .fileformat import ChecksumError, CorruptPolicyError, InvalidValueError, NotAPolicyError, PolicyFileError, TruncatedPolicyError, UnsupportedVersionError  # noqa: F401
from .fileformat import check_header as _check_header
from .fileformat import checksum_file as _checksum_file
from .fileformat import check_values, check_zero_bytes, crc32, file_size, flags_of, pack_fixed
from .layout import layout, param_count, shape

# The backend is imported only when a Policy is built: on a board, load() takes the weights'
# contiguous block before compiling it fragments a small heap. A Policy runs its layers with the
# backend's dense kernel itself, without nn.MLP: a board that only runs policies does not load
# the training code (8 KB of heap on the unix port), which lets the 13-64-64-4 policy run in 48K.

MAGIC = b"MRLP"
VERSION = 1

class Policy:
    """A deterministic actor: obs -> action, with optional observation normalisation
    ((obs - mean) / std) and action scaling (scale * net(obs) + offset).

    policy(obs) returns an array('f') that is reused by the next call (no allocation per call):
    copy it if you keep it, or pass out= a buffer of your own."""

    def __init__(self, sizes, activations, params=None, obs_mean=None, obs_std=None, act_scale=None, act_offset=None):
        from . import backend

        if params is not None and (not isinstance(params, array) or getattr(params, "typecode", "f") != "f"):
            params = array_of(params)  # lists, and CPython's 'd' arrays
        sizes, self.acts = shape(sizes, activations)
        L = len(sizes) - 1
        self.sizes = sizes
        offsets, n = layout(sizes)
        if params is None:
            params = zeros(n)
        elif len(params) != n:
            raise ValueError("params has %d values, the layout needs %d" % (len(params), n))
        self.params = params
        self.n_params = n
        self._net = None
        # one row through each layer: (W, b, x, y, activation, z) views, made once
        B = backend.impl()
        self._dense = B.dense
        # the observation copied, normalised and checked (in C by the native module)
        self._load_input = B.load_input
        self.input_buf = zeros(sizes[0])
        x = B.matrix(self.input_buf, 0, 1, sizes[0])
        self.layers = []
        for l in range(L):
            wo, bo = offsets[l]
            n_out = sizes[l + 1]
            self.output_buf = zeros(n_out)  # the last one stays: the raw network output
            y = B.matrix(self.output_buf, 0, 1, n_out)
            z = B.matrix(zeros(n_out), 0, 1, n_out) if self.acts[l] == GELU else None
            self.layers.append((B.matrix(params, wo, n_out, sizes[l]), B.vector(params, bo, n_out), x, y, self.acts[l], z))
            x = y
        n_in, n_out = self.sizes[0], self.sizes[-1]
        self.obs_mean = _floats(obs_mean, n_in, "obs_mean")
        self.obs_std = _floats(obs_std, n_in, "obs_std")
        if (self.obs_mean is None) != (self.obs_std is None):
            raise ValueError("give both obs_mean and obs_std, or neither")
        self.act_scale = _floats(act_scale, n_out, "act_scale")
        self.act_offset = _floats(act_offset, n_out, "act_offset")
        if self.act_scale is not None and self.act_offset is None:
            self.act_offset = zeros(n_out)
        if self.act_offset is not None and self.act_scale is None:
            self.act_scale = array_of([1.0] * n_out)
        self.out = zeros(n_out)

    @property
    def net(self):
        """The network as an nn.MLP over the same parameters (built on first use: host tools)."""
        if self._net is None:
            from .nn import MLP

            self._net = MLP(self.sizes, self.acts, batch=1, trainable=False, params=self.params)
        return self._net

    @property
    def obs_dim(self):
        return self.sizes[0]

    @property
    def act_dim(self):
        return self.sizes[-1]

    def __call__(self, obs, out=None):
        """The action for obs (n_in numbers). Refuses, with a ValueError naming the index, an
        observation that is NaN, infinite or beyond float32's range once normalised."""
        x = self.input_buf
        n_in = self.sizes[0]
        if len(obs) != n_in:
            raise ValueError("observation has %d values, the policy takes %d" % (len(obs), n_in))
        i = self._load_input(obs, x, n_in, self.obs_mean, self.obs_std, 1.0)
        if i >= 0:
            from .refusals import non_finite_observation

            raise non_finite_observation(obs, i)
        dense = self._dense
        for W, b, xin, yout, act, z in self.layers:
            dense(W, b, xin, yout, 1, act, z)
        y = self.output_buf
        if out is None:
            out = self.out
        scale = self.act_scale
        if scale is None:
            for i in range(self.sizes[-1]):
                out[i] = y[i]
        else:
            offset = self.act_offset
            for i in range(self.sizes[-1]):
                out[i] = scale[i] * y[i] + offset[i]
        return out

    def describe(self):
        return "%s (%s), %d parameters" % ("-".join(str(s) for s in self.sizes), ", ".join(NAMES[a] for a in self.acts), self.n_params)


def array_of(values):
    return array("f", values)


def _floats(values, n, what):
    if values is None:
        return None
    if len(values) != n:
        raise ValueError("%s has %d values, expected %d" % (what, len(values), n))
    a = zeros(n)
    for i in range(n):
        a[i] = float(values[i])
    return a


def _header(policy):
    from .filewrite import check_shape

    check_shape(policy.sizes)
    L = len(policy.acts)
    flags = flags_of(policy)
    body = struct.pack("<%dH%dB" % (L + 1, L), *(list(policy.sizes) + list(policy.acts)))
    header_len = (_FIXED + len(body) + 3) & ~3
    n_floats = _float_count(policy.sizes, flags)
    total = header_len + 4 * n_floats + 4
    fixed = pack_fixed(MAGIC, VERSION, header_len, total, L, flags)
    return fixed + body + bytes(header_len - _FIXED - len(body))


def _float_count(sizes, flags):
    n = param_count(sizes)
    if flags & FLAG_OBS_NORM:
        n += 2 * sizes[0]
    if flags & FLAG_ACT_SCALE:
        n += 2 * sizes[-1]
    return n


def _blocks(policy):
    blocks = []
    if policy.obs_mean is not None:
        blocks += [policy.obs_mean, policy.obs_std]
    if policy.act_scale is not None:
        blocks += [policy.act_scale, policy.act_offset]
    blocks.append(policy.params)
    return blocks


def _le_bytes(block):
    # float32 little-endian bytes of an array('f'); Policy keeps every block float32
    if sys.byteorder == "big":  # pragma: no cover - every supported board is little-endian
        from array import array

        block = array("f", block)
        block.byteswap()
    return memoryview(block)


def save(path, policy):
    """Write policy to path, atomically: a reader sees the old file or the new one, never half.
    A policy with non-finite numbers is refused (InvalidValueError), so is a path that is not a
    regular file (NotAPolicyError); nothing is written then, and no temporary is left."""
    check_values(policy, "%s not written" % path)
    from .filewrite import write_atomic

    # the header first: a shape the format cannot hold fails there, before any file is made
    return write_atomic(path, [_header(policy)] + [_le_bytes(b) for b in _blocks(policy)])


def to_bytes(policy):
    check_values(policy, "policy")
    parts = [_header(policy)] + [bytes(_le_bytes(b)) for b in _blocks(policy)]
    data = b"".join(parts)
    return data + struct.pack("<I", crc32(data) & 0xFFFFFFFF)


def check_header(head, size, where="policy"):
    """Validate the first bytes of a float policy file of `size` bytes; return (header_len,
    total, L, flags). Raises the PolicyFileError subclass that says what is wrong."""
    return _check_header(head, size, where, MAGIC, VERSION, "policy")


def _read_exact(f, block, where):
    got = f.readinto(memoryview(block))
    if got != len(block) * 4:
        raise TruncatedPolicyError("%s: file ended early while reading weights" % where)
    if sys.byteorder == "big":  # pragma: no cover
        block.byteswap()


def load(path):
    """Read a policy file; returns a Policy (or a fixedpoint.QuantisedPolicy for an int16 file). Raises a PolicyFileError subclass naming the problem:
    NotAPolicyError, TruncatedPolicyError, UnsupportedVersionError, ChecksumError, CorruptPolicyError,
    InvalidValueError."""
    size = file_size(path)
    with open(path, "rb") as f:
        head = f.read(_FIXED)
        if head[:4] == b"MRLQ":  # an int16 policy (microrl export --int16): same call, integer network
            from .fixedpoint import load as load_int16

            return load_int16(path)
        header_len, total, L, flags = check_header(head, size, path)
        # the declared sizes against the file's length before reading it through
        if L < 1 or header_len != ((_FIXED + 3 * L + 2 + 3) & ~3) or flags & ~(FLAG_OBS_NORM | FLAG_ACT_SCALE):
            raise CorruptPolicyError("%s: inconsistent header (%d layers, %d header bytes, flags %d)" % (path, L, header_len, flags))
        f.seek(_FIXED)
        fields = struct.unpack("<%dH%dB" % (L + 1, L), f.read(3 * L + 2))
        sizes = list(fields[: L + 1])
        acts = list(fields[L + 1 :])
        if min(sizes) < 1 or max(acts) >= len(NAMES):
            raise CorruptPolicyError("%s: invalid layer sizes %r or activation codes %r" % (path, sizes, acts))
        if header_len + 4 * _float_count(sizes, flags) + 4 != total:
            raise CorruptPolicyError("%s: header sizes do not add up to the file length" % path)
        _checksum_file(f, size, path)
        check_zero_bytes(f, header_len, 3 * L + 2, path)
        if sys.implementation.name == "micropython":
            # free the checksum's temporaries now, so that the small objects below fill the low
            # holes and the weights' block finds the heap's top unsplit (48K heap, 13-64-64-4)
            import gc

            gc.collect()
        n_in, n_out = sizes[0], sizes[-1]
        kwargs = {}
        if flags & FLAG_OBS_NORM:
            kwargs["obs_mean"] = zeros(n_in)
            kwargs["obs_std"] = zeros(n_in)
        if flags & FLAG_ACT_SCALE:
            kwargs["act_scale"] = zeros(n_out)
            kwargs["act_offset"] = zeros(n_out)
        params = zeros(param_count(sizes))  # the big block first, while the heap is whole
        policy = Policy(sizes, [code(a) for a in acts], params=params, **kwargs)
        f.seek(header_len)
        for block in _blocks(policy):
            _read_exact(f, block, path)
    check_values(policy, path)
    return policy
