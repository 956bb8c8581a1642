"""MuJoCo environment throughput: ours (microrl_host.envs.mujoco) against gymnasium's
SyncVectorEnv and EnvPool, for 1, 2 and 64 copies of Ant, in one run; and MuJoCo's own physics
cost (mj_step with the task's frame skip, plus mj_rnePostConstraint as gymnasium calls it) on one
set of MjData with the same random actions and resets, which no environment can beat.

Figures: steps per second (wall) and steps per CPU second (process CPU time, all threads: the
fair figure on a shared machine), medians of --repeats rounds of --steps steps, each round
running every contender once. "CPU vs physics" is the CPU cost per step relative to MuJoCo's
physics alone on the same states, measured in the same round (median of the rounds; 1.00 = none
added); ours and gymnasium's visit exactly the same states, EnvPool runs its own MuJoCo build.

    nice -n 5 python bench/mujoco_envs.py               # table
    nice -n 5 python bench/mujoco_envs.py --json        # one JSON object
    python bench/mujoco_envs.py --task Ant-v4 --envs 1,2,64 --steps 6400 --repeats 3
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


def timed(step, calls, n):
    """Run step() `calls` times (after one warm-up call); returns (steps/s, steps per CPU s)."""
    step()
    w0, c0 = time.perf_counter(), time.process_time()
    for _ in range(calls):
        step()
    w, c = time.perf_counter() - w0, time.process_time() - c0
    return calls * n / w, calls * n / max(c, 1e-9)


def actions(n, act_dim, count=256, seed=0):
    return np.random.default_rng(seed).uniform(-1.0, 1.0, size=(count, n, act_dim)).astype(np.float32)


def bench_physics(task, n, calls):
    """MuJoCo's own cost for exactly our environments' work: n MjData stepped with the same
    actions, the task's calls only (mj_step with its frame skip, mj_rnePostConstraint as
    gymnasium calls it), reset with the same seeds when the episode ends: the same states as ours."""
    import mujoco
    from gymnasium.utils import seeding

    from microrl_host.envs.mujoco import MujocoVectorEnv

    ref = MujocoVectorEnv(task, 1)  # for the model, frame skip, reset distribution, health rule
    m, f, skip, limit = ref.model, ref.formulas, ref.frame_skip, ref.max_episode_steps
    datas = [mujoco.MjData(m) for _ in range(n)]
    rngs = [seeding.np_random(i)[0] for i in range(n)]
    lengths = [0] * n
    a = actions(n, ref.act_dim).astype(np.float64)
    zlo, zhi = f.healthy_z_range or (-np.inf, np.inf)
    state = {"t": 0}

    def reset(i):
        d = datas[i]
        mujoco.mj_resetData(m, d)
        d.qpos[:], d.qvel[:] = f.reset_state(rngs[i], ref.init_qpos, ref.init_qvel)
        mujoco.mj_forward(m, d)
        lengths[i] = 0

    for i in range(n):
        reset(i)

    def step():
        t = state["t"] = state["t"] + 1
        at = a[t % len(a)]
        for i, d in enumerate(datas):
            d.ctrl[:] = at[i]
            mujoco.mj_step(m, d, skip)
            mujoco.mj_rnePostConstraint(m, d)
            lengths[i] += 1
            z = d.qpos[2]
            if not (zlo <= z <= zhi and np.isfinite(z)) or lengths[i] >= limit:
                reset(i)

    result = timed(step, calls, n)
    ref.close()
    return result


def time_vector_env(envs, n, calls, act_dim, dtype=np.float32):
    """Step a reset vector env `calls` times with the shared random actions; close it."""
    a = actions(n, act_dim).astype(dtype)
    state = {"t": 0}

    def step():
        state["t"] += 1
        envs.step(a[state["t"] % len(a)])

    try:
        return timed(step, calls, n)
    finally:
        envs.close()


def bench_ours(task, n, calls, threads=None):
    from microrl_host.envs.mujoco import MujocoVectorEnv

    envs = MujocoVectorEnv(task, n, threads=threads)
    envs.reset(seed=0)
    return time_vector_env(envs, n, calls, envs.act_dim)


def bench_gymnasium(task, n, calls):
    import gymnasium as gym

    envs = gym.vector.SyncVectorEnv([lambda: gym.make(task) for _ in range(n)], autoreset_mode="SameStep")
    envs.reset(seed=0)
    return time_vector_env(envs, n, calls, envs.single_action_space.shape[0])


def bench_envpool(task, n, calls, threads):
    import envpool

    envs = envpool.make(task, env_type="gymnasium", num_envs=n, batch_size=n, num_threads=min(n, threads), seed=0)
    envs.reset()
    return time_vector_env(envs, n, calls, envs.action_space.shape[0], np.float64)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", default="Ant-v5", help="gymnasium id (EnvPool has Ant-v3/v4/v5)")
    p.add_argument("--envs", default="1,2,64", help="numbers of copies, comma-separated")
    p.add_argument("--steps", type=int, default=6400, help="environment steps per measurement (all copies together)")
    p.add_argument("--repeats", type=int, default=3, help="measurements per configuration (median)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = p.parse_args(argv)
    warnings.filterwarnings("ignore")
    sizes = [int(s) for s in args.envs.split(",")]
    threads = os.cpu_count() or 1
    try:
        import envpool  # noqa: F401

        have_envpool = True
    except ImportError:
        have_envpool = False
    rows = []
    for n in sizes:
        calls = max(1, args.steps // n)
        contenders = [("mujoco physics only", lambda: bench_physics(args.task, n, calls)), ("microrl", lambda: bench_ours(args.task, n, calls)), ("gymnasium SyncVectorEnv", lambda: bench_gymnasium(args.task, n, calls))]
        if have_envpool:
            contenders.append(("envpool", lambda: bench_envpool(args.task, n, calls, threads)))
        runs = {name: [] for name, _ in contenders}
        for _ in range(args.repeats):  # each round runs everyone once, so that load changes hit them alike
            for name, fn in contenders:
                runs[name].append(fn())
        for name, _ in contenders:
            # CPU cost against the physics alone measured in the same round (1.0 = nothing but MuJoCo's physics)
            ratios = [p[1] / r[1] for p, r in zip(runs["mujoco physics only"], runs[name])]
            rows.append({"impl": name, "envs": n, "steps_per_s": statistics.median(r[0] for r in runs[name]), "steps_per_cpu_s": statistics.median(r[1] for r in runs[name]), "cpu_cost_vs_physics": statistics.median(ratios)})
    import mujoco

    meta = {"task": args.task, "cpus": threads, "mujoco": mujoco.__version__, "steps": args.steps, "repeats": args.repeats, "envpool": have_envpool, "load_avg": os.getloadavg()[0]}
    if args.json:
        print(json.dumps({"meta": meta, "results": rows}))
        return 0
    print("%s, %d CPUs, mujoco %s, load average %.1f; medians of %d runs of %d steps" % (args.task, threads, meta["mujoco"], meta["load_avg"], args.repeats, args.steps))
    print("%-26s %5s %12s %14s %16s" % ("implementation", "envs", "steps/s", "steps/CPU s", "CPU vs physics"))
    for r in rows:
        print("%-26s %5d %12.0f %14.0f %15.2fx" % (r["impl"], r["envs"], r["steps_per_s"], r["steps_per_cpu_s"], r["cpu_cost_vs_physics"]))
    if not have_envpool:
        print("(envpool not installed: pip install envpool)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
