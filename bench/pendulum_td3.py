"""Pendulum, 10,000 steps: microrl's numba TD3 against Stable-Baselines3's TD3 and RLtools' Python
wrapper (`rltools` on PyPI, with MKL), and microrl's SAC against Stable-Baselines3's SAC.

Same hyperparameters for all (the TD3 paper's: 64-64 ReLU, batch 100, Adam 1e-3, gamma .99,
tau .005, policy delay 2, target noise .2 clipped at .5, exploration noise .1, and the device
core's warm-up; SAC: the same with automatic entropy tuning). Each run is a fresh subprocess with
torch, MKL, OpenBLAS and OpenMP limited to one thread. Times are of training only, warm: numba's
and RLtools' compiled code come from their caches (a first run per peer fills them and is not
timed; microrl's cold compile is measured separately with an empty numba cache). Every final
policy is evaluated the same way: 10 episodes of gymnasium's Pendulum-v1, seeds 1000..1009.

    pip install torch==2.13.0 && pip install -e .[bench]    # peers (a CPU torch wheel)
    nice -n 5 python bench/pendulum_td3.py            # 10 seeds of ours, 3 of each peer
    python bench/pendulum_td3.py --quick --json        # one seed each, one JSON object
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ONE_THREAD = {k: "1" for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS")}
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEPS = 10000
EVAL_ENV = "Pendulum-v1"
EVAL_EPISODES = 10
EVAL_SEED = 1000
SOLVED = -300.0
PEERS = {
    "td3": ("microrl-td3", "rltools-td3", "sb3-td3"),
    "sac": ("microrl-sac", "sb3-sac"),
}


# ------------------------------------------------------------------ one run (in a subprocess)


def _settings():
    from microrl_host.algos import sac, td3

    return td3.default_config(), sac.default_config()


def _evaluate(act):
    """Return of act(obs) -> action in [-2, 2] on gymnasium's Pendulum-v1, same starts for all."""
    from microrl_host.envs.gym import evaluate_gym

    mean, std, _ = evaluate_gym(act, EVAL_ENV, EVAL_EPISODES, EVAL_SEED)
    return mean, std


def run_microrl(algo, seed, steps):
    import numpy as np

    from microrl_host.algos import sac, td3

    module = td3 if algo == "td3" else sac
    run = module.ALGO.run("pendulum", steps=steps, seed=seed, eval_every=0, eval_episodes=0)
    policy = run.policy
    mean, std = _evaluate(lambda obs: np.array(policy(obs), np.float32))
    s = run.stats
    return {"wall_s": s["train_s"], "cpu_s": s["train_cpu_s"], "compile_s": s["compile_s"], "return": mean, "return_std": std}


def _gym_pendulum(rescale):
    import gymnasium as gym

    env = gym.make(EVAL_ENV)
    if rescale:
        from gymnasium.wrappers import RescaleAction

        env = RescaleAction(env, -1.0, 1.0)
    return env


def run_rltools(seed, steps):
    import numpy as np
    from rltools import TD3

    c, _ = _settings()

    def env_factory():
        env = _gym_pendulum(rescale=True)
        env.reset(seed=seed)
        return env

    t0 = time.perf_counter()
    trainer = TD3(
        env_factory,
        enable_evaluation=False,
        STEP_LIMIT=steps,
        N_WARMUP_STEPS=c.warmup,
        ACTOR_BATCH_SIZE=c.batch,
        CRITIC_BATCH_SIZE=c.batch,
        ACTOR_HIDDEN_DIM=c.hidden[0],
        CRITIC_HIDDEN_DIM=c.hidden[0],
        ACTOR_NUM_LAYERS=len(c.hidden) + 1,
        CRITIC_NUM_LAYERS=len(c.hidden) + 1,
        GAMMA=c.gamma,
        ACTOR_POLYAK=1.0 - c.tau,
        CRITIC_POLYAK=1.0 - c.tau,
        EXPLORATION_NOISE=c.exploration_noise,
        TARGET_NEXT_ACTION_NOISE_STD=c.target_noise,
        TARGET_NEXT_ACTION_NOISE_CLIP=c.target_noise_clip,
        OPTIMIZER_ALPHA=c.actor_lr,
    )
    compile_s = time.perf_counter() - t0
    t0, c0 = time.perf_counter(), time.process_time()
    state = trainer.State(seed)
    while not state.step():
        pass
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    mean, std = _evaluate(lambda obs: 2.0 * np.asarray(state.action(np.asarray(obs, np.float32)), np.float32))
    return {"wall_s": wall, "cpu_s": cpu, "compile_s": compile_s, "return": mean, "return_std": std}


def run_sb3(algo, seed, steps):
    import numpy as np
    import torch

    torch.set_num_threads(1)
    from stable_baselines3 import SAC, TD3
    from stable_baselines3.common.noise import NormalActionNoise

    c_td3, c_sac = _settings()
    env = _gym_pendulum(rescale=False)
    if algo == "td3":
        c = c_td3
        noise = NormalActionNoise(np.zeros(1), c.exploration_noise * np.ones(1))
        model = TD3(
            "MlpPolicy", env, learning_rate=c.actor_lr, buffer_size=steps, learning_starts=c.warmup, batch_size=c.batch, tau=c.tau,
            gamma=c.gamma, train_freq=1, gradient_steps=1, action_noise=noise, policy_delay=c.policy_delay,
            target_policy_noise=c.target_noise, target_noise_clip=c.target_noise_clip,
            policy_kwargs={"net_arch": list(c.hidden)}, seed=seed, device="cpu", verbose=0,
        )
    else:
        c = c_sac
        model = SAC(
            "MlpPolicy", env, learning_rate=c.actor_lr, buffer_size=steps, learning_starts=c.warmup, batch_size=c.batch, tau=c.tau,
            gamma=c.gamma, train_freq=1, gradient_steps=1, ent_coef="auto_%s" % c.initial_alpha,
            policy_kwargs={"net_arch": list(c.hidden)}, seed=seed, device="cpu", verbose=0,
        )
    t0, c0 = time.perf_counter(), time.process_time()
    model.learn(total_timesteps=steps)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    mean, std = _evaluate(lambda obs: model.predict(obs, deterministic=True)[0])
    return {"wall_s": wall, "cpu_s": cpu, "compile_s": 0.0, "return": mean, "return_std": std}


def worker(peer, seed, steps):
    if peer.startswith("microrl-"):
        return run_microrl(peer.split("-")[1], seed, steps)
    if peer == "rltools-td3":
        return run_rltools(seed, steps)
    return run_sb3(peer.split("-")[1], seed, steps)


# ------------------------------------------------------------------ the driver


def spawn(peer, seed, steps, extra_env=None, timeout=1800):
    env = dict(os.environ, **ONE_THREAD)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "host"), os.path.join(ROOT, "device")] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.update(extra_env or {})
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", peer, "--seed", str(seed), "--steps", str(steps)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    for line in proc.stdout.splitlines()[::-1]:
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    tail = (proc.stderr or proc.stdout)[-1500:]
    return {"error": "%s seed %d failed (exit %d): %s" % (peer, seed, proc.returncode, tail.strip())}


def available(peer):
    mods = {"rltools-td3": ("rltools",), "sb3-td3": ("stable_baselines3", "torch"), "sb3-sac": ("stable_baselines3", "torch")}
    import importlib.util

    missing = [m for m in mods.get(peer, ()) if importlib.util.find_spec(m) is None]
    return "not installed: %s (pip install torch==2.13.0 && pip install -e .[bench])" % ", ".join(missing) if missing else None


def summarise(runs):
    ok = [r for r in runs if "error" not in r]
    if not ok:
        return {"runs": runs}
    med = lambda k: statistics.median(r[k] for r in ok)
    return {
        "runs": runs,
        "seeds": len(ok),
        "wall_s_median": med("wall_s"),
        "cpu_s_median": med("cpu_s"),
        "return_mean": statistics.fmean(r["return"] for r in ok),
        "returns": [round(r["return"], 1) for r in ok],
        "solved": sum(r["return"] >= SOLVED for r in ok),
    }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 2)[2])
    p.add_argument("--quick", action="store_true", help="one seed of each")
    p.add_argument("--json", action="store_true", help="print one JSON object of the figures")
    p.add_argument("--seeds", type=int, default=3, help="seeds per peer (default 3)")
    p.add_argument("--our-seeds", type=int, default=10, help="seeds of microrl's TD3/SAC, for the solve rate (default 10)")
    p.add_argument("--steps", type=int, default=STEPS, help="environment steps per run (default 10000)")
    p.add_argument("--algos", default="td3,sac", help="td3, sac or both (default td3,sac)")
    p.add_argument("--no-cold", action="store_true", help="skip the cold-compile measurement of microrl")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        print("RESULT " + json.dumps(worker(args.worker, args.seed, args.steps)), flush=True)
        return 0

    peer_seeds = 1 if args.quick else args.seeds
    our_seeds = 1 if args.quick else max(args.our_seeds, args.seeds)
    log = (lambda *a: None) if args.json else (lambda *a: print(*a, file=sys.stderr, flush=True))
    result = {"steps": args.steps, "eval": "%s, %d episodes, seeds %d.." % (EVAL_ENV, EVAL_EPISODES, EVAL_SEED), "threads": 1, "peers": {}}
    algos = [a.strip() for a in args.algos.split(",") if a.strip()]
    for algo in algos:
        for peer in PEERS[algo]:
            why = None if peer.startswith("microrl") else available(peer)
            if why:
                result["peers"][peer] = {"skipped": why}
                log("%s: skipped (%s)" % (peer, why))
                continue
            log("%s: filling compile caches (not timed)..." % peer)
            warm = spawn(peer, 0, 200 if peer.startswith("microrl") else 1000)
            if "error" in warm:
                result["peers"][peer] = {"skipped": warm["error"]}
                log(warm["error"])
                continue
            runs = []
            n = our_seeds if peer.startswith("microrl") else peer_seeds
            for seed in range(n):
                r = spawn(peer, seed, args.steps)
                r["seed"] = seed
                runs.append(r)
                log("  %s seed %d: %s" % (peer, seed, r.get("error") or "%.2f s wall, %.2f s CPU, return %.1f" % (r["wall_s"], r["cpu_s"], r["return"])))
            result["peers"][peer] = summarise(runs)
        if not args.no_cold:
            with tempfile.TemporaryDirectory() as cache:
                r = spawn("microrl-" + algo, 0, 200, extra_env={"NUMBA_CACHE_DIR": cache})
            result["peers"]["microrl-" + algo]["cold_compile_s"] = r.get("compile_s")
            result["peers"]["microrl-" + algo]["warm_cache_load_s"] = statistics.median(x["compile_s"] for x in result["peers"]["microrl-" + algo]["runs"] if "compile_s" in x)
    # ratios: peer time / ours, on medians
    ratios = {}
    for algo in algos:
        ours = result["peers"].get("microrl-" + algo, {})
        for peer in PEERS[algo][1:]:
            theirs = result["peers"].get(peer, {})
            if "wall_s_median" in ours and "wall_s_median" in theirs:
                ratios["%s/microrl-%s" % (peer, algo)] = {"wall": theirs["wall_s_median"] / ours["wall_s_median"], "cpu": theirs["cpu_s_median"] / ours["cpu_s_median"]}
    result["ratios"] = ratios
    if args.json:
        print(json.dumps(result, sort_keys=True))
        return 0
    print("\nPendulum, %d steps, training time (warm, one thread), final return on %s" % (args.steps, result["eval"]))
    print("%-14s %6s %10s %10s %12s %8s   %s" % ("peer", "seeds", "wall s", "CPU s", "return", "solved", "per-seed returns"))
    for peer, s in result["peers"].items():
        if "skipped" in s:
            print("%-14s skipped: %s" % (peer, s["skipped"][:100]))
            continue
        if "seeds" not in s:
            print("%-14s all runs failed: %s" % (peer, s["runs"][0].get("error", "")[:200]))
            continue
        print("%-14s %6d %10.2f %10.2f %12.1f %5d/%-2d   %s" % (peer, s["seeds"], s["wall_s_median"], s["cpu_s_median"], s["return_mean"], s["solved"], s["seeds"], s["returns"]))
    for algo in algos:
        s = result["peers"].get("microrl-" + algo, {})
        if "cold_compile_s" in s:
            print("microrl-%s compile: cold %.1f s (empty numba cache), warm cache load %.2f s" % (algo, s["cold_compile_s"] or float("nan"), s["warm_cache_load_s"]))
    for k, v in ratios.items():
        print("speed-up %-28s wall %6.1fx   CPU %6.1fx" % (k, v["wall"], v["cpu"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
