"""What `microrl train --tensorboard` costs: the same TD3/SAC Pendulum run (same seed, so the same
updates) with and without TensorBoard logs, interleaved round by round in one process (numba's
cache warmed first, one training thread so that the second thread's scheduling does not blur the
figures). Reports medians of the compiled loop's steps per second (train_s: TensorBoard writes
nothing inside it, so this ratio should be 1 within the noise) and of the whole run's wall time
(which adds the losses measured at each evaluation and the event file writes), their ratios
with/without, and the machine's load before and after.

    python bench/tensorboard_cost.py                    # TD3 and SAC, 10,000 steps, 5 rounds
    python bench/tensorboard_cost.py --algos td3 --rounds 9 --json
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for p in (os.path.join(ROOT, "host"), os.path.join(ROOT, "device")):
    if p not in sys.path:
        sys.path.insert(0, p)


def one_run(algo, steps, folder):
    from microrl_host.tensorboard import TensorBoard

    callbacks = TensorBoard(folder) if folder else None
    r = algo.ALGO.run("pendulum", steps=steps, seed=0, eval_every=1000, eval_episodes=10, threads=1, callbacks=callbacks).stats
    return {"train_s": r["train_s"], "wall_s": r["wall_s"], "loop_steps_per_s": steps / r["train_s"], "eval_mean": r["eval_mean"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--algos", default="td3,sac")
    ap.add_argument("--steps", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    from microrl_host.algos import sac, td3

    algos = {"td3": td3, "sac": sac}
    load_before = os.getloadavg()
    tmp = tempfile.mkdtemp(prefix="microrl-bench-tb-")
    report = {"steps": a.steps, "rounds": a.rounds, "load_before": load_before, "algos": {}}
    try:
        for name in a.algos.split(","):
            algo = algos[name]
            one_run(algo, 2000, os.path.join(tmp, "warm"))  # compile or load from numba's cache
            runs = {"off": [], "on": []}
            for k in range(a.rounds):
                for mode in ("off", "on") if k % 2 == 0 else ("on", "off"):
                    runs[mode].append(one_run(algo, a.steps, os.path.join(tmp, "%s-%d" % (name, k)) if mode == "on" else None))
            med = {mode: {key: statistics.median(r[key] for r in rs) for key in ("loop_steps_per_s", "wall_s")} for mode, rs in runs.items()}
            assert len({r["eval_mean"] for r in runs["off"] + runs["on"]}) == 1, "a run with TensorBoard differs from one without"
            report["algos"][name] = {
                "loop_steps_per_s": {m: med[m]["loop_steps_per_s"] for m in med}, "wall_s": {m: med[m]["wall_s"] for m in med},
                "loop_speed_ratio_on_off": med["on"]["loop_steps_per_s"] / med["off"]["loop_steps_per_s"],
                "wall_ratio_on_off": med["on"]["wall_s"] / med["off"]["wall_s"],
            }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    report["load_after"] = os.getloadavg()
    if a.json:
        print(json.dumps(report, indent=2))
        return
    print("%d steps, %d interleaved rounds, load before %.1f, after %.1f" % (a.steps, a.rounds, load_before[0], report["load_after"][0]))
    for name, r in report["algos"].items():
        print("%s: loop %.0f steps/s without, %.0f with TensorBoard (ratio %.3f); whole run %.2f s without, %.2f s with (ratio %.3f)" % (
            name, r["loop_steps_per_s"]["off"], r["loop_steps_per_s"]["on"], r["loop_speed_ratio_on_off"],
            r["wall_s"]["off"], r["wall_s"]["on"], r["wall_ratio_on_off"]))


if __name__ == "__main__":
    main()
