"""Pendulum, 10,000 steps: microrl's numba TD3 against Stable-Baselines3's TD3 and RLtools' Python
wrapper (`rltools` on PyPI, with MKL), and microrl's SAC against the same two's SAC.

Same hyperparameters for all (the TD3 paper's: 64-64 ReLU, batch 100, Adam 1e-3, gamma .99,
tau .005, policy delay 2, target noise .2 clipped at .5, exploration noise .1, and the device
core's warm-up; SAC: the same with automatic entropy tuning). Each run is a fresh subprocess with
torch, MKL, OpenBLAS and OpenMP limited to one thread; microrl runs twice, on two threads (its
default: the second critic's half of each update on a worker thread; the same run) and on one
(-1thread). Times are of training only, warm: numba's
and RLtools' compiled code come from their caches (a first run per peer fills them and is not
timed; microrl's cold compile is measured separately with an empty numba cache). Every final
policy is evaluated the same way: 10 episodes of gymnasium's Pendulum-v1, seeds 1000..1009.
Then whole processes, ours and the wrapper's interleaved (--process-runs): `microrl train
pendulum` against a process that imports the wrapper, builds and runs its trainer; each reports
its training loop, so the time outside the loop (start-up, imports, cache loads) shows too, in
wall and CPU seconds (under load, CPU time is the steadier figure). Ratios: ours / the wrapper's.
Every run reports the BLAS it loaded and the kernels OpenBLAS runs (`blas`): OPENBLAS_CORETYPE
forces another CPU's kernels (some hosts set it for every process), which the wrapper's MKL does
not read; unset it (and OPENBLAS_L2_SIZE) for the command to measure the CPU's own.

    pip install torch==2.13.0 && pip install -e .[bench]    # peers (a CPU torch wheel)
    nice -n 5 python bench/pendulum_td3.py            # 10 seeds of ours, 3 of each peer
    python bench/pendulum_td3.py --quick --json        # one seed each, one JSON object
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/pendulum_td3.py --seeds 3 --our-seeds 3 --process-runs 3
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
# microrl-<algo> runs on two threads (its default where two CPUs are free: the second critic's
# half of each update on a worker thread), microrl-<algo>-1thread on one; the peers on one
PEERS = {
    "td3": ("microrl-td3", "microrl-td3-1thread", "rltools-td3", "sb3-td3"),
    "sac": ("microrl-sac", "microrl-sac-1thread", "rltools-sac", "sb3-sac"),
}


def threads_env(peer):
    """The environment that gives a microrl peer its threads (the peers run with ONE_THREAD)."""
    if not peer.startswith("microrl-"):
        return {}
    return {"MICRORL_THREADS": "1" if peer.endswith("-1thread") else "2"}


def peer_env(peer, extra=None):
    """A peer's process environment: one BLAS/OpenMP thread, microrl's threads, this checkout on
    the path, and Python's bytecode cache written and used, as an installed package has it
    (PYTHONDONTWRITEBYTECODE, set in some shells, made every process compile its modules
    again: 45 ms of ours here)."""
    env = dict(os.environ, **ONE_THREAD, **threads_env(peer))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "host"), os.path.join(ROOT, "device")] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.update(extra or {})
    return env


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
    return {"wall_s": s["train_s"], "cpu_s": s["train_cpu_s"], "compile_s": s["compile_s"], "run_wall_s": s["wall_s"], "return": mean, "return_std": std}


def _gym_pendulum(rescale):
    import gymnasium as gym

    env = gym.make(EVAL_ENV)
    if rescale:
        from gymnasium.wrappers import RescaleAction

        env = RescaleAction(env, -1.0, 1.0)
    return env


def run_rltools(seed, steps, evaluate=True, algo="td3"):
    """The wrapper's TD3 or SAC with our settings (its one learning rate serves the actor, the
    critics and, for SAC, the entropy temperature, as ours do: 1e-3)."""
    import numpy as np
    from rltools import SAC, TD3

    td3_config, sac_config = _settings()
    c = td3_config if algo == "td3" else sac_config

    def env_factory():
        env = _gym_pendulum(rescale=True)
        env.reset(seed=seed)
        return env

    shared = dict(
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
        OPTIMIZER_ALPHA=c.actor_lr,
    )
    t0 = time.perf_counter()
    if algo == "td3":
        trainer = TD3(env_factory, EXPLORATION_NOISE=c.exploration_noise, TARGET_NEXT_ACTION_NOISE_STD=c.target_noise,
                      TARGET_NEXT_ACTION_NOISE_CLIP=c.target_noise_clip, **shared)
    else:  # automatic entropy tuning from alpha 1 towards -action_dim, log std clamped to [-20, 2], as ours
        assert c.actor_lr == c.critic_lr == c.alpha_lr and c.target_entropy is None
        trainer = SAC(env_factory, ALPHA=c.initial_alpha, ADAPTIVE_ALPHA=True, **shared)
    compile_s = time.perf_counter() - t0
    t0, c0 = time.perf_counter(), time.process_time()
    state = trainer.State(seed)
    while not state.step():
        pass
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if not evaluate:
        return {"wall_s": wall, "cpu_s": cpu, "compile_s": compile_s}
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


def blas_in_use():
    """The BLAS libraries this process loaded and the kernels each runs ("openblas SkylakeX
    libscipy_openblas...so", "mkl ..."): OpenBLAS picks its kernels per CPU, and
    OPENBLAS_CORETYPE can force another CPU's."""
    found = set()
    try:
        from threadpoolctl import threadpool_info

        found.update("%s %s %s" % (i.get("internal_api"), i.get("architecture") or "", os.path.basename(i.get("filepath", ""))) for i in threadpool_info()
                     if i.get("user_api") == "blas")
    except ImportError:
        pass
    try:  # MKL linked as libmkl_core (the RLtools wrapper's module), which threadpoolctl does not list
        with open("/proc/self/maps") as maps:
            found.update("mkl %s" % os.path.basename(line.split()[-1]) for line in maps if "libmkl_core" in line)
    except OSError:
        pass
    return sorted(found)


def worker(peer, seed, steps):
    if peer.startswith("microrl-"):
        r = run_microrl(peer.split("-")[1], seed, steps)
    elif peer in ("rltools-td3", "rltools-sac"):
        r = run_rltools(seed, steps, algo=peer.split("-")[1])
    elif peer.startswith("rltools-") and peer.endswith("-process"):  # the whole process: import, build, train, exit (no evaluation)
        return run_rltools(seed, steps, evaluate=False, algo=peer.split("-")[1])
    else:
        r = run_sb3(peer.split("-")[1], seed, steps)
    r["blas"] = blas_in_use()
    return r


# ------------------------------------------------------------------ the driver


def spawn(peer, seed, steps, extra_env=None, timeout=1800):
    env = peer_env(peer, extra_env)
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", peer, "--seed", str(seed), "--steps", str(steps)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    for line in proc.stdout.splitlines()[::-1]:
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    tail = (proc.stderr or proc.stdout)[-1500:]
    return {"error": "%s seed %d failed (exit %d): %s" % (peer, seed, proc.returncode, tail.strip())}


def process_run(peer, seed, steps):
    """One whole process, timed from its start to its exit, with the training-loop time it
    reports: ours is the `microrl train pendulum` command (no evaluation, checkpoint at the end),
    the wrapper's a process that imports it, builds the trainer (from its cache), trains, exits."""
    env = peer_env(peer)
    with tempfile.TemporaryDirectory() as folder:
        if peer.startswith("microrl-"):
            cmd = [sys.executable, "-m", "microrl_host.cli", "train", "pendulum", "--algo", peer.split("-")[1], "--steps", str(steps), "--seed", str(seed),
                   "--eval-every", "0", "--eval-episodes", "0", "--checkpoint-every", "0", "--out", os.path.join(folder, "p.mrlp"), "--json"]
        else:
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", peer + "-process", "--seed", str(seed), "--steps", str(steps)]
        t0 = time.perf_counter()
        with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
            child = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, env=env, cwd=folder)
            _, status, usage = os.wait4(child.pid, 0)  # its own CPU time: under load, wall time is mostly waiting
            process_s = time.perf_counter() - t0
            child.returncode = os.waitstatus_to_exitcode(status)
            out.seek(0)
            err.seek(0)
            proc = subprocess.CompletedProcess(cmd, child.returncode, out.read(), err.read())
        process_cpu_s = usage.ru_utime + usage.ru_stime
    lines = [line for line in proc.stdout.splitlines() if line.startswith(("{", "RESULT "))]
    if proc.returncode or not lines:
        return {"error": "%s process run failed (exit %d): %s" % (peer, proc.returncode, (proc.stderr or proc.stdout)[-800:].strip())}
    r = json.loads(lines[-1].split(" ", 1)[1] if lines[-1].startswith("RESULT ") else lines[-1])
    loop_s = r.get("train_s", r.get("wall_s"))
    loop_cpu_s = r.get("train_cpu_s", r.get("cpu_s"))
    return {"process_s": process_s, "loop_s": loop_s, "outside_loop_s": process_s - loop_s,
            "process_cpu_s": process_cpu_s, "loop_cpu_s": loop_cpu_s, "outside_loop_cpu_s": process_cpu_s - loop_cpu_s}


def measure_processes(peers, runs, steps, log):
    """Whole-process and training-loop times, the peers interleaved run by run (same load for all)."""
    out = {p: [] for p in peers}
    for i in range(runs):
        for peer in peers:
            r = process_run(peer, i, steps)
            out[peer].append(r)
            log("  process %s run %d: %s" % (peer, i, r.get("error") or "%.2f s whole, %.2f s training loop, %.2f s outside it (CPU: %.2f, %.2f, %.2f s)" % (
                r["process_s"], r["loop_s"], r["outside_loop_s"], r["process_cpu_s"], r["loop_cpu_s"], r["outside_loop_cpu_s"])))
    summary = {}
    for peer, rs in out.items():
        ok = [r for r in rs if "error" not in r]
        summary[peer] = {"runs": rs}
        if ok:
            for k in ("process_s", "loop_s", "outside_loop_s", "process_cpu_s", "loop_cpu_s", "outside_loop_cpu_s"):
                summary[peer][k + "_median"] = statistics.median(r[k] for r in ok)
    return summary


def available(peer):
    mods = {"rltools-td3": ("rltools",), "rltools-sac": ("rltools",), "sb3-td3": ("stable_baselines3", "torch"), "sb3-sac": ("stable_baselines3", "torch")}
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
        "blas": ok[0].get("blas"),
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
    p.add_argument("--process-runs", type=int, default=5, help="whole-process runs per peer, interleaved (default 5; 0: skip)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        print("RESULT " + json.dumps(worker(args.worker, args.seed, args.steps)), flush=True)
        return 0

    peer_seeds = 1 if args.quick else args.seeds
    our_seeds = 1 if args.quick else max(args.our_seeds, args.seeds)
    log = (lambda *a: None) if args.json else (lambda *a: print(*a, file=sys.stderr, flush=True))
    result = {"steps": args.steps, "eval": "%s, %d episodes, seeds %d.." % (EVAL_ENV, EVAL_EPISODES, EVAL_SEED),
              "threads": {"microrl-<algo>": 2, "microrl-<algo>-1thread": 1, "peers": 1}, "load_before": os.getloadavg()[0], "peers": {},
              "openblas_env": {k: os.environ.get(k) for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}}
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
        if not args.no_cold:  # a new user's first run: empty numba cache; with the shipped seed (nn/seed.py), and compiling
            ours = result["peers"]["microrl-" + algo]
            for key, seeded in (("cold", "1"), ("cold_unseeded", "0")):
                with tempfile.TemporaryDirectory() as cache:
                    r = spawn("microrl-" + algo, 0, args.steps, extra_env={"NUMBA_CACHE_DIR": cache, "MICRORL_SEED": seeded})
                ours[key + "_compile_s"] = r.get("compile_s")
                # the whole run (set-up, compile, training, waiting for the worker thread's compile)
                ours[key + "_first_run_s"] = r.get("run_wall_s")
            ours["warm_cache_load_s"] = statistics.median(x["compile_s"] for x in ours["runs"] if "compile_s" in x)
            ours["warm_run_s_median"] = statistics.median(x["run_wall_s"] for x in ours["runs"] if x.get("run_wall_s"))
    # whole processes: ours (the CLI) and the wrapper interleaved, for start-up and end-to-end ratios
    if args.process_runs:
        peers = [p for a in algos for p in ("microrl-" + a, "microrl-%s-1thread" % a)]
        peers += ["rltools-" + a for a in algos if "seeds" in result["peers"].get("rltools-" + a, {})]  # the wrapper is installed and ran
        log("whole processes, interleaved, %d runs each..." % (1 if args.quick else args.process_runs))
        result["processes"] = measure_processes(peers, 1 if args.quick else args.process_runs, args.steps, log)
    # ratios: peer time / ours, on medians
    ratios = {}
    for algo in algos:
        ours = result["peers"].get("microrl-" + algo, {})
        for peer in PEERS[algo][1:]:
            theirs = result["peers"].get(peer, {})
            if "wall_s_median" in ours and "wall_s_median" in theirs:
                ratios["%s/microrl-%s" % (peer, algo)] = {"wall": theirs["wall_s_median"] / ours["wall_s_median"], "cpu": theirs["cpu_s_median"] / ours["cpu_s_median"]}
    result["ratios"] = ratios
    # ours / the wrapper's (the target: at most 0.5), same run
    procs = result.get("processes", {})
    for algo in algos:
        ours, theirs = result["peers"].get("microrl-" + algo, {}), result["peers"].get("rltools-" + algo, {})
        versus = {}
        one = result["peers"].get("microrl-%s-1thread" % algo, {})
        if "wall_s_median" in ours and "wall_s_median" in theirs:
            versus["training_loop"] = ours["wall_s_median"] / theirs["wall_s_median"]
            versus["training_loop_cpu"] = ours["cpu_s_median"] / theirs["cpu_s_median"]
        if "wall_s_median" in one and "wall_s_median" in theirs:
            versus["training_loop_one_thread"] = one["wall_s_median"] / theirs["wall_s_median"]
        po, pt = procs.get("microrl-" + algo, {}), procs.get("rltools-" + algo, {})
        if "process_s_median" in po and "process_s_median" in pt:
            versus["whole_process"] = po["process_s_median"] / pt["process_s_median"]
            versus["training_loop_in_process_runs"] = po["loop_s_median"] / pt["loop_s_median"]
            versus["whole_process_cpu"] = po["process_cpu_s_median"] / pt["process_cpu_s_median"]
        result["microrl_%s_over_rltools" % algo] = versus
    result["load_after"] = os.getloadavg()[0]
    if args.json:
        print(json.dumps(result, sort_keys=True))
        return 0
    print("\nPendulum, %d steps, training time (warm; microrl on two threads, -1thread and the peers on one), final return on %s; load %.1f to %.1f" % (
        args.steps, result["eval"], result["load_before"], result["load_after"]))
    print("%-14s %6s %10s %10s %12s %8s   %s" % ("peer", "seeds", "wall s", "CPU s", "return", "solved", "per-seed returns"))
    for peer, s in result["peers"].items():
        if "skipped" in s:
            print("%-14s skipped: %s" % (peer, s["skipped"][:100]))
            continue
        if "seeds" not in s:
            print("%-14s all runs failed: %s" % (peer, s["runs"][0].get("error", "")[:200]))
            continue
        print("%-14s %6d %10.2f %10.2f %12.1f %5d/%-2d   %s" % (peer, s["seeds"], s["wall_s_median"], s["cpu_s_median"], s["return_mean"], s["solved"], s["seeds"], s["returns"]))
    for peer, s in result["peers"].items():
        if s.get("blas"):
            print("%-14s BLAS: %s" % (peer, "; ".join(s["blas"])))
    print("OPENBLAS_CORETYPE=%s OPENBLAS_L2_SIZE=%s" % (result["openblas_env"]["OPENBLAS_CORETYPE"], result["openblas_env"]["OPENBLAS_L2_SIZE"]))
    for algo in algos:
        s = result["peers"].get("microrl-" + algo, {})
        if "cold_compile_s" in s:
            print("microrl-%s first run (empty numba cache, %d steps): %.1f s with the shipped seed (load %.2f s), %.1f s compiling (%.1f s); "
                  "warm run %.1f s, cache load %.2f s" % (
                      algo, args.steps, s["cold_first_run_s"] or float("nan"), s["cold_compile_s"] or float("nan"),
                      s["cold_unseeded_first_run_s"] or float("nan"), s["cold_unseeded_compile_s"] or float("nan"),
                      s["warm_run_s_median"], s["warm_cache_load_s"]))
    for k, v in ratios.items():
        print("speed-up %-28s wall %6.1fx   CPU %6.1fx" % (k, v["wall"], v["cpu"]))
    for peer, s in procs.items():
        if "process_s_median" in s:
            print("whole process %-14s %.2f s, training loop %.2f s, outside the loop %.2f s; CPU %.2f, %.2f, %.2f s (medians of %d, interleaved)" % (
                peer, s["process_s_median"], s["loop_s_median"], s["outside_loop_s_median"], s["process_cpu_s_median"], s["loop_cpu_s_median"],
                s["outside_loop_cpu_s_median"], sum("error" not in r for r in s["runs"])))
    for algo in algos:
        for k, v in result["microrl_%s_over_rltools" % algo].items():
            print("microrl-%s / rltools-%s, %-30s %.2f" % (algo, algo, k, v))
    return 0


if __name__ == "__main__":
    sys.exit(main())
