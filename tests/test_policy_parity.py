"""A policy written on CPython acts the same when loaded on MicroPython, including on a board-sized heap."""
import os

import numpy as np
import pytest

import microrl
from microrl.nn import MLP
from microrl.rng import Rng
from helpers import compile_device_mpy, needs_micropython, run_micropython_code


def _write(tmp_path, sizes, acts, **kw):
    net = MLP(sizes, acts, trainable=False).init(Rng(3))
    p = microrl.Policy(sizes, acts, params=net.params, **kw)
    path = str(tmp_path / ("p_%s.mrlp" % "-".join(map(str, sizes))))
    microrl.save(path, p)
    return p, path


def _on_micropython(path, observations, heap=None, path_prefix=None):
    """Load the policy first (its weights take the heap's big block), then read observations
    from a file one line at a time and print each action."""
    obs_path = path + ".obs"
    with open(obs_path, "w") as f:
        f.write("\n".join(" ".join(repr(float(v)) for v in o) for o in observations) + "\n")
    code = "import microrl\np = microrl.load(%r)\nfor line in open(%r):\n    print(' '.join(repr(a) for a in p([float(v) for v in line.split()])))" % (path, obs_path)
    if path_prefix:  # the .mpy build first on the module path
        code = "import sys\nsys.path.insert(0, %r)\n" % path_prefix + code
    out = run_micropython_code(code, heap=heap)
    return [[float(v) for v in line.split()] for line in out.splitlines()]


@needs_micropython
@pytest.mark.parametrize("heap,compiled", [(None, False), ("96K", False), ("64K", True)])
def test_paper_network_13_64_64_4(tmp_path, heap, compiled):
    """From source the compiler needs heap of its own (about 88K here); precompiled .mpy, as
    `microrl deploy --mpy` installs it, runs this 21 KB network in a 64K heap (56K here)."""
    p, path = _write(tmp_path, [13, 64, 64, 4], ("relu", "identity"))
    assert os.path.getsize(path) > 4 * p.net.n_params
    rng = np.random.default_rng(0)
    observations = rng.uniform(-2, 2, size=(20, 13)).round(6).tolist()
    ours = [list(p(o)) for o in observations]
    prefix = compile_device_mpy(str(tmp_path / "mpy")) if compiled else None
    theirs = _on_micropython(path, observations, heap, prefix)
    assert np.allclose(ours, theirs, rtol=1e-5, atol=1e-5)


@needs_micropython
def test_pendulum_policy_with_normalisation_and_scaling(tmp_path):
    p, path = _write(tmp_path, [3, 64, 64, 1], ("relu", "tanh"), obs_mean=[0.0, 0.1, -0.2], obs_std=[1.0, 0.5, 4.0], act_scale=[2.0], act_offset=[0.0])
    observations = [[1.0, 0.0, 0.0], [-0.5, 0.8, 3.2], [0.0, -1.0, -7.9]]
    ours = [list(p(o)) for o in observations]
    assert np.allclose(ours, _on_micropython(path, observations), rtol=1e-5, atol=1e-6)
