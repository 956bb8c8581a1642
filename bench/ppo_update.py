"""PPO's update on Ant's sizes (27 observations, 8 actions, 256-256 ReLU networks, 4 epochs of 2
minibatches of 2048 rows: what one iteration of `microrl train ant --algo ppo` learns from), and
the ReLU backward inside it: the device core's numpy kernel (a bitwise AND, `_numpy._zero_where_off`)
beside numpy's boolean-mask assignment `g[y <= 0] = 0`, which it replaced, on the same rows in the
same run. The update is timed with ours and with the mask swapped back in, interleaved, on one
thread and on two (the critic's step on a second thread, as training runs it); both give the same
bits, which the run checks.

    python bench/ppo_update.py [--repeats 7] [--json]
"""
import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "host"), os.path.join(HERE, "..", "device")]

import numpy as np  # noqa: E402

from microrl import _numpy  # noqa: E402
from microrl_host.algos import ppo  # noqa: E402
from microrl_host.nn.blas import one_blas_thread  # noqa: E402


def boolean_mask(g, y):
    """The peer: numpy's boolean-mask assignment, as the kernel did it before."""
    g[y <= 0.0] = 0.0


def time_kernel(fn, rows, width, repeats):
    """Median milliseconds of fn(g, y) on (rows, width) float32 ReLU outputs and gradients."""
    rng = np.random.default_rng(0)
    y = np.maximum(rng.standard_normal((rows, width)), 0.0).astype(np.float32)
    g0 = rng.standard_normal((rows, width)).astype(np.float32)
    g = g0.copy()
    times = []
    for _ in range(repeats):
        np.copyto(g, g0)
        t = time.perf_counter()
        for _ in range(20):
            fn(g, y)
        times.append((time.perf_counter() - t) / 20 * 1e3)
    return statistics.median(times)


def ant_batch(n=4096, obs=27, act=8, seed=0):
    rng = np.random.default_rng(seed)
    return {
        "obs": rng.standard_normal((n, obs)).astype(np.float32), "actions": rng.standard_normal((n, act)).astype(np.float32),
        "mean": np.zeros((n, act), np.float32), "logp": rng.standard_normal(n), "advantages": rng.standard_normal(n),
        "returns": rng.standard_normal(n), "log_std": np.full(act, np.log(0.5)),
    }


def time_update(mask, threads, repeats):
    """(median wall s, median CPU s, parameter bytes) of PPO.update on one Ant-sized batch, the
    ReLU mask given by mask; a fresh learner of seed 1 each time."""
    saved = _numpy._zero_where_off
    _numpy._zero_where_off = mask
    try:
        learner = ppo.PPO(27, 8, -np.ones(8), np.ones(8), ppo.PPOSettings(seed=1, threads=threads))
        batch = ant_batch()
        learner.update(batch)  # the first one starts the critic's thread
        walls, cpus = [], []
        for _ in range(repeats):
            t, c = time.perf_counter(), time.process_time()
            learner.update(batch)
            walls.append(time.perf_counter() - t)
            cpus.append(time.process_time() - c)
        learner.close()
        return statistics.median(walls), statistics.median(cpus), learner.actor.p.tobytes() + learner.critic.p.tobytes()
    finally:
        _numpy._zero_where_off = saved


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=7, help="timed updates (and kernel batches) per variant, interleaved (default 7)")
    p.add_argument("--json", action="store_true", help="print one JSON object of the figures")
    args = p.parse_args(argv)
    out = {"load_before": os.getloadavg()[0], "cpus": os.cpu_count(), "kernel_ms": {}, "update": {}}
    with one_blas_thread(scipy_blas=False):
        for name, fn in (("microrl", _numpy._zero_where_off), ("boolean_mask", boolean_mask)):
            out["kernel_ms"][name] = time_kernel(fn, 2048, 256, args.repeats)
        for threads in (1, 2):
            rounds = {"microrl": [], "boolean_mask": []}
            bits = {}
            for _ in range(3):  # interleaved: a burst of load hits both
                for name, fn in (("microrl", _numpy._zero_where_off), ("boolean_mask", boolean_mask)):
                    wall, cpu, bits[name] = time_update(fn, threads, args.repeats)
                    rounds[name].append((wall, cpu))
            out["update"][threads] = {
                name: {"wall_s": statistics.median(w for w, _ in r), "cpu_s": statistics.median(c for _, c in r)} for name, r in rounds.items()
            }
            out["update"][threads]["same_bits"] = bits["microrl"] == bits["boolean_mask"]
    out["load_after"] = os.getloadavg()[0]
    k = out["kernel_ms"]
    if args.json:
        print(json.dumps(out))
        return 0
    print("ReLU backward, 2048 x 256 float32: microrl %.3f ms, boolean mask %.3f ms: ours %.2f of it" % (k["microrl"], k["boolean_mask"], k["microrl"] / k["boolean_mask"]))
    for threads, u in out["update"].items():
        ours, peer = u["microrl"], u["boolean_mask"]
        print("PPO update on Ant's sizes, %d thread%s: microrl %.3f s wall / %.3f CPU-s, with the boolean mask %.3f / %.3f: ours %.2f (wall) and %.2f (CPU) of it; same bits: %s"
              % (threads, "s" if threads > 1 else "", ours["wall_s"], ours["cpu_s"], peer["wall_s"], peer["cpu_s"], ours["wall_s"] / peer["wall_s"], ours["cpu_s"] / peer["cpu_s"], u["same_bits"]))
    print("load average %.2f before, %.2f after, %d CPUs" % (out["load_before"], out["load_after"], out["cpus"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
