"""Regenerates tests/data/pendulum_td3.mrlp, the trained Pendulum policy that tests about export,
int16, deploy, the board and the file format load instead of training one (issue 18: nothing
outside the learning checks trains a network to get a fixture), and its manifest
pendulum_td3.json (sha256, how it was made, its return), which tests/helpers.py checks.

    python tests/data/make_pendulum_policy.py [--seed 0] [--steps 10000]

Our own trainer's output: the host's numba TD3, as `microrl train pendulum` runs it. Another CPU
gives another policy (see docs/training.md, reproducibility); any policy that balances the
pendulum serves the tests, so commit the new file and manifest together.
"""
import argparse
import hashlib
import json
import os
import platform
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [os.path.join(ROOT, "host"), os.path.join(ROOT, "device")]

POLICY = os.path.join(HERE, "pendulum_td3.mrlp")
MANIFEST = os.path.join(HERE, "pendulum_td3.json")


def _cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--steps", type=int, default=10000)
    args = ap.parse_args()
    import numba
    import numpy

    import microrl
    from microrl.evaluate import evaluate
    from microrl.task import Env
    from microrl.tasks import pendulum
    from microrl_host.algos.td3 import ALGO

    policy = ALGO.run("pendulum", steps=args.steps, seed=args.seed, eval_every=args.steps, eval_episodes=10).policy
    mean, std, _ = evaluate(policy, Env(pendulum), 20, seed=4242)
    if mean < -300:
        sys.exit("seed %d returned %.1f: pick another seed, the tests need a policy that balances" % (args.seed, mean))
    microrl.save(POLICY, policy)
    with open(POLICY, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    manifest = {
        "file": os.path.basename(POLICY),
        "sha256": digest,
        "command": "python tests/data/make_pendulum_policy.py --seed %d --steps %d" % (args.seed, args.steps),
        "trainer": "microrl_host.algos.td3 (numba), Pendulum-v1",
        "sizes": policy.sizes,
        "return_mean_20_episodes_seed_4242": round(mean, 2),
        "return_std": round(std, 2),
        "machine": _cpu_name(),
        "versions": {"python": platform.python_version(), "numpy": numpy.__version__, "numba": numba.__version__},
    }
    with open(MANIFEST, "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    print("wrote %s (return %.1f +- %.1f over 20 episodes) and %s" % (POLICY, mean, std, MANIFEST))


if __name__ == "__main__":
    main()
