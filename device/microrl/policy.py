# The policy file: one binary format for a trained actor, written and read here, on the host and
# on boards alike. Format described in docs/policy-format.md. Little-endian throughout.
#
#  0  4  magic b"MRLP"            12  1  number of layers L
#  4  2  format version (1 or 2)  13  1  flags: 1 = observation normalisation, 2 = action scaling,
#  6  2  header bytes H                  4 = input clipping, 8 = action clipping, 16 = references
#  8  4  file bytes, CRC included 14  2  zero; version 3: pending actions (fileformat.py)
# 16  2*(L+1) layer sizes, then L activation codes, zero pad to H
#  H  ...  float32: [obs mean, obs std], [action scale, action offset], [input low, input high],
#          [action low, action high], then the parameters in the network layout (W_l [out, in]
#          row-major, b_l), then the reference section (references.py) ... last 4: CRC-32.
import struct
import sys
from array import array

from .activations import GELU, NAMES, code
from .compat import clip, zeros
from .fileformat import FIXED as _FIXED
from .fileformat import FLOAT32_MAX, NEG_FLOAT32_MAX
from .fileformat import ChecksumError, CorruptPolicyError, InvalidValueError, NotAPolicyError, PolicyFileError, TruncatedPolicyError, UnsupportedVersionError  # noqa: F401
from .fileformat import check_header as _check_header
from .fileformat import checksum_file as _checksum_file
from .fileformat import blocks_of, check_values, check_zero_bytes, crc32, file_size, references_bytes, refuse  # noqa: F401 (crc32: policy.crc32, as before)
from .layout import layout, param_count, shape

# The backend is imported only when a Policy is built: on a board, load() takes the weights'
# contiguous block before compiling it fragments a small heap. A Policy runs its layers with the
# backend's dense kernel itself, without nn.MLP: a board that only runs policies does not load
# the training code (8 KB of heap on the unix port), which lets the 13-64-64-4 policy run in 48K.

MAGIC = b"MRLP"

class Policy:
    """A deterministic actor: obs -> action, with optional observation normalisation
    (x = (obs - mean) / std), input clipping (x clipped to [in_low, in_high]), action scaling
    (scale * net(x) + offset) and action clipping (to [act_low, act_high]).

    policy(obs) returns an array('f') that is reused by the next call (no allocation per call):
    copy it if you keep it, or pass out= a buffer of your own. references: a
    references.References that save() writes into the file (a loaded policy has none: its
    file's are checked by load(path, check=True) without being kept).

    pending: a policy trained under an action delay of that many control steps takes the task's
    observation followed by the commands sent but not yet applied (microrl.perturb.
    pending_actions; microrl.task.policy_env runs it so); its file says so (format version 3)."""

    # what most policies do not have: class defaults, so that their instances hold nothing for it
    in_low = act_low = None  # with in_high, act_high when set
    reference_count = 0  # load(): how many reference vectors the file holds (at its end)
    pending = 0  # steps of pending actions in the input after the task's observation

    def __init__(self, sizes, activations, params=None, obs_mean=None, obs_std=None, act_scale=None, act_offset=None,
                 in_low=None, in_high=None, act_low=None, act_high=None, references=None):
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
        # every layer's outputs in one buffer, the last layer's (the raw network output) at its end
        width = sum(sizes[1:])
        self._values = zeros(width)
        self._out_at = width - sizes[-1]
        self.layers = []
        at = 0
        for l in range(L):
            wo, bo = offsets[l]
            n_out = sizes[l + 1]
            y = B.matrix(self._values, at, 1, n_out)
            z = B.matrix(zeros(n_out), 0, 1, n_out) if self.acts[l] == GELU else None
            self.layers.append((B.matrix(params, wo, n_out, sizes[l]), B.vector(params, bo, n_out), x, y, self.acts[l], z))
            x = y
            at += n_out
        self._width = width
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
        if in_low is not None or in_high is not None:  # both or neither: () has the wrong length
            self.in_low, self.in_high = _floats(() if in_low is None else in_low, n_in, "in_low"), _floats(() if in_high is None else in_high, n_in, "in_high")
        if act_low is not None or act_high is not None:
            self.act_low, self.act_high = _floats(() if act_low is None else act_low, n_out, "act_low"), _floats(() if act_high is None else act_high, n_out, "act_high")
        if references is not None:
            self.references = references
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
        observation that is NaN, infinite or beyond float32's range once normalised, and one so
        far out that a value inside the network (or an action) overflows float32: the same on
        every backend."""
        x = self.input_buf
        n_in = self.sizes[0]
        if len(obs) != n_in:
            raise ValueError("observation has %d values, the policy takes %d" % (len(obs), n_in))
        i = self._load_input(obs, x, n_in, self.obs_mean, self.obs_std, 1.0)
        if i >= 0:
            from .refusals import non_finite_observation

            raise non_finite_observation(obs, i)
        if self.in_low is not None:  # clipped after the normalisation (VecNormalize's clip_obs)
            clip(x, self.in_low, self.in_high, n_in)
        dense = self._dense
        for W, b, xin, yout, act, z in self.layers:
            dense(W, b, xin, yout, 1, act, z)
        # the overflow guard: every value inside the network finite, checked by the input's own
        # check (in place, in C with the native module: no allocation). A finite observation far
        # enough out (-3.4e38) overflows float32 inside the network, and backends that compute
        # alike otherwise then differ (NaN in one, a finite number where a relu maps NaN to 0):
        # so every backend refuses it.
        i = self._load_input(self._values, self._values, self._width, None, None, 1.0)
        if i >= 0:
            self._overflow(obs, i)
        lo, hi = NEG_FLOAT32_MAX, FLOAT32_MAX
        y = self._values
        at = self._out_at
        if out is None:
            out = self.out
        scale = self.act_scale
        if scale is None:
            for i in range(self.sizes[-1]):
                out[i] = y[at + i]
        else:
            offset = self.act_offset
            for i in range(self.sizes[-1]):
                v = scale[i] * y[at + i] + offset[i]
                if not lo <= v <= hi:  # a finite output, scaled beyond float32
                    self._overflow(obs, self._width)
                out[i] = v
        if self.act_low is not None:  # clipped after the scaling (SB3's PPO clips its mean to the Box)
            clip(out, self.act_low, self.act_high, self.sizes[-1])
        return out

    def _overflow(self, obs, at):
        """Raise the ValueError for an observation whose forward pass leaves float32's range at
        index `at` of the network's values (past them: in the action scaling)."""
        from .refusals import overflowing_observation

        layer = 0
        for n in self.sizes[1:]:
            if at < n:
                break
            at -= n
            layer += 1
        raise overflowing_observation(obs, layer, len(self.sizes) - 1)

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


def save(path, policy):
    """Write policy to path, atomically: a reader sees the old file or the new one, never half.
    A policy with non-finite numbers is refused (InvalidValueError), so is a path that is not a
    regular file (NotAPolicyError); nothing is written then, and no temporary is left."""
    from .filewrite import save

    return save(path, policy)


def to_bytes(policy):
    """The bytes of the policy's file."""
    from .filewrite import to_bytes

    return to_bytes(policy)


def check_header(head, size, where="policy"):
    """Validate the first bytes of a float policy file of `size` bytes; return (header_len,
    total, L, flags, version). Raises the PolicyFileError subclass that says what is wrong."""
    return _check_header(head, size, where, MAGIC, 3, "policy")


def _read_exact(f, block, where):
    got = f.readinto(memoryview(block))
    if got != len(block) * 4:
        raise TruncatedPolicyError("%s: file ended early while reading weights" % where)
    if sys.byteorder == "big":  # pragma: no cover
        block.byteswap()


def load(path, check=False, tolerance=None):
    """Read a policy file; returns a Policy (or a fixedpoint.QuantisedPolicy for an int16 file). Raises a PolicyFileError subclass naming the problem:
    NotAPolicyError, TruncatedPolicyError, UnsupportedVersionError, ChecksumError, CorruptPolicyError,
    InvalidValueError.

    check=True runs the policy on the reference observations the file carries and compares its
    actions with the stored ones (references.check): ReferenceMismatchError names the largest
    difference and the tolerance (the file's, or `tolerance`) when they disagree,
    MissingReferencesError when the file has none. The largest difference is then the policy's
    reference_difference."""
    size = file_size(path)
    with open(path, "rb") as f:
        head = f.read(_FIXED)
        if head[:4] == b"MRLQ":  # an int16 policy (microrl export --int16): same call, integer network
            from .fixedpoint import load as load_int16

            return load_int16(path, check, tolerance)
        header_len, total, L, flags, version = check_header(head, size, path)
        # the declared sizes against the file's length before reading it through
        if L < 1 or header_len != ((_FIXED + 3 * L + 2 + 3) & ~3):
            refuse(CorruptPolicyError, "header", path, L, header_len, flags)
        f.seek(_FIXED)
        fields = struct.unpack("<%dH%dB" % (L + 1, L), f.read(3 * L + 2))
        sizes = list(fields[: L + 1])
        acts = list(fields[L + 1 :])
        if min(sizes) < 1 or max(acts) >= len(NAMES):
            refuse(CorruptPolicyError, "layers", path, sizes, acts)
        blocks = blocks_of(flags, sizes)
        end = header_len + 4 * (param_count(sizes) + sum(n for _, n in blocks))
        if flags & 16:  # reference vectors
            end += references_bytes(f, end, total, sizes, path)
        if end + 4 != total:
            refuse(CorruptPolicyError, "sizes", path)
        _checksum_file(f, size, path)
        check_zero_bytes(f, header_len, 3 * L + 2, path, version)
        if sys.implementation.name == "micropython":
            # free the checksum's temporaries now, so that the small objects below fill the low
            # holes and the weights' block finds the heap's top unsplit (48K heap, 13-64-64-4)
            import gc

            gc.collect()
        params = zeros(param_count(sizes))  # the big block first, while the heap is whole
        kwargs = {}
        for name, n in blocks:
            kwargs[name] = zeros(n)
        policy = Policy(sizes, [code(a) for a in acts], params=params, **kwargs)
        if version > 2:  # pending actions (after the weights' block: a small heap)
            from .perturb import pending_of

            policy.pending = pending_of(head, sizes, path)
        f.seek(header_len)
        for name, _ in blocks:
            _read_exact(f, getattr(policy, name), path)
        _read_exact(f, params, path)
        if flags & 16:
            policy.reference_count = struct.unpack("<I", f.read(4))[0]
        check_values(policy, path)
        if check:
            from .references import check

            check(policy, f, path, tolerance)
    return policy
