"""TEST-ONLY stand-in for `microrl train` (owned by commands/train.py, another branch), so that
PPO's CLI seam can be tested end to end before the merge: the shared options train defines, then
microrl_host.ppo.add_arguments(), then ppo.train_from_args(). Errors print as the CLI prints them.
Delete once `microrl train --algo ppo` is wired.

    python tests/ppo_train_harness.py InvertedPendulum --algo ppo --steps 4096 --envs 8
"""
import argparse
import sys

from microrl_host import ppo
from microrl_host.cli import CommandError


def build_parser():
    p = argparse.ArgumentParser(prog="microrl train")
    p.add_argument("task")
    p.add_argument("--algo", default="ppo", choices=["ppo"])
    p.add_argument("--steps", type=int, default=None)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--out", default=None)
    p.add_argument("--run-dir", default=None)
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--json", action="store_true")
    p.add_argument("--resume", action="store_true")
    p.add_argument("--checkpoint-every", type=int, default=None)
    p.add_argument("--eval-every", type=int, default=None)
    p.add_argument("--eval-episodes", type=int, default=None)
    p.add_argument("--hidden", default=None)
    p.add_argument("--gamma", type=float, default=None)
    p.add_argument("--activation", default=None)
    ppo.add_arguments(p)
    return p


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        return ppo.train_from_args(args)
    except CommandError as e:
        print("microrl train: error: %s" % e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
