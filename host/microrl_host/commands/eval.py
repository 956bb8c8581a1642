"""microrl eval: mean and std of a policy file's return over N episodes."""
import json
import os

from . import CommandError

PENDULUM = "pendulum"


def register(sub):
    p = sub.add_parser(
        "eval",
        help="evaluate a policy file: mean and std of the return",
        description="Run a policy file deterministically for N episodes and print the mean and std of the return. "
        "Pendulum-shaped policies (3 observations, 1 action) run on the device core's Pendulum by default; "
        "any other policy needs --env with a gymnasium id.",
    )
    p.add_argument("policy", metavar="POLICY", help="a microrl policy file (.mrlp)")
    p.add_argument("--episodes", type=int, default=10, help="episodes to run (default 10)")
    p.add_argument("--env", metavar="ID", help="'pendulum' (the device core's, default for 3-in 1-out policies) or a gymnasium id, e.g. Pendulum-v1")
    p.add_argument("--seed", type=int, default=12345, help="seed of the episodes' start states (default 12345)")
    p.add_argument("--json", action="store_true", help="print one JSON object with mean, std, returns")
    p.set_defaults(func=run)


def load_policy(path):
    """microrl.policy.load with errors a user can act on."""
    from microrl.policy import PolicyFileError, load

    if not os.path.exists(path):
        raise CommandError("no policy file at %s (train one with: microrl train pendulum --out %s)" % (path, path))
    if os.path.isdir(path):
        raise CommandError("%s is a folder; give a policy file (.mrlp)" % path)
    try:
        return load(path)
    except PolicyFileError as e:
        raise CommandError(str(e))


def pick_env(policy, env):
    """'pendulum' or the gymnasium id to run policy on; CommandError when it does not fit."""
    from microrl import pendulum

    pendulum_shaped = policy.obs_dim == pendulum.OBS_DIM and policy.act_dim == pendulum.ACT_DIM
    if env is None:
        if not pendulum_shaped:
            raise CommandError("this policy takes %d observations and gives %d actions; say which environment with --env (a gymnasium id)" % (policy.obs_dim, policy.act_dim))
        return PENDULUM
    if env.lower() == PENDULUM:
        if not pendulum_shaped:
            raise CommandError("--env pendulum needs a policy with 3 observations and 1 action; this one has %d and %d" % (policy.obs_dim, policy.act_dim))
        return PENDULUM
    return env


def run(args):
    from ..envs.gym import TaskError, evaluate_gym, make_gym_env

    if args.episodes < 1:
        raise CommandError("--episodes must be at least 1, got %d" % args.episodes)
    policy = load_policy(args.policy)
    env_id = pick_env(policy, args.env)
    if env_id == PENDULUM:
        from microrl.evaluate import evaluate
        from microrl.pendulum import Pendulum

        mean, std, returns = evaluate(policy, Pendulum(), episodes=args.episodes, seed=args.seed)
    else:
        try:
            env = make_gym_env(env_id)
        except TaskError as e:
            raise CommandError(str(e))
        shape = (env.observation_space.shape, env.action_space.shape)
        env.close()
        obs_dim = int(__import__("numpy").prod(shape[0]))
        act_dim = int(__import__("numpy").prod(shape[1]))
        if (obs_dim, act_dim) != (policy.obs_dim, policy.act_dim):
            raise CommandError("%s has %d observations and %d actions; this policy takes %d and gives %d" % (env_id, obs_dim, act_dim, policy.obs_dim, policy.act_dim))
        mean, std, returns = evaluate_gym(policy, env_id, episodes=args.episodes, seed=args.seed)
    if args.json:
        print(json.dumps({"policy": args.policy, "env": env_id, "episodes": args.episodes, "mean": mean, "std": std, "returns": list(returns)}))
    else:
        print("%s on %s: return %.1f +- %.1f over %d episodes" % (args.policy, env_id, mean, std, args.episodes))
    return 0
