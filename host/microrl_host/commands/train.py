"""microrl train: train a policy on the host and save it as a policy file.

The options here are the ones every algorithm shares; ALGOS below is the registry: for each
algorithm its own options (Option) and how the parsed arguments become its configuration and
run. An option two algorithms both have (say --batch) is added once and applies to both."""
import argparse
import contextlib
import json
import math
import os
import sys

from .. import tasks
from ..algos import config as offpolicy_config
from ..algos.checkpoint import CheckpointError
from ..algos.results import summary_line
from . import CommandError
from ..tasks import TaskError
from . import latency
from ..runlog import LOCK, RUN_FILES, RunLocked, filelock, previous_run, probe, run_folder_of, runlock
from .options import EPISODES_OR_NONE, MAX_STEPS, SEED, STEPS, check_memory, check_output, integer, number, parse_hidden, whole
from .progress import ProgressBar

DEFAULT_ALGO = "td3"
DEFAULT_EVERY = 1000  # TD3/SAC: steps between evaluations and between checkpoints, unless the task suggests others
DEFAULT_STEPS = 10000  # unless the task suggests others (its TRAINING)

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


class Option:
    """One algorithm option: its flag and argparse's keywords (default None: 'not given')."""

    def __init__(self, flag, **kwargs):
        self.flag = flag
        self.dest = flag[2:].replace("-", "_")
        kwargs.setdefault("default", None)
        self.kwargs = kwargs


# ---------------------------------------------------------------- TD3 and SAC
SHARED = ("hidden", "gamma", "activation", "steps")  # off-policy settings set by the shared options
# experiments and ablations: settings an algorithm has that `microrl train` takes only as
# --set NAME=VALUE (listed by --help-all, not --help): TD3's model-gradient actor (docs/quadrotor.md),
# the learning-rate schedule, PPO's ablations of the paper's two additions
EXPERIMENTAL = {
    "td3": ("model_horizon", "model_batch", "model_every", "model_start", "model_value", "model_lr", "lr_end"),
    "sac": (),
    "ppo": ("kl_adaptive", "obs_norm"),
}
EXPERIMENTAL_HELP = {
    "kl_adaptive": "the paper's KL-adaptive learning rate (false: the rate stays fixed; ablation of its Appendix G)",
    "obs_norm": "observation normalisation (false: none; ablation)",
}
OFFPOLICY_HELP = {
    "batch": "transitions per update",
    "tau": "Polyak rate of the target networks",
    "actor_lr": "actor learning rate (Adam)",
    "critic_lr": "critic learning rate (Adam)",
    "alpha_lr": "entropy temperature learning rate (Adam)",
    "exploration_noise": "std of the action noise while training, actions in [-1, 1]",
    "policy_delay": "critic updates per actor and target update",
    "target_noise": "std of the target policy smoothing noise",
    "target_noise_clip": "clip of the target policy smoothing noise",
    "replay_capacity": "transitions the replay buffer keeps (then the oldest goes)",
    "warmup": "random steps before the actor acts and training starts",
    "initial_alpha": "starting entropy temperature",
    "target_entropy": "entropy the temperature is tuned towards (default: -action_dim)",
    "model_horizon": "TD3: 0, or the steps of the task's own simulator the actor's gradient rolls through from replayed observations "
                     "(the return's gradient in place of the critic's action gradient; a task with state_from_observation, docs/quadrotor.md)",
    "model_batch": "TD3 model_horizon: replayed observations the rollouts start from",
    "model_every": "TD3 model_horizon: environment steps per model-gradient actor step",
    "model_start": "TD3 model_horizon: the step from which the model gradient takes the actor's steps (TD3's own before)",
    "model_value": "TD3 model_horizon: weight of gamma^H Q1 at the rollouts' end (0: the rewards alone)",
    "model_lr": "TD3 model_horizon: the actor's learning rate (Adam) under the model gradient",
    "lr_end": "the learning rates fall linearly from their value at the first step to this share of it at the last "
              "(1.0: constant; 0.1 ends at a tenth, which settles small networks late in a run)",
}


THREADS_HELP = ("TD3/SAC: 1, or 2 (the second critic on a second thread; the same run); PPO: 1, or more (the critic's half of each "
                "update on a second thread, the same run; MuJoCo copies stepped on that many threads)")


class OffPolicy:
    """TD3 or SAC: options from the default configuration's settings, run by the algorithm
    module's ALGO (an offpolicy.Algorithm) that load() imports when it runs (it loads numba)."""

    def __init__(self, name, default_config, load):
        self.name = name
        self.default_config = default_config
        self.load = load
        self.title = "%s hyperparameters" % name.upper()

    def options(self):
        out = []
        for k, default in sorted(offpolicy_config.settings(self.default_config()).items()):
            if k in SHARED or k in EXPERIMENTAL[self.name]:
                continue
            whole_number = (isinstance(default, int) and not isinstance(default, bool)) or k == "replay_capacity"
            text = OFFPOLICY_HELP.get(k, k.replace("_", " "))
            if default is not None:
                text += " (default %s)" % (default,)
            # the ranges are the configuration's check (check_config); here only what a number is
            out.append(Option("--" + k.replace("_", "-"), type=integer() if whole_number else float, metavar="INT" if whole_number else "FLOAT", help=text))
        out.append(Option("--threads", type=THREADS, help=THREADS_HELP))
        return out

    def settings(self, args):
        """The settings given on the command line (the others keep their defaults, or on --resume
        the checkpoint's)."""
        settings = {o.dest: getattr(args, o.dest) for o in self.options() if getattr(args, o.dest) is not None and o.dest != "threads"}
        for k in ("hidden", "gamma", "activation"):
            if getattr(args, k) is not None:
                settings[k] = getattr(args, k)
        settings.update(getattr(args, "experimental", None) or {})
        return settings

    def experimental(self):
        """{name: (default, help)} of the settings --set takes."""
        defaults = offpolicy_config.settings(self.default_config())
        return {k: (defaults[k], OFFPOLICY_HELP.get(k, k).replace("TD3: ", "")) for k in EXPERIMENTAL[self.name]}

    def check(self, args):
        try:
            config = self.load().config(**self.settings(args))
        except ValueError as e:
            raise CommandError(str(e)) from None
        if args.threads is not None and args.threads > 2:
            raise CommandError("--threads %d: %s takes 1 or 2 (the second critic's half of each update on a second thread)" % (args.threads, self.name.upper()))
        outputs = 2 if self.name == "sac" else 1  # SAC's actor: a mean and a log std per action
        check_training_memory(config.hidden, config.batch, config.replay_capacity, args.steps, outputs, copies=5,
                              advice="use a smaller --hidden, --batch or --replay-capacity")

    def run(self, args, callbacks):
        from ..algos.offpolicy import TrainingDiverged

        settings = self.settings(args)
        found = args.found  # the task (tasks.resolve), resolved before any work
        suggested = found.training

        def every(given, key):
            return given if given is not None else suggested.get(key, DEFAULT_EVERY)

        try:
            run = self.load().run(
                found.module or found.gym, steps=args.steps, seed=args.seed,
                eval_every=every(args.eval_every, "eval_every"), eval_episodes=args.eval_episodes,
                out=args.out, run_dir=args.run_dir, checkpoint_every=every(args.checkpoint_every, "checkpoint_every"),
                resume=args.resume, callbacks=callbacks, threads=args.threads, perturbations=args.perturbations,
                pending_actions=getattr(args, "pending_actions", True), keep_best=args.keep_best, **settings
            )
        except (TaskError, CheckpointError, TrainingDiverged, ValueError) as e:
            raise CommandError(str(e))
        return run.stats


# ---------------------------------------------------------------- PPO
class PPOCommand:
    title = "PPO (--algo ppo)"

    def options(self):
        from ..algos import ppo

        d = ppo.PPOConfig.FIELDS
        return [
            Option("--envs", type=integer(), help="parallel environments (default %d)" % d["envs"]),
            Option("--rollout-steps", type=integer(), help="steps per environment per rollout (default %d)" % d["rollout_steps"]),
            Option("--epochs", type=integer(), help="passes over each rollout (default %d)" % d["epochs"]),
            Option("--minibatches", type=integer(), help="minibatches per epoch (default %d)" % d["minibatches"]),
            Option("--clip-coef", type=float, help="PPO clip range (default %g)" % d["clip_coef"]),
            Option("--ent-coef", type=float, help="entropy bonus weight (default %g)" % d["ent_coef"]),
            Option("--vf-coef", type=float, help="value loss weight (default %g)" % d["vf_coef"]),
            Option("--gae-lambda", type=float, help="GAE lambda (default %g)" % d["gae_lambda"]),
            Option("--max-grad-norm", type=float, help="clip each network's gradient norm; 0 disables (default %g)" % d["max_grad_norm"]),
            Option("--lr", type=float, help="the actor's initial learning rate, adapted (default %g; PPO's --critic-lr: %g)" % (d["lr"], d["critic_lr"])),
            Option("--critic-lr", type=float, help="the critic's Adam learning rate (default %g)" % d["critic_lr"]),
            Option("--target-kl", type=float, help="KL the adaptive learning rate aims for (default %g)" % d["target_kl"]),
            Option("--adv-norm", action="store_true", help="normalise advantages per minibatch"),
            Option("--init-std", type=number(above=0), help="the action std at the start, actions in [-1, 1] (default %g, or the task's)" % math.exp(d["init_log_std"])),
            Option("--final-std", type=number(above=0), help="lower the action std to this by the end instead of learning it (docs/quadrotor.md)"),
            Option("--threads", type=THREADS, help=THREADS_HELP),
        ]

    @staticmethod
    def config(args):
        """The configuration the arguments give; on --resume, the checkpoint's for every setting
        not given (a given one that differs is refused when the run starts)."""
        from ..algos import ppo

        g = lambda name: getattr(args, name, None)  # noqa: E731
        given = dict(
            steps=g("steps"), seed=g("seed"), hidden=g("hidden"), gamma=g("gamma"), activation=g("activation"),
            envs=g("envs"), rollout_steps=g("rollout_steps"), epochs=g("epochs"), minibatches=g("minibatches"),
            clip_coef=g("clip_coef"), ent_coef=g("ent_coef"), vf_coef=g("vf_coef"), gae_lambda=g("gae_lambda"),
            max_grad_norm=g("max_grad_norm"), lr=g("lr"), critic_lr=g("critic_lr"), target_kl=g("target_kl"), threads=g("threads"),
            init_log_std=math.log(g("init_std")) if g("init_std") else None, final_std=g("final_std"),
            adv_norm=True if g("adv_norm") else None,
        )
        given.update(g("experimental") or {})
        saved = ppo.checkpoint_config(args.run_dir) if g("resume") and g("run_dir") else None
        if saved:
            given = dict({k: v for k, v in saved.items() if k in ppo.PPOConfig.FIELDS and k not in ppo.RESUMABLE}, **{k: v for k, v in given.items() if v is not None})
        elif g("found") is not None:  # a task written against the task interface: its suggestions, then the user's
            given = dict(ppo.suggested(g("found").module), **{k: v for k, v in given.items() if v is not None})
        return ppo.PPOConfig(**given)

    def experimental(self):
        """{name: (default, help)} of the settings --set takes."""
        from ..algos import ppo

        return {k: (ppo.PPOConfig.FIELDS[k], EXPERIMENTAL_HELP[k]) for k in EXPERIMENTAL["ppo"]}

    def check(self, args):
        """The settings, and the task: a MuJoCo family's, else a gymnasium environment made once
        here (an unknown id, discrete or unbounded spaces: one line before anything is written)."""
        from ..envs.gym import make_gym_env

        try:
            c = self.config(args)
            if args.found.kind == "gym":
                make_gym_env(args.found.gym).close()
        except (ValueError, CheckpointError) as e:  # TaskError is a ValueError
            raise CommandError(str(e)) from None
        # a rollout keeps envs x rollout_steps rows of observations, actions and returns
        check_training_memory(c.hidden, max(1, c.envs * c.rollout_steps // c.minibatches), c.envs * c.rollout_steps, c.envs * c.rollout_steps,
                              2, copies=4, row_bytes=8, advice="use a smaller --hidden, --envs or --rollout-steps")

    def run(self, args, callbacks):
        from ..algos import ppo
        from ..envs.mujoco import MujocoMissingError

        try:
            config = self.config(args)
        except (ValueError, MujocoMissingError, CheckpointError) as e:
            raise CommandError(str(e)) from None
        run_dir = args.run_dir
        if args.resume and not os.path.exists(os.path.join(run_dir, ppo.CHECKPOINT)):
            raise CommandError("nothing to resume in %s (no %s); start without --resume" % (run_dir, ppo.CHECKPOINT))
        suggests = args.found.training_ppo  # a task's suggestions
        episodes = args.eval_episodes or suggests.get("eval_episodes", 10)
        eval_every = args.eval_every
        if eval_every is None:
            eval_every = suggests.get("eval_every") or ppo_eval_every(config.steps, config.envs * config.rollout_steps, episodes)
        try:
            run = ppo.train(
                config, args.found, callbacks, run_dir=run_dir, out=args.out, resume=args.resume,
                checkpoint_every=args.checkpoint_every or 100_000, eval_every=eval_every or None, eval_episodes=episodes,
                perturbations=args.perturbations, keep_best=args.keep_best, pending_actions=getattr(args, "pending_actions", True),
            )
        except (MujocoMissingError, TaskError, CheckpointError, ppo.TrainingDiverged) as e:
            raise CommandError(str(e)) from None
        return run.stats


PPO_EPISODE_STEPS = 1000  # the longest episode of gymnasium's MuJoCo tasks: what one evaluation episode may take
PPO_EVAL_SHARE = 4  # PPO's default evaluations step at most a quarter as much as training does


def ppo_eval_every(steps, per_iteration, episodes):
    """PPO's default steps between evaluations: a tenth of the run, at most 100,000, at least an
    iteration, and so that evaluating (episodes of up to 1,000 steps, one environment stepped in
    Python: per step as slow as training, measured on Ant) takes at most a quarter of the steps
    trained. A short run is evaluated at its end only (it always is, whatever the spacing)."""
    return max(per_iteration, min(100_000, steps // 10), PPO_EVAL_SHARE * episodes * PPO_EPISODE_STEPS)


# the registry: --algo NAME -> how the command runs it
def _td3():
    from ..algos import td3

    return td3.ALGO


def _sac():
    from ..algos import sac

    return sac.ALGO


THREADS = whole(1, 1024)


def check_training_memory(hidden, batch, rows, steps, outputs, copies, advice, row_bytes=4):
    """CommandError when training would need more memory than the machine has: the actor and the
    twin critics (parameters, gradients, Adam's moments, targets: `copies` float32 copies), a
    batch's activations, and a buffer of `rows` transitions of which min(rows, steps) are
    written. The task's observation and action sizes count as 1 each: a lower bound, so that a
    refusal is certain (a network of 10^12 parameters, a replay buffer of 10^12 rows)."""
    from microrl.layout import param_count

    obs, act = 1, 1
    widths = list(hidden)
    params = param_count([obs] + widths + [act * outputs]) + 2 * param_count([obs + act] + widths + [1])
    networks = 4 * copies * params + 4 * 8 * batch * sum(widths)
    row = row_bytes * (2 * obs + act + 2)
    if networks > row * rows:
        what = "training this network (%s hidden units, %s parameters at least)" % (",".join(str(h) for h in widths), "{:,}".format(params))
    else:
        what = "a buffer of %s transitions" % "{:,}".format(rows)
    check_memory(networks + row * min(rows, steps), networks + row * rows, what, advice)


ALGOS = {"td3": OffPolicy("td3", offpolicy_config.td3_config, _td3), "sac": OffPolicy("sac", offpolicy_config.SACConfig, _sac), "ppo": PPOCommand()}


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
    from microrl.activations import NAMES

    p = sub.add_parser(
        "train",
        help="train a policy on the host (TD3/SAC: a task compiled into the loop, or gymnasium; PPO: MuJoCo or gymnasium) and save it",
        description="Train a policy and save the actor as a microrl policy file, which the device core loads as it is. "
        "A run folder keeps run.json, progress.csv (for microrl plot) and checkpoint.npz (for --resume). "
        "A run folder that already holds a run is refused unless --resume continues it or --overwrite starts again "
        "in its place; the policy file (--out) is replaced.",
        epilog=EXAMPLES,
        usage="microrl train TASK [--algo td3|sac|ppo] [--steps N] [--out FILE] [options]",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("task", help="a built-in task (%s), a task file or module (docs/tasks.md), a MuJoCo task such as ant, or a gymnasium id "
                   "such as Pendulum-v1" % ", ".join(tasks.builtin_names()))
    p.add_argument("--algo", default=None, metavar="NAME",
                   help="%s (default: the task's suggestion, e.g. ppo for the quadrotor and MuJoCo; else td3)" % ", ".join(ALGOS))
    p.add_argument("--steps", type=STEPS, default=None, help="steps in all, counting those before a --resume (default %d, or the task's: %s)" % (DEFAULT_STEPS, suggested_steps()))
    p.add_argument("--seed", type=SEED, default=None, help="random seed, 0 to 2**32-1 (default 0): the same run bit for bit on the same machine (docs/training.md, Reproducibility)")
    p.add_argument("--out", metavar="FILE", help="policy file to write (default <task>-<algo>.mrlp)")
    p.add_argument("--run-dir", metavar="DIR", help="run folder: run.json, progress.csv, checkpoint.npz, policy.mrlp (default: --out without .mrlp, plus .run)")
    p.add_argument("--tensorboard", nargs="?", const="", metavar="DIR",
                   help='also write TensorBoard logs into DIR (default: the run folder\'s tensorboard/); pip install "microrl[tensorboard]"')
    p.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    p.add_argument("--json", action="store_true", help="print one JSON object of results (implies --quiet)")
    p.add_argument("--resume", action="store_true", help="continue from the run folder's checkpoint up to --steps")
    p.add_argument("--overwrite", action="store_true", help="start again in a run folder that holds a run")
    p.add_argument("--checkpoint-every", type=whole(0, MAX_STEPS), metavar="N", help="checkpoint every N steps and at the end (default: the task's, else TD3/SAC 1000, PPO 100,000)")
    p.add_argument("--eval-every", type=whole(0, MAX_STEPS), metavar="N", help="evaluate every N steps and at the end (default: the task's, else TD3/SAC 1000, PPO a tenth of the run: docs/training.md)")
    p.add_argument("--keep-best", action="store_true", help="write the best evaluation's actor rather than the final one (a task with a success test)")
    p.add_argument("--eval-episodes", type=EPISODES_OR_NONE, default=None, metavar="N", help="episodes per evaluation (default: the task's, else 10)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="an experimental setting (repeatable; --help-all lists them)")
    p.add_argument("--help-all", action=HelpAll, help="this help, then the experimental settings --set takes")
    p.add_argument("--hidden", type=parse_hidden, metavar="SIZES", help="hidden layer sizes, e.g. 64,64 (default: the algorithm's)")
    p.add_argument("--gamma", type=float, help="discount factor (default: the algorithm's, 0.99)")
    p.add_argument("--activation", choices=NAMES[1:], help="hidden activation (default: the algorithm's, relu)")
    latency.add_options(p.add_argument_group("sim-to-real (a task written against the task interface)"))
    added = set()
    for entry in ALGOS.values():
        options = entry.options()
        new = [o for o in options if o.dest not in added]
        if not new:
            continue
        title = entry.title + (" (and the shared ones above)" if len(new) < len(options) else "")
        group = p.add_argument_group(title)
        for o in new:
            group.add_argument(o.flag, dest=o.dest, **o.kwargs)
            added.add(o.dest)
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
            for k, (default, text) in entry.experimental().items():
                print("  %-15s %s: %s (default %s)" % (k, name, text, default))
        parser.exit()


def experimental_settings(args, name):
    """{setting: value} of args.set (NAME=VALUE each) for algorithm name; CommandError naming a
    setting it does not have (another algorithm's, or none) or a value of the wrong kind."""
    known = ALGOS[name].experimental()
    out = {}
    for item in getattr(args, "set", None) or []:
        key, eq, text = item.partition("=")
        key = key.strip().replace("-", "_")
        if not eq or not key or not text.strip():
            raise CommandError("--set takes NAME=VALUE, got %r" % item)
        if key not in known:
            others = [other for other, entry in ALGOS.items() if key in entry.experimental()]
            raise CommandError("--set %s: %s" % (key, "a setting of %s, not %s" % (", ".join(others), name) if others else
                               "no such experimental setting; --help-all lists them (%s)" % ", ".join(sorted(known))))
        default = known[key][0]
        try:
            if isinstance(default, bool):
                if text.strip().lower() not in ("true", "false", "on", "off", "1", "0"):
                    raise ValueError(text)
                out[key] = text.strip().lower() in ("true", "on", "1")
            elif isinstance(default, int):
                out[key] = int(text)
            else:
                out[key] = float(text)
        except ValueError:
            raise CommandError("--set %s=%s: not %s" % (key, text, "true or false" if isinstance(default, bool) else "a whole number" if isinstance(default, int) else "a number")) from None
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
        result = entry.run(args, callbacks)
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


def suggested_algo(args):
    """The algorithm for a run that names none: the task's suggestion (its ALGO) unless an option
    given belongs to another algorithm, else DEFAULT_ALGO."""
    found = getattr(args, "found", None)
    if found is None:
        try:
            found = tasks.resolve(args.task)
        except TaskError:
            return DEFAULT_ALGO  # check() reports the task
    algo = found.algo
    if algo not in ALGOS:
        return DEFAULT_ALGO
    own = {o.dest for o in ALGOS[algo].options()}
    given_elsewhere = any(o.dest not in own and getattr(args, o.dest, None) is not None for e in ALGOS.values() for o in e.options())
    own_set = set(ALGOS[algo].experimental())
    given_elsewhere = given_elsewhere or any(item.partition("=")[0].strip().replace("-", "_") not in own_set for item in getattr(args, "set", None) or [])
    return DEFAULT_ALGO if given_elsewhere else algo


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
    own = {o.dest for o in entry.options()}
    for other, other_entry in ALGOS.items():
        for o in other_entry.options():
            if o.dest not in own and getattr(args, o.dest, None) is not None:
                raise CommandError("%s is a %s option; it does not apply to %s%s" % (o.flag, other, "--algo " + name if not chosen else name,
                                   ", the algorithm this run takes without --algo; name one with --algo" if chosen else ""))
    args.algo = name
    args.experimental = experimental_settings(args, name)
    if not isinstance(entry, OffPolicy) and args.nominal and not args.found.compiled:
        raise CommandError("--nominal needs a task written against the task interface (a built-in task, a task file or module: docs/tasks.md), not %s" % args.task)
    args.perturbations, said = latency.perturbations(args, args.found)
    if said and not args.quiet:
        print(said, file=sys.stderr if args.json else sys.stdout)
    if args.steps is None:
        suggests = args.found.training if isinstance(entry, OffPolicy) else args.found.training_ppo
        args.steps = suggests.get("steps", DEFAULT_STEPS)
    if args.out is None:
        args.out = "%s-%s.mrlp" % ((args.task if args.found.kind == "mujoco" else args.found.name).replace("/", "_").lower(), name)
    if args.run_dir is None:
        args.run_dir = run_folder_of(args.out)
    if os.path.isdir(args.out):
        raise CommandError("--out %s is a folder; give a file name such as %s" % (args.out, os.path.join(args.out, "policy.mrlp")))
    entry.check(args)
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
