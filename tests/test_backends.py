"""The numpy backend's kernels against the plain-Python reference, on random data, every activation."""
import numpy as np
import pytest

from microrl import _numpy, _plain
from microrl.activations import NAMES
from microrl.compat import zeros


def _arr(values):
    a = zeros(len(values))
    for i, v in enumerate(values):
        a[i] = float(v)
    return a


@pytest.mark.parametrize("act", range(len(NAMES)))
@pytest.mark.parametrize("n,n_in,n_out", [(1, 3, 1), (5, 7, 3), (17, 13, 9)])
def test_dense_forward_backward_same(act, n, n_in, n_out):
    rng = np.random.default_rng(act * 100 + n)
    W, b, x, dy = (rng.normal(size=s) for s in ((n_out, n_in), (n_out,), (n, n_in), (n, n_out)))
    results = {}
    for name, B in (("plain", _plain), ("numpy", _numpy)):
        bufs = {k: _arr(v.ravel()) for k, v in dict(W=W, b=b, x=x, dy=dy).items()}
        y, z, dW, db, dx = (zeros(k) for k in (n * n_out, n * n_out, n_out * n_in, n_out, n * n_in))
        Wv, xv = B.matrix(bufs["W"], 0, n_out, n_in), B.matrix(bufs["x"], 0, n, n_in)
        yv, zv = B.matrix(y, 0, n, n_out), B.matrix(z, 0, n, n_out)
        B.dense(Wv, B.vector(bufs["b"], 0, n_out), xv, yv, n, act, zv)
        B.dense_backward(Wv, xv, yv, zv, B.matrix(bufs["dy"], 0, n, n_out), n, act, B.matrix(dW, 0, n_out, n_in), B.vector(db, 0, n_out), B.matrix(dx, 0, n, n_in))
        results[name] = [np.array(a) for a in (y, dW, db, dx)]
    for a, b_ in zip(results["plain"], results["numpy"]):
        assert np.allclose(a, b_, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_backward_zeroes_exactly_where_off(dtype):
    # the numpy kernel masks by bits, not by boolean assignment: same bits as g[y <= 0] = 0,
    # including NaN and infinite gradients and NaN or -0.0 outputs
    rng = np.random.default_rng(7)
    g = rng.normal(size=(64, 9)).astype(dtype)
    y = np.maximum(rng.normal(size=(64, 9)), 0.0).astype(dtype)
    g[0, :4] = [np.nan, np.inf, -np.inf, -0.0]
    y[0, :4] = [0.0, np.nan, 1.0, 0.0]
    y[1, :2] = [-0.0, np.nan]
    expected = g.copy()
    expected[y <= 0.0] = 0.0
    _numpy._zero_where_off(g, y)
    assert np.array_equal(g.view(np.uint8), expected.view(np.uint8))


def test_adam_polyak_copy_same():
    rng = np.random.default_rng(1)
    p, g = rng.normal(size=50), rng.normal(size=50)
    out = {}
    for name, B in (("plain", _plain), ("numpy", _numpy)):
        pb, gb, mb, vb, tb = _arr(p), _arr(g), zeros(50), zeros(50), _arr(p[::-1])
        P, G, M, V, T = (B.vector(a, 0, 50) for a in (pb, gb, mb, vb, tb))
        for step in (1, 2, 3):
            B.adam(P, G, M, V, 1e-2, 0.9, 0.999, 1e-8, step)
        B.polyak(T, P, 0.1)
        out[name] = [np.array(a) for a in (pb, mb, vb, tb)]
        B.copy(T, P)
        assert np.array_equal(np.array(tb), np.array(pb))
    for a, b_ in zip(out["plain"], out["numpy"]):
        assert np.allclose(a, b_, rtol=1e-5, atol=1e-6)


def test_backend_selection():
    import microrl
    from microrl import backend

    assert microrl.backend_name() in backend.available()
    assert "plain" in backend.available()
    with pytest.raises(ValueError, match="unknown backend"):
        backend.use("cuda")
