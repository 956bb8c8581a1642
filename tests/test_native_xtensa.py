"""The C kernels as compiled for the ESP32 (xtensawin), run on an emulated Xtensa core with windowed
registers and an FPU (qemu-system-xtensa -cpu de233_fpu) by native_modules/microrl_kernels/xtensa/
harness.py: forward, backward, Adam, polyak, copy and every activation against numpy in float32,
and bit for bit against the same C built for the host (x86-64 gcc, the x64 module's code); float
division and sqrt (mrl_math.h's own there: the FPU has neither) against IEEE's. Also the
disassembly of that code: FPU instructions, no soft-float or libgcc calls, no undefined symbols.

Needs Debian's LLVM 22 set up by native_modules/microrl_kernels/xtensa/toolchain.sh, and Debian's
binutils-xtensa-lx106 and qemu-system-misc; skips, saying which is missing, without them."""
import math
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from microrl.activations import NAMES, RELU, SIGMOID, TANH
from microrl_host.board.native import build as native_build
from test_native_kernels import SIZES, _act_grad_ref, _act_ref, _device_fixedpoint_tests, _problem, _ptr

sys.path.insert(0, os.path.join(native_build.SOURCE_DIR, "xtensa"))
import cc  # noqa: E402
import harness  # noqa: E402

ACTS = list(range(len(NAMES)))
MISSING = harness.missing_tools()
pytestmark = pytest.mark.skipif(bool(MISSING), reason="xtensa harness needs: " + "; ".join(MISSING))


@pytest.fixture(scope="module")
def elf(tmp_path_factory):
    return harness.build(str(tmp_path_factory.mktemp("xtensa")))


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    if shutil.which("gcc") is None:
        pytest.skip("gcc not found: the host build of the C kernels needs it")
    return native_build.load_host_library(native_build.build_host_library(str(tmp_path_factory.mktemp("host"))))


def _dz_ref(act, z, y, dy):
    """dL/dz as the device core defines it: relu and tanh/sigmoid from the stored output."""
    if act == RELU:
        return dy * (y > 0)
    if act in (TANH, SIGMOID):
        yd = y.astype(np.float64)
        return dy * ((1.0 - yd * yd) if act == TANH else yd * (1.0 - yd))
    return dy * _act_grad_ref(act, z.astype(np.float64))


TOL = dict(rtol=2e-5, atol=2e-6)


def test_forward_every_activation_matches_numpy_and_the_host_build(elf, host):
    job = harness.Job()
    cases = []
    for act in ACTS:
        for n, n_in, n_out in SIZES:
            rng = np.random.default_rng(n * 1000 + n_in * 10 + n_out + act)
            W, b, x = _problem(rng, n, n_in, n_out, np.float32)
            h = [job.array(W), job.array(b), job.array(x), job.zeros(n, n_out), job.zeros(n, n_out)]
            job.dense(*h, n, n_out, n_in, act)
            cases.append((act, W, b, x, h))
    out = job.run(elf)
    for act, W, b, x, (_, _, _, y_h, z_h) in cases:
        n, n_out = out[y_h].shape
        z_ref = x.astype(np.float64) @ W.astype(np.float64).T + b
        np.testing.assert_allclose(out[z_h], z_ref, **TOL)
        np.testing.assert_allclose(out[y_h], _act_ref(act, z_ref), **TOL)
        # the host's build of the same C: the same floats, bit for bit
        y, z = np.zeros((n, n_out), np.float32), np.zeros((n, n_out), np.float32)
        host.mrl_dense_f(_ptr(W), _ptr(b), _ptr(x), _ptr(y), _ptr(z), n, n_out, W.shape[1], act)
        np.testing.assert_array_equal(out[z_h], z)
        np.testing.assert_array_equal(out[y_h], y)


def test_activations_over_a_wide_range_bit_for_bit(elf, host):
    """Every activation from -40 to 40 through the C code's own exp/tanh/erfc and division:
    the host build's floats exactly, numpy's within float32 rounding."""
    z = np.concatenate([np.linspace(-40, 40, 2001), [0.0, 1e-7, -1e-7, 1e-3, -1e-3, 88.0, -88.0, 1e-40, -1e-40]]).astype(np.float32)
    n = len(z)
    job = harness.Job()
    W, b = job.array(np.ones((1, 1))), job.array(np.zeros(1))
    x = job.array(z.reshape(n, 1))
    ys = [job.zeros(n, 1) for _ in ACTS]
    for act, y in zip(ACTS, ys):
        job.dense(W, b, x, y, None, n, 1, 1, act)
    out = job.run(elf)
    for act, y in zip(ACTS, ys):
        ref = _act_ref(act, z.astype(np.float64))
        np.testing.assert_allclose(out[y][:, 0], ref, rtol=1.2e-6, atol=2e-7, err_msg=NAMES[act])
        y_host = np.zeros((n, 1), np.float32)
        host.mrl_dense_f(_ptr(np.ones((1, 1), np.float32)), _ptr(np.zeros(1, np.float32)), _ptr(z.reshape(n, 1).copy()), _ptr(y_host), None, n, 1, 1, act)
        np.testing.assert_array_equal(out[y], y_host, err_msg=NAMES[act])


def test_backward_every_activation_matches_numpy_and_the_host_build(elf, host):
    job = harness.Job()
    cases = []
    for act in ACTS:
        for n, n_in, n_out in SIZES:
            rng = np.random.default_rng(7 + n * 1000 + n_in * 10 + n_out + act)
            W, b, x = _problem(rng, n, n_in, n_out, np.float32)
            z = (x.astype(np.float64) @ W.astype(np.float64).T + b).astype(np.float32)
            y = _act_ref(act, z.astype(np.float64)).astype(np.float32)
            dy = rng.normal(size=(n, n_out)).astype(np.float32)
            h = [job.array(W), job.array(x), job.array(y), job.array(z), job.array(dy), job.zeros(n_out, n_in), job.zeros(n_out), job.zeros(n, n_in)]
            job.dense_backward(h[0], h[1], h[2], h[3], h[4], n, n_out, n_in, act, h[5], h[6], h[7])
            cases.append((act, W, x, y, z, dy, h))
    out = job.run(elf)
    for act, W, x, y, z, dy, h in cases:
        n, n_out = dy.shape
        dz_ref = _dz_ref(act, z, y, dy)
        np.testing.assert_allclose(out[h[4]], dz_ref, **TOL)
        np.testing.assert_allclose(out[h[5]], dz_ref.T @ x.astype(np.float64), rtol=1e-4, atol=2e-6 * n)
        np.testing.assert_allclose(out[h[6]], dz_ref.sum(axis=0), rtol=1e-4, atol=2e-6 * n)
        np.testing.assert_allclose(out[h[7]], dz_ref @ W.astype(np.float64), rtol=1e-4, atol=2e-6 * n_out)
        host_out = [dy.copy(), np.zeros_like(W), np.zeros(n_out, np.float32), np.zeros_like(x)]
        host.mrl_dense_backward_f(_ptr(W), _ptr(x), _ptr(y), _ptr(z), _ptr(host_out[0]), n, n_out, W.shape[1], act,
                                  _ptr(host_out[1]), _ptr(host_out[2]), _ptr(host_out[3]))
        for k in range(4):
            np.testing.assert_array_equal(out[h[4 + k]], host_out[k])


def test_adam_matches_the_torch_formula_and_the_host_build(elf, host):
    """25 Adam steps in float32 against the formula in float64, from the same float32
    hyperparameters (what an ESP32's MicroPython passes). The bias corrections are float there,
    double on the host: the moments are the host build's bit for bit, the parameters within a
    unit in the last place."""
    rng = np.random.default_rng(3)
    n = 37
    lr, b1, b2, eps = (float(np.float32(v)) for v in (1e-3, 0.9, 0.999, 1e-8))
    p0 = rng.normal(size=n).astype(np.float32)
    job = harness.Job()
    p, m, v = job.array(p0), job.zeros(n), job.zeros(n)
    pr, mr, vr = p0.astype(np.float64), np.zeros(n), np.zeros(n)
    ph, mh, vh = p0.copy(), np.zeros(n, np.float32), np.zeros(n, np.float32)
    for step in range(1, 26):
        g = rng.normal(size=n).astype(np.float32)
        g[0] = 0.0
        job.adam(p, job.array(g), m, v, n, lr, b1, b2, eps, step)
        host.mrl_adam_f(_ptr(ph), _ptr(g), _ptr(mh), _ptr(vh), n, lr, b1, b2, eps, step)
        mr = b1 * mr + (1 - b1) * g
        vr = b2 * vr + (1 - b2) * g.astype(np.float64) ** 2
        pr = pr - lr / (1 - b1**step) * mr / (np.sqrt(vr) / math.sqrt(1 - b2**step) + eps)
    out = job.run(elf)
    tol = dict(rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[m], mr, **tol)
    np.testing.assert_allclose(out[v], vr, **tol)
    np.testing.assert_allclose(out[p], pr, **tol)
    np.testing.assert_array_equal(out[m], mh)
    np.testing.assert_array_equal(out[v], vh)
    np.testing.assert_allclose(out[p], ph, rtol=0, atol=np.spacing(np.abs(ph)).max())


def test_polyak_and_copy(elf):
    rng = np.random.default_rng(11)
    t0, s0 = rng.normal(size=41).astype(np.float32), rng.normal(size=41).astype(np.float32)
    job = harness.Job()
    t, s, t2 = job.array(t0), job.array(s0), job.array(t0)
    job.polyak(t, s, 41, 0.005)
    job.copy(t2, s, 41)
    out = job.run(elf)
    tau = float(np.float32(0.005))
    np.testing.assert_allclose(out[t], (1 - tau) * t0.astype(np.float64) + tau * s0, **TOL)
    np.testing.assert_array_equal(out[t2], s0)


def _edge_floats():
    tiny = np.float32(1.4e-45)
    special = [0.0, -0.0, 1.0, -1.0, 2.0, 3.0, 0.1, 1e-8, 1e-30, 1e-38, 1.1754942e-38, 1e-40, tiny, 3e38,
               np.float32(3.4028235e38), np.inf, -np.inf, np.nan, 1.9999999, 1.0000001, 0.99999994, 7.0, 1e10]
    return np.array(special, np.float32)


def test_division_and_sqrt_are_ieee_correctly_rounded(elf):
    """mrl_math.h's division and sqrt from fused multiply-add (the ESP32's FPU has no divide or
    sqrt instruction) give numpy's float32 results bit for bit: random bit patterns (every
    exponent, subnormals, infinities, NaN), quotients in the subnormal range, every pair of edge
    values."""
    rng = np.random.default_rng(2024)
    bits = rng.integers(0, 2**32, size=(2, 20000), dtype=np.uint64).astype(np.uint32)
    a, b = bits[0].view(np.float32), bits[1].view(np.float32)
    sub_a = rng.uniform(1, 2, 4000).astype(np.float32) * np.float32(2.0**-100)
    sub_b = rng.uniform(1, 2, 4000).astype(np.float32) * np.float32(2.0**40)
    edge = _edge_floats()
    ea, eb = np.meshgrid(edge, edge)
    a = np.concatenate([a, sub_a, ea.ravel()])
    b = np.concatenate([b, sub_b, eb.ravel()])
    x = np.concatenate([np.abs(bits[0].view(np.float32)), bits[1].view(np.float32), edge])
    job = harness.Job()
    ha, hb, hq = job.array(a), job.array(b), job.zeros(len(a))
    hx, hs = job.array(x), job.zeros(len(x))
    job.div(ha, hb, hq, len(a))
    job.sqrt(hx, hs, len(x))
    out = job.run(elf)
    with np.errstate(all="ignore"):
        q_ref, s_ref = a / b, np.sqrt(x)
    for got, ref in ((out[hq], q_ref), (out[hs], s_ref)):
        nan = np.isnan(ref)
        assert np.array_equal(np.isnan(got), nan)
        assert np.array_equal(got[~nan].view(np.uint32), ref[~nan].view(np.uint32)), \
            np.flatnonzero(got[~nan].view(np.uint32) != ref[~nan].view(np.uint32))[:10]


def test_int16_kernel_gives_plain_pythons_integers(elf):
    """The int16 layer of .mrlq policies (dense_int16) on the Xtensa core against
    fixedpoint.layer_plain's exact integers: the device tests' random layers over the domain the
    loader accepts and its edges (saturation, saturating left shifts, clamped table arguments,
    sums at the 32-bit bound), every activation, bit for bit."""
    from microrl import fixedpoint as fp
    from microrl.rng import Rng

    dev = _device_fixedpoint_tests()
    T, P = fp.tables()
    rng = Rng(4242)
    job = harness.Job()
    Th, Ph = job.array(np.array(T), np.int16), job.array(np.array(P), np.int16)
    cases = []
    for trial in range(120):
        W, b, n_in, n_out, act, s_out, s_14, s_14_out = dev.random_layer(rng, trial % 3 == 0)
        Wh, bh = job.array(np.array(W), np.int16), job.array(np.array(b), np.int32)
        for x in dev.random_inputs(rng, W, n_in, n_out):
            want = np.zeros(n_out, np.int16)
            fp.layer_plain(W, b, x, want, n_in, n_out, act, s_out, s_14, s_14_out, T, P)
            y = job.array(np.full(n_out, 12345), np.int16)
            job.dense_int16(Wh, bh, job.array(np.array(x), np.int16), y, n_in, n_out, act, s_out, s_14, s_14_out, Th, Ph)
            cases.append((y, want, trial))
    out = job.run(elf)
    for y, want, trial in cases:
        assert out[y].tolist() == want.tolist(), trial
    assert 0 < sum(int(np.sum(np.abs(w) == 32767)) for _, w, _ in cases) < sum(len(w) for _, w, _ in cases)


def test_the_kernels_run_on_the_fpu_and_call_nothing(tmp_path):
    """kernels.c compiled as for the module: FPU instructions, and no call out of the object at
    all (no __divsf3/__mulsf3/__addsf3, sqrtf, double helpers, memset: no undefined symbol)."""
    cflags, llc_flags = harness.module_flags()
    obj = str(tmp_path / "kernels.o")
    cc.compile_c(["-std=c99", "-Wall", "-Werror", "-I" + native_build.SOURCE_DIR] + cflags, native_build.KERNEL_C, obj, llc_flags)
    undefined = cc.run([cc.tool("llvm-nm"), "-u", obj]).split()
    assert undefined == [], undefined
    dis = cc.run([cc.tool("llvm-objdump"), "-d", "--mcpu=esp32", "--section=.text.kernels", obj])
    mnemonics = re.findall(r"^\s+[0-9a-f]+:\s+(?:[0-9a-f]{2} )+\s*([a-z0-9.]+)", dis, re.M)
    for op in ("mul.s", "add.s", "madd.s", "lsi", "ssi", "entry", "retw.n"):
        assert op in mnemonics, op
    assert not [m for m in mnemonics if m.startswith(("call0", "call4", "call12"))]
    assert "__" not in dis.replace("__XTENSA", "")


def test_objects_are_in_the_form_micropythons_linker_reads(tmp_path):
    """What cc.py rewrites for MicroPython's mpy_ld (tools/mpy_ld.py, written for GNU as): every
    l32r's offset field is 0 (mpy_ld adds its distance to the field; llvm-mc leaves 0xffff in it
    where the l32r is not 4-byte aligned), and the code, data and literal sections carry the
    object's name (mpy_ld names each address a literal holds "<section>+<offset>", without the
    object, and kept one GOT entry for kernels.o's and module.o's .data.rel.ro+0: the kernels'
    jump table became module.c's function object)."""
    cflags, llc_flags = harness.module_flags()
    obj = str(tmp_path / "kernels.o")
    cc.compile_c(["-std=c99", "-Wall", "-Werror", "-I" + native_build.SOURCE_DIR] + cflags, native_build.KERNEL_C, obj, llc_flags)
    sizes = {name: int(size, 16) for name, size in re.findall(r"^\s*\d+\s+(\S+)\s+([0-9a-f]+)", cc.run([cc.tool("llvm-objdump"), "-h", obj]), re.M)}
    assert all(sizes.get(name) for name in (".text.kernels", ".literal.kernels", ".data.rel.ro.kernels")), sizes
    assert not [name for name in (".text", ".literal", ".data.rel.ro", ".rodata") if sizes.get(name)], sizes
    dis = cc.run([cc.tool("llvm-objdump"), "-d", "--mcpu=esp32", "--section=.text.kernels", obj])
    l32r = re.findall(r"^\s+([0-9a-f]+):\s+([0-9a-f]{2}) ([0-9a-f]{2}) ([0-9a-f]{2})\s+l32r", dis, re.M)
    assert len(l32r) > 50 and [int(at, 16) % 4 for at, *_ in l32r].count(0) < len(l32r)  # unaligned ones too
    assert [at for at, b0, b1, b2 in l32r if (b1, b2) != ("00", "00")] == []


MPY_DIR = os.environ.get("MPY_DIR")


@pytest.mark.skipif(not MPY_DIR, reason="MPY_DIR (a MicroPython v1.28.0 source tree) not set: the module build is not checked")
def test_the_module_builds_and_calls_only_micropython(tmp_path):
    """With MPY_DIR: the xtensawin .mpy builds from these sources, and its objects leave undefined
    only what MicroPython's runtime provides (mp_fun_table and friends) and the kernels."""
    path = native_build.build_mpy(MPY_DIR, "xtensawin", str(tmp_path))
    work = os.path.dirname(path)
    build = next(os.path.join(work, d) for d in ("build-xtensawin", "build") if os.path.isdir(os.path.join(work, d)))
    undefined = set(cc.run([cc.tool("llvm-nm"), "-u", os.path.join(build, "module.o")]).split()) - {"U"}
    allowed = {"mp_fun_table", "mp_native_qstr_table"}
    assert {u for u in undefined if not u.startswith(("mp_type_", "mrl_"))} <= allowed, undefined
    assert cc.run([cc.tool("llvm-nm"), "-u", os.path.join(build, "kernels.o")]).split() == []
