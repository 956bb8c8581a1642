"""Fine-tuning on the board from a host run (issue 34, 4): a Pendulum whose mass on the board
differs from the host's. Per seed: TD3 trained on the host (mass 1), its policy's return on the
heavier pendulum, then `microrl train-on-board --task heavy_pendulum.py` for N board steps, once
started from the host run (--init) and once from scratch, each N a run of its own; the figure is
the board steps each needs to reach a return of --target (mean over --episodes evaluation
episodes, on the host's copy of the heavy task). The virtual board (unix port, --heap).

    python bench/board_init.py --seeds 0,1,2 --json docs/results/board_init.json
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cli(*args, cwd=None):
    quiet = [] if args[0] == "eval" else ["--quiet"]
    proc = subprocess.run([sys.executable, "-m", "microrl_host.cli"] + [str(a) for a in args] + ["--json"] + quiet, capture_output=True, text=True, cwd=cwd)
    if proc.returncode:
        raise SystemExit("%s failed: %s" % (" ".join(map(str, args[:2])), proc.stderr.strip()[-1500:]))
    return json.loads(proc.stdout.strip().splitlines()[-1])


def heavy_source(mass):
    """The built-in Pendulum as a user's file, NAME heavy_pendulum, its mass `mass`."""
    import microrl.tasks.pendulum as pendulum

    with open(pendulum.__file__) as f:
        text = f.read()
    text = text.replace("from ..compat import const", "from microrl.compat import const").replace('NAME = "pendulum"', 'NAME = "heavy_pendulum"')
    values = list(pendulum.PARAMETERS)
    values[pendulum.MASS] = mass
    return re.sub(r"\nPARAMETERS = \(.*?\)\n", "\nPARAMETERS = %r\n" % (tuple(values),), text, count=1, flags=re.S)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--mass", type=float, default=1.6, help="the board's pendulum mass (the host's: 1)")
    p.add_argument("--host-steps", type=int, default=20000)
    p.add_argument("--hidden", default="32,32")
    p.add_argument("--steps", default="500,1000,2000,4000,8000", help="board steps of the runs, ascending")
    p.add_argument("--target", type=float, default=-200.0)
    p.add_argument("--episodes", type=int, default=20)
    p.add_argument("--heap", default="256K")
    p.add_argument("--json", help="write the results here")
    args = p.parse_args()
    from microrl_host.board.virtual import VirtualBoard

    seeds = [int(s) for s in args.seeds.split(",")]
    ladder = [int(s) for s in args.steps.split(",")]
    results = {"mass": args.mass, "hidden": args.hidden, "host_steps": args.host_steps, "target": args.target, "episodes": args.episodes,
               "heap": args.heap, "steps": ladder, "load_before": os.getloadavg(), "seeds": {}}
    t0 = time.time()
    with tempfile.TemporaryDirectory() as work:
        with open(os.path.join(work, "heavy_pendulum.py"), "w") as f:
            f.write(heavy_source(args.mass))
        with VirtualBoard(os.path.join(work, "fs"), heap=args.heap) as vb:
            deployed = False
            for seed in seeds:
                host = cli("train", "pendulum", "--steps", args.host_steps, "--hidden", args.hidden, "--seed", seed, "--out", "h%d.mrlp" % seed, cwd=work)
                on_heavy = cli("eval", "h%d.mrlp" % seed, "--task", "./heavy_pendulum.py", "--episodes", args.episodes, "--seed", 10007 + seed, cwd=work)
                row = {"host_return": host["evals"][-1][1], "host_policy_on_heavy": on_heavy["mean"], "init": {}, "scratch": {}}
                for kind in ("init", "scratch"):
                    for n in ladder:
                        extra = ["--init", "h%d.run" % seed] if kind == "init" else ["--hidden", args.hidden]
                        r = cli("train-on-board", "--port", vb.port, "--task", "./heavy_pendulum.py", "--steps", n, "--seed", seed, "--episodes", args.episodes,
                                "--out", "b.mrlp", *(extra + (["--no-deploy"] if deployed else [])), cwd=work)
                        deployed = True
                        row[kind][n] = r["eval_return_mean"]
                        print("seed %d %-7s %5d board steps: return %.1f (%.0f s)" % (seed, kind, n, r["eval_return_mean"], r["seconds"]), flush=True)
                    reached = [n for n in ladder if row[kind][n] >= args.target]
                    row[kind + "_steps_to_target"] = reached[0] if reached else None
                results["seeds"][seed] = row
                print("seed %d: host %.1f (mass 1); on mass %.2g %.1f; board steps to %.0f: from the host run %s, from scratch %s" % (
                    seed, row["host_return"], args.mass, row["host_policy_on_heavy"], args.target, row["init_steps_to_target"], row["scratch_steps_to_target"]), flush=True)
    results["load_after"] = os.getloadavg()
    results["seconds"] = time.time() - t0
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
