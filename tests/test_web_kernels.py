"""The wasm kernels of the browser page (host/microrl_host/web/microrl_kernels.wasm, built by
native_modules/microrl_kernels/wasm/build_wasm.py): never stale against the C sources, owning no
memory of their own, and computing what the host build of the same C computes, bit for bit
(tests/test_native_kernels.py checks that one against numpy), run under node."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from helpers import ROOT, host_kernels
from microrl.activations import NAMES
from microrl_host.board.native import build as native_build

WEB = os.path.join(ROOT, "host", "microrl_host", "web")
WASM = os.path.join(WEB, "microrl_kernels.wasm")
REBUILD = "rebuild it: python3 native_modules/microrl_kernels/wasm/build_wasm.py (needs clang-16 and lld-16)"
SIZES = [(1, 1, 1), (3, 5, 7), (2, 13, 64), (5, 17, 3), (32, 64, 64), (100, 4, 1)]  # (n, n_in, n_out)


def _build_script():
    sys.path.insert(0, os.path.join(native_build.SOURCE_DIR, "wasm"))
    try:
        import build_wasm
    finally:
        sys.path.pop(0)
    return build_wasm


def _manifest():
    with open(os.path.join(WEB, "microrl_kernels.json")) as f:
        return json.load(f)


def test_the_shipped_wasm_was_built_from_the_current_sources():
    build_wasm = _build_script()
    man = _manifest()
    assert man["source_hash"] == build_wasm.source_hash(), "the C sources or the build script changed since the .wasm was built; " + REBUILD
    with open(WASM, "rb") as f:
        data = f.read()
    assert len(data) == man["size"] and build_wasm.hashlib.sha256(data).hexdigest() == man["sha256"], "the .wasm differs from its manifest; " + REBUILD
    assert man["exports"] == list(build_wasm.EXPORTS) and man["cflags"] == build_wasm.CFLAGS


def test_the_shipped_wasm_writes_no_memory_it_does_not_own():
    """No data segment, no stack: it runs on MicroPython's memory (engine.js)."""
    build_wasm = _build_script()
    if shutil.which(build_wasm.OBJDUMP) is None:
        pytest.skip("%s not found (apt-get install llvm-16): cannot disassemble the .wasm" % build_wasm.OBJDUMP)
    assert build_wasm.check_module(WASM) == []


def test_a_rebuild_gives_the_same_bytes(tmp_path):
    build_wasm = _build_script()
    if shutil.which(build_wasm.CLANG) is None or shutil.which(build_wasm.WASM_LD) is None:
        pytest.skip("clang-16 or wasm-ld-16 not found (apt-get install clang-16 lld-16): the .wasm is checked against its manifest only")
    subprocess.run([sys.executable, os.path.join(native_build.SOURCE_DIR, "wasm", "build_wasm.py"), "--out", str(tmp_path)], check=True, capture_output=True)
    with open(WASM, "rb") as a, open(tmp_path / "microrl_kernels.wasm", "rb") as b:
        assert a.read() == b.read(), REBUILD


class Image:
    """float32 arrays laid out in one memory image from address 1024 (0 is the kernels' NULL)."""

    def __init__(self):
        self.arrays = []
        self.size = 1024

    def put(self, a):
        a = np.array(a, np.float32)  # a copy: the host build then works on the originals
        self.arrays.append((self.size, a))
        self.size += (a.nbytes + 15) // 16 * 16
        return self.size - (a.nbytes + 15) // 16 * 16

    def bytes(self):
        buf = bytearray(self.size)
        for at, a in self.arrays:
            buf[at:at + a.nbytes] = a.tobytes()
        return bytes(buf)


def _run_wasm(tmp_path, image, calls):
    if shutil.which("node") is None:
        pytest.skip("node not found: the wasm kernels run under node here (apt-get install nodejs)")
    (tmp_path / "image").write_bytes(image.bytes())
    (tmp_path / "calls.json").write_text(json.dumps(calls))
    subprocess.run(["node", os.path.join(ROOT, "tests", "web_kernels.mjs"), WASM, str(tmp_path / "image"), str(tmp_path / "calls.json"), str(tmp_path / "out")],
                   check=True, capture_output=True, timeout=120)
    out = (tmp_path / "out").read_bytes()
    return lambda at, like: np.frombuffer(out[at:at + like.nbytes], np.float32).reshape(like.shape)


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return host_kernels(tmp_path_factory)


def _ptr(a):
    import ctypes

    return None if a is None else a.ctypes.data_as(ctypes.POINTER(ctypes.c_float))


def test_dense_forward_and_backward_equal_the_host_build(lib, tmp_path):
    rng = np.random.default_rng(42)
    image, calls, cases = Image(), [], []
    for act in range(len(NAMES)):
        for n, n_in, n_out in SIZES:
            W, b, x = rng.uniform(-1, 1, (n_out, n_in)), rng.uniform(-1, 1, n_out), rng.uniform(-2, 2, (n, n_in))
            dy = rng.normal(size=(n, n_out))
            host = {k: np.asarray(v, np.float32).copy() for k, v in dict(W=W, b=b, x=x, dy=dy).items()}
            host.update(y=np.zeros((n, n_out), np.float32), z=np.zeros((n, n_out), np.float32), dW=np.zeros((n_out, n_in), np.float32),
                        db=np.zeros(n_out, np.float32), dx=np.zeros((n, n_in), np.float32))
            at = {k: image.put(v) for k, v in host.items()}
            calls.append(["mrl_dense_f", at["W"], at["b"], at["x"], at["y"], at["z"], n, n_out, n_in, act])
            calls.append(["mrl_dense_backward_f", at["W"], at["x"], at["y"], at["z"], at["dy"], n, n_out, n_in, act, at["dW"], at["db"], at["dx"]])
            lib.mrl_dense_f(*[_ptr(host[k]) for k in ("W", "b", "x", "y", "z")], n, n_out, n_in, act)
            lib.mrl_dense_backward_f(*[_ptr(host[k]) for k in ("W", "x", "y", "z", "dy")], n, n_out, n_in, act, *[_ptr(host[k]) for k in ("dW", "db", "dx")])
            cases.append((act, (n, n_in, n_out), host, at))
    read = _run_wasm(tmp_path, image, calls)
    for act, size, host, at in cases:
        for k in ("y", "z", "dy", "dW", "db", "dx"):
            np.testing.assert_array_equal(read(at[k], host[k]), host[k], err_msg="%s of %s, %s" % (k, NAMES[act], size))
        # and numpy's float64 forward, as a sanity check of what both computed
        z_ref = host["x"].astype(np.float64) @ host["W"].astype(np.float64).T + host["b"]
        np.testing.assert_allclose(read(at["z"], host["z"]), z_ref, rtol=2e-5, atol=2e-6)


def test_adam_polyak_copy_equal_the_host_build(lib, tmp_path):
    rng = np.random.default_rng(7)
    n = 1217
    p, g, m, v, t = (rng.normal(size=n).astype(np.float32) for _ in range(5))
    v = np.abs(v)
    host = dict(p=p.copy(), g=g, m=m.copy(), v=v.copy(), t=t.copy(), c=np.zeros(n, np.float32))
    image = Image()
    at = {k: image.put(a) for k, a in host.items()}
    calls = [["mrl_adam_f", at["p"], at["g"], at["m"], at["v"], n, 1e-3, 0.9, 0.999, 1e-8, step] for step in (1, 2, 3, 1000)]
    calls += [["mrl_polyak_f", at["t"], at["p"], n, 0.005], ["mrl_copy_f", at["c"], at["t"], n]]
    for step in (1, 2, 3, 1000):
        lib.mrl_adam_f(_ptr(host["p"]), _ptr(host["g"]), _ptr(host["m"]), _ptr(host["v"]), n, 1e-3, 0.9, 0.999, 1e-8, step)
    lib.mrl_polyak_f(_ptr(host["t"]), _ptr(host["p"]), n, 0.005)
    lib.mrl_copy_f(_ptr(host["c"]), _ptr(host["t"]), n)
    read = _run_wasm(tmp_path, image, calls)
    for k in ("p", "m", "v", "t", "c"):
        np.testing.assert_array_equal(read(at[k], host[k]), host[k], err_msg=k)
