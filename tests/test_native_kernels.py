"""The C kernels of native_modules/microrl_kernels, built for the host with gcc and called through
ctypes, against numpy (float64 references): forward, backward, Adam, polyak, copy, for every
activation, odd sizes, float and double. Plus the Cortex-M4F hard-float compile check."""
import ctypes
import math
import os
import shutil
import subprocess

import numpy as np
import pytest

from helpers import host_kernels
from microrl.activations import GELU, IDENTITY, NAMES, RELU, SIGMOID, TANH
from microrl_host.board.native import build as native_build

ACTS = list(range(len(NAMES)))
SIZES = [(1, 1, 1), (3, 5, 7), (2, 13, 64), (5, 17, 3), (100, 4, 1)]  # (n, n_in, n_out), odd on purpose
_erf = np.vectorize(math.erf)
_erfc = np.vectorize(math.erfc)


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return host_kernels(tmp_path_factory)


def _ptr(a):
    if a is None:
        return None
    ctype = ctypes.c_float if a.dtype == np.float32 else ctypes.c_double
    return a.ctypes.data_as(ctypes.POINTER(ctype))


def _act_ref(act, z):
    if act == RELU:
        return np.maximum(z, 0.0)
    if act == TANH:
        return np.tanh(z)
    if act == SIGMOID:
        return 1.0 / (1.0 + np.exp(-z))
    if act == GELU:  # erfc: no cancellation in the negative tail
        return 0.5 * z * _erfc(-z / math.sqrt(2.0))
    return z


def _act_grad_ref(act, z):
    if act == RELU:
        return (z > 0).astype(np.float64)
    if act == TANH:
        return 1.0 - np.tanh(z) ** 2
    if act == SIGMOID:
        s = 1.0 / (1.0 + np.exp(-z))
        return s * (1.0 - s)
    if act == GELU:
        return 0.5 * (1.0 + _erf(z / math.sqrt(2.0))) + z * np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
    return np.ones_like(z)


def _tol(dtype):
    return dict(rtol=2e-5, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-13)


def _problem(rng, n, n_in, n_out, dtype):
    W = rng.uniform(-1, 1, (n_out, n_in)).astype(dtype)
    b = rng.uniform(-1, 1, n_out).astype(dtype)
    x = rng.uniform(-2, 2, (n, n_in)).astype(dtype)
    return W, b, x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("act", ACTS, ids=NAMES)
@pytest.mark.parametrize("n,n_in,n_out", SIZES)
def test_dense_forward_matches_numpy(lib, dtype, act, n, n_in, n_out):
    rng = np.random.default_rng(n * 1000 + n_in * 10 + n_out)
    W, b, x = _problem(rng, n, n_in, n_out, dtype)
    y = np.full((n, n_out), np.nan, dtype)
    z = np.full((n, n_out), np.nan, dtype)
    fn = lib.mrl_dense_f if dtype == np.float32 else lib.mrl_dense_d
    fn(_ptr(W), _ptr(b), _ptr(x), _ptr(y), _ptr(z), n, n_out, n_in, act)
    z_ref = x.astype(np.float64) @ W.astype(np.float64).T + b
    np.testing.assert_allclose(z, z_ref, **_tol(dtype))
    np.testing.assert_allclose(y, _act_ref(act, z_ref), **_tol(dtype))
    # without z, the same y
    y2 = np.zeros_like(y)
    fn(_ptr(W), _ptr(b), _ptr(x), _ptr(y2), None, n, n_out, n_in, act)
    np.testing.assert_array_equal(y2, y)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("act", ACTS, ids=NAMES)
def test_activations_over_a_wide_range(lib, dtype, act):
    """Every activation of the C code's own exp/tanh/erf, from -40 to 40 (saturation included)."""
    z = np.concatenate([np.linspace(-40, 40, 2001), [0.0, 1e-7, -1e-7, 1e-3, -1e-3, 88.0, -88.0]]).astype(dtype)
    n = len(z)
    W = np.ones((1, 1), dtype)
    b = np.zeros(1, dtype)
    x = z.reshape(n, 1).copy()
    y = np.zeros((n, 1), dtype)
    fn = lib.mrl_dense_f if dtype == np.float32 else lib.mrl_dense_d
    fn(_ptr(W), _ptr(b), _ptr(x), _ptr(y), None, n, 1, 1, act)
    ref = _act_ref(act, z.astype(np.float64))
    tol = dict(rtol=3e-7 * 4, atol=2e-7) if dtype == np.float32 else dict(rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(y[:, 0], ref, **tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("act", ACTS, ids=NAMES)
@pytest.mark.parametrize("n,n_in,n_out", SIZES)
def test_dense_backward_matches_numpy(lib, dtype, act, n, n_in, n_out):
    rng = np.random.default_rng(7 + n * 1000 + n_in * 10 + n_out)
    W, b, x = _problem(rng, n, n_in, n_out, dtype)
    z = (x.astype(np.float64) @ W.astype(np.float64).T + b).astype(dtype)
    y = _act_ref(act, z.astype(np.float64)).astype(dtype)
    dy0 = rng.normal(size=(n, n_out)).astype(dtype)
    dy = dy0.copy()
    dW = np.full_like(W, np.nan)
    db = np.full_like(b, np.nan)
    dx = np.full_like(x, np.nan)
    fn = lib.mrl_dense_backward_f if dtype == np.float32 else lib.mrl_dense_backward_d
    fn(_ptr(W), _ptr(x), _ptr(y), _ptr(z), _ptr(dy), n, n_out, n_in, act, _ptr(dW), _ptr(db), _ptr(dx))
    if act == RELU:  # the device core's rule: the gradient passes where the output is positive
        dz_ref = dy0 * (y > 0)
    elif act in (TANH, SIGMOID):  # from the stored output, as the plain path does
        yd = y.astype(np.float64)
        dz_ref = dy0 * ((1.0 - yd * yd) if act == TANH else yd * (1.0 - yd))
    else:
        dz_ref = dy0 * _act_grad_ref(act, z.astype(np.float64))
    tol = _tol(dtype)
    np.testing.assert_allclose(dy, dz_ref, **tol)
    np.testing.assert_allclose(dW, dz_ref.T @ x.astype(np.float64), rtol=tol["rtol"] * 5, atol=tol["atol"] * n)
    np.testing.assert_allclose(db, dz_ref.sum(axis=0), rtol=tol["rtol"] * 5, atol=tol["atol"] * n)
    np.testing.assert_allclose(dx, dz_ref @ W.astype(np.float64), rtol=tol["rtol"] * 5, atol=tol["atol"] * n_out)
    # optional outputs: NULL skips each one, the others unchanged
    dy = dy0.copy()
    dW2 = np.zeros_like(W)
    fn(_ptr(W), _ptr(x), _ptr(y), _ptr(z), _ptr(dy), n, n_out, n_in, act, _ptr(dW2), None, None)
    np.testing.assert_array_equal(dW2, dW)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_adam_matches_torch_formula(lib, dtype):
    """torch.optim.Adam: m, v moments; p -= lr/bc1 * m / (sqrt(v)/sqrt(bc2) + eps); 25 steps."""
    rng = np.random.default_rng(3)
    n = 37
    p = rng.normal(size=n).astype(dtype)
    m = np.zeros(n, dtype)
    v = np.zeros(n, dtype)
    pr, mr, vr = p.astype(np.float64), np.zeros(n), np.zeros(n)
    lr, b1, b2, eps = 1e-3, 0.9, 0.999, 1e-8
    fn = lib.mrl_adam_f if dtype == np.float32 else lib.mrl_adam_d
    for step in range(1, 26):
        g = rng.normal(size=n).astype(dtype)
        g[0] = 0.0  # a zero gradient: the update still moves p through the moments
        fn(_ptr(p), _ptr(g), _ptr(m), _ptr(v), n, lr, b1, b2, eps, step)
        mr = b1 * mr + (1 - b1) * g
        vr = b2 * vr + (1 - b2) * g.astype(np.float64) ** 2
        pr = pr - lr / (1 - b1**step) * mr / (np.sqrt(vr) / math.sqrt(1 - b2**step) + eps)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(m, mr, **tol)
    np.testing.assert_allclose(v, vr, **tol)
    np.testing.assert_allclose(p, pr, **tol)


def test_adam_against_torch_when_installed(lib):
    torch = pytest.importorskip("torch", reason="torch not installed (optional peer: the formula test above covers the semantics)")
    rng = np.random.default_rng(5)
    n = 29
    p = rng.normal(size=n).astype(np.float32)
    m = np.zeros(n, np.float32)
    v = np.zeros(n, np.float32)
    tp = torch.nn.Parameter(torch.tensor(p.copy()))
    opt = torch.optim.Adam([tp], lr=1e-3)
    for step in range(1, 11):
        g = rng.normal(size=n).astype(np.float32)
        lib.mrl_adam_f(_ptr(p), _ptr(g), _ptr(m), _ptr(v), n, 1e-3, 0.9, 0.999, 1e-8, step)
        tp.grad = torch.tensor(g)
        opt.step()
    np.testing.assert_allclose(p, tp.detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_polyak_and_copy(lib, dtype):
    rng = np.random.default_rng(11)
    t = rng.normal(size=41).astype(dtype)
    s = rng.normal(size=41).astype(dtype)
    ref = 0.995 * t.astype(np.float64) + 0.005 * s
    sfx = "f" if dtype == np.float32 else "d"
    getattr(lib, "mrl_polyak_" + sfx)(_ptr(t), _ptr(s), 41, 0.005)
    np.testing.assert_allclose(t, ref, **_tol(dtype))
    getattr(lib, "mrl_copy_" + sfx)(_ptr(t), _ptr(s), 41)
    np.testing.assert_array_equal(t, s)


ARM_GCC = shutil.which("arm-none-eabi-gcc")


@pytest.mark.skipif(ARM_GCC is None, reason="arm-none-eabi-gcc not found (apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi)")
def test_kernels_compile_for_cortex_m4f_hard_float(tmp_path):
    obj = str(tmp_path / "kernels.o")
    cmd = [ARM_GCC, "-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16", "-O2", "-std=c99", "-fno-math-errno", "-Wall", "-Werror", "-c", native_build.KERNEL_C, "-o", obj]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    size = subprocess.run(["arm-none-eabi-size", obj], check=True, capture_output=True, text=True).stdout
    text_bytes = int(size.splitlines()[1].split()[0])
    print("Cortex-M4F kernels.o (-O2):\n" + size)
    assert 0 < text_bytes < 16384, size
    # float kernels only: nothing from libm; double helpers only for Adam's bias corrections
    undefined = subprocess.run(["arm-none-eabi-nm", "-u", obj], check=True, capture_output=True, text=True).stdout.split()
    names = [u for u in undefined if u != "U"]
    assert not [u for u in names if not u.startswith("__aeabi_") and u not in ("memset", "memcpy", "memmove")], names
    # the float math runs on the FPU: single-precision soft-float helpers would be a mistake
    assert not [u for u in names if u.startswith("__aeabi_f")], names


FMA_CHECK = r"""
#include <math.h>
#include <stdio.h>
#include <string.h>
#define MRL_FMA_DIV_SQRT 1
#include "mrl_math.h"
static uint64_t s = 88172645463325252ull;
static uint32_t rnd(void) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return (uint32_t)s; }
static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static long bad, n;
static void check(float got, volatile float ref) {
    n++;
    if (f2u(got) != f2u(ref) && !(got != got && ref != ref)) {
        if (bad++ < 5) printf("differs: got %08x, IEEE %08x\n", f2u(got), f2u(ref));
    }
}
int main(void) {
    for (long i = 0; i < 2000000; i++) {                 /* random bit patterns: every exponent */
        float a = u2f(rnd()), b = u2f(rnd());
        check(mrl_divf(a, b), a / b);
    }
    for (uint32_t m = 0; m < (1u << 23); m += 61) {      /* divisor significands, quotients near 1 */
        float b = u2f(0x3f800000u | m), a = u2f(0x3f800000u | (rnd() & 0x7fffffu));
        check(mrl_divf(a, b), a / b);
        check(mrl_divf(1.0f, b), 1.0f / b);
    }
    for (long i = 0; i < 500000; i++) {                  /* subnormal quotients */
        float a = u2f(rnd() & 0x80ffffffu), b = u2f((rnd() & 0x807fffffu) | ((120u + rnd() % 40u) << 23));
        check(mrl_divf(a, b), a / b);
    }
    for (uint64_t u = 0; u < (1ull << 32); u += 1021) {  /* sqrt: every 1021st float */
        float x = u2f((uint32_t)u);
        check(mrl_sqrtf(x), sqrtf(x));
    }
    printf("%ld of %ld differ\n", bad, n);
    return bad != 0;
}
"""


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not found")
def test_fma_division_and_sqrt_are_ieee_correctly_rounded(tmp_path):
    """mrl_math.h's division and sqrt for FPUs without either (the ESP32's: MRL_FMA_DIV_SQRT),
    built for this host, against its own IEEE division and sqrtf: the same floats bit for bit
    (tests/test_native_xtensa.py checks the ESP32 build on an emulated core)."""
    src = tmp_path / "fma_check.c"
    src.write_text(FMA_CHECK)
    has_fma = "fma" in open("/proc/cpuinfo").read().split() if os.path.exists("/proc/cpuinfo") else False
    exe = str(tmp_path / "fma_check")
    cmd = ["gcc", "-std=c99", "-O2", "-ffp-contract=off", "-fno-math-errno", "-I" + native_build.SOURCE_DIR] + (["-mfma"] if has_fma else []) + [str(src), "-o", exe, "-lm"]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    out = subprocess.run([exe], capture_output=True, text=True, timeout=600)
    print(out.stdout)
    assert out.returncode == 0 and out.stdout.strip().endswith(" differ") and out.stdout.split()[-4] == "0", out.stdout


def _device_fixedpoint_tests():
    """tests/device/test_fixedpoint.py as a module: its random int16 layers and inputs."""
    import importlib.util
    import sys

    from helpers import DEVICE_TESTS

    if DEVICE_TESTS not in sys.path:
        sys.path.insert(0, DEVICE_TESTS)  # its `tiny` import
    spec = importlib.util.spec_from_file_location("device_test_fixedpoint", os.path.join(DEVICE_TESTS, "test_fixedpoint.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_int16_kernel_gives_plain_pythons_integers(lib):
    """The C int16 layer (the native module's dense_int16) against fixedpoint.layer_plain, Python's
    exact integers: the device tests' random layers over the whole accepted domain and its edges
    (saturated outputs, left shifts that saturate, clamped table arguments, sums at the 32-bit
    bound), bit for bit. On MicroPython the same comparison runs on the module itself."""
    from microrl import fixedpoint as fp
    from microrl.rng import Rng

    dev = _device_fixedpoint_tests()
    T, P = (np.array(t, dtype=np.int16) for t in fp.tables())
    h, i32 = ctypes.POINTER(ctypes.c_int16), ctypes.POINTER(ctypes.c_int32)
    rng = Rng(2026)
    outputs = saturated = 0
    for trial in range(400):
        W, b, n_in, n_out, act, s_out, s_14, s_14_out = dev.random_layer(rng, trial % 3 == 0)
        Wn, bn = np.array(W, dtype=np.int16), np.array(b, dtype=np.int32)
        for x in dev.random_inputs(rng, W, n_in, n_out):
            want = np.zeros(n_out, np.int16)
            fp.layer_plain(W, b, x, want, n_in, n_out, act, s_out, s_14, s_14_out, fp.tables()[0], fp.tables()[1])
            xn, got = np.array(x, dtype=np.int16), np.full(n_out, 12345, np.int16)
            lib.mrl_dense_int16(Wn.ctypes.data_as(h), bn.ctypes.data_as(i32), xn.ctypes.data_as(h), got.ctypes.data_as(h), n_in, n_out, act,
                                s_out, s_14, s_14_out, T.ctypes.data_as(h), P.ctypes.data_as(h))
            assert got.tolist() == want.tolist(), (trial, act, s_out, s_14, s_14_out)
            outputs += n_out
            saturated += int(np.sum(np.abs(want) == 32767))
    assert 0 < saturated < outputs
