"""The int16 fixed-point policy against its float original on the Pendulum closed loop: returns
from the same initial states (not only action differences), on CPython (plain integer kernel) and
on MicroPython (viper kernel), for a policy trained here by the device core's TD3 (or --policy).

  python bench/fixedpoint_pendulum.py [--json] [--policy FILE.mrlp] [--steps 10000] [--episodes 20]"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _harness as H  # noqa: E402

MP_CODE = r"""
import json, time
import microrl
from microrl import fixedpoint
from microrl.evaluate import evaluate
from microrl.task import Env
from microrl.tasks import pendulum
out = {"impl": fixedpoint.implementation(), "backend": microrl.backend_name()}
for key, path in (("float", FLOAT), ("int16", INT16)):
    p = microrl.load(path)
    t = time.ticks_ms()
    mean, std, returns = evaluate(p, Env(pendulum), EPISODES, SEED)
    out[key] = {"mean": mean, "std": std, "returns": returns, "s": time.ticks_diff(time.ticks_ms(), t) / 1000.0}
print(json.dumps(out))
"""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object of the figures")
    ap.add_argument("--policy", help="a float Pendulum policy (.mrlp); default: train one here")
    ap.add_argument("--steps", type=int, default=10000, help="TD3 steps when training here (default 10000)")
    ap.add_argument("--seed", type=int, default=0, help="training seed (default 0)")
    ap.add_argument("--episodes", type=int, default=20, help="evaluation episodes (default 20)")
    ap.add_argument("--eval-seed", type=int, default=2024, help="seed of the evaluation starts (default 2024)")
    args = ap.parse_args(argv)
    import microrl
    from microrl import fixedpoint
    from microrl.tasks import pendulum
    from microrl_host import calibration as Q

    work = H.workdir()
    results = {"notes": []}
    if args.policy:
        float_path = args.policy
    else:
        from microrl.train import train_pendulum

        t = time.time()
        agent, evals = train_pendulum(steps=args.steps, seed=args.seed, eval_every=args.steps, eval_episodes=10)
        results["training"] = {"steps": args.steps, "seed": args.seed, "seconds": time.time() - t, "eval_mean": evals[-1][1]}
        float_path = os.path.join(work, "pendulum.mrlp")
        microrl.save(float_path, agent.policy())
    policy = microrl.load(float_path)
    observations = Q.calibration_observations(policy, task=pendulum)
    q = fixedpoint.quantise(policy, observations)
    int16_path = os.path.join(work, "pendulum.mrlq")
    fixedpoint.save(int16_path, q)
    worst, mean_err = Q.action_error(policy, q, observations)
    results["action_error_max"] = worst
    results["action_error_mean"] = mean_err
    results["bytes"] = {"float": os.path.getsize(float_path), "int16": os.path.getsize(int16_path)}
    loop = Q.closed_loop(policy, q, args.episodes, args.eval_seed, task=pendulum)
    results["cpython"] = {"impl": fixedpoint.implementation(), **{k: loop[k] for k in ("float_mean", "float_std", "int16_mean", "int16_std", "mean_difference", "worst_episode_difference")}}
    if H.MICROPYTHON:
        code = "FLOAT = %r\nINT16 = %r\nEPISODES = %d\nSEED = %d\n" % (float_path, int16_path, args.episodes, args.eval_seed) + MP_CODE
        mp = H.run_micropython(code)
        results["micropython"] = {
            "impl": mp["impl"], "backend": mp["backend"],
            "float_mean": mp["float"]["mean"], "int16_mean": mp["int16"]["mean"],
            "mean_difference": mp["int16"]["mean"] - mp["float"]["mean"],
            "worst_episode_difference": max(abs(a - b) for a, b in zip(mp["float"]["returns"], mp["int16"]["returns"])),
            "float_eval_s": mp["float"]["s"], "int16_eval_s": mp["int16"]["s"],
        }
    else:
        results["notes"].append("micropython not installed")
    if args.json:
        print(json.dumps(results))
        return 0
    if "training" in results:
        tr = results["training"]
        print("float policy: TD3 %d steps, seed %d, %.0f s, evaluation %.1f" % (tr["steps"], tr["seed"], tr["seconds"], tr["eval_mean"]))
    print("int16 file %d bytes (float %d); action error max %.4f, mean %.4f (N m, actions in +-2)"
          % (results["bytes"]["int16"], results["bytes"]["float"], worst, mean_err))
    rows = []
    for where in ("cpython", "micropython"):
        if where in results:
            r = results[where]
            rows.append([where, r["impl"], "%.2f" % r["float_mean"], "%.2f" % r["int16_mean"], "%+.3f" % r["mean_difference"], "%.3f" % r["worst_episode_difference"]])
    print("Pendulum return over %d episodes (same starts, seed %d)" % (args.episodes, args.eval_seed))
    print(H.table(rows, ["runtime", "int16 kernel", "float return", "int16 return", "difference", "worst episode |diff|"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
