# Fixed-point (int16) policies on the device itself: quantise, run, save, load, refuse damage.
# MicroPython-compatible: runs under tests/device/run.py on micropython (viper kernel) and CPython.
from array import array

from microrl import fixedpoint as fp
from microrl.nn import MLP
from microrl.policy import ChecksumError, Policy, PolicyFileError, TruncatedPolicyError, load
from microrl.rng import Rng
from tiny import raises, tmp_path

ACT_PAIRS = (("relu", "tanh"), ("tanh", "sigmoid"), ("gelu", "identity"), ("sigmoid", "gelu"), ("identity", "relu"))


def _policy(sizes, acts, seed=1, **kw):
    net = MLP(sizes, acts, trainable=False).init(Rng(seed))
    return Policy(sizes, acts, params=net.params, **kw)


def _observations(n, dim, r=3.0, seed=2):
    # rows of array('f'): a list of lists would scatter hundreds of boxed floats over a board's
    # heap for the test's length, leaving no 2 KB hole in a 140 KB heap (the qemu boards)
    rng = Rng(seed)
    rows = []
    for _ in range(n):
        row = array("f", range(dim))
        for i in range(dim):
            row[i] = rng.uniform(-r, r)
        rows.append(row)
    return rows


def test_int16_policy_tracks_the_float_policy_for_every_activation():
    for acts in ACT_PAIRS:
        p = _policy([3, 16, 16, 2], acts)
        obs = _observations(40, 3)
        q = fp.quantise(p, obs)
        for o in obs:
            a = p(o)
            b = q(o)
            for i in range(2):
                if abs(a[i] - b[i]) > 2e-3 + 2e-3 * abs(a[i]):
                    raise AssertionError("%s: action %r vs float %r" % (acts, b[i], a[i]))


def test_viper_and_plain_kernels_give_the_same_integers():
    # every integer kernel present (plain on CPython; viper, and native where microrl_kernels.mpy
    # is installed, on MicroPython) against plain, on quantised policies
    for acts, gain in ((("gelu", "tanh"), 1.0), (("relu", "sigmoid"), 40.0), (("tanh", "identity"), 40.0)):
        p = _policy([5, 24, 24, 3], acts, seed=4)
        for k in range(len(p.params)):
            p.params[k] *= gain  # large weights: negative (left) shifts in the rescaling
        _same_integers(fp.quantise(p, _observations(30, 5)))


def _same_integers(q):
    T, P = fp.tables()
    rng = Rng(5)
    for trial in range(20):
        x = array("h", [int(rng.uniform(-32767, 32767)) for _ in range(5)])
        if trial == 0:
            x = array("h", [32767, -32767, 32767, -32767, 32767])  # extremes: the 32-bit bound
        a = array("h", range(24))
        b = array("h", range(24))
        for l in range(3):
            s_out, s_14, s_14_out = q.shifts[l]
            args = (q.sizes[l], q.sizes[l + 1], q.acts[l], s_out, s_14, s_14_out, T, P)
            fp.layer_plain(q.W[l], q.b[l], x, a, *args)
            for name in fp.available():
                fp._kernel(name)(q.W[l], q.b[l], x, b, *args)
                for k in range(q.sizes[l + 1]):
                    if a[k] != b[k]:
                        raise AssertionError("layer %d output %d: %s %d, plain %d" % (l, k, name, b[k], a[k]))
            x = array("h", list(a[: q.sizes[l + 1]]))


def random_layer(rng, edge):
    """(W, b, n_in, n_out, act, s_out, s_14, s_14_out): a random int16 layer anywhere in the domain
    QuantisedPolicy accepts (every shift in [-31, 31]; |b| + 32768 sum|W| plus the first rounding
    below 2**31). With edge, at its edges: rows whose worst-case sums sit right at the bound."""
    n_in = 1 + rng.randint(20)
    n_out = 1 + rng.randint(10)
    act = rng.randint(5)
    shifts = [rng.randint(63) - 31 for _ in range(3)]
    first = shifts[0] if act <= 1 else shifts[1]
    limit = 2**31 - 1 - ((1 << (first - 1)) if first > 0 else 0)
    mag = (1, 60, 3000, 32767)[rng.randint(4)]
    W = array("h", [rng.randint(2 * mag + 1) - mag for _ in range(n_in * n_out)])
    while fp.accumulator_bound(W, array("i", [0] * n_out), n_in) > limit:
        for k in range(len(W)):
            W[k] = W[k] // 2
    b = array("i", [0] * n_out)
    for o in range(n_out):
        room = limit - fp.accumulator_bound(W[o * n_in : (o + 1) * n_in], array("i", [0]), n_in)
        b[o] = room if edge and o % 2 == 0 else (rng.randint(2 * (room >> 16) + 1) - (room >> 16)) << 15
        if edge and o % 4 == 2:
            b[o] = -room
    return W, b, n_in, n_out, act, shifts[0], shifts[1], shifts[2]


def random_inputs(rng, W, n_in, n_out):
    """Inputs for a layer: random, zeros, the extremes +-32767 and -32768, and the ones that drive
    each row's sum to its largest magnitude (signs of its weights)."""
    xs = [array("h", [rng.randint(65535) - 32767 for _ in range(n_in)]) for _ in range(3)]
    xs.append(array("h", [0] * n_in))
    xs.append(array("h", [(32767, -32768, -32767)[i % 3] for i in range(n_in)]))
    for o in range(min(n_out, 3)):
        sign = 1 if o % 2 == 0 else -1
        xs.append(array("h", [(32767 if W[o * n_in + i] * sign >= 0 else -32768) for i in range(n_in)]))
    return xs


def test_integer_kernels_agree_on_random_layers_and_their_edges():
    """A property test of every integer kernel present against plain Python's exact integers:
    random sizes, activations, shifts (left shifts that saturate, right shifts that round),
    weights up to the 32-bit bound and biases at it, inputs at +-32767 and -32768, so that the
    int16 outputs saturate, the table arguments clamp and gelu passes its table's end."""
    T, P = fp.tables()
    rng = Rng(77)
    names = fp.available()
    checked = saturated = outputs = 0
    for trial in range(150):
        W, b, n_in, n_out, act, s_out, s_14, s_14_out = random_layer(rng, trial % 3 == 0)
        for x in random_inputs(rng, W, n_in, n_out):
            want = array("h", [0] * n_out)
            fp.layer_plain(W, b, x, want, n_in, n_out, act, s_out, s_14, s_14_out, T, P)
            saturated += sum(1 for v in want if v == 32767 or v == -32767)
            outputs += n_out
            for name in names:
                got = array("h", [12345] * n_out)
                fp._kernel(name)(W, b, x, got, n_in, n_out, act, s_out, s_14, s_14_out, T, P)
                if list(got) != list(want):
                    raise AssertionError("%s against plain, trial %d (act %d, shifts %d %d %d): %r != %r" % (name, trial, act, s_out, s_14, s_14_out, list(got), list(want)))
                checked += 1
    assert checked >= 150 * 5 * len(names)
    assert 0 < saturated < outputs, (saturated, outputs)  # the edges were reached, and not only them


def test_policies_give_the_same_actions_with_every_integer_kernel():
    """Whole calls, the observation's quantisation included (in C on the native path), for each
    kernel present: the same floats, also for observations far outside the calibrated range."""
    p = _policy([4, 16, 8, 2], ("gelu", "tanh"), seed=6, obs_mean=[0.5, -1.0, 0.0, 2.0], obs_std=[2.0, 0.5, 1.0, 3.0], act_scale=[2.0, 1.0], act_offset=[0.1, -0.2])
    obs = _observations(40, 4, r=5.0, seed=8) + [[1e6, -1e6, 3e4, -3e4], [1e30, -1e30, 0.0, 0.5]]
    results = {}
    try:
        for name in fp.available():
            fp.use(name)
            q = fp.quantise(p, obs[:20])
            assert q.kernel == name
            results[name] = [list(q(o)) for o in obs] + [list(q(array("f", o))) for o in obs[:5]]
    finally:
        fp.use(None)
    for name in results:
        assert results[name] == results["plain"], (name, results[name][:3], results["plain"][:3])


def test_scales_and_weights_outside_the_32_bit_domain_are_refused():
    p = _policy([3, 8, 2], ("relu", "identity"))
    q = fp.quantise(p, _observations(10, 3))
    args = (q.sizes, q.acts, q.W, q.b)
    fx = list(q.fx)
    fx[1] = fx[0] + q.fw[0] - 40  # layer 0 would shift by 40: beyond a 32-bit word
    e = raises(ValueError, fp.QuantisedPolicy, *(args + (fx, q.fw)))
    assert "layer 0: scales out of range" in str(e), e
    W = [array("h", w) for w in q.W]
    for k in range(len(W[0])):
        W[0][k] = 32767  # every row's worst case: 3 * 32767 * 32768 > 2**31
    e = raises(ValueError, fp.QuantisedPolicy, q.sizes, q.acts, W, q.b, q.fx, q.fw)
    assert "layer 0: weights too large for 32-bit sums" in str(e), e


def test_accumulators_stay_within_32_bits_for_any_input():
    # large weights force smaller weight scales; the bound holds for the worst int16 input
    p = _policy([13, 32, 32, 4], ("relu", "tanh"), seed=3)
    for k in range(len(p.params)):
        p.params[k] *= 40.0
    q = fp.quantise(p, _observations(20, 13))
    for l in range(3):
        n_in, n_out = q.sizes[l], q.sizes[l + 1]
        for o in range(n_out):
            total = abs(q.b[l][o])
            for i in range(n_in):
                total += abs(q.W[l][o * n_in + i]) * 32767
            assert total < 2**31 - 1, (l, o, total)


def test_save_load_roundtrip_and_microrl_load():
    p = _policy([13, 24, 24, 4], ("relu", "tanh"), obs_mean=[0.5] * 13, obs_std=[2.0] * 13, act_scale=[2.0] * 4, act_offset=[0.1] * 4)
    q = fp.quantise(p, _observations(20, 13))
    path = tmp_path("q.mrlq")
    fp.save(path, q)
    r = load(path)  # microrl.load reads int16 files too
    assert isinstance(r, fp.QuantisedPolicy)
    assert r.fx == q.fx and r.fw == q.fw and r.sizes == q.sizes and r.acts == q.acts
    for o in _observations(10, 13, seed=9):
        a = list(q(o))
        b = list(r(o))
        assert a == b, (a, b)


def test_damaged_files_are_refused():
    p = _policy([3, 8, 1], ("relu", "tanh"))
    q = fp.quantise(p, _observations(10, 3))
    data = fp.to_bytes(q)
    path = tmp_path("bad.mrlq")
    for cut in (0, 3, 10, 16, len(data) // 2, len(data) - 1):
        with open(path, "wb") as f:
            f.write(data[:cut])
        raises(TruncatedPolicyError, load, path)
    rng = Rng(6)
    for _ in range(60):
        k = rng.randint(len(data) * 8)
        bad = bytearray(data)
        bad[k >> 3] ^= 1 << (k & 7)
        with open(path, "wb") as f:
            f.write(bad)
        raises(PolicyFileError, load, path)
    bad = bytearray(data)
    bad[len(data) - 10] ^= 0xFF  # inside the weights
    with open(path, "wb") as f:
        f.write(bad)
    raises(ChecksumError, load, path)


def _with_float(data, index, value):
    import struct

    from microrl.policy import crc32

    head_len = struct.unpack("<H", data[6:8])[0]
    out = bytearray(data[:-4])
    out[head_len + 4 * index : head_len + 4 * index + 4] = struct.pack("<f", value)
    return bytes(out) + struct.pack("<I", crc32(bytes(out)) & 0xFFFFFFFF)


def test_int16_files_refuse_non_finite_floats_and_bad_std():
    from microrl.policy import InvalidValueError

    p = _policy([3, 8, 2], ("relu", "tanh"), obs_mean=[0.5] * 3, obs_std=[2.0] * 3, act_scale=[2.0] * 2, act_offset=[0.1] * 2)
    data = fp.to_bytes(fp.quantise(p, _observations(10, 3)))
    path = tmp_path("nonfinite.mrlq")
    for name, index, value in (("obs_mean[0]", 0, float("nan")), ("obs_std[2]", 5, float("inf")), ("act_scale[1]", 7, -float("inf")),
                               ("act_offset[0]", 8, float("nan")), ("obs_std[1]", 4, 0.0), ("obs_std[0]", 3, -2.0)):
        with open(path, "wb") as f:
            f.write(_with_float(data, index, value))
        e = raises(InvalidValueError, load, path)
        assert name in str(e), (name, e)
    # quantising a float policy with a NaN weight is refused by name, not by a failure inside
    p.params[0] = float("nan")
    e = raises(InvalidValueError, fp.quantise, p, _observations(10, 3))
    assert "layer 1 weight [0, 0]" in str(e), e
