"""numba-compiled networks shared by the host trainers (TD3, SAC): MLPs over flat float32
parameter vectors in the device core's layout (microrl.nn.layout), forward and backward passes,
Adam, Polyak averaging, and the twin-critic helpers.

Everything here is plain arrays in namedtuples so that compiled loops take them as arguments,
checkpoints save them as they are (every field is an array), and nothing runs Python per step.
"""
from collections import namedtuple
from math import erf, exp, sqrt, tanh

import numpy as np

from microrl.activations import GELU, IDENTITY, RELU, SIGMOID, TANH
from microrl.layout import layout, shape
from microrl.nn import MLP
from microrl.rng import Rng

from .jit import compiled_only, inline, jit

# ---------------------------------------------------------------- networks
# params: the device core's layout; wt: each layer's weights again, transposed ([in, out]), for
# the forward pass (a plain matrix product runs about 25% faster than one with a transposed
# operand). adam(), polyak() and sync_transposed() keep wt equal to params.
Net = namedtuple("Net", "params wt grads m v sizes acts offsets yoff ys zs dxa dxb")


def new_net(sizes, activations, batch, seed=None, trainable=True):
    """A network for up to `batch` rows. Initialised like the device core's MLP.init (PyTorch's
    nn.Linear init) from microrl.rng.Rng(seed) when seed is given, else zeros."""
    sizes, acts = shape(sizes, activations)
    offsets, n = layout(sizes)
    params = np.zeros(n, np.float32)
    if seed is not None:
        mlp = MLP(sizes, acts, batch=1, trainable=False).init(Rng(seed))
        params[:] = np.asarray(mlp.params, dtype=np.float32)
    widths = sizes[1:]
    yoff = np.zeros(len(widths), np.int64)
    yoff[1:] = np.cumsum([batch * w for w in widths])[:-1]
    k = n if trainable else 0
    net = Net(
        params=params,
        wt=np.zeros(n, np.float32),
        grads=np.zeros(k, np.float32),
        m=np.zeros(k, np.float32),
        v=np.zeros(k, np.float32),
        sizes=np.array(sizes, np.int64),
        acts=np.array(acts, np.int64),
        offsets=np.array(offsets, np.int64).reshape(-1, 2),
        yoff=yoff,
        ys=np.zeros(batch * sum(widths), np.float32),
        zs=np.zeros(batch * sum(widths) if GELU in acts else 0, np.float32),
        dxa=np.zeros(batch * max(sizes), np.float32),
        dxb=np.zeros(batch * max(sizes), np.float32),
    )
    for l, (wo, bo) in enumerate(net.offsets):  # sync_transposed(net), without loading compiled code at start-up
        net.wt[wo:bo] = params[wo:bo].reshape(sizes[l + 1], sizes[l]).T.ravel()
    return net


_INV_SQRT2 = 0.7071067811865476
_INV_SQRT_2PI = 0.3989422804014327


@inline
def _weights(net, l):
    n_in, n_out = net.sizes[l], net.sizes[l + 1]
    wo, bo = net.offsets[l, 0], net.offsets[l, 1]
    return net.params[wo:bo].reshape((n_out, n_in)), net.params[bo : bo + n_out]


@inline
def _transposed(net, l):
    n_in, n_out = net.sizes[l], net.sizes[l + 1]
    return net.wt[net.offsets[l, 0] : net.offsets[l, 1]].reshape((n_in, n_out))


@jit
def sync_transposed(net):
    """Refresh net.wt from net.params (after writing params directly)."""
    for l in range(net.acts.shape[0]):
        W, b = _weights(net, l)
        WT = _transposed(net, l)
        for i in range(W.shape[1]):
            for j in range(W.shape[0]):
                WT[i, j] = W[j, i]


@inline
def layer_output(net, l, n):
    """Output rows of layer l from the last forward of n rows."""
    w = net.sizes[l + 1]
    return net.ys[net.yoff[l] : net.yoff[l] + n * w].reshape((n, w))


# Each activation, and its derivative, written once (ReLU's also as its own loop below, for
# speed). Results are float32, rounded as the store into the network's buffers rounds them.
@inline
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


@inline
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


@compiled_only
def forward(net, x, n):
    """y = net(x[:n]); x is (n, n_in) C-contiguous float32. Returns the output rows (a view
    into the network's buffers, valid until its next forward)."""
    for l in range(net.acts.shape[0]):
        W, b = _weights(net, l)
        y = layer_output(net, l, n)
        np.dot(x, _transposed(net, l), y)
        act = net.acts[l]
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
            z = net.zs[net.yoff[l] : net.yoff[l] + n * w]
            for i in range(n):
                for j in range(w):
                    v = y[i, j] + b[j]
                    if act == GELU:
                        z[i * w + j] = v  # the backward pass needs the pre-activation
                    y[i, j] = _activation(act, v)
        x = y
    return x


@compiled_only
def backward(net, x, n, dy, grads, dx):
    """Backward of the last forward(net, x, n) from dy = dL/d(output) (overwritten). Writes the
    parameter gradients into grads when grads.size > 0 (net.grads, or net.grads[:0] for none),
    and dL/dx into dx when dx.size > 0. (Arrays rather than flags: a constant flag would make
    numba compile one copy of backward per value.)"""
    L = net.acts.shape[0]
    g = dy
    for l in range(L - 1, -1, -1):
        W, b = _weights(net, l)
        y = layer_output(net, l, n)
        act = net.acts[l]
        w = y.shape[1]
        if act == RELU:  # a loop of its own, vectorised
            zero = np.float32(0.0)
            for i in range(n):
                for j in range(w):
                    g[i, j] = g[i, j] if y[i, j] > zero else zero
        elif act != IDENTITY:
            z = net.zs[net.yoff[l] : net.yoff[l] + n * w]
            for i in range(n):
                for j in range(w):
                    g[i, j] = _activation_backward(act, g[i, j], y[i, j], z[i * w + j] if act == GELU else np.float32(0.0))
        xin = x if l == 0 else layer_output(net, l - 1, n)
        if grads.size > 0:
            n_in = net.sizes[l]
            wo, bo = net.offsets[l, 0], net.offsets[l, 1]
            np.dot(g.T, xin, grads[wo:bo].reshape((w, n_in)))
            db = grads[bo : bo + w]
            for j in range(w):
                db[j] = 0.0
            for i in range(n):
                for j in range(w):
                    db[j] += g[i, j]
        if l > 0:
            buf = net.dxa if l & 1 else net.dxb
            out = buf[: n * net.sizes[l]].reshape((n, net.sizes[l]))
            np.dot(g, W, out)
            g = out
        elif dx.size > 0:
            np.dot(g, W, dx)


@compiled_only
def adam(net, lr, step, beta1=0.9, beta2=0.999, eps=1e-8):
    """One Adam step (torch.optim.Adam semantics) from net.grads; step counts from 1."""
    p, g, m, v = net.params, net.grads, net.m, net.v
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


@inline
def polyak(target, source, tau):
    t, s = target.params, source.params
    for k in range(t.shape[0]):
        t[k] = (1.0 - tau) * t[k] + tau * s[k]
    t, s = target.wt, source.wt  # linear, so the transposed copies follow the same way
    for k in range(t.shape[0]):
        t[k] = (1.0 - tau) * t[k] + tau * s[k]


# ---------------------------------------------------------------- pieces of actor-critic updates


@inline
def values(net, x, n, out):
    """out[s] = net(x[s]) for a network of one output (a critic's values)."""
    q = forward(net, x, n)
    for s in range(n):
        out[s] = q[s, 0]


@inline
def regress(critic, x, y, n, scale, lr, step, dq):
    """One Adam step of critic towards y on loss scale/2 * mean((critic(x) - y)^2)."""
    q = forward(critic, x, n)
    for s in range(n):
        dq[s, 0] = scale / n * (q[s, 0] - y[s])
    backward(critic, x, n, dq, critic.grads, dq[:0])
    adam(critic, lr, step)


@inline
def copy_columns(src, dst, start):
    """dst[:, :] = src[:, start:start + dst.shape[1]] (observations out of a critic's input rows
    and back)."""
    for s in range(dst.shape[0]):
        for i in range(dst.shape[1]):
            dst[s, i] = src[s, start + i]


def target_of(net):
    """A forward-only copy of net (a target network)."""
    sizes = [int(v) for v in net.sizes]
    t = new_net(sizes, [int(a) for a in net.acts], net.ys.size // sum(sizes[1:]), trainable=False)
    t.params[:] = net.params
    t.wt[:] = net.wt
    return t


def rows_of(net, batch):
    """A view of net for `batch` rows on another thread: the same parameters (and Adam moments),
    its own activations, scratch and gradients."""
    sizes = [int(v) for v in net.sizes]
    own = new_net(sizes, [int(a) for a in net.acts], batch, trainable=net.grads.size > 0)
    return own._replace(params=net.params, wt=net.wt, m=net.m, v=net.v)


@inline
def greedy_action(net, obs, squash, out):
    """Deterministic action in [-1, 1] for one observation: the network's first len(out) outputs,
    through tanh when squash (SAC's mean head) or clipped (TD3's tanh output)."""
    x = net.dxa[: obs.shape[0]].reshape((1, obs.shape[0]))  # scratch row, free outside backward
    for i in range(obs.shape[0]):
        x[0, i] = obs[i]
    y = forward(net, x, x.shape[0])  # not the constant 1: that would compile forward once more
    for i in range(out.shape[0]):
        v = tanh(y[0, i]) if squash else y[0, i]
        out[i] = -1.0 if v < -1.0 else (1.0 if v > 1.0 else v)
