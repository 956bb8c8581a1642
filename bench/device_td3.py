"""The device core's TD3 (device/microrl/td3.py) on Pendulum: solve rate over seeds on CPython
(numpy backend), and the RAM TD3 takes on MicroPython (the unix port's allocator) beside
microrl.memory.estimate_bytes().

    python bench/device_td3.py [--seeds 8] [--steps 10000] [--json]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "device")]

MEMORY = """
import gc
from microrl.td3 import TD3, TD3Config
from microrl.memory import estimate_bytes
from microrl.task import Env
from microrl.tasks import pendulum
gc.collect()
before = gc.mem_alloc()
agent = TD3(Env(pendulum), TD3Config(), 0)
gc.collect()
print(gc.mem_alloc() - before, estimate_bytes(3, 1, TD3Config()), agent.replay.nbytes())
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=8, help="seeds 0..N-1 (default 8)")
    ap.add_argument("--steps", type=int, default=10000)
    ap.add_argument("--json", action="store_true", help="print one JSON object of the figures")
    args = ap.parse_args()
    from microrl import backend_name
    from microrl.train import train_pendulum

    runs = []
    for seed in range(args.seeds):
        t0 = time.perf_counter()
        _, evals = train_pendulum(steps=args.steps, seed=seed, eval_every=args.steps, eval_episodes=10)
        runs.append({"seed": seed, "return": evals[-1][1], "seconds": time.perf_counter() - t0})
    result = {
        "backend": backend_name(),
        "steps": args.steps,
        "runs": runs,
        "solved": sum(r["return"] >= -300 for r in runs),
        "median_return": statistics.median(r["return"] for r in runs),
        "median_seconds": statistics.median(r["seconds"] for r in runs),
    }
    mp = shutil.which("micropython")
    if mp:
        out = subprocess.run([mp, "-X", "heapsize=4M", "-c", MEMORY], capture_output=True, text=True, env=dict(os.environ, MICROPYPATH=os.path.join(ROOT, "device")), check=True).stdout.split()
        result["micropython_td3_bytes"], result["estimate_bytes"], result["replay_bytes"] = (int(v) for v in out)
    if args.json:
        print(json.dumps(result))
        return
    print("device-core TD3, Pendulum-v1, %d steps, %s backend" % (args.steps, result["backend"]))
    print("%6s %10s %9s" % ("seed", "return", "seconds"))
    for r in runs:
        print("%6d %10.1f %9.1f" % (r["seed"], r["return"], r["seconds"]))
    print("solved (>= -300): %d of %d; median return %.1f; median %.1f s per run" % (result["solved"], len(runs), result["median_return"], result["median_seconds"]))
    if mp:
        print("RAM on MicroPython (default config): %d bytes allocated, estimate %d, of which replay %d" % (result["micropython_td3_bytes"], result["estimate_bytes"], result["replay_bytes"]))


if __name__ == "__main__":
    main()
