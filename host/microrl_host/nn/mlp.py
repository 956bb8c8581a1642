"""numba-compiled networks shared by the host trainers (TD3, SAC): MLPs over flat float32
parameter vectors in the device core's layout (microrl.nn.layout), forward and backward passes,
Adam, Polyak averaging, and the twin-critic helpers.

Everything here is plain arrays in namedtuples so that compiled loops take them as arguments
and nothing runs Python per step; checkpoints save a network's sections by name (view).
"""
from collections import namedtuple
from math import erf, exp, sqrt, tanh

import numpy as np

from microrl.activations import GELU, IDENTITY, RELU, SIGMOID, TANH
from microrl.layout import layout, shape
from microrl.nn import MLP
from microrl.rng import Rng

from .jit import compiled_only, compiled_only_refcounted

# ---------------------------------------------------------------- networks
# A network is three arrays. numba compiles code over every array a compiled function is handed
# (an off-policy State holds eight networks): thirteen arrays per network made the first run's
# compile several times longer.
#   spec (int64):      the shape: a header of section offsets, then sizes, activation codes,
#                      each layer's (weights, bias) offsets into params, and its rows' offsets in ys
#   weights (float32): params | wt | m | v   (shared by rows_of's views of the network)
#   work (float32):    grads | ys | zs | dxa | dxb   (each view's own)
# params: the device core's layout; wt: each layer's weights again, transposed ([in, out]), for
# the forward pass (a plain matrix product runs about 25% faster than one with a transposed
# operand); adam(), polyak() and sync_transposed() keep wt equal to params. m, v: Adam's
# moments. ys: each layer's outputs for up to `batch` rows; zs: GELU's pre-activations;
# dxa, dxb: the backward pass's scratch. A forward-only network (trainable=False) has no grads,
# m or v.
Net = namedtuple("Net", "spec weights work")
LAYERS, N_PARAMS, N_TRAINED, YS, ZS, DXA, DXB, WORK_END = range(8)  # spec's header
HEADER = 8
FIELDS = ("params", "wt", "grads", "m", "v", "sizes", "acts", "offsets", "yoff", "ys", "zs", "dxa", "dxb")  # what view() shows


def _spec(sizes, acts, batch, trainable):
    offsets, n = layout(sizes)
    widths = sizes[1:]
    k = n if trainable else 0
    ys = batch * sum(widths)
    zs = ys if GELU in acts else 0
    dx = batch * max(sizes)
    yoff = [0] + list(np.cumsum([batch * w for w in widths])[:-1])
    header = [len(acts), n, k, k, k + ys, k + ys + zs, k + ys + zs + dx, k + ys + zs + 2 * dx]
    body = list(sizes) + list(acts) + [o for pair in offsets for o in pair] + yoff
    return np.array(header + body, np.int64)


def new_net(sizes, activations, batch, seed=None, trainable=True):
    """A network for up to `batch` rows. Initialised like the device core's MLP.init (PyTorch's
    nn.Linear init) from microrl.rng.Rng(seed) when seed is given, else zeros."""
    sizes, acts = shape(sizes, activations)
    spec = _spec(sizes, acts, batch, trainable)
    n, k = int(spec[N_PARAMS]), int(spec[N_TRAINED])
    net = Net(spec=spec, weights=np.zeros(2 * n + 2 * k, np.float32), work=np.zeros(int(spec[WORK_END]), np.float32))
    if seed is not None:
        init = MLP(sizes, acts, batch=1, trainable=False).init(Rng(seed))
        _python(params)(net)[:] = np.asarray(init.params, dtype=np.float32)
    refresh_transposed(net)
    return net


def refresh_transposed(net):
    """sync_transposed(net) from Python, without loading compiled code (start-up time)."""
    v = view(net)
    for l, (wo, bo) in enumerate(v.offsets):
        v.wt[wo:bo] = v.params[wo:bo].reshape(v.sizes[l + 1], v.sizes[l]).T.ravel()


# The sections, for compiled code (mlp.params(net)) and, through view(), for Python; one
# definition of the layout.
@compiled_only_refcounted
def params(net):
    return net.weights[: net.spec[N_PARAMS]]


@compiled_only_refcounted
def transposed(net):
    n = net.spec[N_PARAMS]
    return net.weights[n : 2 * n]


@compiled_only_refcounted
def adam_m(net):
    n, k = net.spec[N_PARAMS], net.spec[N_TRAINED]
    return net.weights[2 * n : 2 * n + k]


@compiled_only_refcounted
def adam_v(net):
    n, k = net.spec[N_PARAMS], net.spec[N_TRAINED]
    return net.weights[2 * n + k : 2 * n + 2 * k]


@compiled_only_refcounted
def grads(net):
    return net.work[: net.spec[N_TRAINED]]


@compiled_only_refcounted
def outputs(net):
    return net.work[net.spec[YS] : net.spec[ZS]]


@compiled_only_refcounted
def preactivations(net):
    return net.work[net.spec[ZS] : net.spec[DXA]]


@compiled_only_refcounted
def scratch_a(net):
    return net.work[net.spec[DXA] : net.spec[DXB]]


@compiled_only_refcounted
def scratch_b(net):
    return net.work[net.spec[DXB] : net.spec[WORK_END]]


@compiled_only_refcounted
def sizes(net):
    L = net.spec[LAYERS]
    return net.spec[HEADER : HEADER + L + 1]


@compiled_only_refcounted
def activations(net):
    L = net.spec[LAYERS]
    return net.spec[HEADER + L + 1 : HEADER + 2 * L + 1]


@compiled_only_refcounted
def offsets(net):
    """(weights, bias) offsets into params, a row per layer."""
    L = net.spec[LAYERS]
    return net.spec[HEADER + 2 * L + 1 : HEADER + 4 * L + 1].reshape((L, 2))


@compiled_only_refcounted
def output_offsets(net):
    L = net.spec[LAYERS]
    return net.spec[HEADER + 4 * L + 1 : HEADER + 5 * L + 1]


NetView = namedtuple("NetView", FIELDS)
_SECTIONS = (params, transposed, grads, adam_m, adam_v, sizes, activations, offsets, output_offsets, outputs, preactivations, scratch_a, scratch_b)


def view(net):
    """The network's sections as numpy views, by name (view(net).params, ...): for Python code,
    tests and checkpoints."""
    return NetView(*(_python(f)(net) for f in _SECTIONS))


def numpy_net(net, batch):
    """A copy of the network's current parameters as the device core's MLP on numpy, forward
    only (net.forward(n, x)): for measurements between chunks of compiled training."""
    from array import array

    v = view(net)
    params = array("f", np.ascontiguousarray(v.params, np.float32).tobytes())
    return MLP([int(s) for s in v.sizes], [int(a) for a in v.acts], batch=batch, trainable=False, params=params, kernels="numpy")


def _python(f):
    """A compiled accessor's Python function (itself when NUMBA_DISABLE_JIT=1)."""
    return getattr(f, "py_func", f)


_INV_SQRT2 = 0.7071067811865476
_INV_SQRT_2PI = 0.3989422804014327


@compiled_only_refcounted
def _weights(net, l):
    sz, off, p = sizes(net), offsets(net), params(net)
    n_in, n_out = sz[l], sz[l + 1]
    wo, bo = off[l, 0], off[l, 1]
    return p[wo:bo].reshape((n_out, n_in)), p[bo : bo + n_out]


@compiled_only_refcounted
def _transposed(net, l):
    sz, off = sizes(net), offsets(net)
    return transposed(net)[off[l, 0] : off[l, 1]].reshape((sz[l], sz[l + 1]))


@compiled_only  # adam's; Python code calls refresh_transposed
def sync_transposed(net):
    """Refresh the transposed weights from params (after writing params directly)."""
    for l in range(net.spec[LAYERS]):
        W, b = _weights(net, l)
        WT = _transposed(net, l)
        for i in range(W.shape[1]):
            for j in range(W.shape[0]):
                WT[i, j] = W[j, i]


@compiled_only_refcounted
def layer_output(net, l, n):
    """Output rows of layer l from the last forward of n rows."""
    w = sizes(net)[l + 1]
    o = output_offsets(net)[l]
    return outputs(net)[o : o + n * w].reshape((n, w))


# Each activation, and its derivative, written once (ReLU's also as its own loop below, for
# speed). Results are float32, rounded as the store into the network's buffers rounds them.
@compiled_only
def _activation(act, v):
    """act(v) for one float32 pre-activation (tanh in single precision, the others in double)."""
    f32 = np.float32
    if act == RELU:
        return v if v > f32(0.0) else f32(0.0)
    if act == TANH:
        return f32(tanh(v))
    if act == SIGMOID:
        return f32(0.5 * (1.0 + tanh(0.5 * v)))
    if act == GELU:
        return f32(v * 0.5 * (1.0 + erf(v * _INV_SQRT2)))
    return v


@compiled_only
def _activation_backward(act, g, y, z):
    """dL/d(pre-activation) from g = dL/d(output), the output y and (GELU) the pre-activation z."""
    f32 = np.float32
    if act == RELU:
        return g if y > f32(0.0) else f32(0.0)
    if act == TANH:
        return f32(g * (1.0 - y * y))
    if act == SIGMOID:
        return f32(g * (y * (1.0 - y)))
    if act == GELU:
        return f32(g * (0.5 * (1.0 + erf(z * _INV_SQRT2)) + z * _INV_SQRT_2PI * exp(-0.5 * z * z)))
    return g


@compiled_only_refcounted
def forward(net, x, n):
    """y = net(x[:n]); x is (n, n_in) C-contiguous float32. Returns the output rows (a view
    into the network's buffers, valid until its next forward)."""
    acts = activations(net)
    for l in range(acts.shape[0]):
        W, b = _weights(net, l)
        y = layer_output(net, l, n)
        np.dot(x, _transposed(net, l), y)
        act = acts[l]
        w = y.shape[1]
        zero = np.float32(0.0)
        # ReLU and identity get loops of their own, which the compiler vectorises
        if act == RELU:
            for i in range(n):
                for j in range(w):
                    v = y[i, j] + b[j]
                    y[i, j] = v if v > zero else zero
        elif act == IDENTITY:
            for i in range(n):
                for j in range(w):
                    y[i, j] += b[j]
        else:
            o = output_offsets(net)[l]
            z = preactivations(net)[o : o + n * w]
            for i in range(n):
                for j in range(w):
                    v = y[i, j] + b[j]
                    if act == GELU:
                        z[i * w + j] = v  # the backward pass needs the pre-activation
                    y[i, j] = _activation(act, v)
        x = y
    return x


@compiled_only_refcounted
def backward(net, x, n, dy, grads, dx):
    """Backward of the last forward(net, x, n) from dy = dL/d(output) (overwritten). Writes the
    parameter gradients into grads when grads.size > 0 (grads(net), or grads(net)[:0] for none),
    and dL/dx into dx when dx.size > 0. (Arrays rather than flags: a constant flag would make
    numba compile one copy of backward per value.)"""
    acts, sz, off = activations(net), sizes(net), offsets(net)
    L = acts.shape[0]
    g = dy
    for l in range(L - 1, -1, -1):
        W, b = _weights(net, l)
        y = layer_output(net, l, n)
        act = acts[l]
        w = y.shape[1]
        if act == RELU:  # a loop of its own, vectorised
            zero = np.float32(0.0)
            for i in range(n):
                for j in range(w):
                    g[i, j] = g[i, j] if y[i, j] > zero else zero
        elif act != IDENTITY:
            o = output_offsets(net)[l]
            z = preactivations(net)[o : o + n * w]
            for i in range(n):
                for j in range(w):
                    g[i, j] = _activation_backward(act, g[i, j], y[i, j], z[i * w + j] if act == GELU else np.float32(0.0))
        xin = x if l == 0 else layer_output(net, l - 1, n)
        if grads.size > 0:
            n_in = sz[l]
            wo, bo = off[l, 0], off[l, 1]
            np.dot(g.T, xin, grads[wo:bo].reshape((w, n_in)))
            db = grads[bo : bo + w]
            for j in range(w):
                db[j] = 0.0
            for i in range(n):
                for j in range(w):
                    db[j] += g[i, j]
        if l > 0:
            buf = scratch_a(net) if l & 1 else scratch_b(net)
            out = buf[: n * sz[l]].reshape((n, sz[l]))
            np.dot(g, W, out)
            g = out
        elif dx.size > 0:
            np.dot(g, W, dx)


@compiled_only
def adam(net, lr, step, beta1=0.9, beta2=0.999, eps=1e-8):
    """One Adam step (torch.optim.Adam semantics) from grads(net); step counts from 1."""
    p, g, m, v = params(net), grads(net), adam_m(net), adam_v(net)
    f32 = np.float32
    b1, b2, c1, c2 = f32(beta1), f32(beta2), f32(1.0 - beta1), f32(1.0 - beta2)
    a = f32(lr / (1.0 - beta1**step))
    inv_bc2_sqrt = f32(1.0 / sqrt(1.0 - beta2**step))
    e = f32(eps)
    for k in range(p.shape[0]):
        gk = g[k]
        mk = b1 * m[k] + c1 * gk
        vk = b2 * v[k] + c2 * gk * gk
        m[k] = mk
        v[k] = vk
        p[k] -= a * mk / (np.sqrt(vk) * inv_bc2_sqrt + e)
    sync_transposed(net)


@compiled_only
def polyak(target, source, tau):
    n = target.spec[N_PARAMS]
    t, s = target.weights, source.weights  # params | wt: linear, so the transposed copies follow the same way
    for k in range(2 * n):
        t[k] = (1.0 - tau) * t[k] + tau * s[k]


# ---------------------------------------------------------------- pieces of actor-critic updates


@compiled_only
def values(net, x, n, out):
    """out[s] = net(x[s]) for a network of one output (a critic's values)."""
    q = forward(net, x, n)
    for s in range(n):
        out[s] = q[s, 0]


@compiled_only
def regress(critic, x, y, n, scale, lr, step, dq):
    """One Adam step of critic towards y on loss scale/2 * mean((critic(x) - y)^2)."""
    q = forward(critic, x, n)
    for s in range(n):
        dq[s, 0] = scale / n * (q[s, 0] - y[s])
    backward(critic, x, n, dq, grads(critic), dq[:0])
    adam(critic, lr, step)


@compiled_only
def copy_columns(src, dst, start):
    """dst[:, :] = src[:, start:start + dst.shape[1]] (observations out of a critic's input rows
    and back)."""
    for s in range(dst.shape[0]):
        for i in range(dst.shape[1]):
            dst[s, i] = src[s, start + i]


def target_of(net):
    """A forward-only copy of net (a target network)."""
    v = view(net)
    widths = [int(w) for w in v.sizes]
    t = new_net(widths, [int(a) for a in v.acts], v.ys.size // sum(widths[1:]), trainable=False)
    n = int(net.spec[N_PARAMS])
    t.weights[: 2 * n] = net.weights[: 2 * n]  # params and transposed weights
    return t


def rows_of(net, batch):
    """A view of net for `batch` rows on another thread: the same parameters (and Adam moments),
    its own activations, scratch and gradients."""
    v = view(net)
    own = new_net([int(w) for w in v.sizes], [int(a) for a in v.acts], batch, trainable=v.grads.size > 0)
    return own._replace(weights=net.weights)


@compiled_only
def greedy_action(net, obs, squash, out):
    """Deterministic action in [-1, 1] for one observation: the network's first len(out) outputs,
    through tanh when squash (SAC's mean head) or clipped (TD3's tanh output)."""
    x = scratch_a(net)[: obs.shape[0]].reshape((1, obs.shape[0]))  # scratch row, free outside backward
    for i in range(obs.shape[0]):
        x[0, i] = obs[i]
    y = forward(net, x, x.shape[0])  # not the constant 1: that would compile forward once more
    for i in range(out.shape[0]):
        v = tanh(y[0, i]) if squash else y[0, i]
        out[i] = -1.0 if v < -1.0 else (1.0 if v > 1.0 else v)
