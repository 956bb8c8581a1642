"""Compiled-loop speed of every built-in task, and of a task written as a user's file outside
the package: a user's task must run as fast as a built-in one (docs/tasks.md).

Each measurement is a whole `microrl`-style training run in a process of its own (TD3, one
thread, no evaluations, numba's cache warmed first): steps per second of the compiled loop
(train_s, which leaves out start-up, compile or cache load), per wall second and per CPU second
of the loop (train_cpu_s: on a shared machine the steadier of the two). The user's file is the built-in
cart-pole's source (or, without one, the pendulum's) copied into a temporary folder, imported
as `from microrl.compat import const` and renamed: the same code, loaded as a user's. Runs are
interleaved (every configuration once per round), so that the machine's load falls on all alike;
the report gives medians, the user file's ratio to its built-in, and the load before and after.

    python bench/tasks.py                  # 5 rounds
    python bench/tasks.py --rounds 9 --json
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ONE_THREAD = {k: "1" for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS", "MICRORL_THREADS")}
STEPS = 10000  # beyond the task's own warm-up (its TRAINING), so that most steps train


def _path():
    for p in (os.path.join(ROOT, "host"), os.path.join(ROOT, "device")):
        if p not in sys.path:
            sys.path.insert(0, p)


def user_file(name, folder):
    """The built-in task `name`'s source as a user's file in folder (NAME: '<name>_file')."""
    with open(os.path.join(ROOT, "device", "microrl", "tasks", name + ".py")) as f:
        text = f.read()
    text = text.replace("from ..compat import", "from microrl.compat import")
    text = text.replace('NAME = "%s"' % name, 'NAME = "%s_file"' % name)
    path = os.path.join(folder, "%s_file.py" % name)
    with open(path, "w") as f:
        f.write(text)
    return path


def one(task, steps):
    """One run in this process: {"steps_per_s", "train_s", "steps"}."""
    _path()
    from microrl_host.algos import td3

    run = td3.ALGO.run(task, steps=steps, seed=0, eval_every=0, eval_episodes=0, threads=1)
    return {"steps_per_s": run.stats["steps_per_s"], "steps_per_cpu_s": steps / run.stats["train_cpu_s"], "train_s": run.stats["train_s"], "steps": steps}


def measure(task, steps, cwd):
    env = dict(os.environ, **ONE_THREAD)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "host"), os.path.join(ROOT, "device")] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", task, str(steps)], capture_output=True, text=True, env=env, cwd=cwd, timeout=3600)
    if proc.returncode:
        raise RuntimeError("%s failed:\n%s" % (task, proc.stderr[-3000:]))
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--one", nargs=2, metavar=("TASK", "STEPS"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        print(json.dumps(one(a.one[0], int(a.one[1]))))
        return 0
    _path()
    from microrl_host import tasks

    folder = tempfile.mkdtemp(prefix="microrl-bench-tasks-")
    mirrored = "cartpole" if "cartpole" in tasks.builtin_names() else "pendulum"
    path = user_file(mirrored, folder)
    configs = {}
    for name in tasks.builtin_names():
        configs[name] = (name, tasks.resolve(name).training.get("warmup", 1000) + STEPS)
    configs[os.path.basename(path)] = ("./" + os.path.basename(path), configs[mirrored][1])
    load = [os.getloadavg()]
    for label, (task, steps) in configs.items():  # numba's cache: compiled once, then loaded
        measure(task, 200, folder)
    rates = {label: [] for label in configs}
    cpu_rates = {label: [] for label in configs}
    for r in range(a.rounds):
        for label, (task, steps) in configs.items():
            m = measure(task, steps, folder)
            rates[label].append(m["steps_per_s"])
            cpu_rates[label].append(m["steps_per_cpu_s"])
        if not a.json:
            print("round %d: %s" % (r + 1, ", ".join("%s %.0f (%.0f per CPU s)" % (k, v[-1], cpu_rates[k][-1]) for k, v in rates.items())), flush=True)
    load.append(os.getloadavg())
    user = os.path.basename(path)
    result = {
        "what": "TD3 steps per second of the compiled training loop (one thread, no evaluations; the task's warm-up plus %d steps)" % STEPS,
        "steps": {k: v[1] for k, v in configs.items()},
        "median_steps_per_s": {k: statistics.median(v) for k, v in rates.items()},
        "median_steps_per_cpu_s": {k: statistics.median(v) for k, v in cpu_rates.items()},
        "steps_per_s": rates,
        "steps_per_cpu_s": cpu_rates,
        "user_file": {"task": user, "mirrors": mirrored, "ratio_to_builtin": statistics.median(rates[user]) / statistics.median(rates[mirrored]),
                      "ratios_per_round": [u / b for u, b in zip(rates[user], rates[mirrored])],
                      "cpu_ratio_to_builtin": statistics.median(cpu_rates[user]) / statistics.median(cpu_rates[mirrored]),
                      "cpu_ratios_per_round": [u / b for u, b in zip(cpu_rates[user], cpu_rates[mirrored])]},
        "rounds": a.rounds,
        "load_before": load[0],
        "load_after": load[1],
    }
    if a.json:
        print(json.dumps(result))
    else:
        for k, v in result["median_steps_per_s"].items():
            print("%-22s %8.0f steps/s, %8.0f per CPU second (medians of %d; %d steps)" % (k, v, result["median_steps_per_cpu_s"][k], a.rounds, configs[k][1]))
        u = result["user_file"]
        print("%s / %s: %.3f per wall second (per round %s), %.3f per CPU second (per round %s); load %.1f before, %.1f after" % (
            user, mirrored, u["ratio_to_builtin"], ", ".join("%.3f" % x for x in u["ratios_per_round"]), u["cpu_ratio_to_builtin"],
            ", ".join("%.3f" % x for x in u["cpu_ratios_per_round"]), load[0][0], load[1][0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
