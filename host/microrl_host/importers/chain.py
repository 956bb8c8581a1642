"""A feed-forward chain as other frameworks describe it, op by op (a torch module list, an ONNX
graph), turned into what a microrl policy file holds (docs/policy-format.md):

    x = clip((obs - mean) / std, in_low, in_high)
    y = layers(x)                      dense layers, one activation each
    a = clip(scale * y + offset, act_low, act_high)

Affine maps by constants between layers fold into the neighbouring dense layer; an affine map
or a clip that the format cannot place is refused with the reason (ImportRefused)."""
import numpy as np

from microrl.activations import NAMES
from microrl.refusals import count

from .errors import ImportRefused
from .limits import MAX_LAYERS, check_shape, check_values

FLOAT32_MAX = float(np.finfo(np.float32).max)


class Chain:
    def __init__(self, n_in=None):
        self.n_in = n_in
        self.mean = None  # input map: x = (obs - mean) / std
        self.std = None
        self.in_low = None
        self.in_high = None
        self.layers = []  # [W [out, in], b [out], activation name or None]
        self.pending = None  # (scale, shift) on the value after the last activation
        self.out_scale = None
        self.out_offset = None
        self.out_low = None
        self.out_high = None

    def normalise(self, mean, std, clip=None):
        """The observation normalisation the network was trained behind: (obs - mean) / std,
        clipped to +-clip (None: not clipped)."""
        if self.n_in is not None and len(mean) != self.n_in:
            raise ImportRefused("a normalisation of %s for a network of %s" % (count(len(mean), "observation"), count(self.n_in, "input")))
        self.mean, self.std = np.asarray(mean, np.float64), np.asarray(std, np.float64)
        if clip is not None:
            self.clip(-clip, clip)

    # -- the state of the chain: before the first layer, after a dense layer, after its activation
    def _width(self):
        if self.layers:
            return self.layers[-1][0].shape[0]
        return self.n_in

    def _vector(self, c, what):
        c = np.asarray(c, np.float64)
        n = self._width()
        if c.ndim > 1:
            if c.size == 0 or any(d != 1 for d in c.shape[:-1]):
                raise ImportRefused("%s by a constant of shape %s, not a vector: not an MLP's elementwise step" % (what, list(c.shape)))
            c = c.reshape(-1)
        if c.ndim == 0 or c.size == 1:
            if n is None:
                raise ImportRefused("%s by a scalar before the input width is known" % what)
            return np.full(n, float(c.reshape(-1)[0]))
        if n is not None and c.size != n:
            raise ImportRefused("%s by a vector of %d values where the values are %d wide" % (what, c.size, n))
        if self.n_in is None and not self.layers:
            self.n_in = c.size
        return c

    def affine(self, scale=None, shift=None, what="a scaling"):
        """value -> value * scale + shift (elementwise constants)."""
        s = None if scale is None else self._vector(scale, what)
        t = None if shift is None else self._vector(shift, what)
        n = len(s) if s is not None else len(t)
        s = np.ones(n) if s is None else s
        t = np.zeros(n) if t is None else t
        if not self.layers:
            # the input map: (obs - mean) / std, then s, t: ((obs - mean) / std) * s + t
            if self.in_low is not None:
                raise ImportRefused("%s after the input's clipping: the file clips the normalised input last" % what)
            if np.any(s == 0.0):
                raise ImportRefused("%s by zero on the input: no observation normalisation divides by zero" % what)
            mean = np.zeros(n) if self.mean is None else self.mean
            std = np.ones(n) if self.std is None else self.std
            # ((obs - mean) / std) * s + t = (obs - (mean - t * std / s)) / (std / s)
            self.mean, self.std = mean - t * std / s, std / s
            return
        W, b, act = self.layers[-1]
        if act is None:  # right after a dense layer: fold into it
            self.layers[-1] = [W * s[:, None], b * s + t, None]
            return
        if self.out_low is not None:
            # after the output's clip: move the clip through the map (a negative scale swaps its ends)
            lo, hi = self.out_low * s + t, self.out_high * s + t
            self.out_low, self.out_high = np.minimum(lo, hi), np.maximum(lo, hi)
        if self.pending is None:
            self.pending = (s, t)
        else:
            ps, pt = self.pending
            self.pending = (ps * s, pt * s + t)

    def clip(self, low, high, what="a clip"):
        n = self._width()
        low = np.full(n, -np.inf) if low is None else np.broadcast_to(np.asarray(low, np.float64), (n,)).copy()
        high = np.full(n, np.inf) if high is None else np.broadcast_to(np.asarray(high, np.float64), (n,)).copy()
        if not self.layers:
            if self.in_low is not None:
                low, high = np.maximum(low, self.in_low), np.minimum(high, self.in_high)
            self.in_low, self.in_high = low, high
            return
        W, b, act = self.layers[-1]
        if act is None and np.all(low == 0.0) and np.all(np.isposinf(high)):
            self.layers[-1][2] = "relu"  # max(x, 0) is ReLU
            return
        if act is None:
            self.layers[-1][2] = "identity"
        if self.out_low is not None:
            low, high = np.maximum(low, self.out_low), np.minimum(high, self.out_high)
        self.out_low, self.out_high = low, high

    def dense(self, W, b=None):
        W = np.asarray(W, np.float64)
        if W.ndim != 2:
            raise ImportRefused("a matrix product with a constant of shape %s, not a weight matrix" % list(W.shape))
        b = np.zeros(W.shape[0]) if b is None else np.asarray(b, np.float64).reshape(-1)
        if b.shape != (W.shape[0],):
            raise ImportRefused("a bias of %d values for a layer of %d outputs" % (b.size, W.shape[0]))
        width = self._width()
        if width is not None and W.shape[1] != width:
            raise ImportRefused("a layer of %d inputs after values %d wide" % (W.shape[1], width))
        # what a policy file holds (limits.py), before the network grows past it
        check_shape([W.shape[1], W.shape[0]], "the network")
        if len(self.layers) >= MAX_LAYERS:
            raise ImportRefused("the network has more than %d layers, the most a policy file holds" % MAX_LAYERS)
        check_values(sum(w.size + c.size for w, c, _ in self.layers) + W.size + b.size, "the network")
        if self.layers:
            if self.layers[-1][2] is None:
                self.layers[-1][2] = "identity"
            if self.out_low is not None:
                raise ImportRefused("a clip between layers (other than max(x, 0)): the file clips only the input and the action")
            if self.pending is not None:  # W (s * h + t) + b = (W * s) h + (W t + b)
                s, t = self.pending
                W, b = W * s[None, :], b + W @ t
                self.pending = None
        elif self.n_in is None:
            self.n_in = W.shape[1]
        self.layers.append([W, b, None])

    def activation(self, name):
        if name not in NAMES:
            raise ImportRefused("activation %s: microrl's layers have %s" % (name, ", ".join(NAMES)))
        if not self.layers:
            raise ImportRefused("activation %s before the first layer: the file has no place for it" % name)
        W, b, act = self.layers[-1]
        if act is not None:
            if self.out_low is not None:
                raise ImportRefused("activation %s after a clip: the file clips only the input and the action" % name)
            # an activation after an activation (and maybe a scaling): a diagonal layer between them
            s, t = self.pending if self.pending is not None else (np.ones(b.shape[0]), np.zeros(b.shape[0]))
            self.pending = None
            self.layers.append([np.diag(s), t, name])
            return
        self.layers[-1][2] = name

    def state(self):
        """The optional blocks as they are now (for found())."""
        return (self.mean, self.in_low, self.pending, self.out_low)

    def found(self, whose, before=(None, None, None, None)):
        """Notes on the blocks made or changed since state() gave `before`."""
        notes = []
        for old, new, what in zip(before, self.state(), ("operations before the first layer: the observation normalisation", "clip of the input: the input clipping",
                                                          "operations after the last activation: the action scaling", "clip of the output: the action clipping")):
            if new is not None and new is not old:
                notes.append("%s %s" % (whose, what))
        return notes

    def finish(self):
        """(sizes, activation names, params float32 in the network layout, blocks): blocks maps the
        policy's optional blocks (obs_mean, ..., act_high) to lists."""
        if not self.layers:
            raise ImportRefused("no dense layer (Gemm, MatMul or nn.Linear) found")
        if self.layers[-1][2] is None:
            self.layers[-1][2] = "identity"
        sizes = [self.layers[0][0].shape[1]] + [W.shape[0] for W, _, _ in self.layers]
        check_shape(sizes, "the network")
        acts = [a for _, _, a in self.layers]
        params = np.concatenate([np.concatenate([W.reshape(-1), b]) for W, b, _ in self.layers]).astype(np.float32)
        blocks = {}
        if self.mean is not None:
            if np.any(self.std <= 0.0):
                # a negative std would be legal arithmetic but not a standard deviation: fold its sign into the first layer
                sign = np.where(self.std < 0.0, -1.0, 1.0)
                W, b, act = self.layers[0]
                self.layers[0] = [W * sign[None, :], b, act]
                self.std = self.std * sign
                if self.in_low is not None:
                    lo, hi = self.in_low * sign, self.in_high * sign
                    self.in_low, self.in_high = np.minimum(lo, hi), np.maximum(lo, hi)
                params = np.concatenate([np.concatenate([W.reshape(-1), b]) for W, b, _ in self.layers]).astype(np.float32)
            blocks["obs_mean"], blocks["obs_std"] = self.mean.tolist(), self.std.tolist()
        if self.in_low is not None:
            blocks["in_low"], blocks["in_high"] = _finite(self.in_low), _finite(self.in_high)
        if self.pending is not None:
            blocks["act_scale"], blocks["act_offset"] = self.pending[0].tolist(), self.pending[1].tolist()
        if self.out_low is not None:
            blocks["act_low"], blocks["act_high"] = _finite(self.out_low), _finite(self.out_high)
        return sizes, acts, params, blocks


def _finite(bound):
    # an open end of a clip is the largest float32: the file holds finite numbers only
    return np.clip(bound, -FLOAT32_MAX, FLOAT32_MAX).tolist()
