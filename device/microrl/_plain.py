# Plain-Python kernels over array('f'): complete and correct on their own, and the reference the
# other backends are tested against. A matrix view is (buffer, offset, rows, cols), row-major; a
# vector view is (buffer, offset, n). Loops keep values in locals: every attribute or global
# lookup costs on MicroPython.
from math import exp, sqrt, tanh

from .activations import GELU, IDENTITY, RELU, SIGMOID, TANH
from .compat import erf
from .fileformat import FLOAT32_MAX, NEG_FLOAT32_MAX

_INV_SQRT2 = 0.7071067811865476
_INV_SQRT_2PI = 0.3989422804014327


def matrix(buf, offset, rows, cols):
    return (buf, offset, rows, cols)


def vector(buf, offset, n):
    return (buf, offset, n)


def load_input(obs, x, n, mean, std, scale=1.0):
    """x[:n] = obs normalised ((obs - mean) / std when mean is not None); returns -1, or the index
    of the first value that is NaN, infinite or beyond float32 (x is then partly written): the
    native module's load_input for array('f'), in Python. scale is unused (int16 policies')."""
    lo, hi = NEG_FLOAT32_MAX, FLOAT32_MAX
    for i in range(n):
        v = obs[i] if mean is None else (obs[i] - mean[i]) / std[i]
        if not lo <= v <= hi:  # NaN fails both; no allocation on a board
            return i
        x[i] = v
    return -1


def _act_value(a, z):
    if a == RELU:
        return z if z > 0.0 else 0.0
    if a == TANH:
        return tanh(z)
    if a == SIGMOID:
        if z >= 0.0:
            return 1.0 / (1.0 + exp(-z))
        e = exp(z)
        return e / (1.0 + e)
    if a == GELU:
        return 0.5 * z * (1.0 + erf(z * _INV_SQRT2))
    return z


def dense(W, b, x, y, n, act, z=None):
    """y[:n] = act(x[:n] @ W.T + b); the pre-activation goes to z when given (GELU's backward needs it)."""
    wbuf, woff, n_out, n_in = W
    bbuf, boff = b[0], b[1]
    xbuf, xoff = x[0], x[1]
    ybuf, yoff = y[0], y[1]
    zbuf = None
    if z is not None:
        zbuf, zoff = z[0], z[1]
    for s in range(n):
        xs = xoff + s * n_in
        ys = yoff + s * n_out
        wi = woff - xs  # wbuf[wi + i] is W[o, i - xs]
        for o in range(n_out):
            acc = bbuf[boff + o]
            for i in range(xs, xs + n_in):
                acc += wbuf[wi + i] * xbuf[i]
            wi += n_in
            if zbuf is not None:
                zbuf[zoff + s * n_out + o] = acc
            if act == RELU:
                if acc < 0.0:
                    acc = 0.0
            elif act != IDENTITY:
                acc = _act_value(act, acc)
            ybuf[ys + o] = acc


def dense_backward(W, x, y, z, dy, n, act, dW=None, db=None, dx=None):
    """Backward through y = act(x @ W.T + b) for n rows. dy (dL/dy) is overwritten with dL/dz.
    Writes (not accumulates) dW and db when given, and dx = dL/dx when given."""
    wbuf, woff, n_out, n_in = W
    xbuf, xoff = x[0], x[1]
    ybuf, yoff = y[0], y[1]
    gbuf, goff = dy[0], dy[1]
    m = n * n_out
    if act == RELU:
        for k in range(m):
            if ybuf[yoff + k] <= 0.0:
                gbuf[goff + k] = 0.0
    elif act == TANH:
        for k in range(m):
            v = ybuf[yoff + k]
            gbuf[goff + k] *= 1.0 - v * v
    elif act == SIGMOID:
        for k in range(m):
            v = ybuf[yoff + k]
            gbuf[goff + k] *= v * (1.0 - v)
    elif act == GELU:
        zbuf, zoff = z[0], z[1]
        for k in range(m):
            v = zbuf[zoff + k]
            cdf = 0.5 * (1.0 + erf(v * _INV_SQRT2))
            pdf = _INV_SQRT_2PI * exp(-0.5 * v * v)
            gbuf[goff + k] *= cdf + v * pdf
    # row by row so that every inner loop walks contiguous memory, skipping zero gradients
    # (about half of them after a ReLU)
    dwbuf = None
    if dW is not None:
        dwbuf, dwoff = dW[0], dW[1]
        for k in range(dwoff, dwoff + n_out * n_in):
            dwbuf[k] = 0.0
    if db is not None:
        dbbuf, dboff = db[0], db[1]
        for o in range(n_out):
            dbbuf[dboff + o] = 0.0
    dxbuf = None
    if dx is not None:
        dxbuf, dxoff = dx[0], dx[1]
        for k in range(dxoff, dxoff + n * n_in):
            dxbuf[k] = 0.0
    for s in range(n):
        gs = goff + s * n_out
        xs = xoff + s * n_in
        for o in range(n_out):
            gv = gbuf[gs + o]
            if gv == 0.0:
                continue
            if db is not None:
                dbbuf[dboff + o] += gv
            if dwbuf is not None:
                row = dwoff + o * n_in - xs
                for i in range(xs, xs + n_in):
                    dwbuf[row + i] += gv * xbuf[i]
            if dxbuf is not None:
                wrow = woff + o * n_in - (dxoff + s * n_in)
                for i in range(dxoff + s * n_in, dxoff + s * n_in + n_in):
                    dxbuf[i] += gv * wbuf[wrow + i]


def adam(p, g, m, v, lr, beta1, beta2, eps, step):
    """One Adam step in place, as torch.optim.Adam (no weight decay, no amsgrad); step counts from 1."""
    pbuf, poff, n = p
    gbuf, goff = g[0], g[1]
    mbuf, moff = m[0], m[1]
    vbuf, voff = v[0], v[1]
    bc1 = 1.0 - beta1**step
    bc2_sqrt = sqrt(1.0 - beta2**step)
    step_size = lr / bc1
    c1 = 1.0 - beta1
    c2 = 1.0 - beta2
    for k in range(n):
        gk = gbuf[goff + k]
        mk = beta1 * mbuf[moff + k] + c1 * gk
        vk = beta2 * vbuf[voff + k] + c2 * gk * gk
        mbuf[moff + k] = mk
        vbuf[voff + k] = vk
        pbuf[poff + k] -= step_size * mk / (sqrt(vk) / bc2_sqrt + eps)


def polyak(target, source, tau):
    """target = (1 - tau) * target + tau * source."""
    tbuf, toff, n = target
    sbuf, soff = source[0], source[1]
    keep = 1.0 - tau
    for k in range(n):
        tbuf[toff + k] = keep * tbuf[toff + k] + tau * sbuf[soff + k]


def copy(target, source):
    tbuf, toff, n = target
    sbuf, soff = source[0], source[1]
    for k in range(n):
        tbuf[toff + k] = sbuf[soff + k]
