"""microrl train: train a policy on the host and save it as a policy file.

The options here are the ones every algorithm shares; each algorithm module in ALGOS adds its
own hyperparameters (add_arguments(parser)) and runs the training (train_from_args(args))."""
import argparse
import importlib
import os

from ..cli import CommandError

ALGOS = {"td3": "microrl_host.td3", "sac": "microrl_host.sac", "ppo": "microrl_host.ppo"}
DEFAULT_ALGO = "td3"

_modules = {}  # name -> module, or the ImportError that kept it out
_claimed = {}  # name -> {option dest: default} of that algorithm's own options

EXAMPLES = """examples:
  microrl train pendulum --algo td3 --steps 10000 --seed 0 --out pendulum.mrlp
  microrl train pendulum --algo sac --steps 10000 --json
  microrl train MountainCarContinuous-v0 --algo td3 --steps 50000 --exploration-noise 0.5
  microrl train pendulum --out pendulum.mrlp --steps 20000 --resume   # continue a run
"""


def _load(name):
    if name not in _modules:
        try:
            _modules[name] = importlib.import_module(ALGOS[name])
        except ImportError as e:
            _modules[name] = e
    return _modules[name]


def available():
    """{name: module} of the algorithms that import here."""
    return {n: m for n in ALGOS for m in [_load(n)] if not isinstance(m, ImportError)}


def parse_hidden(text):
    try:
        sizes = tuple(int(s) for s in text.replace("x", ",").split(",") if s.strip())
    except ValueError:
        sizes = ()
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError("expected hidden layer sizes like 64,64; got %r" % text)
    return sizes


def _whole(minimum):
    """An argparse type: a whole number >= minimum."""

    def parse(text):
        try:
            v = int(text)
        except ValueError:
            v = minimum - 1
        if v < minimum:
            raise argparse.ArgumentTypeError("expected a whole number >= %d, got %r" % (minimum, text))
        return v

    return parse


def register(sub):
    from microrl.activations import NAMES

    algos = available()
    p = sub.add_parser(
        "train",
        help="train a policy (TD3/SAC on the host, Pendulum compiled in the loop) and save it",
        description="Train a policy and save the actor as a microrl policy file, which the device core loads as it is. "
        "A run folder keeps run.json, progress.csv (for microrl plot) and checkpoint.npz (for --resume).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("task", help="'pendulum' (simulated inside the compiled training loop: fastest) or a gymnasium id with continuous actions, e.g. Pendulum-v1, MountainCarContinuous-v0")
    missing = ", ".join("%s (%s)" % (n, _load(n)) for n in ALGOS if n not in algos)
    p.add_argument("--algo", default=DEFAULT_ALGO, metavar="NAME", help="algorithm: %s (default %s)%s" % (", ".join(ALGOS), DEFAULT_ALGO, "; unavailable here: " + missing if missing else ""))
    p.add_argument("--steps", type=_whole(1), default=10000, help="environment steps in total, counting those before a --resume (default 10000)")
    p.add_argument("--seed", type=_whole(0), default=0, help="random seed (default 0): the same seed repeats a run bit for bit on the same machine and library versions; another CPU's BLAS/SIMD kernels give another run of the same quality (docs/training.md, Reproducibility)")
    p.add_argument("--out", metavar="FILE", help="policy file to write (default <task>-<algo>.mrlp)")
    p.add_argument("--run-dir", metavar="DIR", help="run folder for run.json, progress.csv, checkpoint.npz (default: --out without .mrlp, plus .run)")
    p.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    p.add_argument("--json", action="store_true", help="print one JSON object of results (implies --quiet)")
    p.add_argument("--resume", action="store_true", help="continue from the run folder's checkpoint up to --steps")
    p.add_argument("--checkpoint-every", type=_whole(0), metavar="N", help="checkpoint every N steps and at the end; 0: at the end only (default: the algorithm's; TD3/SAC 1000)")
    p.add_argument("--eval-every", type=_whole(0), metavar="N", help="evaluate the deterministic policy every N steps and at the end (default: the algorithm's; TD3/SAC 1000)")
    p.add_argument("--eval-episodes", type=_whole(0), default=10, metavar="N", help="episodes per evaluation (default 10)")
    p.add_argument("--hidden", type=parse_hidden, metavar="SIZES", help="hidden layer sizes, e.g. 64,64 (default: the algorithm's)")
    p.add_argument("--gamma", type=float, help="discount factor (default: the algorithm's, 0.99)")
    p.add_argument("--activation", choices=NAMES[1:], help="hidden activation (default: the algorithm's, relu)")
    for name, module in algos.items():
        scratch = argparse.ArgumentParser(add_help=False)
        module.add_arguments(scratch)
        _claimed[name] = {a.dest: a.default for a in scratch._actions}
        _add_missing(p, module, set(p._option_string_actions))
    p.set_defaults(func=run)


def _add_missing(parser, module, existing):
    """module.add_arguments(parser), leaving out options an earlier algorithm already added."""
    scratch = argparse.ArgumentParser(add_help=False)
    module.add_arguments(scratch)
    for group in scratch._action_groups:
        actions = [a for a in group._group_actions if not set(a.option_strings) & existing]
        if not actions:
            continue
        title = group.title
        if len(actions) < len(group._group_actions):
            title += " (and the shared ones above)"
        target = parser.add_argument_group(title, group.description)
        for a in actions:
            target._add_action(a)


def run(args):
    name = args.algo.lower()
    if name not in ALGOS:
        raise CommandError("unknown algorithm %r; choose one of %s" % (args.algo, ", ".join(ALGOS)))
    module = _load(name)
    if isinstance(module, ImportError):
        raise CommandError("--algo %s is not available in this installation (%s); available: %s" % (name, module, ", ".join(available())))
    args.algo = name
    for other, options in _claimed.items():
        if other == name:
            continue
        for dest, default in options.items():
            if dest not in _claimed[name] and getattr(args, dest, default) != default:
                raise CommandError("--%s is a %s option; it does not apply to --algo %s" % (dest.replace("_", "-"), other, name))
    if args.out is None:
        args.out = "%s-%s.mrlp" % (args.task.replace("/", "_").lower(), name)
    if args.run_dir is None:
        stem = args.out
        for ext in (".mrlp", ".mrl"):  # .mrl: what earlier versions wrote; its run folder is stem.run too
            if stem.endswith(ext):
                stem = stem[: -len(ext)]
                break
        args.run_dir = stem + ".run"
    if os.path.isdir(args.out):
        raise CommandError("--out %s is a folder; give a file name such as %s" % (args.out, os.path.join(args.out, "policy.mrlp")))
    from .. import offpolicy

    try:
        return module.train_from_args(args)
    except (offpolicy.TaskError, offpolicy.CheckpointError) as e:
        raise CommandError(str(e))
