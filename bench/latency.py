"""Latency-aware training (issue 33, item 3): policies trained with an action delay of 1, 2 and 4
control steps against one trained without, all evaluated with the delay.

Per seed: one run without a delay, and per delay D one run as `microrl train TASK --action-delay
D` trains (the task's own training perturbations, if any, and the delay; the observation carries
the D pending actions: docs/sim-to-real.md) and, unless
--no-blind, one run with the delay but the task's observation alone (the way that does not make
the delay learnable; `pending_actions=False`). The runs go through the same API as the command
(offpolicy.Algorithm.run); every final policy (never a best snapshot) is evaluated with `microrl
eval`'s evaluation (envs/task.py, evaluate_policy) under the delay alone, on the same starts.
The table gives per delay the median over seeds of each policy's mean return under that delay
(and, for a task with a success test, its success rate and final error), and in how many seeds
the policy trained with the delay beats the same seed's trained without.

    python bench/latency.py                               # pendulum, delays 1,2,4, seeds 0,1,2
    nice -n 10 python bench/latency.py --steps 20000 --seeds 0,1,2,3,4 --json
    python bench/latency.py --task quadrotor --delays 2,4 --seeds 0,1,2 --no-blind   # 500,000 steps per run
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


def whole_list(text, low, what):
    """Comma-separated whole numbers >= low, or argparse's one-line error (exit 2)."""
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError("%s: comma-separated whole numbers, e.g. 1,2,4; got %r" % (what, text)) from None
    if not values or min(values) < low:
        raise argparse.ArgumentTypeError("%s: whole numbers from %d, got %r" % (what, low, text))
    return values


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="pendulum", help="a task written against the task interface (default pendulum)")
    p.add_argument("--algo", default="td3", choices=("td3", "sac"))
    p.add_argument("--steps", type=int, default=None, help="training steps per run (default: the task's, else 10000)")
    p.add_argument("--delays", default=[1, 2, 4], type=lambda t: whole_list(t, 1, "--delays"), help="action delays in control steps (default 1,2,4; at most 32)")
    p.add_argument("--seeds", default=[0, 1, 2], type=lambda t: whole_list(t, 0, "--seeds"), help="training seeds (default 0,1,2)")
    p.add_argument("--episodes", type=int, default=50, help="evaluation episodes per policy and delay (default 50)")
    p.add_argument("--no-blind", dest="blind", action="store_false", help="leave out the runs trained with the delay on the task's observation alone")
    p.add_argument("--json", action="store_true", help="print one JSON object: the table, every run, the load")
    args = p.parse_args(argv)
    if max(args.delays) > 32:
        p.error("--delays: at most 32 steps (microrl.perturb.MAX_DELAY)")

    from microrl.perturb import training as training_perturbations
    from microrl_host import tasks
    from microrl_host.algos import sac, td3
    from microrl_host.envs.task import CompiledTask, evaluate_policy

    algo = (td3 if args.algo == "td3" else sac).ALGO
    try:
        found = tasks.resolve(args.task)
    except tasks.TaskError as e:
        p.error(str(e))
    if found.module is None:
        p.error("--task %s: a task written against the task interface (docs/tasks.md), not a gymnasium id" % args.task)
    module = found.module
    task = CompiledTask(module)
    kinds = [("without", 0, True)] + [(kind, d, kind == "pending") for d in args.delays for kind in (("pending", "blind") if args.blind else ("pending",))]
    runs = []
    t0 = time.time()
    load = [os.getloadavg()]
    for seed in args.seeds:
        for kind, trained, pending in kinds:
            # as `microrl train TASK [--action-delay D]`: the task's own perturbations, and the delay
            perturbations = training_perturbations(module)
            if trained:
                perturbations["action_delay"] = trained
            run = algo.run(module, steps=args.steps, seed=seed, eval_every=0, eval_episodes=0, threads=1,
                           perturbations=perturbations, pending_actions=pending)
            row = {"kind": kind, "trained_delay": trained, "seed": seed, "pending_actions": run.policy.pending, "train_s": run.stats["train_s"], "under": {}}
            for under in (args.delays if kind == "without" else [trained]):
                rows = evaluate_policy(task, run.policy, args.episodes, 12345, {"action_delay": under})
                row["under"][under] = float(rows[:, 0].mean())
                if task.has_success:
                    row.setdefault("success", {})[under] = tasks.summary(module, rows)
            runs.append(row)
            load.append(os.getloadavg())
            print("seed %d, trained %s%s: %s (%.0f s)" % (seed, kind, " %d" % trained if trained else "", ", ".join("under %d: %.1f" % kv for kv in row["under"].items()),
                                                         time.time() - t0), file=sys.stderr, flush=True)
    table = []
    for d in args.delays:
        entry = {"delay": d}
        for kind in ("without", "pending", "blind"):
            per_seed = [r["under"][d] for r in runs if r["kind"] == kind and (kind == "without" or r["trained_delay"] == d)]
            if per_seed:
                entry[kind] = statistics.median(per_seed)
                entry[kind + "_per_seed"] = per_seed
            if task.has_success:
                summaries = [r["success"][d] for r in runs if r["kind"] == kind and (kind == "without" or r["trained_delay"] == d)]
                if summaries:
                    entry[kind + "_success_per_seed"] = summaries
        entry["pending_beats_without"] = sum(w < x for w, x in zip(entry["without_per_seed"], entry["pending_per_seed"]))
        table.append(entry)
    result = {"task": args.task, "algo": args.algo, "steps": args.steps, "seeds": args.seeds, "episodes": args.episodes,
              "wall_s": time.time() - t0, "load": [min(l[0] for l in load), max(l[0] for l in load)], "table": table, "runs": runs}
    if args.json:
        print(json.dumps(result))
    else:
        print("%s, %s, seeds %s, %d evaluation episodes per final policy; median over seeds of the mean return under the delay"
              % (args.task, args.algo, ",".join(map(str, args.seeds)), args.episodes))
        print("  delay   trained without   with it, pending actions observed   with it, observation alone   seeds where with+pending beats without")
        for r in table:
            print("  %5d   %15.1f   %33.1f   %26s   %d of %d" % (r["delay"], r["without"], r["pending"], "%.1f" % r["blind"] if "blind" in r else "-",
                                                                r["pending_beats_without"], len(args.seeds)))
        if task.has_success:
            for r in table:
                for kind in ("without", "pending", "blind"):
                    if kind + "_success_per_seed" in r:
                        print("  delay %d, %s: success %s" % (r["delay"], kind, ", ".join("%.0f%%" % (100 * s["success_rate"]) for s in r[kind + "_success_per_seed"])))
        print("load average (1 min) %.2f to %.2f, %.0f s" % (result["load"][0], result["load"][1], result["wall_s"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
