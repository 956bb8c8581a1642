"""TD3 Pendulum trained on a virtual board (`microrl board sim`, the MicroPython unix port behind
a pty) with the sizes train-on-board chooses for each heap, evaluated on the host.

Per heap: the configuration chosen, bytes per replay row, the RAM before and after allocating,
the lowest free heap seen, steps per second with the native kernels and with plain Python, and
the return against steps for each seed (the board's training episodes, and the host's
10-episode evaluation of the final policy).

    python bench/board_train.py [--heaps 112K,160K,256K] [--seeds 5] [--steps 20000]
                                [--native PATH] [--plain-steps 400] [--json]
    python bench/board_train.py --margin   # the working margin: smallest heap each size trains on

Plain Python is too slow for whole runs here (a few steps per second): its speed is measured on
--plain-steps steps per heap and its wall time for the budget extrapolated (marked as such).
The paper's anchor (BackpropTools, arXiv 2306.03530): TD3 Pendulum-v1, 10,000 steps with a
10,000-transition replay, trained on a Teensy 4.1 (Cortex-M7 600 MHz, 1024 KB on-chip RAM plus
16 MB off-chip); its time is in the paper's Figure 2 only.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "host"), os.path.join(ROOT, "device")]


def native_module(path=None):
    """The x64 microrl_kernels.mpy for the virtual board: the path given, else the one shipped in
    the package (deploy installs it; this bench copies it in and out to time both backends)."""
    if path:
        return path if os.path.isfile(path) else None
    p = os.path.join(ROOT, "host", "microrl_host", "board", "native", "mpy6.3", "x64", "microrl_kernels.mpy")
    return p if os.path.isfile(p) else None


def run_heap(heap, seeds, steps, native, plain_steps, log):
    from microrl.evaluate import evaluate
    from microrl.task import Env
    from microrl.tasks import pendulum
    from microrl.policy import load

    from microrl_host.board.virtual import VirtualBoard
    from microrl_host.board.train import train_on_board
    from microrl_host.board.deploy import deploy
    from microrl_host.board.serial_link import connect, disconnect

    out = {"heap": heap, "runs": []}
    with tempfile.TemporaryDirectory() as tmp, VirtualBoard(os.path.join(tmp, "fs"), heap=heap) as board:
        deploy(board.port, mpy=True, use_native=False, tasks=["pendulum"])
        kernels = os.path.join(board.folder, "lib", "microrl_kernels.mpy")

        def one(seed, n, with_native, sizes=None):
            if with_native:
                shutil.copy(native, kernels)
            elif os.path.exists(kernels):
                os.remove(kernels)
            transport = connect(board.port, soft_reset=True)
            try:
                said = []
                h, b, rp = sizes or (None, None, None)
                r = train_on_board(transport, n, h, b, rp, seed=seed, say=said.append)
            finally:
                disconnect(transport)
            path = os.path.join(tmp, "p.mrlp")
            with open(path, "wb") as f:
                f.write(r.pop("policy_bytes"))
            r.pop("task_shape", None)  # the task's constants (a namespace): not JSON
            mean, std, _ = evaluate(load(path), Env(pendulum), 10, seed=10007 + seed)
            r.update(seed=seed, steps=n, eval_return=mean, eval_std=std, choice=said[0] if said else "")
            return r

        if native:
            for seed in range(seeds):
                r = one(seed, steps, True)
                out["runs"].append(r)
                log("%s seed %d: %s batch %d replay %d, return %.0f (host, 10 episodes), %.0f s, %.0f steps/s, %s" % (
                    heap, seed, r["hidden"], r["batch"], r["replay"], r["eval_return"], r["seconds"], r["train_steps_per_second"] or 0, r["backend"]))
        if plain_steps:
            # the network and batch chosen for the whole budget, timed over plain_steps (the replay
            # is chosen again: without the native module the usable heap differs)
            if out["runs"]:
                sizes = (out["runs"][0]["hidden"], out["runs"][0]["batch"], None)
            else:
                from microrl_host.board.train import choose, read_board

                transport = connect(board.port, soft_reset=True)
                try:
                    info = read_board(transport)
                finally:
                    transport.close()
                sizes = choose(steps, info["usable"], info["largest"], info["gc_block"])[:2] + (None,)
            r = one(0, plain_steps, False, sizes)
            out["plain"] = {k: r[k] for k in ("backend", "train_steps_per_second", "steps_per_second", "seconds", "hidden", "batch", "replay")}
            if r["train_steps_per_second"]:
                out["plain"]["extrapolated_seconds"] = steps / r["train_steps_per_second"]
            log("%s plain: %.1f steps/s with updates (%d steps, hidden %s, batch %d, replay %d)" % (
                heap, r["train_steps_per_second"] or 0, plain_steps, r["hidden"], r["batch"], r["replay"]))
    return out


def summarise(res, threshold=-200.0):
    runs = res["runs"]
    if not runs:
        return res
    first = runs[0]
    res.update(
        config={"hidden": first["hidden"], "batch": first["batch"], "replay": first["replay"], "warmup": first["warmup"]},
        bytes_per_transition=first["bytes_per_transition"],
        mem_free_start=first["mem_free_start"],
        largest_free_block=first["largest_free_block"],
        estimate_bytes=first["estimate_bytes"],
        allocated_bytes=first["mem_free_start"] - first["mem_after_alloc"],
        lowest_free=min(r["mem_free_min"] for r in runs),
        solved=sum(r["eval_return"] >= threshold for r in runs),
        median_return=statistics.median(r["eval_return"] for r in runs),
        median_seconds=statistics.median(r["seconds"] for r in runs),
        median_steps_per_second=statistics.median(r["train_steps_per_second"] or 0 for r in runs),
    )
    return res


# --- the working margin: smallest heap each size builds and trains on (the unix port directly)
_MARGIN_CODE = """
import gc
from microrl.td3 import TD3, TD3Config
from microrl.task import Env
from microrl.tasks import pendulum
%(probe)s
print('F', usable_heap())
try:
    agent = TD3(Env(pendulum), TD3Config(hidden=%(hidden)r, batch=%(batch)d, replay_capacity=%(replay)d, warmup=%(batch)d), 0)
    for step in range(%(steps)d):
        agent.step()
    agent.replay = None
    from binascii import hexlify
    mv = memoryview(agent.actor.params)
    for i in range(0, len(mv), 16):
        hexlify(mv[i:i + 16])
    print('OK')
except MemoryError:
    print('OOM')
"""
MARGIN_SIZES = [((8, 8), 16, 400), ((16, 16), 32, 2000), ((16, 16), 32, 5000), ((24, 24), 32, 3000), ((32, 32), 32, 5000), ((64, 64), 64, 1000)]


def margin(steps=60):
    from microrl.memory import estimate_bytes
    from microrl.td3 import TD3Config

    from microrl_host.board.virtual import micropython_command
    from microrl_host.board.train import USABLE_PROBE
    from microrl_host.board.deploy import core_name, core_sources, mpy_cross

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        lib = os.path.join(tmp, "lib", "microrl")
        for src in core_sources():
            # compiled as deploy --mpy compiles for the board (one implementation: deploy.mpy_cross)
            mpy_cross(src, os.path.join(lib, *core_name(src, ".mpy").split("/")), "x64", "microrl/" + core_name(src))
        env = dict(os.environ, MICROPYPATH=os.path.join(tmp, "lib"))

        def run(heap, hidden, batch, replay):
            code = _MARGIN_CODE % dict(hidden=tuple(hidden), batch=batch, replay=replay, steps=steps, probe=USABLE_PROBE)
            text = subprocess.run(micropython_command(tmp) + ["-X", "heapsize=%d" % heap, "-c", code], capture_output=True, text=True, env=env, cwd=tmp).stdout
            free = int(text.split("F ")[1].split()[0]) if "F " in text else 0
            return "OK" in text, free

        for hidden, batch, replay in MARGIN_SIZES:
            est = estimate_bytes(3, 1, TD3Config(hidden=hidden, batch=batch, replay_capacity=replay))
            lo, hi = est // 1024 * 1024, est + 256 * 1024
            good = None
            while hi - lo > 256:
                mid = (lo + hi) // 2 // 64 * 64
                ok, free = run(mid, hidden, batch, replay)
                if ok:
                    hi, good = mid, free
                else:
                    lo = mid
            rows.append({"hidden": list(hidden), "batch": batch, "replay": replay, "estimate": est, "smallest_heap": hi, "usable_after_import": good, "margin": good - est})
            print("%-8s batch %3d replay %5d: estimate %7d, smallest heap %7d, usable after import %7d, margin %6d" % (
                ",".join(map(str, hidden)), batch, replay, est, hi, good, good - est), flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--heaps", default="112K,160K,256K")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=20000, help="steps per run with the native kernels (default 20000)")
    ap.add_argument("--plain-steps", type=int, default=400, help="steps of the plain-Python speed run per heap (0: none)")
    ap.add_argument("--native", default=None, help="an x64 microrl_kernels.mpy for the virtual board (default: the one shipped)")
    ap.add_argument("--margin", action="store_true", help="measure the working margin instead")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    log = (lambda t: print(t, file=sys.stderr, flush=True)) if args.json else (lambda t: print(t, flush=True))
    load = os.getloadavg()
    if args.margin:
        rows = margin()
        if args.json:
            print(json.dumps({"margin": rows, "load": load}))
        return
    native = native_module(args.native)
    if native is None:
        log("no x64 native module found (--native PATH): plain-Python speed only")
    t0 = time.time()
    results = [summarise(run_heap(h, args.seeds, args.steps, native, args.plain_steps, log)) for h in args.heaps.split(",")]
    report = {"steps": args.steps, "seeds": args.seeds, "native_module": native, "load_before": load, "load_after": os.getloadavg(), "wall_seconds": time.time() - t0, "heaps": results}
    if args.json:
        print(json.dumps(report))
        return
    print("\nTD3 Pendulum on the virtual board, %d steps, %d seeds; load %.1f before, %.1f after" % (args.steps, args.seeds, load[0], report["load_after"][0]))
    print("%6s %-8s %5s %6s %5s %8s %8s %8s %7s %7s %9s %s" % ("heap", "hidden", "batch", "replay", "B/row", "free kB", "alloc kB", "est kB", "solved", "median", "native/s", "plain steps/s (extrapolated min)"))
    for r in results:
        if not r["runs"]:
            p = r.get("plain", {})
            print("%6s %-8s %5s %6s  plain %.1f steps/s" % (r["heap"], p.get("hidden"), p.get("batch"), p.get("replay"), p.get("train_steps_per_second") or 0))
            continue
        c = r["config"]
        p = r.get("plain", {})
        print("%6s %-8s %5d %6d %5d %8.1f %8.1f %8.1f %4d/%-2d %7.0f %9.0f %s" % (
            r["heap"], ",".join(map(str, c["hidden"])), c["batch"], c["replay"], r["bytes_per_transition"], r["mem_free_start"] / 1024.0,
            r["allocated_bytes"] / 1024.0, r["estimate_bytes"] / 1024.0, r["solved"], len(r["runs"]), r["median_return"], r["median_steps_per_second"],
            "%.1f (%.0f)" % (p["train_steps_per_second"], p["extrapolated_seconds"] / 60.0) if p.get("extrapolated_seconds") else "-"))
        for run in r["runs"]:
            print("       seed %d: return %.0f, %.0f s; board episodes (step, return): %s" % (
                run["seed"], run["eval_return"], run["seconds"], " ".join("%d:%.0f" % sr for sr in run["returns"][4::10])))


if __name__ == "__main__":
    main()
