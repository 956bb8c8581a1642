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
"""
import argparse
import json
import os
import statistics
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "host"), os.path.join(HERE, "..", "device")]


class Clock:
    """Training wall time and process CPU time (all threads): they run except while evaluating."""

    def __init__(self):
        self.total, self.since = 0.0, time.perf_counter()
        self.cpu_total, self.cpu_since = 0.0, time.process_time()

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


def run_ours(task, steps, seed, eval_every, episodes, threads=None, name="microrl"):
    from microrl_host.algos import ppo
    from microrl_host.algos.callbacks import EachChunk

    config = ppo.PPOConfig(steps=steps, seed=seed, threads=threads)
    clock, curve = Clock(), []
    state = {"next": eval_every}

    def on_iteration(step, learner):
        if step >= state["next"] or step >= steps:
            clock.pause()
            mean, std, _ = ppo.evaluate_policy(learner.to_policy(), task, episodes, seed=12345)
            curve.append((step, clock.total, mean))
            _report(name, seed, curve[-1])
            state["next"] += eval_every
            clock.resume()

    ppo.train(config, task, callbacks=EachChunk(on_iteration))
    return curve, clock.now(), clock.cpu_now()


def run_ours_one_cpu(task, steps, seed, eval_every, episodes):
    """Ours held to one CPU (one thread steps the environments, the critic learns after the
    actor): the like-for-like figure against SB3's single thread."""
    return run_ours(task, steps, seed, eval_every, episodes, threads=1, name="microrl-1cpu")


def run_sb3(task, steps, seed, eval_every, episodes):
    import gymnasium as gym
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    from microrl_host.envs.mujoco import resolve_task

    torch.set_num_threads(1)
    task = resolve_task(task)
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

    colours = {"microrl": "tab:blue", "microrl-1cpu": "tab:green", "sb3": "tab:orange"}
    fig, (by_steps, by_time) = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    labelled = set()
    for r in runs:
        steps = [c["step"] / 1e6 for c in r["curve"]]
        minutes = [c["wall_s"] / 60 for c in r["curve"]]
        returns = [c["return"] for c in r["curve"]]
        label = None if r["impl"] in labelled else {"microrl": "microrl PPO", "microrl-1cpu": "microrl PPO, one CPU (same numbers, slower)", "sb3": "Stable-Baselines3 PPO (one CPU)"}.get(r["impl"], r["impl"])
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
    return {"task": args.task, "steps": args.steps, "seeds": args.seeds, "eval_every": args.eval_every, "eval_episodes": args.eval_episodes, "cpus": os.cpu_count(), "load_avg": os.getloadavg()[0]}


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
    p.add_argument("--impl", default="microrl,sb3", help="which to run: microrl (all CPUs), microrl-1cpu (one thread, as SB3), sb3")
    p.add_argument("--eval-every", type=int, default=100_000)
    p.add_argument("--eval-episodes", type=int, default=5)
    p.add_argument("--target", type=float, default=3000.0, help="return whose first crossing is timed")
    p.add_argument("--json", action="store_true")
    p.add_argument("--save", metavar="FILE", help="also write the JSON report to FILE, rewritten after every run (a long run keeps what it has)")
    p.add_argument("--plot", metavar="PNG", help="draw the learning curves (return over steps and over training wall time, as the paper's Figure 3) of the reports given with --from, or of this run")
    p.add_argument("--from", dest="reports", metavar="JSON", nargs="+", help="with --plot: reports written by --save (or --json); nothing is run")
    args = p.parse_args(argv)
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
        plot(runs, args.plot, args.target, cpus.pop() if len(cpus) == 1 else None)
        print("wrote %s (%d runs)" % (args.plot, len(runs)))
        return 0
    warnings.filterwarnings("ignore")
    runners = {"microrl": run_ours, "microrl-1cpu": run_ours_one_cpu, "sb3": run_sb3}
    impls = [s.strip() for s in args.impl.split(",") if s.strip()]
    for name in impls:
        if name not in runners:
            p.error("unknown --impl %r; choose from %s" % (name, ", ".join(runners)))
    runs = []
    for seed in [int(s) for s in args.seeds.split(",")]:
        for name in impls:  # interleaved, so that load changes hit both
            curve, wall, cpu = runners[name](args.task, args.steps, seed, args.eval_every, args.eval_episodes)
            hit = next(((s, t) for s, t, r in curve if r >= args.target), None)
            steps_done = curve[-1][0] if curve else args.steps
            runs.append({
                "impl": name, "task": args.task, "seed": seed, "steps": steps_done, "train_wall_s": wall, "train_cpu_s": cpu, "steps_per_s": steps_done / wall,
                "final_return": curve[-1][2] if curve else None, "best_return": max((r for _, _, r in curve), default=None),
                "target": args.target, "steps_to_target": hit[0] if hit else None, "wall_s_to_target": hit[1] if hit else None,
                "curve": [{"step": s, "wall_s": t, "return": r} for s, t, r in curve],
            })
            if args.save:
                _save(args.save, {"meta": _meta(args), "runs": runs})
            if not args.json:
                print("%s seed %d: %d steps in %.1f s (%.0f steps/s), final return %.1f, best %.1f, %s" % (
                    name, seed, steps_done, wall, steps_done / wall, runs[-1]["final_return"], runs[-1]["best_return"],
                    "return %.0f after %.1f s" % (args.target, hit[1]) if hit else "return %.0f not reached" % args.target), flush=True)
    summary = {}
    for name in impls:
        mine = [r for r in runs if r["impl"] == name]
        summary[name] = {
            "median_train_wall_s": statistics.median(r["train_wall_s"] for r in mine),
            "median_train_cpu_s": statistics.median(r["train_cpu_s"] for r in mine),
            "median_steps_per_s": statistics.median(r["steps_per_s"] for r in mine),
            "median_final_return": statistics.median(r["final_return"] for r in mine),
            "runs_reaching_target": sum(r["wall_s_to_target"] is not None for r in mine),
        }
    if "sb3" in summary:  # the headline: our wall (and CPU) time over SB3's, same budget
        for name in summary:
            if name != "sb3":
                summary[name]["wall_vs_sb3"] = summary[name]["median_train_wall_s"] / summary["sb3"]["median_train_wall_s"]
                summary[name]["cpu_vs_sb3"] = summary[name]["median_train_cpu_s"] / summary["sb3"]["median_train_cpu_s"]
    meta = _meta(args)
    if args.plot:
        plot(runs, args.plot, args.target, os.cpu_count())
    if args.save:
        _save(args.save, {"meta": meta, "summary": summary, "runs": runs})
    if args.json:
        print(json.dumps({"meta": meta, "summary": summary, "runs": runs}))
    else:
        print("\n%-13s %8s %8s %10s %10s %14s %8s" % ("impl", "wall s", "CPU s", "wall/SB3", "CPU/SB3", "median return", "hit %g" % args.target))
        for name, s in summary.items():
            print("%-13s %8.0f %8.0f %10s %10s %14.1f %8d" % (name, s["median_train_wall_s"], s["median_train_cpu_s"], "%.2f" % s["wall_vs_sb3"] if "wall_vs_sb3" in s else "", "%.2f" % s["cpu_vs_sb3"] if "cpu_vs_sb3" in s else "", s["median_final_return"], s["runs_reaching_target"]))
        print("\ncurves (step: training wall s, return):")
        for r in runs:
            print("  %s seed %d: %s" % (r["impl"], r["seed"], ", ".join("%d: %.0fs %.0f" % (c["step"], c["wall_s"], c["return"]) for c in r["curve"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
