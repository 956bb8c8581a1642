# Fixed-point policies: int16 weights and activations with per-layer power-of-two scales, run
# with integer arithmetic only -- by the native module's C kernel where microrl_kernels.mpy is
# installed (microrl_kernels.dense_int16), else by @micropython.viper code on MicroPython
# (_fixedpoint_viper.py), else by the plain integer code below (CPython, ports without viper). All
# three give the same integers bit for bit. No ulab, no float math inside the network.
#
# Numbers: a value v with F fractional bits is stored as round(v * 2**F). Layer l has weights with
# Fw[l] fractional bits, inputs with Fx[l], outputs with Fx[l + 1]; its accumulator
# b + sum(W * x) has Fa = Fw + Fx bits and stays below 2**31 for ANY int16 input, rounding
# included (the quantiser bounds each row's sum of |W|, QuantisedPolicy refuses weights that break
# the bound and shifts outside [-31, 31]), so 32-bit boards cannot overflow and every kernel gives
# the exact integers. relu and identity rescale by a shift; tanh, sigmoid and gelu go through two
# 513-entry Q14 tables (tanh and the normal CDF on [0, 8], step 1/64, linear interpolation).
#
# File format (little-endian; CRC and errors as the float policy file, docs/fixedpoint.md):
#   0  4 magic b"MRLQ"   4 2 version (1 or 2)   6 2 header bytes H   8 4 file bytes, CRC included
#  12  1 layers L       13 1 flags as the float format's (1 obs normalisation, 2 action scaling,
#  14  2 zero                4 input clipping, 8 action clipping, 16 references; version 2 for 4-16)
#  16  2*(L+1) sizes, L activation codes, L+1 int8 Fx, L int8 Fw, zero pad to H
#   H  float32 [obs mean, obs std], [action scale, action offset], [input low, input high], [action
#      low, action high]; then per layer int32 b[out], int16 W[out, in] row-major, zero pad to 4;
#      then the reference section (references.py); last 4 bytes: CRC-32 of all before.
import struct
import sys
from array import array

from .activations import GELU, IDENTITY, NAMES, RELU, SIGMOID, TANH
from .compat import clip, zeros
from .fileformat import FIXED as _FIXED
from .fileformat import FLOAT32_MAX, NEG_FLOAT32_MAX
from .fileformat import CorruptPolicyError, TruncatedPolicyError, blocks_of, refuse, check_header, check_values, check_zero_bytes, checksum_file, crc32, file_size, references_bytes
from .layout import layout

MAGIC = b"MRLQ"
VERSION = 3  # 3: pending actions (fileformat.py), as the float format
Q = 14  # fractional bits of the tables and of the table-activations' arguments
TABLE_STEP_BITS = 6  # table step 1/64
TABLE_N = 513  # [0, 8] inclusive
_ACC_LIMIT = 2**31 - 1
_INT16_MAX = 32767
MAX_SHIFT = 31  # every rescaling shift stays within a 32-bit word

# the native module's C kernel where microrl_kernels.mpy is installed, imported when a policy is
# first built (as policy.py's backend: on a board, load() takes the weights' blocks while the
# heap is whole); None where it is missing or was built before it had dense_int16
layer_native = _load_input_native = None
_native_tried = False


def _find_native():
    global layer_native, _load_input_native, _native_tried
    if not _native_tried:
        _native_tried = True
        try:
            from microrl_kernels import dense_int16, load_input

            layer_native, _load_input_native = dense_int16, load_input
        except Exception:  # ImportError; ValueError: a module of another architecture or .mpy version
            pass
    return layer_native

# @micropython.viper kernels where the port has the viper emitter
try:
    from . import _fixedpoint_viper as _viper
except Exception:  # CPython (no viper), ports without the viper emitter
    _viper = None

_chosen = None  # use()'s choice; None: the fastest here


def available():
    """The integer kernels present here, fastest first: 'native', 'viper', 'plain'."""
    return [name for name, ok in (("native", _find_native() is not None), ("viper", _viper is not None), ("plain", True)) if ok]


def use(name=None):
    """Run policies built from now on with this integer kernel ('native', 'viper', 'plain'), or the
    fastest present when name is None. Returns its name. All give the same integers."""
    global _chosen
    if name is not None and name not in available():
        raise ValueError("integer kernel %r is not available here (%s are)" % (name, ", ".join(available())))
    _chosen = name
    return implementation()


def implementation():
    """'native', 'viper' or 'plain': which integer kernel a policy built now runs."""
    return _chosen or available()[0]


def _kernel(name):
    if name == "native":
        return layer_native
    if name == "viper":
        return _viper.layer
    return layer_plain


def _tables():
    """(tanh, normal CDF) on [0, 8] with step 1/64, in Q14, as array('h')."""
    from math import erf, tanh

    t = array("h", range(TABLE_N))
    p = array("h", range(TABLE_N))
    for k in range(TABLE_N):
        x = k / 64.0
        t[k] = int(tanh(x) * 16384 + 0.5)
        p[k] = int(0.5 * (1.0 + erf(x * 0.7071067811865476)) * 16384 + 0.5)
    return t, p


_TABLES = None


def tables():
    global _TABLES
    if _TABLES is None:
        _TABLES = _tables()
    return _TABLES


# ---- the plain integer kernel: the reference; the viper one must give the same integers ----


def _shift_round(v, s, limit):
    # v * 2**-s, rounded half up when s > 0; saturated at +-limit when s < 0 (a left shift)
    if s > 0:
        return (v + (1 << (s - 1))) >> s
    if s < 0:
        m = limit >> -s
        if v > m:
            return limit
        if v < -m:
            return -limit
        return v << -s
    return v


def _lookup(T, a):
    # table value at a >= 0 (Q14), linear interpolation between the 1/64 steps
    k = a >> (Q - TABLE_STEP_BITS)
    if k >= TABLE_N - 1:
        return T[TABLE_N - 1]
    frac = a & ((1 << (Q - TABLE_STEP_BITS)) - 1)
    t0 = T[k]
    return t0 + (((T[k + 1] - t0) * frac) >> (Q - TABLE_STEP_BITS))


def _act14(act, x14, T, P):
    # f(x) in Q14 for x in Q14 (|x14| < 2**21 by the caller's clamp)
    if act == TANH:
        if x14 >= 0:
            return _lookup(T, x14)
        return -_lookup(T, -x14)
    if act == SIGMOID:  # (1 + tanh(x / 2)) / 2
        h = x14 >> 1
        t = _lookup(T, h) if h >= 0 else -_lookup(T, -h)
        return (16384 + t) >> 1
    # GELU: x * Phi(x)
    if x14 >= 8 << Q:
        return x14
    if x14 <= -(8 << Q):
        return 0
    p = _lookup(P, x14) if x14 >= 0 else 16384 - _lookup(P, -x14)
    return ((x14 >> 1) * p) >> (Q - 1)


def layer_plain(W, b, x, y, n_in, n_out, act, s_out, s_14, s_14_out, T, P):
    """One quantised dense layer: y = sat16(act(b + W @ x) rescaled). s_out = Fa - Fy (relu and
    identity), s_14 = Fa - 14 and s_14_out = 14 - Fy (table activations); a negative shift is a
    saturating left shift."""
    k = 0
    for o in range(n_out):
        acc = b[o]
        for i in range(n_in):
            acc += W[k + i] * x[i]
        k += n_in
        if act == RELU or act == IDENTITY:
            if act == RELU and acc < 0:
                acc = 0
            v = _shift_round(acc, s_out, _INT16_MAX)
        else:
            x14 = _shift_round(acc, s_14, 1 << 21)
            if x14 > 1 << 21:
                x14 = 1 << 21
            elif x14 < -(1 << 21):
                x14 = -(1 << 21)
            v = _shift_round(_act14(act, x14, T, P), s_14_out, _INT16_MAX)
        if v > _INT16_MAX:
            v = _INT16_MAX
        elif v < -_INT16_MAX:
            v = -_INT16_MAX
        y[o] = v


def load_input(obs, xq, n, mean, std, scale):
    """xq[:n] = obs normalised ((obs - mean) / std when mean is not None), times scale, rounded
    half away from zero and saturated at +-32767; returns -1, or the index of the first value
    that is NaN, infinite or beyond float32 once normalised: microrl_kernels.load_input for
    array('h'), in Python, the same numbers."""
    lo, hi = NEG_FLOAT32_MAX, FLOAT32_MAX
    for i in range(n):
        v = obs[i] if mean is None else (obs[i] - mean[i]) / std[i]
        if not lo <= v <= hi:  # NaN fails both
            return i
        v = v * scale
        # no int() of a huge float
        if v >= _INT16_MAX:
            xq[i] = _INT16_MAX
        elif v <= -_INT16_MAX:
            xq[i] = -_INT16_MAX
        else:
            xq[i] = int(v + 0.5) if v >= 0 else -int(0.5 - v)
    return -1


class QuantisedPolicy:
    """A policy with int16 weights: obs -> action like Policy, with integer arithmetic inside.

    Build one with quantise(policy, calibration_observations) or load(path). Calling it returns
    an array('f') reused by the next call."""

    reference_count = 0  # load(): how many reference vectors the file holds (at its end)
    pending = 0  # steps of pending actions in the input, as policy.Policy's

    def __init__(self, sizes, acts, weights, biases, fx, fw, obs_mean=None, obs_std=None, act_scale=None, act_offset=None,
                 in_low=None, in_high=None, act_low=None, act_high=None, references=None):
        self.sizes = [int(s) for s in sizes]
        self.acts = [int(a) for a in acts]
        L = len(self.acts)
        if len(self.sizes) != L + 1 or len(weights) != L or len(biases) != L or len(fx) != L + 1 or len(fw) != L:
            raise ValueError("quantised policy: sizes, activations, weights, biases and scales disagree on the number of layers")
        self.W = weights  # array('h') per layer
        self.b = biases  # array('i') per layer
        self.fx = [int(f) for f in fx]
        self.fw = [int(f) for f in fw]
        self.obs_mean, self.obs_std, self.act_scale, self.act_offset = obs_mean, obs_std, act_scale, act_offset
        self.in_low, self.in_high, self.act_low, self.act_high = in_low, in_high, act_low, act_high
        self.references = references  # written by save(); load(path, check=True) checks a file's
        self.shifts = []
        for l in range(L):
            fa = self.fw[l] + self.fx[l]
            fy = self.fx[l + 1]
            shifts = (fa - fy, fa - Q, Q - fy)
            if not (-8 <= fy <= 15 and max(shifts) <= MAX_SHIFT and min(shifts) >= -MAX_SHIFT) or fy > Q and self.acts[l] not in (RELU, IDENTITY):
                raise ValueError("layer %d: scales out of range (Fw %d, Fx %d, Fy %d)" % (l, self.fw[l], self.fx[l], fy))
            if len(weights[l]) != self.sizes[l] * self.sizes[l + 1] or len(biases[l]) != self.sizes[l + 1]:
                raise ValueError("layer %d: weights or biases do not match the layer sizes" % l)
            # the accumulator and its rounding stay below 2**31 for any int16 input: then every
            # kernel (plain Python's exact integers, 32-bit viper and C) gives the same numbers
            first = shifts[0] if self.acts[l] in (RELU, IDENTITY) else shifts[1]
            if accumulator_bound(weights[l], biases[l], self.sizes[l]) + ((1 << (first - 1)) if first > 0 else 0) > _ACC_LIMIT:
                raise ValueError("layer %d: weights too large for 32-bit sums (some int16 input would overflow the accumulator)" % l)
            self.shifts.append(shifts)
        width = max(self.sizes)
        self._a = zeros(width, "h")  # ping-pong activations, int16
        self._b = zeros(width, "h")
        self.out = array("f", range(self.sizes[-1]))
        self.T, self.P = tables()
        self.kernel = implementation()
        self._layer = _kernel(self.kernel)
        # the native module also quantises the observation (and checks it) in C
        self._load_input = _load_input_native if self.kernel == "native" else load_input
        self._in_scale = float(1 << self.fx[0])
        self._in_qlow = self._in_qhigh = None
        if in_low is not None:  # the clipping bounds as int16 inputs, rounded as load_input rounds
            n = self.sizes[0]
            self._in_qlow, self._in_qhigh = zeros(n, "h"), zeros(n, "h")
            load_input(in_low, self._in_qlow, n, None, None, self._in_scale)
            load_input(in_high, self._in_qhigh, n, None, None, self._in_scale)
        self._out_scale = 1.0 / (1 << self.fx[L])
        self.n_params = sum(len(w) + len(b) for w, b in zip(self.W, self.b))

    @property
    def obs_dim(self):
        return self.sizes[0]

    @property
    def act_dim(self):
        return self.sizes[-1]

    def forward_int(self, xq):
        """The integer network on an int16 input (array('h') of sizes[0]); returns the int16 output
        array (reused)."""
        layer = self._layer
        x, y = xq, self._a
        for l in range(len(self.acts)):
            s_out, s_14, s_14_out = self.shifts[l]
            layer(self.W[l], self.b[l], x, y, self.sizes[l], self.sizes[l + 1], self.acts[l], s_out, s_14, s_14_out, self.T, self.P)
            x, y = y, (self._b if y is self._a else self._a)
        return x

    def __call__(self, obs, out=None):
        """The action for obs (n_in numbers). Refuses, with a ValueError naming the index, an
        observation that is NaN, infinite or beyond float32's range once normalised."""
        n_in = self.sizes[0]
        if len(obs) != n_in:
            raise ValueError("observation has %d values, the policy takes %d" % (len(obs), n_in))
        xq = self._b
        scale = self._in_scale
        mean, std = self.obs_mean, self.obs_std
        i = self._load_input(obs, xq, n_in, mean, std, scale)
        if i >= 0:
            from .refusals import non_finite_observation

            raise non_finite_observation(obs, i)
        if self._in_qlow is not None:
            # the input clipping on the int16 input: rounding and saturation are monotone, so
            # clipping after them to the bounds' own int16 values is clipping before them
            clip(xq, self._in_qlow, self._in_qhigh, n_in)
        y = self.forward_int(xq)
        if out is None:
            out = self.out
        k = self._out_scale
        a_scale, a_offset = self.act_scale, self.act_offset
        for i in range(self.sizes[-1]):
            v = y[i] * k
            out[i] = v if a_scale is None else a_scale[i] * v + a_offset[i]
        if self.act_low is not None:
            clip(out, self.act_low, self.act_high, self.sizes[-1])
        return out

    def describe(self):
        return "%s (%s), int16, %d parameters" % ("-".join(str(s) for s in self.sizes), ", ".join(NAMES[a] for a in self.acts), self.n_params)


def accumulator_bound(W, b, n_in):
    """The largest |b[o] + sum_i W[o, i] x[i]| over rows o and int16 inputs x (|x| <= 32768)."""
    worst = 0
    k = 0
    for o in range(len(b)):
        row = 0
        for i in range(k, k + n_in):
            w = W[i]
            row += w if w >= 0 else -w
        k += n_in
        v = b[o]
        total = (v if v >= 0 else -v) + 32768 * row
        if total > worst:
            worst = total
    return worst


# ---- quantisation (host or board; plain Python) ----


def _frac_bits(max_abs, limit, cap=15):
    # the most fractional bits F with max_abs * 2**F <= limit, capped
    f = cap
    while f > -8 and max_abs * (1 << f if f >= 0 else 1.0 / (1 << -f)) > limit:
        f -= 1
    return f


def _first_row(view, n):
    # the first row of a backend's matrix view: (buf, offset, rows, cols) tuples, or numpy arrays
    if isinstance(view, tuple):
        buf, off = view[0], view[1]
        return [buf[off + i] for i in range(n)]
    return [float(v) for v in view[0][:n]]


def quantise(policy, observations, headroom=1.25):
    """A QuantisedPolicy from a float Policy, with activation scales set from the largest values
    seen (times headroom) on the calibration observations (raw, as the policy receives them)."""
    from math import floor

    check_values(policy, "policy to quantise")
    sizes, acts = policy.sizes, policy.acts
    L = len(acts)
    # the int arrays first, while a board's heap is still whole: calibration churns floats
    weights = [zeros(sizes[l] * sizes[l + 1], "h") for l in range(L)]
    biases = [array("i", range(sizes[l + 1])) for l in range(L)]
    peaks = [0.0] * (L + 1)
    x = policy.input_buf
    count = 0
    for obs in observations:
        count += 1
        policy(obs)  # normalises into input_buf and runs every layer
        for i in range(sizes[0]):
            peaks[0] = max(peaks[0], abs(x[i]))
        for l in range(L):
            for v in _first_row(policy.layers[l][3], sizes[l + 1]):
                peaks[l + 1] = max(peaks[l + 1], abs(v))
    if count == 0:
        raise ValueError("quantise needs calibration observations")
    fx = []
    for l in range(L + 1):
        cap = Q if (l == L or acts[l - 1] not in (RELU, IDENTITY)) and l > 0 else 15
        fx.append(_frac_bits(peaks[l] * headroom, _INT16_MAX, cap))
    for l, what in ((0, "inputs (observations after normalisation)"), (L, "outputs")):
        if fx[l] < 0:  # fewer than 0 fractional bits: the values do not fit an int16 at all
            raise ValueError("the network's %s reach +-%.6g on the calibration observations; int16 fixed point holds +-%d at most "
                             "(+-%.6g with the %.2f headroom, whole numbers only), so this policy cannot be quantised as it is: calibrate on "
                             "smaller observations, or train with observation normalisation so that its inputs are near +-1"
                             % (what, peaks[l], _INT16_MAX, _INT16_MAX / headroom, headroom))
    params = policy.params
    offsets, _ = layout(sizes)
    fw = []
    for l, (wo, bo) in enumerate(offsets):
        n_in, n_out = sizes[l], sizes[l + 1]
        w_max = 0.0
        row_max = 0.0
        b_max = 0.0
        for o in range(n_out):
            row = 0.0
            for i in range(n_in):
                a = abs(params[wo + o * n_in + i])
                row += a
                w_max = max(w_max, a)
            row_max = max(row_max, row)
            b_max = max(b_max, abs(params[bo + o]))
        # any int16 input: |acc| <= row_max * 2**Fw * 32767 + b_max * 2**(Fw + Fx) < 2**31
        bound = row_max * _INT16_MAX + b_max * (2.0**fx[l])
        # Fa = Fw + Fx <= 30: every rescaling shift stays below a 32-bit word's width
        f = _frac_bits(w_max, _INT16_MAX, min(24, 30 - fx[l]))
        while f > -8 and bound * 2.0**f + 2 * n_in * _INT16_MAX >= _ACC_LIMIT:
            f -= 1
        if f <= -8:
            raise ValueError("layer %d cannot be quantised to int16 with 32-bit sums (weights too large for its inputs' range); retrain with smaller weights or normalise observations" % l)
        W, B = weights[l], biases[l]
        while True:
            scale = 2.0**f
            for k in range(n_in * n_out):
                W[k] = int(floor(params[wo + k] * scale + 0.5))
            scale = 2.0 ** (f + fx[l])
            for o in range(n_out):
                B[o] = int(floor(params[bo + o] * scale + 0.5))
            # the rounded integers against the exact bound QuantisedPolicy checks
            first = f + fx[l] - (fx[l + 1] if acts[l] in (RELU, IDENTITY) else Q)
            if f <= -7 or accumulator_bound(W, B, n_in) + ((1 << (first - 1)) if first > 0 else 0) <= _ACC_LIMIT:
                break
            f -= 1
        fw.append(f)
    q = QuantisedPolicy(sizes, acts, weights, biases, fx, fw, policy.obs_mean, policy.obs_std, policy.act_scale, policy.act_offset,
                        getattr(policy, "in_low", None), getattr(policy, "in_high", None), getattr(policy, "act_low", None), getattr(policy, "act_high", None))
    if getattr(policy, "pending", 0):
        q.pending = policy.pending
    return q


# ---- file format ----


def _header(q, tail):
    from .filewrite import check_shape, flags_of, pack_fixed, version_for

    check_shape(q.sizes)
    L = len(q.acts)
    flags = flags_of(q)
    body = struct.pack("<%dH%dB%db%db" % (L + 1, L, L + 1, L), *(list(q.sizes) + list(q.acts) + list(q.fx) + list(q.fw)))
    header_len = (_FIXED + len(body) + 3) & ~3
    total = header_len + _data_bytes(q.sizes, flags) + len(tail) + 4
    return pack_fixed(MAGIC, version_for(flags, q.pending), header_len, total, L, flags, q.pending) + body + bytes(header_len - _FIXED - len(body))


def _data_bytes(sizes, flags):
    n = 4 * sum(k for _, k in blocks_of(flags, sizes))
    for l in range(len(sizes) - 1):
        n += 4 * sizes[l + 1] + ((2 * sizes[l] * sizes[l + 1] + 3) & ~3)
    return n


def _blocks(q):
    """(array, bytes per item) in file order."""
    blocks = [(getattr(q, name), 4) for name, _ in blocks_of(31, q.sizes) if getattr(q, name) is not None]
    for l in range(len(q.acts)):
        blocks += [(q.b[l], 4), (q.W[l], 2)]
    return blocks


def _pad(n_items, itemsize):
    return (4 - (n_items * itemsize) % 4) % 4


def to_bytes(q):
    check_values(q, "quantised policy")
    if sys.byteorder != "little":  # pragma: no cover - every supported board is little-endian
        raise OSError("quantised policy files are written on little-endian machines only")
    from .filewrite import reference_section

    tail = reference_section(q)
    parts = [_header(q, tail)]
    for block, itemsize in _blocks(q):
        parts.append(bytes(memoryview(block)))
        parts.append(bytes(_pad(len(block), itemsize)))
    parts.append(tail)
    data = b"".join(parts)
    return data + struct.pack("<I", crc32(data) & 0xFFFFFFFF)


def save(path, q):
    """Write a quantised policy atomically (the float policy file's way)."""
    from .filewrite import write_atomic

    return write_atomic(path, (memoryview(to_bytes(q))[:-4],))  # (write_atomic appends the CRC)


def load(path, check=False, tolerance=None):
    """Read a quantised policy file; PolicyFileError subclasses as microrl.load raises them, and
    check as microrl.load's."""
    size = file_size(path)
    with open(path, "rb") as f:
        head = f.read(_FIXED)
        header_len, total, L, flags, version = check_header(head, size, path, MAGIC, VERSION, "quantised policy")
        meta_len = 2 * (L + 1) + L + (L + 1) + L
        # the declared sizes against the file's length before reading it through
        if L < 1 or header_len != ((_FIXED + meta_len + 3) & ~3):
            refuse(CorruptPolicyError, "header", path, L, header_len, flags)
        f.seek(_FIXED)
        fields = struct.unpack("<%dH%dB%db%db" % (L + 1, L, L + 1, L), f.read(meta_len))
        sizes = list(fields[: L + 1])
        acts = list(fields[L + 1 : 2 * L + 1])
        fx = list(fields[2 * L + 1 : 3 * L + 2])
        fw = list(fields[3 * L + 2 :])
        if min(sizes) < 1 or max(acts) >= len(NAMES):
            refuse(CorruptPolicyError, "layers", path, sizes, acts)
        end = header_len + _data_bytes(sizes, flags)
        if flags & 16:  # reference vectors
            end += references_bytes(f, end, total, sizes, path)
        if end + 4 != total:
            refuse(CorruptPolicyError, "sizes", path)
        checksum_file(f, size, path)
        check_zero_bytes(f, header_len, meta_len, path, version)
        f.seek(header_len)
        floats = {}
        for name, n in blocks_of(flags, sizes):
            floats[name] = _read(f, array("f", range(n)), 4, path)
        weights, biases = [], []
        for l in range(L):
            biases.append(_read(f, array("i", range(sizes[l + 1])), 4, path))
            W = _read(f, zeros(sizes[l] * sizes[l + 1], "h"), 2, path)
            if any(f.read(_pad(len(W), 2))):
                raise CorruptPolicyError("%s: the padding after layer %d's weights must be zero: not a file this microrl wrote" % (path, l + 1))
            weights.append(W)
        try:
            q = QuantisedPolicy(sizes, acts, weights, biases, fx, fw, **floats)
        except ValueError as e:
            raise CorruptPolicyError("%s: %s" % (path, e))
        if flags & 16:
            q.reference_count = struct.unpack("<I", f.read(4))[0]
        if version > 2:  # pending actions
            from .perturb import pending_of

            q.pending = pending_of(head, sizes, path)
        check_values(q, path)
        if check:
            from .references import check

            check(q, f, path, tolerance)
    return q


def _read(f, block, itemsize, path):
    if f.readinto(memoryview(block)) != len(block) * itemsize:
        raise TruncatedPolicyError("%s: file ended early while reading weights" % path)
    return block
