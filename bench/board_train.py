"""TD3 Pendulum trained on a virtual board (`microrl board sim`, the MicroPython unix port behind
a pty) with the sizes train-on-board chooses for each heap, evaluated on the host.

Per heap: the configuration chosen, bytes per replay row, the RAM before and after allocating,
the lowest free heap seen, steps per second with the native kernels and with plain Python, and
the return against steps for each seed (the board's training episodes, and the host's
10-episode evaluation of the final policy).

    python bench/board_train.py [--heaps 112K,160K,256K] [--seeds 5] [--steps 20000]
                                [--native PATH] [--plain-steps 400] [--json]
    python bench/board_train.py --margin   # the working margin: smallest heap each size trains on
    MICRORL_QEMU_FIRMWARE=.../firmware.elf python bench/board_train.py --qemu [armv7m|rv32imc]
                                [--seeds 5] [--steps 20000] [--jobs 2] [--json]

--qemu trains on MicroPython's qemu port (MPS2_AN385: a Cortex-M3 without an FPU, the port's
default 140 KB heap; or VIRT_RV32), built by its own docs (ports/qemu/README.md), named by
MICRORL_QEMU_FIRMWARE (one or more firmware.elf, os.pathsep-separated; this project ships none):
each seed on its own board, with the sizes chosen for that heap, the same train_on_board (and
BOARD_LEARNING) as `microrl train-on-board`. Its times are the host's running the emulator, not
a Cortex-M3's.

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


EVAL_EPISODES = 10  # the host's evaluation of each final policy
THRESHOLD = -200.0  # a final policy "solved" at this return or better


def train_and_evaluate(transport, seed, steps, tmp, sizes=None, log=None, label=""):
    """One train-on-board run (microrl_host.board.train.train_on_board: the command's own code
    path, its BOARD_LEARNING settings) over a board's transport in the raw REPL, its sizes chosen
    for the board's heap unless given, and the final policy (the actor the run ends with, not a
    best snapshot) evaluated on the host over EVAL_EPISODES episodes. The run's dict, with
    eval_return, eval_std, the sizes' choice and wall_seconds (connecting to evaluating)."""
    from microrl.evaluate import evaluate
    from microrl.task import Env
    from microrl.tasks import pendulum
    from microrl.policy import load

    from microrl_host.board.train import train_on_board

    t0 = time.time()
    said = []
    done = [0, 0]

    def progress(delta, ret, mem):
        done[0] += delta
        if log and done[0] - done[1] >= 5000:  # a line every 5,000 steps: qemu's runs take minutes
            done[1] = done[0]
            log("%sseed %d: step %d, latest episode return %.0f, %d bytes free" % (label, seed, done[0], ret, mem))

    h, b, rp = sizes or (None, None, None)
    r = train_on_board(transport, steps, h, b, rp, seed=seed, say=said.append, progress=progress)
    path = os.path.join(tmp, "seed%d.mrlp" % seed)  # one file per seed: seeds may run side by side
    with open(path, "wb") as f:
        f.write(r.pop("policy_bytes"))
    r.pop("task_shape", None)  # the task's constants (a namespace): not JSON
    mean, std, _ = evaluate(load(path), Env(pendulum), EVAL_EPISODES, seed=10007 + seed)
    r.update(seed=seed, steps=steps, eval_return=mean, eval_std=std, eval_episodes=EVAL_EPISODES, choice=said[0] if said else "",
             wall_seconds=time.time() - t0)
    return r


def run_heap(heap, seeds, steps, native, plain_steps, log):
    from microrl_host.board.virtual import VirtualBoard
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
                return train_and_evaluate(transport, seed, n, tmp, sizes)
            finally:
                disconnect(transport)

        if native:
            for seed in range(seeds):
                r = one(seed, steps, True)
                out["runs"].append(r)
                log("%s seed %d: %s batch %d replay %d, return %.0f +- %.0f (host, %d episodes), %.0f s, %.0f steps/s, %s" % (
                    heap, seed, r["hidden"], r["batch"], r["replay"], r["eval_return"], r["eval_std"], EVAL_EPISODES, r["seconds"],
                    r["train_steps_per_second"] or 0, r["backend"]))
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


def qemu_firmware(arch):
    """(firmware path, None) for MicroPython's qemu port of this arch named in
    MICRORL_QEMU_FIRMWARE with its qemu executable found, else (None, the one line saying what to set)."""
    from microrl_host.board import qemu as qemu_board

    board = {"armv7m": "MPS2_AN385 (Cortex-M3)", "rv32imc": "VIRT_RV32 (RISC-V)"}[arch]
    firmware = qemu_board.firmwares().get(arch)
    if firmware is None:
        named = os.environ.get("MICRORL_QEMU_FIRMWARE")
        return None, ("--qemu %s: MICRORL_QEMU_FIRMWARE %s: set it to the firmware.elf of MicroPython's qemu port built for BOARD=%s "
                      "(its own docs: ports/qemu/README.md; several files separated by '%s')"
                      % (arch, "names no %s firmware (%s)" % (arch, named) if named else "is not set", board, os.pathsep))
    exe = qemu_board.BOARDS[arch][0]
    if shutil.which(exe) is None:
        return None, "--qemu %s: %s not found: install it (Debian: apt-get install %s)" % (arch, exe, "qemu-system-arm" if arch == "armv7m" else "qemu-system-misc")
    return firmware, None


def run_qemu(arch, firmware, seeds, steps, jobs, log):
    """Each seed on its own emulated board (MicroPython's qemu port, its own heap; the device core
    and the shipped kernels in a ROMFS image), jobs boards at once."""
    from concurrent.futures import ThreadPoolExecutor

    from microrl_host.board import qemu as qemu_board

    label = "qemu %s " % arch
    out = {"heap": "qemu " + arch, "board": "qemu " + arch, "firmware": firmware, "jobs": jobs, "runs": []}
    with tempfile.TemporaryDirectory() as tmp:
        image = qemu_board.build_romfs(tmp, arch)

        def one(seed):
            with qemu_board.QemuBoard(firmware, arch, image) as board:
                r = train_and_evaluate(board.transport, seed, steps, tmp, log=log, label=label)
            log("%sseed %d: %s batch %d replay %d, return %.0f +- %.0f (host, %d episodes), %.0f s on the board, %.0f s wall, %s kernels" % (
                label, seed, r["hidden"], r["batch"], r["replay"], r["eval_return"], r["eval_std"], EVAL_EPISODES, r["seconds"], r["wall_seconds"], r["backend"]))
            return r

        with ThreadPoolExecutor(max_workers=jobs) as pool:  # each board is its own qemu process; threads only wait on serial
            out["runs"] = list(pool.map(one, range(seeds)))
    return out


def summarise(res, threshold=THRESHOLD):
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


def positive(text):
    """argparse type: an int of 1 or more."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError("%r is not a whole number of 1 or more" % text)
    return value


def fail(text):
    """The one line of a refusal, exit 2 (no usage, no traceback)."""
    print("board_train.py: " + text, file=sys.stderr)
    sys.exit(2)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--heaps", default="112K,160K,256K", help="the virtual boards' heaps (default 112K,160K,256K)")
    ap.add_argument("--seeds", type=positive, default=5, help="seeds 0..N-1 (default 5)")
    ap.add_argument("--steps", type=positive, default=20000, help="steps per run with the native kernels (default 20000)")
    ap.add_argument("--plain-steps", type=int, default=400, help="steps of the plain-Python speed run per heap (0: none)")
    ap.add_argument("--native", default=None, help="an x64 microrl_kernels.mpy for the virtual board (default: the one shipped)")
    ap.add_argument("--qemu", nargs="?", const="armv7m", choices=("armv7m", "rv32imc"), default=None,
                    help="train on MicroPython's qemu port instead of the virtual board: the firmware.elf named in MICRORL_QEMU_FIRMWARE "
                         "(os.pathsep-separated list) for this architecture (default armv7m: MPS2_AN385, Cortex-M3), with its own heap")
    ap.add_argument("--jobs", type=positive, default=1, help="with --qemu: boards (qemu processes) at once (default 1)")
    ap.add_argument("--margin", action="store_true", help="measure the working margin instead")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    log = (lambda t: print(t, file=sys.stderr, flush=True)) if args.json else (lambda t: print(t, flush=True))
    load = os.getloadavg()
    if args.margin:
        rows = margin()
        if args.json:
            print(json.dumps({"margin": rows, "load": load}))
        return
    from microrl_host.board.train import BoardTrainError

    t0 = time.time()
    try:
        if args.qemu:
            firmware, why = qemu_firmware(args.qemu)
            if why:
                fail(why)
            native = None
            results = [summarise(run_qemu(args.qemu, firmware, args.seeds, args.steps, args.jobs, log))]
        else:
            native = native_module(args.native)
            if native is None:
                log("no x64 native module found (--native PATH): plain-Python speed only")
            results = [summarise(run_heap(h, args.seeds, args.steps, native, args.plain_steps, log)) for h in args.heaps.split(",")]
    except BoardTrainError as e:
        fail(str(e))
    report = {"steps": args.steps, "seeds": args.seeds, "board": "qemu " + args.qemu if args.qemu else "virtual", "native_module": native,
              "threshold": THRESHOLD, "eval_episodes": EVAL_EPISODES, "load_before": load, "load_after": os.getloadavg(),
              "wall_seconds": time.time() - t0, "heaps": results}
    if args.json:
        print(json.dumps(report))
        return
    where = "MicroPython's qemu port (%s, %s; emulated, so times are the host's, not a microcontroller's)" % (args.qemu, results[0]["firmware"]) if args.qemu else "the virtual board"
    print("\nTD3 Pendulum on %s, %d steps, %d seeds; load %.1f before, %.1f after" % (where, args.steps, args.seeds, load[0], report["load_after"][0]))
    print("%12s %-8s %5s %6s %5s %8s %8s %8s %7s %7s %9s %s" % ("heap", "hidden", "batch", "replay", "B/row", "free kB", "alloc kB", "est kB", "solved", "median", "native/s", "plain steps/s (extrapolated min)"))
    for r in results:
        if not r["runs"]:
            p = r.get("plain", {})
            print("%12s %-8s %5s %6s  plain %.1f steps/s" % (r["heap"], p.get("hidden"), p.get("batch"), p.get("replay"), p.get("train_steps_per_second") or 0))
            continue
        c = r["config"]
        p = r.get("plain", {})
        print("%12s %-8s %5d %6d %5d %8.1f %8.1f %8.1f %4d/%-2d %7.0f %9.0f %s" % (
            r["heap"], ",".join(map(str, c["hidden"])), c["batch"], c["replay"], r["bytes_per_transition"], r["mem_free_start"] / 1024.0,
            r["allocated_bytes"] / 1024.0, r["estimate_bytes"] / 1024.0, r["solved"], len(r["runs"]), r["median_return"], r["median_steps_per_second"],
            "%.1f (%.0f)" % (p["train_steps_per_second"], p["extrapolated_seconds"] / 60.0) if p.get("extrapolated_seconds") else "-"))
        for run in r["runs"]:
            print("       seed %d: final policy %.0f +- %.0f (%d episodes), %d steps, %.0f s training, %.0f s wall; board episodes (step, return): %s" % (
                run["seed"], run["eval_return"], run["eval_std"], run["eval_episodes"], run["steps"], run["seconds"], run["wall_seconds"],
                " ".join("%d:%.0f" % sr for sr in run["returns"][4::10])))


if __name__ == "__main__":
    main()
