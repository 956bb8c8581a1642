"""Latency-aware training (issue 33, item 3): a policy trained with an action delay of 1, 2 and 4
control steps against one trained without, both evaluated with the delay.

Per seed and delay: `microrl train TASK --action-delay D` (here through the same API,
offpolicy.Algorithm.run with perturbations={"action_delay": D}), and once per seed without a
delay; every final policy is evaluated with `microrl eval`'s evaluation (envs/task.py,
evaluate_policy) under each delay. The table gives, per delay, the mean over seeds of the mean
return of each policy under that delay.

    python bench/latency.py                               # pendulum, delays 1,2,4, seeds 0,1,2
    python bench/latency.py --task pendulum --steps 15000 --seeds 0,1,2,3,4 --json
"""
import argparse
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for _p in (os.path.join(ROOT, "host"), os.path.join(ROOT, "device")):
    if _p not in sys.path:
        sys.path.insert(0, _p)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="pendulum", help="a task written against the task interface (default pendulum)")
    p.add_argument("--algo", default="td3", choices=("td3", "sac"))
    p.add_argument("--steps", type=int, default=None, help="training steps per run (default: the task's, else 10000)")
    p.add_argument("--delays", default="1,2,4", help="action delays in control steps (default 1,2,4)")
    p.add_argument("--seeds", default="0,1,2", help="training seeds (default 0,1,2)")
    p.add_argument("--episodes", type=int, default=50, help="evaluation episodes per policy and delay (default 50)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    delays = [int(d) for d in args.delays.split(",")]
    seeds = [int(s) for s in args.seeds.split(",")]

    from microrl_host import tasks
    from microrl_host.algos import sac, td3
    from microrl_host.envs.task import CompiledTask, evaluate_policy

    algo = (td3 if args.algo == "td3" else sac).ALGO
    module = tasks.resolve(args.task).module
    task = CompiledTask(module)
    runs = []
    t0 = time.time()
    for trained in [0] + delays:
        for seed in seeds:
            run = algo.run(module, steps=args.steps, seed=seed, eval_every=0, eval_episodes=0, threads=1,
                           perturbations={"action_delay": trained} if trained else {})
            row = {"trained_delay": trained, "seed": seed, "train_s": run.stats["train_s"], "under": {}}
            for under in [0] + delays:
                rows = evaluate_policy(task, run.policy, args.episodes, 12345, {"action_delay": under} if under else None)
                row["under"][under] = float(rows[:, 0].mean())
            runs.append(row)
            print("trained with delay %d, seed %d: %s" % (trained, seed, ", ".join("%d: %.1f" % kv for kv in row["under"].items())), file=sys.stderr, flush=True)
    table = []
    for d in delays:
        without = [r["under"][d] for r in runs if r["trained_delay"] == 0]
        with_ = [r["under"][d] for r in runs if r["trained_delay"] == d]
        table.append({"delay": d, "trained_without": statistics.mean(without), "trained_with": statistics.mean(with_),
                      "trained_without_per_seed": without, "trained_with_per_seed": with_})
    result = {"task": args.task, "algo": args.algo, "steps": args.steps, "seeds": seeds, "episodes": args.episodes,
              "wall_s": time.time() - t0, "load": os.getloadavg(), "table": table, "runs": runs}
    if args.json:
        print(json.dumps(result))
    else:
        print("%s, %s, seeds %s, %d evaluation episodes per policy; mean return under the delay (mean over seeds)" % (args.task, args.algo, args.seeds, args.episodes))
        print("  delay   trained without   trained with it")
        for r in table:
            print("  %5d   %15.1f   %15.1f" % (r["delay"], r["trained_without"], r["trained_with"]))
        print("load average %.2f %.2f %.2f" % result["load"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
