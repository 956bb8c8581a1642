"""TD3 Pendulum in the browser (microrl web, docs/browser.md) beside the same device core
elsewhere, the same seeds: in headless Chromium (MicroPython-webassembly, our wasm kernels), on
CPython (numpy kernels) and by `microrl train-on-board` on the virtual board (the unix port, the
native kernels, the sizes chosen for its heap). Per route and seed: wall time for the steps, steps
per second, CPU seconds (what the machine's load does not stretch: the browser's processes, or
CPython's), the final policy's return (10 episodes). For the browser also the page's first paint
and start-up, and the plain-Python route in the browser (no wasm kernels: too slow for a whole
run, so timed over a few updates and extrapolated, marked as such).

    python bench/browser.py [--seeds 3] [--steps 10000] [--heap 256K] [--plain-updates 10]
                            [--routes browser,cpython,board] [--json]

Browser and CPython run the page's networks (webtrain.SETTINGS: 64,64, batch 32) through the same
train_pendulum, whose last evaluation (10 episodes from seed + 10007) is the final return; the
board's final policy is evaluated on the host the same way (bench/board_train.py). Times include
the evaluations on the page and on CPython, not on the board (its policy is evaluated afterwards).
Needs chromium, chromium-driver and the page's runtime (`microrl web --install-runtime`).
"""
import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "host"), os.path.join(ROOT, "device"), os.path.join(ROOT, "bench")]

PAGE_SETTINGS = {"hidden": (64, 64), "batch": 32}  # webtrain.SETTINGS (checked against the page's report)
EVAL_EVERY = 2000
EVAL_EPISODES = 10
THRESHOLD = -200.0


def browser_runs(seeds, steps, plain_updates, log):
    from microrl_host import headless, webpage

    paths = headless.find()
    if paths is None:
        sys.exit("no headless Chromium (apt-get install chromium chromium-driver)")
    try:
        server = webpage.serve(0, webpage.runtime_dir())
    except webpage.RuntimeMissing as e:
        sys.exit(str(e))
    url = "http://127.0.0.1:%d/" % server.server_address[1]
    out = {"runs": []}
    try:
        with headless.Browser(paths) as b:
            for seed in range(seeds):
                t0 = time.monotonic()
                b.open(url + "?steps=%d&seed=%d&eval_every=%d&eval_episodes=%d" % (steps, seed, EVAL_EVERY, EVAL_EPISODES))
                b.wait("window.microrlState && microrlState.ready", 120)
                cpu0 = b.cpu_seconds()
                b.run("document.getElementById('train').click()")
                done = b.wait("microrlState.done || (microrlState.error && {error: microrlState.error})", 3600, poll=1)
                cpu = b.cpu_seconds() - cpu0 if cpu0 is not None else None
                if "error" in done:
                    sys.exit("the page failed: %s" % done["error"])
                state = b.run("return {firstPaint: microrlState.firstPaint, bootMs: microrlState.bootMs, backend: microrlState.backend}")
                assert {k: tuple(v) if isinstance(v, list) else v for k, v in done["settings"].items()} == PAGE_SETTINGS, done["settings"]
                r = {"seed": seed, "seconds": done["ms"] / 1000, "steps_per_second": steps / (done["ms"] / 1000), "eval_return": done["evaluations"][-1][1],
                     "first_paint_ms": state["firstPaint"], "start_ms": state["bootMs"], "backend": state["backend"], "page_seconds": time.monotonic() - t0,
                     "cpu_seconds": cpu}
                out["runs"].append(r)
                log("browser seed %d: %.1f s (%.1f CPU-s), %.0f steps/s, return %.0f; first paint %.0f ms, MicroPython and kernels ready in %.0f ms" % (
                    seed, r["seconds"], cpu or 0, r["steps_per_second"], r["eval_return"], r["first_paint_ms"], r["start_ms"]))
            if plain_updates:
                # plain kernels: the warm-up (1,000 steps, no updates), then plain_updates updates; no evaluation
                warmup = 1000
                b.open(url + "?autostart=1&kernels=plain&steps=%d&seed=0&eval_every=0&warmup=%d" % (warmup + plain_updates, warmup))
                done = b.wait("microrlState.done || (microrlState.error && {error: microrlState.error})", 3600, poll=2)
                state = b.run("return {backend: microrlState.backend, episodes: microrlState.episodes}")
                at_warmup = [e["ms"] for e in state["episodes"] if e["step"] == warmup][0]
                per_update = (done["ms"] - at_warmup) / 1000 / plain_updates
                out["plain"] = {"backend": state["backend"], "updates": plain_updates, "seconds_per_update": per_update, "warmup_seconds": at_warmup / 1000,
                                "extrapolated_seconds": at_warmup / 1000 + per_update * (steps - warmup)}
                log("browser, plain Python kernels: %.2f s per update (%d updates), about %.0f s for %d steps (extrapolated)" % (
                    per_update, plain_updates, out["plain"]["extrapolated_seconds"], steps))
    finally:
        server.shutdown()
    return out


def cpython_runs(seeds, steps, log):
    import microrl.backend

    microrl.backend.use("numpy")
    from microrl.train import train_pendulum

    out = {"runs": [], "backend": "numpy"}
    for seed in range(seeds):
        t0, cpu0 = time.perf_counter(), time.process_time()
        _, evaluations = train_pendulum(steps=steps, seed=seed, eval_every=EVAL_EVERY, eval_episodes=EVAL_EPISODES, **PAGE_SETTINGS)
        seconds = time.perf_counter() - t0
        r = {"seed": seed, "seconds": seconds, "steps_per_second": steps / seconds, "eval_return": evaluations[-1][1], "cpu_seconds": time.process_time() - cpu0}
        out["runs"].append(r)
        log("CPython seed %d: %.1f s (%.1f CPU-s), %.0f steps/s, return %.0f" % (seed, seconds, r["cpu_seconds"], r["steps_per_second"], r["eval_return"]))
    return out


def board_runs(seeds, steps, heap, log):
    import board_train

    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = board_train.run_heap(heap, seeds, steps, board_train.native_module(), 0, log)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    runs = [{"seed": r["seed"], "seconds": r["seconds"], "steps_per_second": steps / r["seconds"], "eval_return": r["eval_return"],
             "hidden": r["hidden"], "batch": r["batch"], "replay": r["replay"], "backend": r["backend"]} for r in res["runs"]]
    # the boards' processes (ended and waited for when run_heap returns): their CPU time, per seed
    board_cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) / max(1, len(runs))
    return {"heap": heap, "runs": runs, "board_cpu_seconds_per_seed": board_cpu}


def summary(route):
    runs = route["runs"]
    if not runs:
        return {}
    med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    cpu = [r["cpu_seconds"] for r in runs if r.get("cpu_seconds") is not None]
    return {"median_seconds": med([r["seconds"] for r in runs]), "median_steps_per_second": med([r["steps_per_second"] for r in runs]),
            "median_cpu_seconds": med(cpu) if cpu else None,
            "returns": [round(r["eval_return"], 1) for r in runs], "solved": sum(r["eval_return"] >= THRESHOLD for r in runs)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=10000)
    ap.add_argument("--heap", default="256K", help="the virtual board's heap (default 256K)")
    ap.add_argument("--plain-updates", type=int, default=10, help="updates of the browser's plain-Python timing (0: none)")
    ap.add_argument("--routes", default="browser,cpython,board")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    log = (lambda t: print(t, file=sys.stderr, flush=True)) if args.json else (lambda t: print(t, flush=True))
    load = os.getloadavg()
    t0 = time.time()
    routes = args.routes.split(",")
    report = {"steps": args.steps, "seeds": args.seeds, "threshold": THRESHOLD, "eval_episodes": EVAL_EPISODES, "page_settings": PAGE_SETTINGS,
              "command": " ".join(["python", "bench/browser.py"] + (argv if argv is not None else sys.argv[1:])), "load_before": load}
    if "browser" in routes:
        report["browser"] = browser_runs(args.seeds, args.steps, args.plain_updates, log)
    if "cpython" in routes:
        report["cpython"] = cpython_runs(args.seeds, args.steps, log)
    if "board" in routes:
        report["board"] = board_runs(args.seeds, args.steps, args.heap, log)
    report.update(load_after=os.getloadavg(), wall_seconds=time.time() - t0)
    for name in ("browser", "cpython", "board"):
        if name in report:
            report[name]["summary"] = summary(report[name])
    if args.json:
        print(json.dumps(report))
        return
    print("\nTD3 Pendulum, %d steps, seeds 0-%d; load %.1f before, %.1f after" % (args.steps, args.seeds - 1, load[0], report["load_after"][0]))
    for name in ("browser", "cpython", "board"):
        if name in report:
            s = report[name]["summary"]
            cpu = s["median_cpu_seconds"] if name != "board" else report[name]["board_cpu_seconds_per_seed"]
            print("%-8s median %.1f s (%.1f CPU-s), %.0f steps/s, returns %s (%d of %d at %.0f or better)" % (
                name, s["median_seconds"], cpu or 0, s["median_steps_per_second"], s["returns"], s["solved"], len(report[name]["runs"]), THRESHOLD))


if __name__ == "__main__":
    main()
