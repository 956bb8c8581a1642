"""Forward pass of the 13-64-64-4 network (ReLU hidden layers, linear output; the paper's
microcontroller benchmark) on every path present, beside the same network in C at gcc -O2 on
this machine, as ratios, all in one run:

  MicroPython (unix port): plain, native (microrl_kernels.mpy), int16 fixed point on the native
                           module's C kernel and on viper, ulab (when MICRORL_ULAB_MICROPYTHON
                           names a ulab-enabled micropython)
  CPython:                 plain, numpy
  C (gcc -O2):             a plain triple loop, and the native module's kernel without MicroPython;
                           the same for int16 (int32 sums, rounding shift, saturation)

Also: heap allocated by one call and in use during it on MicroPython, and the smallest heap
(micropython -X heapsize) in which microrl.load(policy) + one call works, per path, with the
device core precompiled to .mpy (as `microrl deploy --mpy` installs it).

  python bench/device_forward.py [--json] [--quick]

Native uses the x64 microrl_kernels.mpy shipped in the package (docs/native.md), else MPY_DIR (a
MicroPython source tree) to build one. Timings are medians of repeated runs; the machine is shared, so peers run in
the same invocation and the ratios matter more than the absolute numbers."""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _harness as H  # noqa: E402

SIZES = [13, 64, 64, 4]
ACTS = ("relu", "identity")

C_SOURCE = r"""
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <time.h>
#include "kernels.h"

#define N_IN 13
#define H1 64
#define H2 64
#define N_OUT 4

static float W1[H1 * N_IN], b1[H1], W2[H2 * H1], b2[H2], W3[N_OUT * H2], b3[N_OUT];
static float x[N_IN], h1[H1], h2[H2], y[N_OUT];

/* the straightforward C forward: what "the same network in C" means */
static void layer(const float *W, const float *b, const float *in, float *out, int n_in, int n_out, int relu) {
    for (int o = 0; o < n_out; o++) {
        float acc = b[o];
        for (int i = 0; i < n_in; i++) acc += W[o * n_in + i] * in[i];
        out[o] = relu && acc < 0.0f ? 0.0f : acc;
    }
}

static void forward_plain(void) {
    layer(W1, b1, x, h1, N_IN, H1, 1);
    layer(W2, b2, h1, h2, H1, H2, 1);
    layer(W3, b3, h2, y, H2, N_OUT, 0);
}

static void forward_kernel(void) {
    mrl_dense_f(W1, b1, x, h1, NULL, 1, H1, N_IN, MRL_RELU);
    mrl_dense_f(W2, b2, h1, h2, NULL, 1, H2, H1, MRL_RELU);
    mrl_dense_f(W3, b3, h2, y, NULL, 1, N_OUT, H2, MRL_IDENTITY);
}

/* int16 fixed point: the straightforward C (int32 sums, rounding shift, relu, saturation at
 * +-32767), and the native module's int16 kernel, on the same weights */
static int16_t Wq1[H1 * N_IN], Wq2[H2 * H1], Wq3[N_OUT * H2], xq[N_IN], hq1[H1], hq2[H2], yq[N_OUT];
static int32_t bq1[H1], bq2[H2], bq3[N_OUT];
static int16_t T[513], P[513];
#define SHIFT 14

static void layer_q(const int16_t *W, const int32_t *b, const int16_t *in, int16_t *out, int n_in, int n_out, int relu) {
    for (int o = 0; o < n_out; o++) {
        int32_t acc = b[o];
        for (int i = 0; i < n_in; i++) acc += (int32_t)W[o * n_in + i] * in[i];
        if (relu && acc < 0) acc = 0;
        int32_t v = (acc + (1 << (SHIFT - 1))) >> SHIFT;
        out[o] = v > 32767 ? 32767 : (v < -32767 ? -32767 : v);
    }
}

static void forward_int16_plain(void) {
    layer_q(Wq1, bq1, xq, hq1, N_IN, H1, 1);
    layer_q(Wq2, bq2, hq1, hq2, H1, H2, 1);
    layer_q(Wq3, bq3, hq2, yq, H2, N_OUT, 0);
}

static void forward_int16_kernel(void) {
    mrl_dense_int16(Wq1, bq1, xq, hq1, N_IN, H1, MRL_RELU, SHIFT, 0, 0, T, P);
    mrl_dense_int16(Wq2, bq2, hq1, hq2, H1, H2, MRL_RELU, SHIFT, 0, 0, T, P);
    mrl_dense_int16(Wq3, bq3, hq2, yq, H2, N_OUT, MRL_IDENTITY, SHIFT, 0, 0, T, P);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double d = *(const double *)a - *(const double *)b;
    return d < 0 ? -1 : d > 0;
}

static double bench(void (*f)(void), int calls) {
    double r[9];
    volatile float sink = 0;
    for (int rep = 0; rep < 9; rep++) {
        double t = now();
        for (int k = 0; k < calls; k++) {
            x[k % N_IN] += 1e-7f;
            xq[k % N_IN] ^= 1;
            f();
            sink += y[0] + yq[0];
        }
        r[rep] = (now() - t) / calls * 1e6;
    }
    qsort(r, 9, sizeof(double), cmp);
    return r[4];
}

int main(int argc, char **argv) {
    int calls = argc > 1 ? atoi(argv[1]) : 100000;
    srand(1);
    float *all[] = {W1, b1, W2, b2, W3, b3, x};
    int sizes[] = {H1 * N_IN, H1, H2 * H1, H2, N_OUT * H2, N_OUT, N_IN};
    for (int a = 0; a < 7; a++)
        for (int i = 0; i < sizes[a]; i++) all[a][i] = (float)rand() / RAND_MAX * 0.5f - 0.25f;
    /* int16 weights at Q14 (the float ones times 2^14), inputs at Q14: sums far below 2^31 */
    int16_t *qs[] = {Wq1, Wq2, Wq3, xq};
    float *fs[] = {W1, W2, W3, x};
    int qn[] = {H1 * N_IN, H2 * H1, N_OUT * H2, N_IN};
    for (int a = 0; a < 4; a++)
        for (int i = 0; i < qn[a]; i++) qs[a][i] = (int16_t)(fs[a][i] * 16384.0f);
    int32_t *bs[] = {bq1, bq2, bq3};
    float *bf[] = {b1, b2, b3};
    int bn[] = {H1, H2, N_OUT};
    for (int a = 0; a < 3; a++)
        for (int i = 0; i < bn[a]; i++) bs[a][i] = (int32_t)(bf[a][i] * 268435456.0f);
    double plain = bench(forward_plain, calls);
    double kernel = bench(forward_kernel, calls);
    double int16_plain = bench(forward_int16_plain, calls);
    double int16_kernel = bench(forward_int16_kernel, calls);
    forward_int16_plain();
    int16_t check[N_OUT];
    for (int i = 0; i < N_OUT; i++) check[i] = yq[i];
    forward_int16_kernel();
    int same = 1;
    for (int i = 0; i < N_OUT; i++) same &= check[i] == yq[i];
    printf("{\"c_plain_us\": %.4f, \"c_kernel_us\": %.4f, \"c_int16_plain_us\": %.4f, \"c_int16_kernel_us\": %.4f, \"c_int16_same\": %d}\n",
           plain, kernel, int16_plain, int16_kernel, same);
    return 0;
}
"""

# Runs under micropython; PATH, CALLS and REPS are set in front of it.
MP_CODE = r"""
import gc, json, time
from array import array
import microrl
from microrl.nn import MLP
from microrl.policy import Policy
from microrl.rng import Rng

net = MLP(SIZES, ACTS, batch=1, trainable=False).init(Rng(1))
pol = Policy(SIZES, ACTS, params=net.params)
rng = Rng(2)
obs = [rng.uniform(-1, 1) for _ in range(SIZES[0])]
for i in range(SIZES[0]):
    net.input_buf[i] = obs[i]

if PATH in ("viper", "int16-native"):
    from microrl import fixedpoint
    fixedpoint.use(PATH.replace("int16-", ""))
    q = fixedpoint.quantise(pol, [[rng.uniform(-1, 1) for _ in range(SIZES[0])] for _ in range(50)])
    xq = array("h", [int(v * (1 << q.fx[0])) for v in obs])
    fwd = q.forward_int
    arg = xq
    call = q
    impl = fixedpoint.implementation()
else:
    fwd = net.forward
    arg = 1
    call = pol
    impl = microrl.backend_name()


def timed(f, a, calls):
    t = time.ticks_us()
    for _ in range(calls):
        f(a)
    return time.ticks_diff(time.ticks_us(), t) / calls


def med(v):
    v = sorted(v)
    return v[len(v) // 2]


fwd(arg)
call(obs)
forward_us = med([timed(fwd, arg, CALLS) for _ in range(REPS)])
call_us = med([timed(call, obs, CALLS // 2) for _ in range(REPS)])


def allocated(f, a):
    # bytes one call allocates (inside a function: module-level stores would grow the globals dict)
    gc.collect()
    gc.disable()
    before = gc.mem_alloc()
    f(a)
    used = gc.mem_alloc() - before
    gc.enable()
    return used


forward_alloc = allocated(fwd, arg)
call_alloc = allocated(call, obs)
gc.collect()
in_use = gc.mem_alloc()
print(json.dumps({"impl": impl, "forward_us": forward_us, "call_us": call_us, "forward_alloc_bytes": forward_alloc,
                  "call_alloc_bytes": call_alloc, "heap_in_use_bytes": in_use, "peak_heap_bytes": in_use + call_alloc}))
"""


def cpython_forward(backend_name, calls, reps):
    from microrl import backend
    from microrl.nn import MLP
    from microrl.policy import Policy
    from microrl.rng import Rng

    backend.use(backend_name)
    try:
        net = MLP(SIZES, ACTS, batch=1, trainable=False).init(Rng(1))
        pol = Policy(SIZES, ACTS, params=net.params)
        rng = Rng(2)
        obs = [rng.uniform(-1, 1) for _ in range(SIZES[0])]
        for i in range(SIZES[0]):
            net.input_buf[i] = obs[i]

        def timed(f, a, n):
            t = time.perf_counter()
            for _ in range(n):
                f(a)
            return (time.perf_counter() - t) / n * 1e6

        fwd = H.median([timed(net.forward, 1, calls) for _ in range(reps)])
        call = H.median([timed(pol, obs, calls) for _ in range(reps)])
        return {"impl": backend_name, "forward_us": fwd, "call_us": call}
    finally:
        backend.use(None)


POLICY_CALL = "import microrl\np = microrl.load(%r)\na = p([0.1] * 13)\nprint('{\"ok\": 1, \"backend\": \"%%s\"}' %% microrl.backend_name())"


def smallest_heap(policy_path, extra_path, backend, executable=None):
    """Smallest -X heapsize (KB, 4K steps) where load + call works, and whether 48K does."""
    code = POLICY_CALL % policy_path

    def works(kb):
        try:
            H.run_micropython(code, executable, extra_path, backend, heap="%dK" % kb, timeout=120)
            return True
        except RuntimeError:
            return False

    lo, hi = 16, 256
    if not works(hi):
        return None, False
    while hi - lo > 4:
        mid = (lo + hi) // 2 // 4 * 4
        if works(mid):
            hi = mid
        else:
            lo = mid
    return hi, works(48)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object of the figures")
    ap.add_argument("--quick", action="store_true", help="fewer calls (a smoke run)")
    args = ap.parse_args(argv)
    log = (lambda m: print(m, file=sys.stderr)) if args.json else print
    work = H.workdir()
    calls, reps = (200, 3) if args.quick else (2000, 7)
    results = {"network": "13-64-64-4 relu, relu, identity", "paths": {}, "notes": []}

    exe = H.compile_c(C_SOURCE, "forward", work, [H.native_build.KERNEL_C])
    c = H.run_json([exe, "20000" if args.quick else "200000"]) if exe else None
    if c is None:
        results["notes"].append("gcc missing: no C reference")
    results["c"] = c

    header = "SIZES = %r\nACTS = %r\nCALLS = %d\nREPS = %d\n" % (SIZES, ACTS, calls, reps)
    native_folder = H.native_mpy_folder(work, log=lambda m: results["notes"].append(m))
    runs = [("micropython plain", dict(backend="plain"), "plain")]
    if native_folder:
        runs.append(("micropython native", dict(extra_path=native_folder), "native"))
    if native_folder:
        runs.append(("micropython native int16", dict(extra_path=native_folder), "int16-native"))
    runs.append(("micropython viper int16", dict(backend="plain"), "viper"))
    ulab = os.environ.get("MICRORL_ULAB_MICROPYTHON")
    if ulab:
        runs.append(("micropython ulab", dict(executable=ulab), "ulab"))
    else:
        results["notes"].append("ulab: skipped (MICRORL_ULAB_MICROPYTHON not set)")
    if H.MICROPYTHON is None:
        results["notes"].append("micropython not installed: no MicroPython figures")
        runs = []
    for label, kw, path in runs:
        try:
            results["paths"][label] = H.run_micropython(header + "PATH = %r\n" % path + MP_CODE, **kw)
        except RuntimeError as e:
            results["notes"].append("%s failed: %s" % (label, str(e)[:300]))
    results["paths"]["cpython plain"] = cpython_forward("plain", max(50, calls // 10), reps)
    results["paths"]["cpython numpy"] = cpython_forward("numpy", calls, reps)

    # smallest heap for microrl.load + one call, device core precompiled to .mpy
    if H.MICROPYTHON:
        from microrl import policy as P
        from microrl.nn import MLP
        from microrl.rng import Rng

        sys.path.insert(0, os.path.join(H.ROOT, "tests"))
        from helpers import compile_device_mpy

        mpy = compile_device_mpy(os.path.join(work, "mpy"))
        net = MLP(SIZES, ("relu", "tanh"), trainable=False).init(Rng(4))
        ppath = os.path.join(work, "policy.mrlp")
        P.save(ppath, P.Policy(SIZES, ("relu", "tanh"), params=net.params))
        heap = {}
        for label, extra, backend in (("plain", mpy, "plain"), ("native", os.pathsep.join([native_folder or "", mpy]), None)):
            if label == "native" and not native_folder:
                continue
            kb, ok48 = smallest_heap(ppath, extra, backend)
            heap[label] = {"smallest_heap_kb": kb, "works_at_48k": ok48}
        results["policy_heap"] = heap

    c_ref = c["c_plain_us"] if c else None
    rows = []
    for label, r in results["paths"].items():
        ratio = r["forward_us"] / c_ref if c_ref else None
        r["ratio_to_c"] = ratio
        rows.append([label, r["impl"], "%.1f" % r["forward_us"], "%.1f" % r["call_us"], "%.1f" % ratio if ratio else "-",
                     r.get("forward_alloc_bytes", "-"), r.get("call_alloc_bytes", "-"), r.get("peak_heap_bytes", "-")])
    if c:
        rows.append(["C gcc -O2 (plain loops)", "c", "%.2f" % c["c_plain_us"], "-", "1.0", "-", "-", "-"])
        rows.append(["C gcc -O2 (microrl kernel)", "c", "%.2f" % c["c_kernel_us"], "-", "%.2f" % (c["c_kernel_us"] / c_ref), "-", "-", "-"])
        rows.append(["C gcc -O2 int16 (plain loops)", "c", "%.2f" % c["c_int16_plain_us"], "-", "%.2f" % (c["c_int16_plain_us"] / c_ref), "-", "-", "-"])
        rows.append(["C gcc -O2 int16 (microrl kernel)", "c", "%.2f" % c["c_int16_kernel_us"], "-", "%.2f" % (c["c_int16_kernel_us"] / c_ref), "-", "-", "-"])
        if not c["c_int16_same"]:
            results["notes"].append("the int16 C loops and the microrl int16 kernel disagree")
    int16_native = results["paths"].get("micropython native int16")
    if c and int16_native:
        results["int16_native_over_c_int16"] = int16_native["forward_us"] / c["c_int16_plain_us"]
        results["notes"].append("int16: native forward / C -O2 int16 loops = %.2f (the Python loop over layers and argument checks included)" % results["int16_native_over_c_int16"])
    targets = {}
    native = results["paths"].get("micropython native")
    viper = results["paths"].get("micropython viper int16")
    if c_ref and native:
        targets["native_within_3x_of_c"] = native["ratio_to_c"] <= 3.0
    if c_ref and viper:
        targets["viper_within_20x_of_c"] = viper["ratio_to_c"] <= 20.0
    if "policy_heap" in results:
        for label, h in results["policy_heap"].items():
            targets["float32_policy_in_48k_heap_%s" % label] = h["works_at_48k"]
    results["targets"] = targets

    if args.json:
        print(json.dumps(results))
        return 0
    print("forward pass, %s (us per call; ratio = forward / C plain loops)" % results["network"])
    print(H.table(rows, ["path", "impl", "forward us", "policy call us", "x C", "alloc/forward B", "alloc/call B", "peak heap B"]))
    if "policy_heap" in results:
        for label, h in results["policy_heap"].items():
            print("microrl.load + call, %s, .mpy core: smallest heap %sK; works at 48K: %s" % (label, h["smallest_heap_kb"], h["works_at_48k"]))
    for k, v in targets.items():
        print("target %s: %s" % (k, "met" if v else "NOT met"))
    for n in results["notes"]:
        print("note: " + n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
