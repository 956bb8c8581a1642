"""PPO on Ant: returns over (training) wall time, ours (microrl_host.algos.ppo) against
Stable-Baselines3's PPO with one torch thread, on the same budget, same seeds, same settings
where both have them (64 envs x 64 steps, 4 epochs of 2 minibatches of 2048, so the same number
of gradient steps; 256-256 ReLU, initial action std 0.5, gamma 0.99, GAE 0.95, clip 0.2, no
entropy bonus, no advantage normalisation, observation normalisation). Differences: SB3 has no
KL-adaptive learning rate (ours is the paper's Appendix G, from 1e-3), so it keeps its default
fixed 3e-4; it clips gradients at norm 0.5, observations at 10 (VecNormalize), and its Adam's
eps is 1e-5 (ours 1e-8); it steps gymnasium's environments in its DummyVecEnv.

CPUs: SB3 as configured here uses one (one torch thread, environments stepped in turn); ours
uses them all (environment threads, the critic's update on a second thread). Both wall time and
process CPU time are reported; `--impl microrl-1cpu` runs ours on one thread for the
like-for-like comparison.

Every --eval-every steps the deterministic policy (after that iteration's update, for both) is
evaluated on gymnasium's own environment (--eval-episodes episodes, fixed seeds); evaluation
time is excluded from training time, environment and network construction is included for both.
Reported: the learning curve (steps, training wall seconds, return), the wall time to a return
of --target (3000 by default) if reached, steps per second, wall and CPU time against SB3's.

    nice -n 5 python bench/ppo_ant.py --steps 1000000 --seeds 1,2,3 --impl microrl,microrl-1cpu,sb3 --save ppo_ant_1m.json
    nice -n 5 python bench/ppo_ant.py --steps 10240000 --seeds 1 --impl microrl --save ppo_ant.json  # the paper's budget
    nice -n 5 python bench/ppo_ant.py --steps 200000 --seeds 1 --eval-every 50000          # what fits in minutes
    python bench/ppo_ant.py --plot curves.png --from ppo_ant.json                          # the learning curves

RLtools' own C++ PPO Ant trainer as a peer (`--impl microrl,rltools`): give the path of a binary
built on this machine from RLtools' public sources (src/rl/environments/mujoco/ant/ppo/cpu) in
MICRORL_RLTOOLS_PPO_ANT; without it the peer is skipped with that reason. The binary is called as
`BINARY SEED ITERATIONS` (a build whose main reads its seed and number of PPO iterations from its
arguments; the stock one ignores them and runs seed 600 for 2,500 iterations: the bench stops it
at the budget) and its output is read as it runs: "Evaluation return mean: R" (10 episodes every
100,000 steps, on its own Ant), "PPO step: I environment step: S", "Total: X s". MKL_NUM_THREADS
defaults to 1 for it (its own advice; two MKL threads fight its environment threads).
Every run of ours and of the peer is a process of its own, so that its peak memory (the kernel's
maximum resident set, from wait4) is its own. Figures per run: training wall time (process start
to the last update, evaluations taken out), training CPU time (the process's user+system CPU,
evaluations taken out), steps per second, CPU seconds and peak RSS per million steps, wall time
to each --targets return; the summary gives medians over seeds and ours over the peer's.

    MICRORL_RLTOOLS_PPO_ANT=/path/to/ppo_ant nice -n 5 python bench/ppo_ant.py --impl microrl,rltools --steps 2500000 --seeds 1,2,3 --eval-every 100000 --save ppo_ant_rltools.json
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "host"), os.path.join(HERE, "..", "device")]


RLTOOLS_BINARY = "MICRORL_RLTOOLS_PPO_ANT"  # names the peer's binary
RLTOOLS_BATCH = 64 * 64  # its steps per iteration (64 environments x 64 steps)


class Skip(Exception):
    """A peer that cannot run here; the message says why."""


class Clock:
    """Training wall time and process CPU time (all threads): they run except while evaluating.
    from_start: CPU counted from the process's start (imports included), as for the peer."""

    def __init__(self, from_start=False):
        self.total, self.since = 0.0, time.perf_counter()
        self.cpu_total, self.cpu_since = 0.0, 0.0 if from_start else time.process_time()

    def pause(self):
        self.total += time.perf_counter() - self.since
        self.cpu_total += time.process_time() - self.cpu_since

    def resume(self):
        self.since = time.perf_counter()
        self.cpu_since = time.process_time()

    def now(self):
        return self.total + time.perf_counter() - self.since

    def cpu_now(self):
        return self.cpu_total + time.process_time() - self.cpu_since


def _report(impl, seed, point):
    # one line per evaluation on stderr: a long run can be followed (and its log kept)
    print("%s seed %d: step %d, %.1f s, return %.1f" % ((impl, seed) + tuple(point)), file=sys.stderr, flush=True)


def run_ours(task, steps, seed, eval_every, episodes, threads=None, name="microrl", clock=None):
    from microrl_host.algos import ppo
    from microrl_host.algos.callbacks import EachChunk

    config = ppo.PPOSettings(steps=steps, seed=seed, threads=threads)
    clock, curve = clock or Clock(), []
    state = {"next": eval_every}

    def on_iteration(step, learner):
        if step >= state["next"] or step >= steps:
            clock.pause()
            mean, std, _ = ppo.evaluate_policy(learner.to_policy(), task, episodes, seed=12345)
            curve.append((step, clock.total, mean))
            _report(name, seed, curve[-1])
            while state["next"] <= step:
                state["next"] += eval_every
            clock.resume()

    ppo.train(config, task, callbacks=EachChunk(on_iteration))
    return curve, clock.now(), clock.cpu_now()


def _child(args):
    """One run of ours in this process (started by run_ours_process): its figures as one JSON line."""
    clock = Clock(from_start=True)
    seed = int(args.seeds)
    threads = 1 if args.child == "microrl-1cpu" else None
    curve, wall, cpu = run_ours(args.task, args.steps, seed, args.eval_every, args.eval_episodes, threads=threads, name=args.child, clock=clock)
    print(json.dumps({"curve": curve, "wall": wall, "cpu": cpu}), flush=True)
    return 0


def _wait(proc):
    """Wait for a child; its exit status and resource usage (peak RSS of that process alone)."""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage


def run_ours_process(task, steps, seed, eval_every, episodes, impl="microrl"):
    """Ours in a process of its own (imports, environment building and numba's cache loads count,
    as the peer's start-up does): curve, training wall and CPU, peak RSS in MB."""
    cmd = [sys.executable, os.path.abspath(__file__), "--child", impl, "--task", task, "--steps", str(steps), "--seeds", str(seed), "--eval-every", str(eval_every), "--eval-episodes", str(episodes)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read()
    usage = _wait(proc)
    if proc.returncode != 0:
        raise RuntimeError("%s seed %d: the run's process failed (exit %d)" % (impl, seed, proc.returncode))
    result = json.loads(out.strip().splitlines()[-1])
    return [tuple(c) for c in result["curve"]], result["wall"], result["cpu"], usage.ru_maxrss / 1024.0


def _process_cpu(pid):
    """User + system CPU seconds of a running process (all its threads), from /proc."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_rltools(task, steps, seed, eval_every, episodes):
    """RLtools' PPO Ant trainer (a binary named by MICRORL_RLTOOLS_PPO_ANT), read as it runs.
    Its evaluations (10 episodes every 100,000 steps, its own schedule: eval_every and episodes
    do not reach it) are taken out of its wall and CPU time: an evaluation lasts from the line
    before "Evaluation return mean" to that line. Steps include its one warm-up rollout (it
    collects it for the observation statistics)."""
    from microrl_host.envs.mujoco import gym_id

    binary = os.environ.get(RLTOOLS_BINARY)
    if not binary:
        raise Skip("%s is not set (the path of RLtools' PPO Ant trainer, built on this machine)" % RLTOOLS_BINARY)
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        raise Skip("%s=%s is not an executable file" % (RLTOOLS_BINARY, binary))
    if gym_id(task) != "Ant-v4":
        raise Skip("RLtools' trainer runs Ant-v4 only, not %s" % task)
    iterations = max(1, -(-steps // RLTOOLS_BATCH) - 1)  # plus its warm-up rollout
    env = dict(os.environ)
    env.setdefault("MKL_NUM_THREADS", "1")
    import tempfile

    with tempfile.TemporaryDirectory(prefix="microrl-rltools-") as cwd:  # whatever it writes stays out of the way
        t0 = time.perf_counter()
        proc = subprocess.Popen([binary, str(seed), str(iterations)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, cwd=cwd)
        prev_t, prev_cpu = t0, 0.0
        eval_wall = eval_cpu = 0.0
        pending, curve, step, done = None, [], 0, 0
        last_t, last_cpu = t0, 0.0
        try:
            for line in proc.stdout:
                now = time.perf_counter()
                try:
                    cpu = _process_cpu(proc.pid)
                except OSError:
                    break
                if line.startswith("Evaluation return mean:"):
                    pending = ((prev_t - t0) - eval_wall, float(line.split(":", 1)[1].split()[0]))
                    eval_wall += now - prev_t
                    eval_cpu += cpu - prev_cpu
                elif line.startswith("PPO step:") and "environment step:" in line:
                    step = int(line.split("environment step:")[1].split()[0])
                    if pending is not None:
                        curve.append((step, pending[0], pending[1]))
                        _report("rltools", seed, curve[-1])
                        pending = None
                elif line.startswith("Total:"):
                    last_t, last_cpu, done = now, cpu, step + RLTOOLS_BATCH
                    if done >= steps:  # a stock build ignores its arguments: stop it at the budget
                        proc.terminate()
                        break
                prev_t, prev_cpu = now, cpu
        finally:
            if proc.poll() is None and done >= steps:
                proc.terminate()
            proc.stdout.close()
            usage = _wait(proc)
    if done == 0:
        raise RuntimeError("rltools seed %d: no iteration finished (exit %s)" % (seed, proc.returncode))
    wall, cpu = (last_t - t0) - eval_wall, last_cpu - eval_cpu
    return curve, wall, cpu, usage.ru_maxrss / 1024.0, done


def run_sb3(task, steps, seed, eval_every, episodes):
    import gymnasium as gym
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    from microrl_host.envs.mujoco import gym_id

    torch.set_num_threads(1)
    task = gym_id(task)
    clock, curve = Clock(), []  # from here, as ours: building the environments and networks counts
    venv = VecNormalize(make_vec_env(task, n_envs=64, seed=seed), norm_obs=True, norm_reward=False)
    model = PPO(
        "MlpPolicy", venv, n_steps=64, batch_size=2048, n_epochs=4, learning_rate=3e-4, gamma=0.99, gae_lambda=0.95,
        clip_range=0.2, ent_coef=0.0, vf_coef=0.5, max_grad_norm=0.5, normalize_advantage=False, seed=seed, device="cpu", verbose=0,
        policy_kwargs=dict(net_arch=dict(pi=[256, 256], vf=[256, 256]), activation_fn=torch.nn.ReLU, log_std_init=float(np.log(0.5))),
    )

    def evaluate():
        env = gym.make(task)
        low, high = env.action_space.low, env.action_space.high
        returns = []
        for k in range(episodes):
            obs, _ = env.reset(seed=12345 + k)
            total, done = 0.0, False
            while not done:
                action, _ = model.predict(venv.normalize_obs(obs[None]), deterministic=True)
                obs, r, term, trunc, _ = env.step(np.clip(action[0], low, high))
                total += float(r)
                done = term or trunc
            returns.append(total)
        return float(np.mean(returns))

    def checkpoint():
        clock.pause()
        curve.append((model.num_timesteps, clock.total, evaluate()))
        _report("sb3", seed, curve[-1])
        clock.resume()

    class EvalCallback(BaseCallback):
        # SB3 calls _on_rollout_end before its update: evaluate at the next rollout's start
        # (after the update, as ours) and once after learn() for the last one
        def __init__(self):
            super().__init__()
            self.next = eval_every

        def _on_rollout_start(self):
            if self.num_timesteps >= self.next:
                checkpoint()
                while self.next <= self.num_timesteps:
                    self.next += eval_every

        def _on_step(self):
            return True

    model.learn(total_timesteps=steps, callback=EvalCallback())
    if not curve or curve[-1][0] < model.num_timesteps:
        checkpoint()
    venv.close()
    return curve, clock.now(), clock.cpu_now()


def plot(runs, path, target, cpus=None):
    """Return over environment steps and over training wall time, one line per run (colour per
    implementation), the target dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = {"microrl": "tab:blue", "microrl-1cpu": "tab:green", "sb3": "tab:orange", "rltools": "tab:red"}
    fig, (by_steps, by_time) = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    labelled = set()
    for r in runs:
        steps = [c["step"] / 1e6 for c in r["curve"]]
        minutes = [c["wall_s"] / 60 for c in r["curve"]]
        returns = [c["return"] for c in r["curve"]]
        label = None if r["impl"] in labelled else {"microrl": "microrl PPO", "microrl-1cpu": "microrl PPO, one CPU (same numbers, slower)", "sb3": "Stable-Baselines3 PPO (one CPU)", "rltools": "RLtools' C++ PPO (its own Ant, 10 episodes)"}.get(r["impl"], r["impl"])
        labelled.add(r["impl"])
        colour = colours.get(r["impl"])
        by_steps.plot(steps, returns, color=colour, alpha=0.8, label=label)
        by_time.plot(minutes, returns, color=colour, alpha=0.8)
    for ax in (by_steps, by_time):
        ax.axhline(target, color="grey", linestyle="--", linewidth=1)
        ax.grid(alpha=0.3)
    by_steps.set_xlabel("environment steps (millions)")
    by_time.set_xlabel("training wall time (minutes, evaluations excluded)")
    by_steps.set_ylabel("deterministic return")
    by_steps.legend(loc="upper left", fontsize="small")
    tasks = sorted({r.get("task", "") for r in runs} - {""})
    fig.suptitle("PPO on %s%s" % (", ".join(tasks) or "Ant", ", %d CPUs" % cpus if cpus else ""))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _meta(args):
    return {"task": args.task, "steps": args.steps, "seeds": args.seeds, "eval_every": args.eval_every, "eval_episodes": args.eval_episodes, "targets": _targets(args), "cpus": os.cpu_count(), "load_avg": os.getloadavg()[0], "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "rltools_binary": os.environ.get(RLTOOLS_BINARY)}


def _save(path, report):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(report, f)
    os.replace(tmp, path)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--task", default="Ant-v4", help="the paper's Ant-v4 by default (Ant-v5 adds contact forces to the observation)")
    p.add_argument("--steps", type=int, default=10_240_000, help="environment steps per run (paper: 10,240,000)")
    p.add_argument("--seeds", default="1", help="comma-separated seeds")
    p.add_argument("--impl", default="microrl,sb3", help="which to run: microrl (all CPUs), microrl-1cpu (one thread, as SB3), sb3, rltools (RLtools' C++ trainer, a binary named by %s)" % RLTOOLS_BINARY)
    p.add_argument("--eval-every", type=int, default=100_000)
    p.add_argument("--eval-episodes", type=int, default=5)
    p.add_argument("--target", "--targets", dest="targets", default="3000,5000", help="returns whose first crossings are timed (comma-separated)")
    p.add_argument("--child", help=argparse.SUPPRESS)  # one run of ours, in a process of its own
    p.add_argument("--json", action="store_true")
    p.add_argument("--save", metavar="FILE", help="also write the JSON report to FILE, rewritten after every run (a long run keeps what it has)")
    p.add_argument("--plot", metavar="PNG", help="draw the learning curves (return over steps and over training wall time, as the paper's Figure 3) of the reports given with --from, or of this run")
    p.add_argument("--from", dest="reports", metavar="JSON", nargs="+", help="with --plot: reports written by --save (or --json); nothing is run")
    args = p.parse_args(argv)
    if args.child:
        return _child(args)
    if args.reports:
        if not args.plot:
            p.error("--from only reads reports for --plot; give --plot PNG")
        runs, cpus = [], set()
        for path in args.reports:
            with open(path) as f:
                report = json.load(f)
            cpus.add(report.get("meta", {}).get("cpus"))
            for r in report["runs"]:
                r.setdefault("task", report.get("meta", {}).get("task", ""))
            runs += report["runs"]
        plot(runs, args.plot, _targets(args)[0], cpus.pop() if len(cpus) == 1 else None)
        print("wrote %s (%d runs)" % (args.plot, len(runs)))
        return 0
    warnings.filterwarnings("ignore")
    targets = _targets(args)
    runners = {"microrl": run_ours_process, "microrl-1cpu": lambda *a: run_ours_process(*a, impl="microrl-1cpu"), "sb3": run_sb3, "rltools": run_rltools}
    impls = [s.strip() for s in args.impl.split(",") if s.strip()]
    for name in impls:
        if name not in runners:
            p.error("unknown --impl %r; choose from %s" % (name, ", ".join(runners)))
    runs, skipped = [], {}
    for seed in [int(s) for s in args.seeds.split(",")]:
        for name in impls:  # interleaved, so that load changes hit all
            if name in skipped:
                continue
            load = os.getloadavg()[0]
            try:
                result = runners[name](args.task, args.steps, seed, args.eval_every, args.eval_episodes)
            except Skip as e:
                skipped[name] = str(e)
                print("%s skipped: %s" % (name, e), file=sys.stderr, flush=True)
                continue
            curve, wall, cpu = result[:3]
            peak_mb = result[3] if len(result) > 3 else None
            steps_done = result[4] if len(result) > 4 else (curve[-1][0] if curve else args.steps)
            run = {
                "impl": name, "task": args.task, "seed": seed, "steps": steps_done, "train_wall_s": wall, "train_cpu_s": cpu, "steps_per_s": steps_done / wall,
                "cpu_s_per_million": cpu / steps_done * 1e6, "peak_rss_mb": peak_mb, "load_before": load, "load_after": os.getloadavg()[0],
                "final_return": curve[-1][2] if curve else None, "best_return": max((r for _, _, r in curve), default=None),
                "curve": [{"step": s, "wall_s": t, "return": r} for s, t, r in curve],
            }
            for target in targets:
                hit = next(((s, t) for s, t, r in curve if r >= target), None)
                run["to_%g" % target] = {"steps": hit[0] if hit else None, "wall_s": hit[1] if hit else None}
            runs.append(run)
            if args.save:
                _save(args.save, {"meta": _meta(args), "skipped": skipped, "runs": runs})
            if not args.json:
                print("%s seed %d: %d steps in %.1f s (%.0f steps/s), %.0f CPU-s per 1M steps, peak RSS %s, final return %.1f, best %.1f; %s" % (
                    name, seed, steps_done, wall, steps_done / wall, run["cpu_s_per_million"], "%.0f MB" % peak_mb if peak_mb else "n/a",
                    run["final_return"] if curve else float("nan"), run["best_return"] if curve else float("nan"),
                    ", ".join("%g after %s" % (t, "%.0f s" % run["to_%g" % t]["wall_s"] if run["to_%g" % t]["wall_s"] is not None else "not reached") for t in targets)), flush=True)
    summary = _summary(runs, impls, targets)
    meta = _meta(args)
    if args.plot:
        plot(runs, args.plot, targets[0], os.cpu_count())
    if args.save:
        _save(args.save, {"meta": meta, "skipped": skipped, "summary": summary, "runs": runs})
    if args.json:
        print(json.dumps({"meta": meta, "skipped": skipped, "summary": summary, "runs": runs}))
    else:
        _print_summary(summary, targets, skipped)
        print("\ncurves (step: training wall s, return):")
        for r in runs:
            print("  %s seed %d: %s" % (r["impl"], r["seed"], ", ".join("%d: %.0fs %.0f" % (c["step"], c["wall_s"], c["return"]) for c in r["curve"])))
    return 0


def _targets(args):
    try:
        return [float(t) for t in str(args.targets).split(",") if t.strip()]
    except ValueError:
        sys.exit("--targets: give returns separated by commas, e.g. 3000,5000; got %r" % args.targets)


def _median_time(values):
    """Median of times to a target over seeds, a seed that never reached it counting as infinite."""
    return statistics.median(float("inf") if v is None else v for v in values)


def _summary(runs, impls, targets):
    """Medians over seeds per implementation; ours over each peer's (rltools, then sb3)."""
    summary = {}
    for name in impls:
        mine = [r for r in runs if r["impl"] == name]
        if not mine:
            continue
        entry = {
            "seeds": len(mine),
            "median_train_wall_s": statistics.median(r["train_wall_s"] for r in mine),
            "median_train_cpu_s": statistics.median(r["train_cpu_s"] for r in mine),
            "median_steps_per_s": statistics.median(r["steps_per_s"] for r in mine),
            "median_cpu_s_per_million": statistics.median(r["cpu_s_per_million"] for r in mine),
            "median_final_return": statistics.median(r["final_return"] for r in mine if r["final_return"] is not None) if any(r["final_return"] is not None for r in mine) else None,
        }
        if all(r["peak_rss_mb"] for r in mine):
            entry["median_peak_rss_mb"] = statistics.median(r["peak_rss_mb"] for r in mine)
        for t in targets:
            key = "to_%g" % t
            entry["median_wall_s_" + key] = _median_time(r[key]["wall_s"] for r in mine)
            entry["median_steps_" + key] = _median_time(r[key]["steps"] for r in mine)
            entry["reached_" + key] = sum(r[key]["wall_s"] is not None for r in mine)
        summary[name] = entry
    for peer in ("rltools", "sb3"):
        if peer not in summary:
            continue
        ref = summary[peer]
        for name, entry in summary.items():
            if name in ("rltools", "sb3"):
                continue
            ratios = {
                "steps_per_s": entry["median_steps_per_s"] / ref["median_steps_per_s"],
                "cpu_s_per_million": entry["median_cpu_s_per_million"] / ref["median_cpu_s_per_million"],
                "train_wall_s": entry["median_train_wall_s"] / ref["median_train_wall_s"],
            }
            if "median_peak_rss_mb" in entry and "median_peak_rss_mb" in ref:
                ratios["peak_rss_mb"] = entry["median_peak_rss_mb"] / ref["median_peak_rss_mb"]
            for t in targets:
                a, b = entry["median_wall_s_to_%g" % t], ref["median_wall_s_to_%g" % t]
                ratios["wall_s_to_%g" % t] = a / b if b not in (0.0, float("inf")) else None
                a, b = entry["median_steps_to_%g" % t], ref["median_steps_to_%g" % t]
                ratios["steps_to_%g" % t] = a / b if b not in (0.0, float("inf")) else None
            entry["vs_" + peer] = ratios
    return summary


def _print_summary(summary, targets, skipped):
    def fmt(v, pattern="%.0f"):
        return "-" if v is None else ("never" if v == float("inf") else pattern % v)

    print("\nmedians over seeds")
    head = "%-13s %5s %9s %9s %9s %9s" % ("impl", "seeds", "steps/s", "CPU-s/1M", "peak MB", "return") + "".join(" %12s %12s" % ("s to %g" % t, "M steps to %g" % t) for t in targets)
    print(head)
    for name, e in summary.items():
        print("%-13s %5d %9.0f %9.0f %9s %9s" % (name, e["seeds"], e["median_steps_per_s"], e["median_cpu_s_per_million"], fmt(e.get("median_peak_rss_mb")), fmt(e["median_final_return"]))
              + "".join(" %12s %12s" % ("%s (%d)" % (fmt(e["median_wall_s_to_%g" % t]), e["reached_to_%g" % t]), fmt(e["median_steps_to_%g" % t] / 1e6 if e["median_steps_to_%g" % t] != float("inf") else float("inf"), "%.2f"))
                        for t in targets))
    for name, e in summary.items():
        for key in sorted(k for k in e if k.startswith("vs_")):
            r = e[key]
            print("%s over %s: steps/s %s, CPU-s per 1M steps %s, peak RSS %s, %s  (steps/s: above 1 is faster; the others: below 1 is better)" % (
                name, key[3:], fmt(r["steps_per_s"], "%.2f"), fmt(r["cpu_s_per_million"], "%.2f"), fmt(r.get("peak_rss_mb"), "%.2f"),
                ", ".join("wall to %g %s, steps to %g %s" % (t, fmt(r["wall_s_to_%g" % t], "%.2f"), t, fmt(r["steps_to_%g" % t], "%.2f")) for t in targets)))
    for name, why in skipped.items():
        print("%s skipped: %s" % (name, why))

if __name__ == "__main__":
    sys.exit(main())
