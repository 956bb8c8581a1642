"""microrl train: train a policy on the host and save it as a policy file.

The options here are the run's, which every algorithm shares; each algorithm's own are built
from its settings (algos/registry.py names them, algos/settings.py describes them): an option
two algorithms both have is added once and applies to both, an experimental
setting is given as --set NAME=VALUE and listed by --help-all. Nothing here names an
algorithm's settings."""
import argparse
import contextlib
import json
import os
import sys

from .. import tasks
from ..algos import registry
from ..algos.checkpoint import CheckpointError
from ..algos.results import summary_line
from . import CommandError
from ..tasks import TaskError
from . import latency
from ..runlog import LOCK, RUN_FILES, RunLocked, filelock, previous_run, probe, run_folder_of, runlock
from .options import EPISODES_OR_NONE, MAX_STEPS, SEED, STEPS, check_memory, check_output, integer, number, parse_hidden, whole
from .progress import ProgressBar

DEFAULT_STEPS = 10000  # unless the task suggests others (its TRAINING)
ALGOS = registry.ALGOS

EXAMPLES = """examples:
  microrl train pendulum --algo td3 --steps 10000 --seed 0 --out pendulum.mrlp
  microrl train pendulum --algo sac --steps 10000 --json
  microrl train ./slider.py --algo sac       # a task file of your own (docs/tasks.md writes slider.py)
  microrl train Pendulum-v1 --algo td3 --steps 20000   # a gymnasium id: the env steps in Python
  microrl train pendulum --out pendulum.mrlp --steps 20000 --resume   # continue a run
  microrl train pendulum --out pendulum.mrlp --overwrite              # start that run again
  microrl train quadrotor   # the task's suggestion, PPO in 64 compiled copies: the final policy flies (docs/quadrotor.md)
  microrl train quadrotor --latency-from bench.json   # PPO in the board's measured latency
"""


def specs_by_option():
    """{option name: [(algorithm, Spec)]} of every algorithm's settings the command line gives as
    options (not the experimental ones), in the registry's order."""
    out = {}
    for name, entry in ALGOS.items():
        for spec in entry.settings.specs():
            if spec.option and not spec.experimental:
                out.setdefault(spec.given_name, []).append((name, spec))
    return out


def option_help(owners):
    """A setting's help, with its default (per algorithm where they differ; a switch's is off)."""
    spec = owners[0][1]
    defaults = {}
    for name, s in owners:
        defaults.setdefault(s.default_text(), []).append(name)
    if len(defaults) == 1:
        said = "default %s" % next(iter(defaults))
    else:
        said = "default " + "; ".join("%s %s" % (", ".join(names), d) for d, names in defaults.items())
    return spec.help if spec.kind is bool else "%s (%s)" % (spec.help, said)


def add_setting_options(p):
    """An option per setting, grouped by the algorithms that have it."""
    groups = {}
    for option, owners in specs_by_option().items():
        spec = owners[0][1]
        algos = tuple(name for name, _ in owners)
        if algos not in groups:
            groups[algos] = p.add_argument_group("settings of %s" % " and ".join(", ".join(algos).rsplit(", ", 1)) if len(algos) > 1 else "settings of %s" % algos[0])
        kwargs = dict(dest=option, default=None, help=option_help(owners))
        if spec.kind is bool:
            kwargs.update(action="store_const", const=not spec.default)
        elif spec.kind is tuple:
            kwargs.update(type=parse_hidden, metavar="SIZES")
        elif spec.choices:
            kwargs.update(choices=spec.choices)
        elif spec.given_as:  # converted before the settings' check: its own range here
            kwargs.update(type=number(above=spec.above), metavar="X")
        else:  # the range is the settings' check (every problem in one line); here only what a number is
            kwargs.update(type=integer() if spec.kind is int else float, metavar="N" if spec.kind is int else "X")
        flag = option if spec.kind is not bool or not spec.default else "no_" + option
        groups[algos].add_argument("--" + flag.replace("_", "-"), **kwargs)


def given_settings(args, name):
    """{setting: value} of the options and --set settings given for algorithm name (the others
    keep their defaults, the task's suggestions or, on --resume, the checkpoint's)."""
    out = {}
    for spec in ALGOS[name].settings.specs():
        if spec.option and not spec.experimental and getattr(args, spec.given_name, None) is not None:
            v = getattr(args, spec.given_name)
            out[spec.name] = spec.given_as[1](v) if spec.given_as else v
    out.update(getattr(args, "experimental", None) or {})
    return out


def configuration(args, entry):
    """The algorithm's settings for this run (the checkpoint's on --resume, else the task's
    suggestions, then what was given), checked: CommandError for a problem."""
    from ..algos.checkpoint import saved_settings

    try:
        saved = saved_settings(args.run_dir) if args.resume else None
    except CheckpointError:  # said by the run, once it holds the run folder (another run may be writing it)
        saved = None
    try:
        return entry.settings.for_run(args.found, dict(given_settings(args, entry.name), steps=args.steps), saved)
    except ValueError as e:
        raise CommandError(str(e)) from None


def threads_help():
    """--threads' help: what each algorithm makes of it."""
    said = {}
    for name, entry in ALGOS.items():
        said.setdefault(entry.settings.THREADS, []).append(name)
    return "; ".join("%s: %s" % (", ".join(names), text) for text, names in said.items()) + "; the same run whatever the count"


def every_help(what):
    """The default of --eval-every or --checkpoint-every, per algorithm."""
    said = {}
    for name, entry in ALGOS.items():
        v = entry.settings.RUN_DEFAULTS.get(what)
        said.setdefault("{:,}".format(v) if isinstance(v, int) else v, []).append(name)
    return ", ".join("%s %s" % ("/".join(names), v) for v, names in said.items())


def run_algorithm(args, entry, callbacks):
    """Train: the algorithm's train_task() with the settings given and the run's options."""
    from ..algos.run import TrainingDiverged
    from ..envs.mujoco import MujocoMissingError

    found = args.found  # the task (tasks.resolve), resolved before any work
    defaults, suggested = entry.settings.RUN_DEFAULTS, getattr(found, entry.settings.SUGGESTIONS)

    def every(given, key):  # None: the algorithm's train_task() works it out
        if given is not None:
            return given
        default = defaults.get(key)
        return suggested.get(key, default) if isinstance(default, int) else None

    try:
        run = entry.module().train_task(
            found.module or found.gym, steps=args.steps, seed=args.seed, eval_every=every(args.eval_every, "eval_every"), eval_episodes=args.eval_episodes,
            out=args.out, run_dir=args.run_dir, checkpoint_every=every(args.checkpoint_every, "checkpoint_every"), resume=args.resume, callbacks=callbacks,
            threads=args.threads, perturbations=args.perturbations, pending_actions=getattr(args, "pending_actions", True), keep_best=args.keep_best,
            **given_settings(args, entry.name))
    except (TaskError, CheckpointError, TrainingDiverged, MujocoMissingError, ValueError) as e:
        raise CommandError(str(e)) from None
    return run.stats


THREADS = whole(1, 1024)


def check_settings(args, entry):
    """The algorithm's settings for this run, in range and within the machine's memory; the
    task, where gymnasium makes it (an unknown id, discrete or unbounded spaces: one line before
    anything is written); --threads within what the algorithm takes."""
    config = configuration(args, entry)
    if args.found.kind == "gym":
        from ..envs.gym import make_gym_env

        try:
            make_gym_env(args.found.gym).close()
        except ValueError as e:  # TaskError is a ValueError
            raise CommandError(str(e)) from None
    most = entry.settings.MAX_THREADS
    if args.threads is not None and most and args.threads > most:
        raise CommandError("--threads %d: %s takes %s" % (args.threads, entry.name.upper(), entry.settings.THREADS))
    check_training_memory(steps=args.steps, **config.memory())


def check_training_memory(hidden, update_rows, rows, steps, outputs, copies, advice, row_bytes=4):
    """CommandError when training would need more memory than the machine has: the actor and the
    twin critics (parameters, gradients, Adam's moments, targets: `copies` float32 copies), the
    activations of an update's `update_rows` rows, and a buffer of `rows` transitions of which min(rows, steps) are
    written. The task's observation and action sizes count as 1 each: a lower bound, so that a
    refusal is certain (a network of 10^12 parameters, a replay buffer of 10^12 rows)."""
    from microrl.layout import param_count

    obs, act = 1, 1
    widths = list(hidden)
    params = param_count([obs] + widths + [act * outputs]) + 2 * param_count([obs + act] + widths + [1])
    networks = 4 * copies * params + 4 * 8 * update_rows * sum(widths)
    row = row_bytes * (2 * obs + act + 2)
    if networks > row * rows:
        what = "training this network (%s hidden units, %s parameters at least)" % (",".join(str(h) for h in widths), "{:,}".format(params))
    else:
        what = "a buffer of %s transitions" % "{:,}".format(rows)
    check_memory(networks + row * min(rows, steps), networks + row * rows, what, advice)


def suggested_steps():
    """'quadrotor 500000, ...': the built-in tasks that suggest a number of steps of their own."""
    out = []
    for name in tasks.builtin_names():
        steps = tasks.resolve(name).training.get("steps")
        if steps:
            out.append("%s %d" % (name, steps))
    return ", ".join(out) or "none"


def available():
    """{name: registry entry} of the algorithms `microrl train --algo` offers."""
    return dict(ALGOS)


def check_run_folder(args):
    """CommandError when the run folder holds an earlier run and neither --resume (continue it)
    nor --overwrite (start again in its place) says what to do with it: a run is never replaced
    without a word."""
    if args.resume and args.overwrite:
        raise CommandError("--resume continues the run in %s and --overwrite starts again in its place: give one" % args.run_dir)
    held = previous_run(args.run_dir)
    if held and not (args.resume or args.overwrite):
        raise CommandError("%s already holds a run (%s): --resume continues it (up to a larger --steps), --overwrite starts again "
                           "in its place, or give another --out or --run-dir" % (args.run_dir, held))


def register(sub):
    p = sub.add_parser(
        "train",
        help="train a policy on the host (TD3/SAC: a task compiled into the loop, or gymnasium; PPO: MuJoCo or gymnasium) and save it",
        description="Train a policy and save the actor as a microrl policy file, which the device core loads as it is. "
        "A run folder keeps run.json, progress.csv (for microrl plot) and checkpoint.npz (for --resume). "
        "A run folder that already holds a run is refused unless --resume continues it or --overwrite starts again "
        "in its place; the policy file (--out) is replaced.",
        epilog=EXAMPLES,
        usage="microrl train TASK [--algo %s] [--steps N] [--out FILE] [options]" % "|".join(ALGOS),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("task", help="a built-in task (%s), a task file or module (docs/tasks.md), a MuJoCo task such as ant, or a gymnasium id "
                   "such as Pendulum-v1" % ", ".join(tasks.builtin_names()))
    p.add_argument("--algo", default=None, metavar="NAME",
                   help="%s (default: the task's suggestion, e.g. ppo for the quadrotor and MuJoCo; else %s)" % (", ".join(ALGOS), registry.DEFAULT))
    p.add_argument("--steps", type=STEPS, default=None, help="steps in all, counting those before a --resume (default %d, or the task's: %s)" % (DEFAULT_STEPS, suggested_steps()))
    p.add_argument("--seed", type=SEED, default=None, help="random seed, 0 to 2**32-1 (default 0): the same run bit for bit on the same machine (docs/training.md)")
    p.add_argument("--out", metavar="FILE", help="policy file to write (default <task>-<algo>.mrlp)")
    p.add_argument("--run-dir", metavar="DIR", help="run folder: run.json, progress.csv, checkpoint.npz, policy.mrlp (default: --out without .mrlp, plus .run)")
    p.add_argument("--tensorboard", nargs="?", const="", metavar="DIR",
                   help='also write TensorBoard logs into DIR (default: the run folder\'s tensorboard/); pip install "microrl[tensorboard]"')
    p.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    p.add_argument("--json", action="store_true", help="print one JSON object of results (implies --quiet)")
    p.add_argument("--resume", action="store_true", help="continue from the run folder's checkpoint up to --steps")
    p.add_argument("--overwrite", action="store_true", help="start again in a run folder that holds a run")
    p.add_argument("--checkpoint-every", type=whole(0, MAX_STEPS), metavar="N", help="checkpoint every N steps and at the end (default: the task's, else %s)" % every_help("checkpoint_every"))
    p.add_argument("--eval-every", type=whole(0, MAX_STEPS), metavar="N", help="evaluate every N steps and at the end (default: the task's, else %s: docs/training.md)" % every_help("eval_every"))
    p.add_argument("--keep-best", action="store_true", help="write the best evaluation's actor rather than the final one (a task with a success test)")
    p.add_argument("--eval-episodes", type=EPISODES_OR_NONE, default=None, metavar="N", help="episodes per evaluation (default: the task's, else 10)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="an experimental setting (repeatable; --help-all lists them)")
    p.add_argument("--help-all", action=HelpAll, help="this help, then the experimental settings --set takes")
    p.add_argument("--threads", type=THREADS, metavar="N", help=threads_help())
    latency.add_options(p.add_argument_group("sim-to-real (a task written against the task interface)"))
    add_setting_options(p)
    p.set_defaults(func=run)
    return p  # (sweep parses its runs' arguments with it)


class HelpAll(argparse.Action):
    """--help-all: the help, then each algorithm's experimental settings (--set NAME=VALUE)."""

    def __init__(self, option_strings, dest, help=None):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        parser.print_help()
        print("\nexperimental settings (--set NAME=VALUE; true/false for a switch):")
        for name, entry in ALGOS.items():
            for spec in entry.settings.experimental():
                print("  %-15s %s: %s (default %s)" % (spec.name, name, spec.help, spec.default_text()))
        parser.exit()


def experimental_settings(args, name):
    """{setting: value} of args.set (NAME=VALUE each) for algorithm name; CommandError naming a
    setting it does not have (another algorithm's, or none) or a value of the wrong kind."""
    known = {spec.name: spec for spec in ALGOS[name].settings.experimental()}
    out = {}
    for item in getattr(args, "set", None) or []:
        key, eq, text = item.partition("=")
        key = key.strip().replace("-", "_")
        if not eq or not key or not text.strip():
            raise CommandError("--set takes NAME=VALUE, got %r" % item)
        if key not in known:
            others = [other for other, entry in ALGOS.items() if key in {s.name for s in entry.settings.experimental()}]
            raise CommandError("--set %s: %s" % (key, "a setting of %s, not %s" % (", ".join(others), name) if others else
                               "no such experimental setting; --help-all lists them (%s)" % ", ".join(sorted(known))))
        try:
            out[key] = known[key].parse(text)
        except ValueError as e:
            raise CommandError("--set %s=%s: not %s" % (key, text, e)) from None
    return out


def run(args):
    entry = check(args)
    with contextlib.ExitStack() as held:  # one writer per policy file and per run folder, for the run's life
        for option, kind, lock in (("--out", "policy file", lambda: filelock(args.out)), ("--run-dir", "run folder", lambda: runlock(args.run_dir))):
            try:
                held.enter_context(lock())
            except RunLocked as e:
                raise locked(option, kind, e) from None
        check_run_folder(args)  # again, under the lock: as the run folder is now, and stays
        return _run(args, entry)


def locked(option, kind, e):
    """The one line for a run folder or policy file another process is writing (RunLocked)."""
    return CommandError("%s %s: another run%s is writing this %s; wait for it to end, or give another %s"
                        % (option, e.what, " (pid %d)" % e.pid if e.pid else "", kind, option))


def _run(args, entry):
    if args.overwrite:
        for name in RUN_FILES:  # the earlier run's files: a checkpoint left behind would pair with the new run's log
            if os.path.isfile(os.path.join(args.run_dir, name)):
                os.remove(os.path.join(args.run_dir, name))
    try:
        callbacks = ProgressBar(quiet=args.quiet or args.json)
        if getattr(args, "tensorboard", None):
            from ..tensorboard import TensorBoard

            callbacks = TensorBoard(args.tensorboard, callbacks)
        result = run_algorithm(args, entry, callbacks)
    except OSError as e:
        # a write of the run's files failed (a full disk, a file system gone read-only): say
        # so in a line, and what the run folder still holds
        from ..algos.checkpoint import kept
        from ..atomic import ENVIRONMENT_ERRORS, WriteError

        if e.errno not in ENVIRONMENT_ERRORS and not isinstance(e, WriteError):
            raise
        raise CommandError("%s; stopped; %s; free some space and continue with --resume"
                           % (e if isinstance(e, WriteError) else "%s%s" % (e.strerror, " (%s)" % e.filename if e.filename else " (writing the run's files)"),
                              kept(os.path.join(args.run_dir, "checkpoint.npz")))) from None
    if args.json:
        print(json.dumps(result, sort_keys=True))
    elif not args.quiet:
        print(summary_line(result))
    return 0


def own_options(name):
    """The option names (dests) algorithm name takes."""
    return {option for option, owners in specs_by_option().items() if name in [n for n, _ in owners]}


def suggested_algo(args):
    """The algorithm for a run that names none: the task's suggestion (its ALGO) unless an option
    or setting given belongs to others only, else registry.DEFAULT."""
    found = getattr(args, "found", None)
    if found is None:
        try:
            found = tasks.resolve(args.task)
        except TaskError:
            return registry.DEFAULT  # check() reports the task
    algo = found.algo
    if algo not in ALGOS:
        return registry.DEFAULT
    own = own_options(algo)
    given_elsewhere = any(option not in own and getattr(args, option, None) is not None for option in specs_by_option())
    own_set = {s.name for s in ALGOS[algo].settings.experimental()}
    given_elsewhere = given_elsewhere or any(item.partition("=")[0].strip().replace("-", "_") not in own_set for item in getattr(args, "set", None) or [])
    return registry.DEFAULT if given_elsewhere else algo


def check(args):
    """Everything checked before any work (settings, then where the results go), defaults
    filled in; returns the algorithm's registry entry. CommandError for the first problem."""
    try:
        args.found = tasks.resolve(args.task)  # the one resolution of the task, for all that follows
    except TaskError as e:
        raise CommandError(str(e)) from None
    chosen = args.algo is None  # not named: the task's suggestion, or TD3 (suggested_algo)
    if chosen:
        args.algo = suggested_algo(args)
    name = args.algo.lower()
    if name not in ALGOS:
        raise CommandError("unknown algorithm %r; choose one of %s" % (args.algo, ", ".join(ALGOS)))
    entry = ALGOS[name]
    own = own_options(name)
    for option, owners in specs_by_option().items():
        if option not in own and getattr(args, option, None) is not None:
            raise CommandError("--%s is a %s option; it does not apply to %s%s" % (option.replace("_", "-"), "/".join(n for n, _ in owners), "--algo " + name if not chosen else name,
                               ", the algorithm this run takes without --algo; name one with --algo" if chosen else ""))
    args.algo = name
    args.experimental = experimental_settings(args, name)
    args.perturbations, said = latency.perturbations(args, args.found)
    if said and not args.quiet:
        print(said, file=sys.stderr if args.json else sys.stdout)
    if args.steps is None:
        args.steps = getattr(args.found, entry.settings.SUGGESTIONS).get("steps", DEFAULT_STEPS)
    if args.out is None:
        args.out = "%s-%s.mrlp" % ((args.task if args.found.kind == "mujoco" else args.found.name).replace("/", "_").lower(), name)
    if args.run_dir is None:
        args.run_dir = run_folder_of(args.out)
    if os.path.isdir(args.out):
        raise CommandError("--out %s is a folder; give a file name such as %s" % (args.out, os.path.join(args.out, "policy.mrlp")))
    check_settings(args, entry)
    if same_path(args.out, args.run_dir):
        raise CommandError("--out and --run-dir are both %s; the policy file needs another name than the run folder" % args.out)
    check_output(args.out, "--out")
    check_output(args.run_dir, "--run-dir", folder=True)
    for held in RUN_FILES:  # what the run folder holds already must be files too (a pipe there blocks the run)
        path = os.path.join(args.run_dir, held)
        if os.path.lexists(path):
            check_output(path, "--run-dir")
    if getattr(args, "tensorboard", None) is not None:
        from ..tensorboard import TensorBoardMissing, summary_writer

        args.tensorboard = args.tensorboard or os.path.join(args.run_dir, "tensorboard")
        try:
            summary_writer()
        except TensorBoardMissing as e:
            raise CommandError("--tensorboard: %s" % e) from None
        check_output(args.tensorboard, "--tensorboard", folder=True)
    check_apart(args)
    for option, kind, path, pid in (("--out", "policy file", args.out, probe(file=args.out)), ("--run-dir", "run folder", args.run_dir, probe(args.run_dir))):
        if pid is not None:  # (looked at before anything is written; run() takes the locks)
            raise locked(option, kind, RunLocked(path, pid))
    check_run_folder(args)
    return entry


# the files a run writes in its folder that --out or --tensorboard must not replace (policy.mrlp
# may be --out: PPO keeps its last policy there, and the run's final policy is that same file;
# sweep's runs write theirs there)
OWN_FILES = tuple(n for n in RUN_FILES if n != "policy.mrlp") + (LOCK,)


def same_path(a, b):
    """True when paths a and b name the same file or folder: the same real path (links and '..'
    resolved), or the same file where both exist (a hard link)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def inside(path, folder):
    """True when path lies inside folder (real paths)."""
    return os.path.realpath(path).startswith(os.path.join(os.path.realpath(folder), ""))


def check_apart(args):
    """CommandError when --out or --tensorboard would land on a file the run writes in its run
    folder (its checkpoint, progress.csv, run.json, lock), or on each other: a run never
    replaces its own files."""
    own = [os.path.join(args.run_dir, n) for n in OWN_FILES]
    board = getattr(args, "tensorboard", None)
    for option, path in (("--out", args.out),) + ((("--tensorboard", board),) if board else ()):
        for held in own:
            if same_path(path, held) or inside(path, held):  # (inside: a folder made in its place)
                raise CommandError("%s %s is the run folder's %s, which the run writes; give %s" % (
                    option, path, os.path.basename(held), "the policy file another name" if option == "--out" else "another folder"))
    if board and (same_path(args.out, board) or inside(args.out, board)):
        raise CommandError("--out %s is in the TensorBoard folder %s, which the run writes; give the policy file another place" % (args.out, board))
