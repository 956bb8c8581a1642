"""Networks for large batches on numpy (BLAS): an MLP over one flat float32 vector in the device
core's layout, with the device core's own numpy kernels (microrl._numpy) for forward, backward
and Adam, so that its parameters drop into microrl.policy.Policy unchanged. PPO's networks.
(mlp.py is the other host stack: numba-compiled, for the per-step loops of TD3 and SAC.)"""
import numpy as np

from microrl import _numpy as kernels
from microrl.activations import code
from microrl.layout import layout


class Net:
    """An MLP over one flat float32 vector in the device core's layout, for batches of rows,
    forward and backward with the device core's numpy kernels, plus Adam moments."""

    def __init__(self, sizes, activations, batch):
        self.sizes = [int(s) for s in sizes]
        self.acts = [code(a) for a in activations]
        self.offsets, n = layout(self.sizes)
        self.params = np.zeros(n, np.float32)
        self.grads = np.zeros(n, np.float32)
        self.m = np.zeros(n, np.float32)
        self.v = np.zeros(n, np.float32)
        self.W, self.b, self.dW, self.db = [], [], [], []
        for l, (wo, bo) in enumerate(self.offsets):
            o, i = self.sizes[l + 1], self.sizes[l]
            self.W.append(self.params[wo:bo].reshape(o, i))
            self.b.append(self.params[bo : bo + o])
            self.dW.append(self.grads[wo:bo].reshape(o, i))
            self.db.append(self.grads[bo : bo + o])
        self.batch = batch
        self.y = [np.zeros((batch, s), np.float32) for s in self.sizes[1:]]
        self.dx = [np.zeros((batch, s), np.float32) for s in self.sizes[1:-1]]
        self.x = None

    def init_orthogonal(self, rng, hidden_gain, out_gain):
        """Orthogonal weights (gain sqrt(2) hidden, small for the policy's output), zero biases:
        the usual PPO initialisation."""
        for l, W in enumerate(self.W):
            gain = out_gain if l == len(self.W) - 1 else hidden_gain
            a = rng.standard_normal((max(W.shape), min(W.shape)))
            q, r = np.linalg.qr(a)
            q *= np.sign(np.diag(r))
            W[:] = gain * (q if W.shape[0] >= W.shape[1] else q.T)[: W.shape[0], : W.shape[1]]
            self.b[l][:] = 0.0

    def forward(self, x):
        n = x.shape[0]
        if n > self.batch:
            raise ValueError("batch of %d rows exceeds the %d allocated" % (n, self.batch))
        self.x = x
        for l in range(len(self.W)):
            kernels.dense(self.W[l], self.b[l], x, self.y[l], n, self.acts[l])
            x = self.y[l]
        return self.y[-1][:n]

    def backward(self, dy):
        """Gradients of the last forward into self.grads, from dy = dL/d(output) (overwritten)."""
        n = dy.shape[0]
        g = dy
        for l in range(len(self.W) - 1, -1, -1):
            x = self.x if l == 0 else self.y[l - 1]
            dx = self.dx[l - 1] if l > 0 else None
            kernels.dense_backward(self.W[l], x, self.y[l], None, g, n, self.acts[l], self.dW[l], self.db[l], dx)
            if l > 0:
                g = dx[:n]


class Adam:
    """Adam (PyTorch semantics) over a list of parameter vectors, with their gradients."""

    def __init__(self, params):
        self.params = params
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]
        self.step_count = 0

    def step(self, grads, lr):
        self.step_count += 1
        for p, g, m, v in zip(self.params, grads, self.m, self.v):
            kernels.adam(p, g, m, v, lr, 0.9, 0.999, 1e-8, self.step_count)
