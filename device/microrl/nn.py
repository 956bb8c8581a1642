# Fully connected networks over flat preallocated buffers, in the one layout of layout.py.
from math import sqrt

from . import backend
from .activations import GELU
from .compat import zeros
from .layout import layout, param_count, shape  # noqa: F401  (nn.layout: the one layout)


class MLP:
    """A multilayer perceptron with every buffer allocated here, once.

    sizes: [n_in, hidden..., n_out]; activations: one name or code per layer (hidden ones then
    the output), or (hidden, output) as a pair of names. batch: the most rows one call handles.
    trainable: also allocate gradients and Adam moments. params: an existing flat buffer to use.
    share: another MLP whose hidden-layer outputs this one reuses where the shapes match, to save
    RAM; only for networks whose passes never interleave (a forward of one overwrites the other's
    hidden activations; outputs stay separate). scratch_from: another trainable MLP whose backward
    scratch and gradient buffer this one reuses (safe whenever one network's gradients are used
    by its Adam step before another's backward pass). input_from: another MLP with the same input
    width and batch whose input rows this one reads (forward(n, other.input) without a copy).
    kernels: a backend by name, or a backend module, for this network alone (the host's PPO gives
    microrl_host.nn.fast_tanh: numpy's kernels with a compiled tanh), else the one backend.py chose.
    """

    def __init__(self, sizes, activations, batch=1, trainable=True, params=None, typecode="f", share=None, scratch_from=None, input_from=None, kernels=None):
        sizes, self.acts = shape(sizes, activations)
        n_layers = len(sizes) - 1
        self.sizes = sizes
        self.batch = batch
        self.typecode = typecode
        offsets, n = layout(sizes)
        self.n_params = n
        if params is None:
            params = zeros(n, typecode)
        elif len(params) != n:
            raise ValueError("params has %d values, the layout needs %d" % (len(params), n))
        self.params = params
        B = backend.impl() if kernels is None else (backend.load(kernels) if isinstance(kernels, str) else kernels)
        self.B = B
        self.W = [B.matrix(params, wo, sizes[l + 1], sizes[l]) for l, (wo, bo) in enumerate(offsets)]
        self.b = [B.vector(params, bo, sizes[l + 1]) for l, (wo, bo) in enumerate(offsets)]
        self.p = B.vector(params, 0, n)
        # per layer outputs; pre-activations only where the backward pass needs them
        self.y = []
        self.z = []
        for l in range(n_layers):
            width = sizes[l + 1]
            hidden = l < n_layers - 1
            if hidden and share is not None and share.batch == batch and l < len(share.y) - 1 and share.sizes[l + 1] == width:
                self.y.append(share.y[l])
                z = None
                if self.acts[l] == GELU:
                    z = share.z[l]  # the other's pre-activations if it keeps them, else our own
                    if z is None:
                        z = B.matrix(zeros(batch * width, typecode), 0, batch, width)
                self.z.append(z)
                continue
            self.output_buf = zeros(batch * width, typecode)  # the last one stays: raw output rows
            self.y.append(B.matrix(self.output_buf, 0, batch, width))
            self.z.append(B.matrix(zeros(batch * width, typecode), 0, batch, width) if self.acts[l] == GELU else None)
        if input_from is not None and input_from.batch == batch and input_from.sizes[0] == sizes[0]:
            self.input_buf = input_from.input_buf
        else:
            self.input_buf = zeros(batch * sizes[0], typecode)  # raw input rows, written by callers
        self.input = B.matrix(self.input_buf, 0, batch, sizes[0])
        self.x = self.input
        self.trainable = trainable
        if trainable:
            other = scratch_from
            if other is not None and other.trainable and len(other.grads) >= n and other.typecode == typecode:
                self.grads = other.grads  # the larger network must be built first
            else:
                self.grads = zeros(n, typecode)
            self.m = zeros(n, typecode)
            self.v = zeros(n, typecode)
            self.g = B.vector(self.grads, 0, n)
            self.mv = B.vector(self.m, 0, n)
            self.vv = B.vector(self.v, 0, n)
            self.dW = [B.matrix(self.grads, wo, sizes[l + 1], sizes[l]) for l, (wo, bo) in enumerate(offsets)]
            self.db = [B.vector(self.grads, bo, sizes[l + 1]) for l, (wo, bo) in enumerate(offsets)]
            # dL/d(input of layer l) for l >= 1, ping-ponging between two buffers of the widest layer
            width = max(sizes[1:])
            if other is not None and other.trainable and other.batch == batch and len(other._scratch[0]) >= batch * width:
                raw = other._scratch
            else:
                raw = (zeros(batch * width, typecode), zeros(batch * width, typecode))
            self._scratch = raw
            self._dx = [None] + [B.matrix(raw[l & 1], 0, batch, sizes[l]) for l in range(1, n_layers)]
            self.adam_step_count = 0

    def init(self, rng):
        """PyTorch nn.Linear initialisation: W and b uniform in +-1/sqrt(fan_in) (Kaiming-uniform, a=sqrt(5))."""
        p = self.params
        offsets, _ = layout(self.sizes)
        for l, (wo, bo) in enumerate(offsets):
            n_in, n_out = self.sizes[l], self.sizes[l + 1]
            bound = 1.0 / sqrt(n_in)
            for k in range(wo, bo):
                p[k] = rng.uniform(-bound, bound)
            for k in range(bo, bo + n_out):
                p[k] = rng.uniform(-bound, bound)
        return self

    def forward(self, n=1, x=None):
        """Forward n rows of x (default: self.input); returns the output view."""
        if n > self.batch:
            raise ValueError("batch of %d rows exceeds the %d allocated" % (n, self.batch))
        if x is None:
            x = self.input
        self.x = x
        dense = self.B.dense
        for l in range(len(self.acts)):
            dense(self.W[l], self.b[l], x, self.y[l], n, self.acts[l], self.z[l])
            x = self.y[l]
        return x

    def backward(self, dy, n, param_grads=True, dx=None):
        """Backward of the last forward for n rows, from dy = dL/d(output) (overwritten).
        Writes gradients into self.grads (when param_grads) and dL/dx into dx (when given)."""
        dense_backward = self.B.dense_backward
        L = len(self.acts)
        g = dy
        for l in range(L - 1, -1, -1):
            x = self.x if l == 0 else self.y[l - 1]
            out = self._dx[l] if l > 0 else dx
            if param_grads:
                dense_backward(self.W[l], x, self.y[l], self.z[l], g, n, self.acts[l], self.dW[l], self.db[l], out)
            else:
                dense_backward(self.W[l], x, self.y[l], self.z[l], g, n, self.acts[l], None, None, out)
            g = out

    def adam_step(self, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8):
        """One Adam update from self.grads (PyTorch defaults)."""
        self.adam_step_count += 1
        self.B.adam(self.p, self.g, self.mv, self.vv, lr, beta1, beta2, eps, self.adam_step_count)

    def copy_from(self, other):
        self.B.copy(self.p, other.p)

    def polyak_from(self, other, tau):
        self.B.polyak(self.p, other.p, tau)

