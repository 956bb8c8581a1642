"""Import round trips: Stable-Baselines3 models (TD3, SAC, PPO, each with and without
VecNormalize) trained here on a gymnasium task, through `microrl import` to a policy file and
`microrl deploy` to a virtual board (the MicroPython unix port behind a pseudo-terminal); the
largest difference of the actions from SB3's own predict(obs, deterministic=True), on the host's
file (microrl.load on CPython) and on the board (INFER requests over the serial link), per
algorithm, on fresh observations (uniform in the observation Box, and for VecNormalize also
draws from its statistics past clip_obs). Differences are |a - b| / max(1, |b|), as the
reference check measures them. A seventh model (ppo*) is PPO with its action head's weights times
300 after training, so that predict's clip to the Box decides most actions. Needs the import
extra (docs/import.md) and micropython.

  python bench/import_roundtrip.py [--json] [--env Pendulum-v1] [--steps 2000] [--observations 200] [--hidden 64,64] [--heap 160K] [--no-native]"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for _p in (os.path.join(ROOT, "host"), os.path.join(ROOT, "device")):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import numpy as np  # noqa: E402

ALGOS = ("td3", "sac", "ppo")


def train(algo, vecnormalize, env_id, steps, seed, folder, hidden, past_the_box=False):
    """An SB3 MlpPolicy model with hidden layers of these widths (SB3's other defaults), trained
    for `steps`; (model, VecNormalize or None, zip path, pkl path or None, train seconds).
    past_the_box (PPO): the action head's weights times 300 after training, so that most means
    fall outside the Box and predict's clip decides the action."""
    import gymnasium as gym
    import stable_baselines3 as sb3
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    env = DummyVecEnv([lambda: gym.make(env_id)])
    if vecnormalize:
        env = VecNormalize(env)
    kw = {"learning_starts": min(1000, steps // 2)} if algo != "ppo" else {"n_steps": 512, "batch_size": 64}
    model = getattr(sb3, algo.upper())("MlpPolicy", env, seed=seed, device="cpu", policy_kwargs={"net_arch": list(hidden)}, **kw)
    t0 = time.perf_counter()
    model.learn(steps)
    train_s = time.perf_counter() - t0
    if past_the_box:
        import torch

        with torch.no_grad():
            model.policy.action_net.weight.mul_(300.0)
    path = os.path.join(folder, "%s%s%s.zip" % (algo, "_vn" if vecnormalize else "", "_past" if past_the_box else ""))
    model.save(path)
    pkl = None
    if vecnormalize:
        pkl = path[:-4] + ".pkl"
        env.save(pkl)
    return model, (env if vecnormalize else None), path, pkl, train_s


def observations(model, venv, n, seed):
    rng = np.random.default_rng(seed)
    space = model.observation_space
    low, high = np.asarray(space.low, np.float64), np.asarray(space.high, np.float64)
    bounded = np.isfinite(low) & np.isfinite(high)
    obs = rng.standard_normal((n, low.size))
    obs[:, bounded] = rng.uniform(low[bounded], high[bounded], size=(n, int(bounded.sum())))
    if venv is not None:  # also the statistics' own range, and past clip_obs
        z = rng.standard_normal((n // 2, low.size)) * np.where(np.arange(n // 2) % 4 == 0, 1.5 * venv.clip_obs, 1.0)[:, None]
        obs = np.concatenate([obs, venv.obs_rms.mean + np.sqrt(venv.obs_rms.var + venv.epsilon) * z])
    return obs.astype(np.float32).astype(np.float64)


def sb3_actions(model, venv, obs):
    x = obs.astype(np.float32)
    if venv is not None:
        x = venv.normalize_obs(x)
    return np.asarray(model.predict(x, deterministic=True)[0], np.float64).reshape(len(obs), -1)


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(b))))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object of the figures")
    ap.add_argument("--env", default="Pendulum-v1", help="a gymnasium id with Box spaces (default Pendulum-v1)")
    ap.add_argument("--steps", type=int, default=2000, help="SB3 training steps per model (default 2000)")
    ap.add_argument("--observations", type=int, default=200, help="fresh observations per model (default 200; VecNormalize adds half as many from its statistics)")
    ap.add_argument("--seed", type=int, default=0, help="training and observation seed (default 0)")
    ap.add_argument("--hidden", default="64,64", help="hidden layer widths of every model, a board-sized network (default 64,64; SB3's own defaults, "
                    "400,300 for TD3, do not fit the virtual board's default heap: give --heap 2M)")
    ap.add_argument("--heap", default=None, help="the virtual board's heap (default: the board command's, 160K)")
    ap.add_argument("--no-native", action="store_true", help="deploy without the native kernels: the board runs plain Python")
    args = ap.parse_args(argv)
    hidden = [int(h) for h in args.hidden.split(",")]
    import torch

    torch.set_num_threads(1)
    import microrl
    from microrl_host.board.deploy import BOARD_POLICY, deploy
    from microrl_host.board.serial_link import SerialLink
    from microrl_host.board.virtual import board_port

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "host"), os.path.join(ROOT, "device")] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    rows = []
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="microrl-import-bench-") as work, board_port(None, args.heap) as (port, described):
        cases = [(algo, vn, False) for algo in ALGOS for vn in (False, True)] + [("ppo", True, True)]
        for algo, vn, past in cases:
            model, venv, path, pkl, train_s = train(algo, vn, args.env, args.steps, args.seed, work, hidden, past)
            out = os.path.join(work, os.path.basename(path)[:-4] + ".mrlp")
            cmd = [sys.executable, "-m", "microrl_host.cli", "import", path, "--out", out, "--json"] + (["--vecnormalize", pkl] if pkl else [])
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=1800)
            import_s = time.perf_counter() - t0
            if proc.returncode != 0:
                raise SystemExit("microrl import failed for %s: %s" % (path, proc.stderr.strip()[-2000:]))
            report = json.loads(proc.stdout.strip().splitlines()[-1])
            obs = observations(model, venv, args.observations, args.seed + 1)
            theirs = sb3_actions(model, venv, obs)
            host_policy = microrl.load(out, check=True)
            host = np.array([list(host_policy(list(o))) for o in obs])
            dep = deploy(port, out, use_native=not args.no_native)
            with SerialLink(port) as link:
                link.load(BOARD_POLICY)
                board = np.array([link.infer(list(o))[0] for o in obs])
            row = {
                "algo": algo, "vecnormalize": vn, "means_past_the_box": past, "network": report["network"], "blocks": report["blocks"], "bytes": report["bytes"],
                "train_s": round(train_s, 1), "import_s": round(import_s, 2), "import_check_max_difference": report["max_difference"],
                "observations": len(obs), "sb3_to_host_file": rel(host, theirs), "sb3_to_board": rel(board, theirs), "host_to_board": rel(board, host),
                "board_reference_check": dep["policy_max_diff"], "board_backend": dep["backend"],
                "largest_action": float(np.max(np.abs(theirs))),
                "actions_at_bounds": float(np.mean(np.isclose(theirs, model.action_space.low) | np.isclose(theirs, model.action_space.high))),
            }
            rows.append(row)
            if not args.json:
                print("%-4s %-13s %-38s SB3->file %.2g  SB3->board %.2g  file->board %.2g  (board's reference check %.2g, %s; import %.1f s)"
                      % (algo + ("*" if past else ""), "VecNormalize" if vn else "plain", row["network"], row["sb3_to_host_file"], row["sb3_to_board"],
                         row["host_to_board"], row["board_reference_check"], row["board_backend"], import_s), flush=True)
    result = {
        "started": started, "command": "python bench/import_roundtrip.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "load_before": load_before, "load_after": os.getloadavg(), "board": described.split(" on ")[0], "env": args.env, "steps": args.steps, "hidden": hidden, "rows": rows,
        "versions": {m.__name__: m.__version__ for m in (__import__("stable_baselines3"), torch, np)},
    }
    if args.json:
        print(json.dumps(result))
    else:
        print("load %.1f before, %.1f after (1-min averages)" % (load_before[0], result["load_after"][0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
