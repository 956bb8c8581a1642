"""The spread behind the suite's learning checks: each check trained over many seeds under several
CPU kernel settings, one process per run, with its evaluation curve.

Short training runs are chaotic: numpy's and scipy's OpenBLAS pick SIMD kernels per CPU, numba
compiles for the host CPU, and a last-bit difference becomes another policy. A learning check in
tests/ asserts on a median or a quorum of seeds with a threshold set from this spread (issue 18).

    python bench/learning_checks.py device_td3 --seeds 0-9 --settings own,Sandybridge,Haswell
    python bench/learning_checks.py host_td3 host_sac ppo_ip --seeds 0-9 --json runs.json
    python bench/learning_checks.py cartpole_td3 cartpole_sac --seeds 0-4 --settings own,Sandybridge

Settings: `own` (the machine's own kernels), any OPENBLAS_CORETYPE name (Sandybridge, Haswell,
SkylakeX: only on a CPU that has AVX-512), and `generic` (NUMBA_CPU_NAME=generic with Sandybridge
BLAS: numba's code for a baseline x86-64). Prints per check and setting the final returns, their
median and range, and the return at every evaluation.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "host"), os.path.join(ROOT, "device")]


# each check: what the suite's learning test trains, with evaluations along the way
def _device_td3(seed, steps):
    from microrl.train import train_pendulum

    _, evals = train_pendulum(steps=steps or 10000, seed=seed, eval_every=2000, eval_episodes=10)
    return evals


def _board_td3(seed, steps):
    """The device core's TD3 as train-on-board runs it on a 140-160K board: its learning settings,
    hidden 16,16, batch 32, a replay of 4,816 rows (what it chose on the Cortex-M3 of issue 33)."""
    from microrl.train import train_pendulum
    from microrl_host.board.train import BOARD_LEARNING

    _, evals = train_pendulum(steps=steps or 20000, seed=seed, eval_every=2000, eval_episodes=10, hidden=(16, 16), batch=32,
                              replay_capacity=4816, **BOARD_LEARNING)
    return evals


def _host_td3(seed, steps):
    from microrl_host.algos.td3 import ALGO

    return ALGO.run("pendulum", steps=steps or 10000, seed=seed, eval_every=2000, eval_episodes=10).evals


def _host_sac(seed, steps):
    from microrl_host.algos.sac import ALGO

    return ALGO.run("pendulum", steps=steps or 10000, seed=seed, eval_every=2000, eval_episodes=10).evals


def _ppo_ip(seed, steps):
    import tempfile

    from microrl_host.algos import ppo

    # Adam at 1e-3 for both networks: the rates this check was measured with (Ant's defaults are 3e-4 and 6e-4)
    config = ppo.PPOSettings(steps=steps or 61440, envs=16, rollout_steps=64, minibatches=4, hidden=(64, 64), lr=1e-3, critic_lr=1e-3, seed=seed)
    with tempfile.TemporaryDirectory() as run_dir:
        return ppo.train(config, "InvertedPendulum-v5", run_dir=run_dir, eval_every=10240, eval_episodes=5).evals


def _ppo_quadrotor(seed, steps):
    """PPO on the quadrotor with the task's own settings (TRAINING_PPO: what `microrl train
    quadrotor --algo ppo` does, perturbed training), one thread; the final policy's success rate
    in bench/quadrotor.py's test (100 flights from microrl eval's starts, seed 4242), as
    [[steps, success rate, 0]] (the shape of the other checks: step, value, spread)."""
    from microrl.tasks import quadrotor as Q
    from microrl_host import tasks
    from microrl_host.algos import ppo
    from microrl_host.envs.task import CompiledTask, evaluate_policy

    config = ppo.PPOSettings(**dict(ppo.suggested("quadrotor"), steps=steps or Q.TRAINING_PPO["steps"], seed=seed, threads=1))
    trained = ppo.train(config, "quadrotor")
    learner = trained.trainer
    rows = evaluate_policy(CompiledTask(Q), learner.to_policy(), 100, 4242)
    return [[trained.stats["steps"], tasks.summary(Q, rows)["success_rate"], 0.0]]


def _cartpole(algo, seed, steps):
    """The cart-pole swing-up with its own suggested settings (microrl.tasks.cartpole.TRAINING:
    what `microrl train cartpole` does), evaluated every 10,000 steps."""
    from microrl_host.algos import sac, td3

    module = td3 if algo == "td3" else sac
    return module.ALGO.run("cartpole", steps=steps or None, seed=seed, eval_every=10000).evals


def _cartpole_td3(seed, steps):
    return _cartpole("td3", seed, steps)


def _cartpole_sac(seed, steps):
    return _cartpole("sac", seed, steps)


CHECKS = {"device_td3": _device_td3, "board_td3": _board_td3, "host_td3": _host_td3, "host_sac": _host_sac, "ppo_ip": _ppo_ip, "cartpole_td3": _cartpole_td3,
          "cartpole_sac": _cartpole_sac, "ppo_quadrotor": _ppo_quadrotor}


def setting_env(name):
    """Environment variables that give a kernel setting's arithmetic."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    for k in ("OPENBLAS_CORETYPE", "NUMBA_CPU_NAME"):
        env.pop(k, None)
    if name == "generic":
        env.update(NUMBA_CPU_NAME="generic", OPENBLAS_CORETYPE="Sandybridge")
    elif name != "own":
        env["OPENBLAS_CORETYPE"] = name
    return env


def run_one(check, seed, setting, steps):
    cmd = [sys.executable, os.path.abspath(__file__), "--one", check, str(seed), str(steps or 0)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=setting_env(setting), cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError("%s seed %d (%s) failed:\n%s" % (check, seed, setting, proc.stderr[-3000:]))
    evals = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"check": check, "seed": seed, "setting": setting, "evals": evals, "final": evals[-1][1], "seconds": time.perf_counter() - t0}


def parse_seeds(text):
    seeds = []
    for part in text.split(","):
        a, _, b = part.partition("-")
        seeds.extend(range(int(a), int(b) + 1) if b else [int(a)])
    return seeds


def summarise(runs):
    lines = []
    for check in sorted({r["check"] for r in runs}):
        mine = [r for r in runs if r["check"] == check]
        finals = [r["final"] for r in mine]
        lines.append("%s: %d runs, final return median %.1f, range %.1f .. %.1f" % (check, len(mine), statistics.median(finals), min(finals), max(finals)))
        for setting in sorted({r["setting"] for r in mine}):
            rs = sorted((r for r in mine if r["setting"] == setting), key=lambda r: r["seed"])
            f = [r["final"] for r in rs]
            lines.append("  %-12s median %8.1f  min %8.1f  max %8.1f  finals %s" % (setting, statistics.median(f), min(f), max(f), " ".join("%.0f" % x for x in f)))
        steps = [e[0] for e in mine[0]["evals"]]
        for k, step in enumerate(steps):
            at = [r["evals"][k][1] for r in mine if len(r["evals"]) > k]
            at.sort()
            lines.append("  at step %6d: median %8.1f  10th pct %8.1f  worst %8.1f" % (step, statistics.median(at), at[len(at) // 10], at[0]))
    return "\n".join(lines)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--one":
        check, seed, steps = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
        evals = CHECKS[check](seed, steps)
        print(json.dumps([[int(s), float(m), float(sd)] for s, m, sd in evals]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checks", nargs="+", choices=sorted(CHECKS), help="which learning checks to run")
    ap.add_argument("--seeds", default="0-9", help="seeds, e.g. 0-9 or 0,3,5 (default 0-9)")
    ap.add_argument("--settings", default="own,Sandybridge,Haswell", help="kernel settings (default own,Sandybridge,Haswell)")
    ap.add_argument("--steps", type=int, default=0, help="training steps (default: the check's own)")
    ap.add_argument("--workers", type=int, default=2, help="runs at once (default 2)")
    ap.add_argument("--json", metavar="FILE", help="also write every run (evaluation curves included) to FILE")
    args = ap.parse_args()
    jobs = [(c, s, st) for c in args.checks for st in args.settings.split(",") for s in parse_seeds(args.seeds)]
    runs = []
    with ThreadPoolExecutor(args.workers) as pool:
        for r in pool.map(lambda j: run_one(j[0], j[1], j[2], args.steps), jobs):
            runs.append(r)
            print("%-10s %-12s seed %2d: %8.1f  (%.0f s)" % (r["check"], r["setting"], r["seed"], r["final"], r["seconds"]), file=sys.stderr, flush=True)
            if args.json:
                with open(args.json, "w") as f:
                    json.dump({"command": " ".join(sys.argv), "runs": runs}, f)
    print(summarise(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
