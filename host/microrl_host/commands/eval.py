"""microrl eval: mean and std of a policy file's return over N episodes."""
import json
import sys

from microrl.refusals import count

from .. import tasks
from . import CommandError, latency
from .options import EPISODES, SEED
from .options import load_policy as _load_policy


def register(sub):
    p = sub.add_parser(
        "eval",
        help="evaluate a policy file: mean and std of the return",
        description="Run a policy file deterministically for N episodes and print the mean and std of the return. "
        "The task is --task's, or the built-in task of the policy's shape (observations and actions: %s). A task with a success test (the quadrotor: within 0.1 m of the target and below 0.5 rad/s after 5 s, "
        "no crash, from random starts within +-0.5 m and 30 deg of tilt) also reports its success rate, median final error and "
        "the share of episodes that ended early; a gymnasium id runs on gymnasium. A task with sim-to-real perturbations "
        "(the quadrotor's observation noise, disturbances and varied airframe; docs/sim-to-real.md), or an action delay given here, "
        "is evaluated twice: nominal, and perturbed (the same starts)." % tasks.shapes(),
    )
    p.add_argument("policy", metavar="POLICY", help="a microrl policy file (.mrlp)")
    p.add_argument("--episodes", type=EPISODES, default=None, help="episodes to run (default: the task's suggestion, else 10; quadrotor 100)")
    p.add_argument("--task", "--env", dest="task", metavar="TASK", help="the task to run on: a built-in name, a task file or module (docs/tasks.md) "
                   "or a gymnasium id, e.g. Pendulum-v1 (default: the built-in task of the policy's shape)")
    p.add_argument("--seed", type=SEED, default=12345, help="seed of the episodes' start states, 0 to 2**32-1 (default 12345)")
    p.add_argument("--json", action="store_true", help="print one JSON object with mean, std, returns (nominal), and under 'perturbed' "
                   "the same figures and the perturbations")
    latency.add_options(p, training=False)
    p.set_defaults(func=run)


def load_policy(path):
    """microrl.policy.load with errors a user can act on."""
    return _load_policy(path, " (train one with: microrl train %s --out %s)" % (tasks.DEFAULT, path))


DRAWN_ONLY = "render draws a task written against docs/tasks.md (its picture() hook), not a gymnasium env"


def pick_task(policy, given, option="--task", drawn=False):
    """tasks.Found for the task to run policy on: given (a registry name, file, module or
    gymnasium id), else the built-in task of the policy's shape; CommandError when it does not fit.
    drawn: only tasks written against the task interface (render's), never a gymnasium env."""
    from microrl.task import task_obs_dim

    obs_dim = task_obs_dim(policy)  # a policy that observes pending actions: its task's part
    if given is None:
        names = tasks.by_shape(obs_dim, policy.act_dim)
        if len(names) != 1:
            raise CommandError("this policy takes %s and gives %s; say which task with %s (%s)"
                               % (count(obs_dim, "observation"), count(policy.act_dim, "action"), option, "one of %s" % ", ".join(names) if names else
                                  "a task file or module with a picture() hook: %s" % DRAWN_ONLY if drawn else "a task file or module, or a gymnasium id"))
        given = names[0]
    try:
        found = tasks.resolve(given)
    except tasks.TaskError as e:
        raise CommandError(str(e)) from None
    if drawn and not found.compiled:
        raise CommandError("%s %s: %s" % (option, given, DRAWN_ONLY))
    if getattr(policy, "pending", 0) and not found.compiled:
        raise CommandError("%s %s: this policy observes its %d pending actions (trained under an action delay), which a task written against "
                           "the task interface gives (docs/sim-to-real.md), not a gymnasium env" % (option, given, policy.pending))
    if found.compiled:
        shape = (found.module.OBS_DIM, found.module.ACT_DIM)
    else:
        from ..envs.gym import make_gym_env

        try:
            env = make_gym_env(found.gym_id)
        except tasks.TaskError as e:
            raise CommandError(str(e)) from None
        shape = (int(__import__("numpy").prod(env.observation_space.shape)), int(__import__("numpy").prod(env.action_space.shape)))
        env.close()
    if shape != (obs_dim, policy.act_dim):
        raise CommandError("%s %s has %s and %s; this policy takes %d and gives %d" % (option, given, count(shape[0], "observation"), count(shape[1], "action"), obs_dim, policy.act_dim))
    return found


def own_delay(policy, perturbed, delay_asked=False):
    """A policy that observes its pending actions runs under its own action delay, in both
    evaluations: CommandError when another delay was asked (delay_asked: --action-delay or
    --latency-from was given, so no action_delay in perturbed means 0); returns the line that
    says so."""
    pending = getattr(policy, "pending", 0)
    if not pending:
        return None
    asked = (perturbed or {}).get("action_delay", 0 if delay_asked else pending)
    if asked != pending:
        raise CommandError("this policy was trained with an action delay of %d steps and observes its %d pending actions: evaluate it with "
                           "--action-delay %d or without the option (asked: %d steps)" % (pending, pending, pending, asked))
    return "this policy observes its %d pending actions: both evaluations run under its %d-step action delay" % (pending, pending)


def run(args):
    policy = load_policy(args.policy)
    found = pick_task(policy, args.task)
    if args.episodes is None:
        args.episodes = found.training.get("eval_episodes", 10)
    perturbed, said = perturbed_settings(args, found)
    delay_asked = getattr(args, "action_delay", None) is not None or getattr(args, "latency_from", None) is not None
    for line in (said, own_delay(policy, perturbed, delay_asked)):
        if line:
            print(line, file=sys.stderr if args.json else sys.stdout)
    if tasks.has_summary(found.module):
        return run_with_success(args, policy, found, perturbed)
    result = {"policy": args.policy, "env": found.name, "episodes": args.episodes}
    for where, chosen in (("nominal", None), ("perturbed", perturbed)):
        if where == "perturbed" and not chosen:
            break
        if found.compiled:
            from microrl.evaluate import evaluate
            from microrl.task import policy_env

            mean, std, returns = evaluate(policy, policy_env(found.module, policy, chosen), episodes=args.episodes, seed=args.seed)
        else:
            from ..envs.gym import evaluate_gym

            mean, std, returns = evaluate_gym(policy, found.gym_id, episodes=args.episodes, seed=args.seed)
        check_finite(args.policy, found.name, returns)
        figures = {"mean": mean, "std": std, "returns": list(returns)}
        if where == "nominal":
            result.update(figures)
        else:
            result["perturbed"] = dict(figures, perturbations=chosen)
    if args.json:
        print(json.dumps(result))
        return 0
    print("%s on %s: return %.1f +- %.1f over %s" % (args.policy, found.name, result["mean"], result["std"], count(args.episodes, "episode")))
    if "perturbed" in result:
        p = result["perturbed"]
        print("  perturbed (%s): return %.1f +- %.1f" % (describe(p["perturbations"]), p["mean"], p["std"]))
    return 0


def perturbed_settings(args, found):
    """The perturbations of the second, perturbed evaluation ({name: value}, or None: none),
    and a line saying how a measured latency became steps: the task's training perturbations
    (microrl.perturb.training) and the action delay asked for."""
    chosen, said = latency.perturbations(args, found, training=False)
    if found.module is None:
        return None, said
    from microrl.perturb import training as training_perturbations

    own = training_perturbations(found.module)
    own.update(chosen or {})
    return own or None, said


def describe(perturbations):
    return ", ".join("%s %g" % (k, v) for k, v in sorted(perturbations.items()))


def run_with_success(args, policy, found, perturbed=None):
    """A task with a success test: its evaluation starts, compiled (envs/task.py), and its
    summary, nominal and (perturbed: {name: value}) under perturbations."""
    from ..envs.task import CompiledTask, evaluate_policy

    task = CompiledTask(found.module, name=found.name)
    result = {"policy": args.policy, "env": found.name, "episodes": args.episodes}
    lines = []
    for where, chosen in (("nominal", None), ("perturbed", perturbed)):
        if where == "perturbed" and not chosen:
            break
        rows = evaluate_policy(task, policy, args.episodes, args.seed, perturbations=chosen)
        returns = rows[:, 0]
        check_finite(args.policy, found.name, returns)
        figures = {"mean": float(returns.mean()), "std": float(returns.std()), "returns": [float(r) for r in returns]}
        summary = tasks.summary(found.module, rows)
        figures.update(summary)
        extra = "".join(", %s %.3g" % (k, v) for k, v in summary.items() if k != "success_rate")
        if where == "nominal":
            result.update(figures)
            lines.append("%s on %s: succeeds in %.0f%% of %s%s, return %.1f +- %.1f"
                         % (args.policy, found.name, 100 * figures["success_rate"], count(args.episodes, "episode"), extra, figures["mean"], figures["std"]))
        else:
            result["perturbed"] = dict(figures, perturbations=chosen)
            lines.append("  perturbed (%s): succeeds in %.0f%%%s, return %.1f +- %.1f"
                         % (describe(chosen), 100 * figures["success_rate"], extra, figures["mean"], figures["std"]))
    if args.json:
        print(json.dumps(result))
    else:
        print("\n".join(lines))
    return 0


def check_finite(policy_path, task_name, returns):
    """CommandError unless every return is a finite number: never "return nan +- nan" with exit 0."""
    if not all(r == r and abs(r) != float("inf") for r in returns):
        raise CommandError("%s on %s: the returns are not finite numbers (%s): the policy's actions or the environment's states became NaN or infinite"
                           % (policy_path, task_name, ", ".join("%g" % r for r in list(returns)[:3])))
