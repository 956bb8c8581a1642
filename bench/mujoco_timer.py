"""MuJoCo's stage timers on and off while a MujocoVectorEnv steps (envs/mujoco.py,
STAGE_TIMER_OFF). MuJoCo's Python bindings install a clock as mjcb_time, so every mj_step calls
clock_gettime at each stage's start and end to fill MjData.timer; training reads no timers, so the
vector env sets the callback to NULL while its copies step. The peer is the same env with the
bindings' clock left in place, in the same run, interleaved: CPU seconds and wall seconds per
1,000 vector steps of 64 copies on two threads (PPO on Ant's setting), and whether both runs end
in the same states, bit for bit.

    python bench/mujoco_timer.py [--task Ant-v4] [--copies 64] [--steps 300] [--repeats 5] [--json]
"""
import argparse
import json
import os
import resource
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "host"), os.path.join(HERE, "..", "device")]

import numpy as np  # noqa: E402

from microrl_host.envs import mujoco as mujoco_envs  # noqa: E402


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run(task, copies, steps, timer_off, seed=0):
    """(CPU s, wall s, final qpos and qvel) of `steps` vector steps of random actions, after a
    reset and 20 untimed steps; the actions are the same for the same seed."""
    mujoco_envs.STAGE_TIMER_OFF.enabled = timer_off
    try:
        envs = mujoco_envs.MujocoVectorEnv(task, copies)
        envs.reset(seed=seed)
        rng = np.random.default_rng(seed)
        low, high = envs.single_action_space.low, envs.single_action_space.high
        actions = [rng.uniform(low, high, (copies, envs.act_dim)) for _ in range(steps + 20)]
        for a in actions[:20]:
            envs.step(a)
        c, t = cpu_seconds(), time.perf_counter()
        for a in actions[20:]:
            envs.step(a)
        cpu, wall = cpu_seconds() - c, time.perf_counter() - t
        state = np.concatenate([np.concatenate(envs.get_state(i)) for i in range(copies)])
        envs.close()
        return cpu, wall, state
    finally:
        mujoco_envs.STAGE_TIMER_OFF.enabled = True


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", default="Ant-v4", help="gymnasium MuJoCo task (default Ant-v4)")
    p.add_argument("--copies", type=int, default=64, help="copies stepped together (default 64, PPO's)")
    p.add_argument("--steps", type=int, default=300, help="timed vector steps per run (default 300)")
    p.add_argument("--repeats", type=int, default=5, help="runs of each, interleaved (default 5)")
    p.add_argument("--json", action="store_true", help="print one JSON object of the figures")
    args = p.parse_args(argv)
    out = {"task": args.task, "copies": args.copies, "steps": args.steps, "load_before": os.getloadavg()[0], "cpus": os.cpu_count()}
    runs = {"off": [], "on": []}
    states = {}
    for r in range(args.repeats):
        for name in (("off", "on") if r % 2 == 0 else ("on", "off")):  # alternate which goes first
            cpu, wall, state = run(args.task, args.copies, args.steps, name == "off")
            runs[name].append((cpu, wall))
            states[name] = state
    per_k = 1000.0 / args.steps
    for name, rs in runs.items():
        out[name] = {"cpu_s_per_1k_steps": statistics.median(c for c, _ in rs) * per_k, "wall_s_per_1k_steps": statistics.median(w for _, w in rs) * per_k}
    out["cpu_ratio"] = out["off"]["cpu_s_per_1k_steps"] / out["on"]["cpu_s_per_1k_steps"]
    out["wall_ratio"] = out["off"]["wall_s_per_1k_steps"] / out["on"]["wall_s_per_1k_steps"]
    out["same_states"] = bool(np.array_equal(states["off"], states["on"]))
    out["load_after"] = os.getloadavg()[0]
    if args.json:
        print(json.dumps(out))
        return
    print("%s, %d copies, medians of %d interleaved runs of %d vector steps:" % (args.task, args.copies, args.repeats, args.steps))
    for name, label in (("off", "timers off (microrl)"), ("on", "the bindings' clock")):
        print("  %-22s %.2f CPU-s, %.2f s wall per 1,000 vector steps" % (label, out[name]["cpu_s_per_1k_steps"], out[name]["wall_s_per_1k_steps"]))
    print("timers off / on: %.2f CPU, %.2f wall; same states: %s" % (out["cpu_ratio"], out["wall_ratio"], out["same_states"]))
    print("load average %.2f before, %.2f after, %d CPUs" % (out["load_before"], out["load_after"], out["cpus"]))


if __name__ == "__main__":
    main()
