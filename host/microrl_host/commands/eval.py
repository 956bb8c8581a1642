"""microrl eval: mean and std of a policy file's return over N episodes."""
import json

from .. import tasks
from . import CommandError
from .options import EPISODES, SEED
from .options import load_policy as _load_policy


def register(sub):
    p = sub.add_parser(
        "eval",
        help="evaluate a policy file: mean and std of the return",
        description="Run a policy file deterministically for N episodes and print the mean and std of the return. "
        "The task is --task's, or the built-in task of the policy's shape (observations and actions: %s). A task with a success test (the quadrotor: within 0.1 m of the target and below 0.5 rad/s after 5 s, "
        "no crash, from random starts within +-0.5 m and 30 deg of tilt) also reports its success rate, median final error and "
        "the share of episodes that ended early; a gymnasium id runs on gymnasium." % tasks.shapes(),
    )
    p.add_argument("policy", metavar="POLICY", help="a microrl policy file (.mrlp)")
    p.add_argument("--episodes", type=EPISODES, default=None, help="episodes to run (default: the task's suggestion, else 10; quadrotor 100)")
    p.add_argument("--task", "--env", dest="task", metavar="TASK", help="the task to run on: a built-in name, a task file or module (docs/tasks.md) "
                   "or a gymnasium id, e.g. Pendulum-v1 (default: the built-in task of the policy's shape)")
    p.add_argument("--seed", type=SEED, default=12345, help="seed of the episodes' start states, 0 to 2**32-1 (default 12345)")
    p.add_argument("--json", action="store_true", help="print one JSON object with mean, std, returns")
    p.set_defaults(func=run)


def load_policy(path):
    """microrl.policy.load with errors a user can act on."""
    return _load_policy(path, " (train one with: microrl train %s --out %s)" % (tasks.DEFAULT, path))


DRAWN_ONLY = "render draws a task written against docs/tasks.md (its picture() hook), not a gymnasium env"


def pick_task(policy, given, option="--task", drawn=False):
    """tasks.Found for the task to run policy on: given (a registry name, file, module or
    gymnasium id), else the built-in task of the policy's shape; CommandError when it does not fit.
    drawn: only tasks written against the task interface (render's), never a gymnasium env."""
    if given is None:
        names = tasks.by_shape(policy.obs_dim, policy.act_dim)
        if len(names) != 1:
            raise CommandError("this policy takes %d observations and gives %d actions; say which task with %s (%s)"
                               % (policy.obs_dim, policy.act_dim, option, "one of %s" % ", ".join(names) if names else
                                  "a task file or module with a picture() hook: %s" % DRAWN_ONLY if drawn else "a task file or module, or a gymnasium id"))
        given = names[0]
    try:
        found = tasks.resolve(given)
    except tasks.TaskError as e:
        raise CommandError(str(e)) from None
    if drawn and not found.compiled:
        raise CommandError("%s %s: %s" % (option, given, DRAWN_ONLY))
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
    if shape != (policy.obs_dim, policy.act_dim):
        raise CommandError("%s %s has %d observations and %d actions; this policy takes %d and gives %d" % (option, given, shape[0], shape[1], policy.obs_dim, policy.act_dim))
    return found


def run(args):
    policy = load_policy(args.policy)
    found = pick_task(policy, args.task)
    if args.episodes is None:
        args.episodes = found.training.get("eval_episodes", 10)
    if tasks.has_summary(found.module):
        return run_with_success(args, policy, found)
    if found.compiled:
        from microrl.evaluate import evaluate
        from microrl.task import Env

        mean, std, returns = evaluate(policy, Env(found.module), episodes=args.episodes, seed=args.seed)
    else:
        from ..envs.gym import evaluate_gym

        mean, std, returns = evaluate_gym(policy, found.gym_id, episodes=args.episodes, seed=args.seed)
    check_finite(args.policy, found.name, returns)
    if args.json:
        print(json.dumps({"policy": args.policy, "env": found.name, "episodes": args.episodes, "mean": mean, "std": std, "returns": list(returns)}))
    else:
        print("%s on %s: return %.1f +- %.1f over %d episodes" % (args.policy, found.name, mean, std, args.episodes))
    return 0


def run_with_success(args, policy, found):
    """A task with a success test: its evaluation starts, compiled (envs/task.py), and its summary."""
    from ..envs.task import CompiledTask, evaluate_policy

    rows = evaluate_policy(CompiledTask(found.module, name=found.name), policy, args.episodes, args.seed)
    returns = rows[:, 0]
    check_finite(args.policy, found.name, returns)
    result = {"policy": args.policy, "env": found.name, "episodes": args.episodes, "mean": float(returns.mean()), "std": float(returns.std()), "returns": [float(r) for r in returns]}
    summary = tasks.summary(found.module, rows)
    result.update(summary)
    if args.json:
        print(json.dumps(result))
    else:
        figures = "".join(", %s %.3g" % (k, v) for k, v in summary.items() if k != "success_rate")
        print("%s on %s: succeeds in %.0f%% of %d episodes%s, return %.1f +- %.1f"
              % (args.policy, found.name, 100 * result["success_rate"], args.episodes, figures, result["mean"], result["std"]))
    return 0


def check_finite(policy_path, task_name, returns):
    """CommandError unless every return is a finite number: never "return nan +- nan" with exit 0."""
    if not all(r == r and abs(r) != float("inf") for r in returns):
        raise CommandError("%s on %s: the returns are not finite numbers (%s): the policy's actions or the environment's states became NaN or infinite"
                           % (policy_path, task_name, ", ".join("%g" % r for r in list(returns)[:3])))
