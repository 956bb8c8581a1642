"""Cart-pole swing-up (dm_control's `cartpole` `swingup`, microrl.tasks.cartpole): training time
to solve over 5 seeds, microrl's TD3 and SAC beside Stable-Baselines3's and RLtools' Python
wrapper's (`rltools` on PyPI, with MKL), in the same run.

The task: 1,000 steps of 10 ms, reward in [0, 1] per step (docs/cartpole.md). The peers train on
a gymnasium wrapper of the same task module (`TaskEnv` below; tests/test_cartpole_dm_control.py
holds the module to dm_control's own steps), stepped from Python as they step any gymnasium env;
ours steps the module compiled into its loop. Same hyperparameters for all: what `microrl train
cartpole` uses, microrl's defaults (the TD3 paper's 64-64 ReLU, batch 100, Adam 1e-3, gamma .99,
tau .005; TD3: policy delay 2, target noise .2 clipped at .5, exploration noise .1; SAC: automatic
entropy from alpha 1) with the task's suggestions (its TRAINING: 10,000 random warm-up steps,
100,000 steps in all). Each run is a fresh process with torch, MKL, OpenBLAS and
OpenMP on one thread (microrl on its default two where two CPUs are free, as in
bench/pendulum_td3.py).

Every run is evaluated every --eval-every steps the same way for all: the deterministic policy,
10 episodes of the task module from the same start states (microrl's Rng, seeds 1000..1009);
evaluation time is not training time. A run is SOLVED when its final policy's mean return is at
least 750, and its time to solve is the training time up to the first evaluation from which
every later one, the final one included, is at least 750 (it got there and stayed). Why 750
(`--reference` prints these, measured with controllers made by hand from the model): energy
pumping then LQR, balancing at the centre, scores 865 (dm_control's published agents score
850-880); the same balancing 0.5 m off centre 790, 1 m off 662; starting the swing-up 2 s late
665 (1 s late 765); a pole pumped round and round and never caught 304; doing nothing 0. So
750 takes a swing-up within about a second of the best and balancing within about 0.6 m of the
centre (0.6 m off: 754).

    pip install torch==2.13.0 && pip install -e .[bench]    # peers (a CPU torch wheel)
    nice -n 10 python bench/cartpole.py                     # 5 seeds each, the task's 100,000 steps
    python bench/cartpole.py --seeds 1 --steps 20000 --json  # quick
    python bench/cartpole.py --reference                     # the threshold's calibration
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for _p in (os.path.join(ROOT, "host"), os.path.join(ROOT, "device")):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from pendulum_td3 import blas_in_use, peer_env  # noqa: E402  (bench/: one-thread peers, BLAS report)

STEPS = None  # the task's own (its TRAINING)
EVAL_EVERY = 5000
EVAL_EPISODES = 10
EVAL_SEED = 1000
SOLVED = 750.0
PEERS = {
    "td3": ("microrl-td3", "rltools-td3", "sb3-td3"),
    "sac": ("microrl-sac", "rltools-sac", "sb3-sac"),
}


# ------------------------------------------------------------------ the task, for every peer


def task_module():
    from microrl.tasks import cartpole

    return cartpole


def make_gym_env(task=None):
    """The task module as a gymnasium environment (actions in the task's range, which RLtools'
    wrapper needs to be [-1, 1]: the cart-pole's is)."""
    import gymnasium as gym
    import numpy as np
    from gymnasium.envs.registration import EnvSpec

    t = task or task_module()

    class TaskEnv(gym.Env):
        spec = EnvSpec("microrl-" + t.NAME, max_episode_steps=t.EPISODE_STEPS)  # RLtools reads the time limit here

        def __init__(self):
            self.P = np.array(t.PARAMETERS, dtype=np.float64)
            self.s = np.zeros(t.STATE_DIM)
            self.obs = np.zeros(t.OBS_DIM)
            self.a = np.zeros(t.ACT_DIM)
            self.u = np.zeros(max(t.RESET_DRAWS, t.STEP_DRAWS, 1))
            self.observation_space = gym.spaces.Box(-np.inf, np.inf, (t.OBS_DIM,), np.float32)
            self.action_space = gym.spaces.Box(np.array(t.ACTION_LOW, np.float32), np.array(t.ACTION_HIGH, np.float32))

        def reset(self, seed=None, options=None):
            super().reset(seed=seed)
            self.u[: t.RESET_DRAWS] = self.np_random.random(t.RESET_DRAWS)
            t.reset(self.P, self.s, self.u, self.obs)
            return self.obs.astype(np.float32), {}

        def step(self, action):
            self.a[:] = action
            if t.STEP_DRAWS:
                self.u[: t.STEP_DRAWS] = self.np_random.random(t.STEP_DRAWS)
            r, terminated, truncated = t.step(self.P, self.s, self.a, self.u, self.obs)
            return self.obs.astype(np.float32), float(r), bool(terminated), bool(truncated), {}

    return TaskEnv()


def evaluate(act, episodes=EVAL_EPISODES, seed=EVAL_SEED, state_feedback=False):
    """act(obs float32) -> action in the task's units, run from the same start states for every
    peer: (mean return, successes). state_feedback: act reads the task's state instead (the
    hand-made controllers)."""
    import numpy as np

    from microrl.rng import Rng

    t = task_module()
    P = np.array(t.PARAMETERS)
    s = np.zeros(t.STATE_DIM)
    obs = np.zeros(t.OBS_DIM)
    a = np.zeros(t.ACT_DIM)
    u = np.zeros(max(t.RESET_DRAWS, t.STEP_DRAWS, 1))
    returns = []
    successes = 0
    for e in range(episodes):
        rng = Rng(seed + e)
        for i in range(t.RESET_DRAWS):
            u[i] = rng.uniform()
        t.reset(P, s, u, obs)
        total = 0.0
        while True:
            a[:] = act(s) if state_feedback else act(obs.astype(np.float32))
            for i in range(t.STEP_DRAWS):
                u[i] = rng.uniform()
            r, terminated, truncated = t.step(P, s, a, u, obs)
            total += r
            if terminated or truncated:
                break
        returns.append(total)
        successes += int(not terminated and t.success(P, s))
    return float(np.mean(returns)), successes


class Clock:
    """Training time between evaluations: each evaluation's own time is left out."""

    def __init__(self):
        self.train_s = 0.0
        self.cpu_s = 0.0
        self.curve = []  # (steps, training s, mean return, successes)
        self.resume()

    def resume(self):
        self._t = time.perf_counter()
        self._c = time.process_time()

    def pause(self):
        self.train_s += time.perf_counter() - self._t
        self.cpu_s += time.process_time() - self._c

    def evaluate(self, steps, act):
        self.pause()
        mean, ok = evaluate(act)
        self.curve.append((steps, round(self.train_s, 3), round(mean, 1), ok))
        self.resume()


def _settings():
    """TD3's and SAC's settings as `microrl train cartpole` takes them: the defaults with the
    task's suggestions (batch, warm-up)."""
    from microrl_host.algos import config
    from microrl_host.tasks import resolve

    found = resolve(task_module())
    return tuple(cls(**cls.suggested(found)) for cls in (config.TD3Settings, config.SACSettings))


# ------------------------------------------------------------------ one run of each peer


def run_microrl(algo, seed, steps, every):
    import numpy as np

    from microrl.policy import Policy
    from microrl_host.algos import sac, td3
    from microrl_host.algos.callbacks import Callbacks

    module = td3 if algo == "td3" else sac
    clock = None

    class Follow(Callbacks):
        def on_start(self, total, initial, desc):
            nonlocal clock
            clock = Clock()

        def on_progress(self, step, done, trainer, figures):
            if step % every == 0 or step == steps:
                sizes, acts, params = module.ALGO.actor_export(trainer)
                policy = Policy([int(x) for x in sizes], [int(x) for x in acts], params=np.asarray(params, np.float32))
                clock.evaluate(step, lambda obs: np.array(policy(obs), np.float32))

    run = module.ALGO.run("cartpole", steps=steps, seed=seed, eval_every=0, eval_episodes=0, callbacks=Follow())
    clock.pause()
    return {"compile_s": run.stats["compile_s"], "train_s_microrl": run.stats["train_s"]}, clock


def run_rltools(algo, seed, steps, every):
    import numpy as np
    from rltools import SAC, TD3

    c_td3, c_sac = _settings()
    c = c_td3 if algo == "td3" else c_sac

    def env_factory():
        env = make_gym_env()
        env.reset(seed=seed)
        return env

    shared = dict(
        interface_name="microrl_cartpole",  # its own compile cache: bench/pendulum_td3.py's is "default"
        enable_evaluation=False, STEP_LIMIT=steps, N_WARMUP_STEPS=c.warmup, ACTOR_BATCH_SIZE=c.batch, CRITIC_BATCH_SIZE=c.batch,
        ACTOR_HIDDEN_DIM=c.hidden[0], CRITIC_HIDDEN_DIM=c.hidden[0], ACTOR_NUM_LAYERS=len(c.hidden) + 1, CRITIC_NUM_LAYERS=len(c.hidden) + 1,
        GAMMA=c.gamma, ACTOR_POLYAK=1.0 - c.tau, CRITIC_POLYAK=1.0 - c.tau, OPTIMIZER_ALPHA=c.actor_lr,
    )
    t0 = time.perf_counter()
    if algo == "td3":
        trainer = TD3(env_factory, EXPLORATION_NOISE=c.exploration_noise, TARGET_NEXT_ACTION_NOISE_STD=c.target_noise,
                      TARGET_NEXT_ACTION_NOISE_CLIP=c.target_noise_clip, **shared)
    else:
        trainer = SAC(env_factory, ALPHA=c.initial_alpha, ADAPTIVE_ALPHA=True, **shared)
    compile_s = time.perf_counter() - t0
    clock = Clock()
    state = trainer.State(seed)
    step = 0
    while True:
        done = state.step()
        step += 1
        if step % every == 0 or done or step >= steps:
            clock.evaluate(step, lambda obs: np.asarray(state.action(obs), np.float32))
        if done or step >= steps:
            break
    clock.pause()
    return {"compile_s": compile_s}, clock


def run_sb3(algo, seed, steps, every):
    import numpy as np
    import torch

    torch.set_num_threads(1)
    from stable_baselines3 import SAC, TD3
    from stable_baselines3.common.noise import NormalActionNoise

    c_td3, c_sac = _settings()
    env = make_gym_env()
    common = dict(buffer_size=steps, train_freq=1, gradient_steps=1, seed=seed, device="cpu", verbose=0)
    if algo == "td3":
        c = c_td3
        model = TD3("MlpPolicy", env, learning_rate=c.actor_lr, learning_starts=c.warmup, batch_size=c.batch, tau=c.tau, gamma=c.gamma,
                    action_noise=NormalActionNoise(np.zeros(1), c.exploration_noise * np.ones(1)), policy_delay=c.policy_delay,
                    target_policy_noise=c.target_noise, target_noise_clip=c.target_noise_clip, policy_kwargs={"net_arch": list(c.hidden)}, **common)
    else:
        c = c_sac
        model = SAC("MlpPolicy", env, learning_rate=c.actor_lr, learning_starts=c.warmup, batch_size=c.batch, tau=c.tau, gamma=c.gamma,
                    ent_coef="auto_%s" % c.initial_alpha, policy_kwargs={"net_arch": list(c.hidden)}, **common)
    clock = Clock()
    done = 0
    while done < steps:
        n = min(every, steps - done)
        model.learn(total_timesteps=n, reset_num_timesteps=False)  # continues the episode under way
        done += n
        clock.evaluate(done, lambda obs: model.predict(obs, deterministic=True)[0])
    clock.pause()
    return {"compile_s": 0.0}, clock


def worker(peer, seed, steps, every):
    kind, algo = peer.split("-")
    run = {"microrl": run_microrl, "rltools": run_rltools, "sb3": run_sb3}[kind]
    extra, clock = run(algo, seed, steps, every)
    final, successes = clock.curve[-1][2], clock.curve[-1][3]
    r = dict(extra, seed=seed, steps=steps, train_s=clock.train_s, cpu_s=clock.cpu_s, curve=clock.curve, final_return=final,
             final_successes=successes, solved=final >= SOLVED, blas=blas_in_use())
    r["time_to_solve_s"], r["steps_to_solve"] = time_to_solve(clock.curve)
    return r


def time_to_solve(curve):
    """(training s, steps) at the first evaluation from which all later ones are >= SOLVED, or
    (None, None) when the final one is not."""
    first = None
    for steps, train_s, mean, _ in curve:
        if mean >= SOLVED:
            if first is None:
                first = (train_s, steps)
        else:
            first = None
    return first if first else (None, None)


# ------------------------------------------------------------------ the threshold's calibration


def reference_controller(P, offset=0.0, delay_steps=0, catch=True):
    """A controller made by hand from the model: energy pumping (Astrom and Furuta) far from
    upright, LQR on the linearised model near it. offset: balance that far from the centre;
    delay_steps: do nothing that long first; catch=False: pump the pole round, never balance."""
    import numpy as np
    from scipy.linalg import solve_continuous_are

    t = task_module()

    def f(x, force):
        d = np.zeros(4)
        t.derivative(P, x, 0, force, d, 0)
        return d

    eps = 1e-6
    A = np.zeros((4, 4))
    for i in range(4):
        e = np.zeros(4)
        e[i] = eps
        A[:, i] = (f(e, 0.0) - f(-e, 0.0)) / (2 * eps)
    B = ((f(np.zeros(4), eps) - f(np.zeros(4), -eps)) / (2 * eps)).reshape(4, 1)
    R = np.array([[0.01]])
    K = np.linalg.solve(R, B.T @ solve_continuous_are(A, B, np.diag([1.0, 10.0, 0.1, 0.1]), R))[0]
    mp, length, g = P[t.POLE_MASS], P[t.POLE_CENTRE], P[t.GRAVITY]
    pivot_inertia = mp * length * length + P[t.POLE_INERTIA]
    target_energy = 0.0 if catch else 0.3  # J above upright at rest: enough to go over the top

    def policy(s):
        if s[t.STEPS] < delay_steps:
            return 0.0
        x, th, v, w = s[0] - offset, s[1], s[2], s[3]
        if catch and math.cos(th) > 0.85:
            wrapped = (th + math.pi) % (2 * math.pi) - math.pi
            force = -K @ np.array([x, wrapped, v, w])
        else:  # push so that the pole gains (or loses) energy towards the target
            energy = 0.5 * pivot_inertia * w * w + mp * g * length * (math.cos(th) - 1.0) - target_energy
            force = 30.0 * energy * np.sign(w * math.cos(th)) - 4.0 * x - 3.0 * v
        return float(np.clip(force / P[t.GEAR], -1.0, 1.0))

    return policy


def reference_scores():
    """What the hand-made controllers score on the bench's evaluation episodes."""
    import numpy as np

    t = task_module()
    P = np.array(t.PARAMETERS)
    cases = [("swing up, balance at the centre", {}), ("balance 0.5 m off centre", {"offset": 0.5}), ("balance 1 m off centre", {"offset": 1.0}),
             ("start the swing-up 2 s late", {"delay_steps": 200}), ("start it 3 s late", {"delay_steps": 300}),
             ("pump the pole round, never catch it", {"catch": False}), ("do nothing", None)]
    out = {}
    for name, kw in cases:
        control = (lambda s: 0.0) if kw is None else reference_controller(P, **kw)
        mean, ok = evaluate(control, state_feedback=True)
        out[name] = {"return": round(mean, 1), "successes": ok}
    return out


# ------------------------------------------------------------------ the driver


def spawn(peer, seed, steps, every, timeout=7200):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", peer, "--seed", str(seed), "--steps", str(steps), "--eval-every", str(every)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=peer_env(peer), timeout=timeout)
    for line in proc.stdout.splitlines()[::-1]:
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    return {"seed": seed, "error": "%s seed %d failed (exit %d): %s" % (peer, seed, proc.returncode, (proc.stderr or proc.stdout)[-1500:].strip())}


def available(peer):
    import importlib.util

    needs = {"rltools": ("rltools",), "sb3": ("stable_baselines3", "torch")}.get(peer.split("-")[0], ())
    missing = [m for m in needs if importlib.util.find_spec(m) is None]
    return "not installed: %s (pip install torch==2.13.0 && pip install -e .[bench])" % ", ".join(missing) if missing else None


def summarise(runs):
    ok = [r for r in runs if "error" not in r]
    out = {"runs": runs, "seeds": len(ok)}
    if not ok:
        return out
    solved = [r for r in ok if r["solved"]]
    out.update(
        solved=len(solved),
        final_returns=[r["final_return"] for r in ok],
        final_return_median=statistics.median(r["final_return"] for r in ok),
        train_s_median=statistics.median(r["train_s"] for r in ok),
        steps_per_s_median=statistics.median(r["steps"] / r["train_s"] for r in ok),
        times_to_solve_s=[r["time_to_solve_s"] for r in ok],
        steps_to_solve=[r["steps_to_solve"] for r in ok],
        blas=ok[0].get("blas"),
    )
    # the median over all seeds, an unsolved seed counting as never (infinite): defined when most solved
    times = sorted(r["time_to_solve_s"] if r["solved"] else math.inf for r in ok)
    med = times[(len(times) - 1) // 2] if len(times) % 2 else (times[len(times) // 2 - 1] + times[len(times) // 2]) / 2
    out["time_to_solve_s_median"] = med if math.isfinite(med) else None
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--json", action="store_true", help="print one JSON object of the figures")
    p.add_argument("--seeds", type=int, default=5, help="seeds per peer (default 5)")
    p.add_argument("--steps", type=int, default=STEPS, help="environment steps per run (default: the task's, %d)" % task_module().TRAINING["steps"])
    p.add_argument("--eval-every", type=int, default=EVAL_EVERY, help="steps between evaluations (default %d; a multiple of 1000)" % EVAL_EVERY)
    p.add_argument("--algos", default="td3,sac", help="td3, sac or both (default td3,sac)")
    p.add_argument("--peers", default="microrl,rltools,sb3", help="which of microrl, rltools, sb3 (default all)")
    p.add_argument("--reference", action="store_true", help="print what hand-made controllers score (the threshold's calibration) and exit")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.steps is None:
        args.steps = task_module().TRAINING["steps"]
    if args.eval_every <= 0 or args.eval_every % 1000:
        p.error("--eval-every must be a positive multiple of 1000 (microrl reports its progress every 1,000 steps), got %d" % args.eval_every)
    if args.worker:
        print("RESULT " + json.dumps(worker(args.worker, args.seed, args.steps, args.eval_every)), flush=True)
        return 0
    if args.reference:
        scores = reference_scores()
        if args.json:
            print(json.dumps({"reference": scores, "solved_at": SOLVED}))
        else:
            for name, s in scores.items():
                print("%-40s return %6.1f  successes %d/%d" % (name, s["return"], s["successes"], EVAL_EPISODES))
        return 0

    log = lambda *a: print(*a, file=sys.stderr, flush=True)  # progress on stderr, with --json too
    kinds = [k.strip() for k in args.peers.split(",") if k.strip()]
    algos = [a.strip() for a in args.algos.split(",") if a.strip()]
    result = {"task": "cartpole swing-up (dm_control's), 1000-step episodes", "steps": args.steps, "eval_every": args.eval_every,
              "eval": "%d episodes of the task module, starts from Rng(%d..)" % (EVAL_EPISODES, EVAL_SEED), "solved_at": SOLVED,
              "load_before": os.getloadavg()[0], "peers": {}}
    for algo in algos:
        for peer in PEERS[algo]:
            if peer.split("-")[0] not in kinds:
                continue
            why = available(peer)
            if why:
                result["peers"][peer] = {"skipped": why}
                log("%s: skipped (%s)" % (peer, why))
                continue
            log("%s: filling compile caches (not timed)..." % peer)
            warm = spawn(peer, 0, 2000, 1000)
            if "error" in warm:
                result["peers"][peer] = {"skipped": warm["error"]}
                log(warm["error"])
                continue
            runs = []
            for seed in range(args.seeds):
                r = spawn(peer, seed, args.steps, args.eval_every)
                runs.append(r)
                log("  %s seed %d: %s" % (peer, seed, r.get("error") or "%.1f s training, final return %.1f (%d/10 balanced), %s" % (
                    r["train_s"], r["final_return"], r["final_successes"],
                    "solved at %d steps, %.1f s" % (r["steps_to_solve"], r["time_to_solve_s"]) if r["solved"] else "not solved")))
            result["peers"][peer] = summarise(runs)
    result["load_after"] = os.getloadavg()[0]
    # ratios of the medians, peer / ours (same run)
    ratios = {}
    for algo in algos:
        ours = result["peers"].get("microrl-" + algo, {})
        for peer in PEERS[algo][1:]:
            theirs = result["peers"].get(peer, {})
            if ours.get("train_s_median") and theirs.get("train_s_median"):
                ratios["%s/microrl-%s" % (peer, algo)] = {"training_s_per_step": (theirs["train_s_median"] / args.steps) / (ours["train_s_median"] / args.steps)}
                if ours.get("time_to_solve_s_median") and theirs.get("time_to_solve_s_median"):
                    ratios["%s/microrl-%s" % (peer, algo)]["time_to_solve"] = theirs["time_to_solve_s_median"] / ours["time_to_solve_s_median"]
    result["ratios"] = ratios
    if args.json:
        print(json.dumps(result, sort_keys=True))
        return 0
    print("\nCart-pole swing-up, %d steps per run, evaluated every %d; solved: final mean return >= %.0f; load %.1f to %.1f" % (
        args.steps, args.eval_every, SOLVED, result["load_before"], result["load_after"]))
    print("%-12s %6s %8s %12s %12s %10s   %s" % ("peer", "solved", "train s", "steps/s", "to solve s", "final", "per seed: time to solve (s), final return"))
    for peer, s in result["peers"].items():
        if "skipped" in s or not s.get("seeds"):
            print("%-12s %s" % (peer, s.get("skipped", "all runs failed: %s" % s["runs"][0].get("error", ""))[:150]))
            continue
        med = s["time_to_solve_s_median"]
        per = ", ".join("%s/%.0f" % ("%.1f" % t if t is not None else "-", f) for t, f in zip(s["times_to_solve_s"], s["final_returns"]))
        print("%-12s %3d/%-2d %8.1f %12.0f %12s %10.1f   %s" % (peer, s["solved"], s["seeds"], s["train_s_median"], s["steps_per_s_median"],
                                                              "%.1f" % med if med is not None else "-", s["final_return_median"], per))
    for k, v in ratios.items():
        print("%-28s %s" % (k, ", ".join("%s %.1fx" % (a, b) for a, b in v.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
