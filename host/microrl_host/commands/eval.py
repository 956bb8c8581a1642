"""microrl eval: mean and std of a policy file's return over N episodes."""
import json

from . import CommandError
from .options import EPISODES, SEED
from .options import load_policy as _load_policy

PENDULUM = "pendulum"
QUADROTOR = "quadrotor"


def register(sub):
    p = sub.add_parser(
        "eval",
        help="evaluate a policy file: mean and std of the return",
        description="Run a policy file deterministically for N episodes and print the mean and std of the return. "
        "Pendulum-shaped policies (3 observations, 1 action) run on the device core's Pendulum by default; "
        "quadrotor-shaped ones (22 observations, 4 motor commands) fly the hover task from random starts within +-0.5 m and "
        "30 deg of tilt and report the success rate (within 0.1 m of the target and below 0.5 rad/s after 5 s, no crash) "
        "and the final distance to the target; any other policy needs --env with a gymnasium id.",
    )
    p.add_argument("policy", metavar="POLICY", help="a microrl policy file (.mrlp)")
    p.add_argument("--episodes", type=EPISODES, default=None, help="episodes to run (default 10; quadrotor 100)")
    p.add_argument("--env", metavar="ID", help="'pendulum' (the device core's, default for 3-in 1-out policies), 'quadrotor' (default for 22-in 4-out) or a gymnasium id, e.g. Pendulum-v1")
    p.add_argument("--seed", type=SEED, default=12345, help="seed of the episodes' start states, 0 to 2**32-1 (default 12345)")
    p.add_argument("--json", action="store_true", help="print one JSON object with mean, std, returns")
    p.set_defaults(func=run)


def load_policy(path):
    """microrl.policy.load with errors a user can act on."""
    return _load_policy(path, " (train one with: microrl train pendulum --out %s)" % path)


def pick_env(policy, env):
    """'pendulum' or the gymnasium id to run policy on; CommandError when it does not fit."""
    from microrl import pendulum

    from microrl import quadrotor

    pendulum_shaped = policy.obs_dim == pendulum.OBS_DIM and policy.act_dim == pendulum.ACT_DIM
    quadrotor_shaped = policy.obs_dim == quadrotor.OBS_DIM and policy.act_dim == quadrotor.ACT_DIM
    if env is not None and env.lower() == QUADROTOR:
        if not quadrotor_shaped:
            raise CommandError("--env quadrotor needs a policy with 22 observations and 4 actions; this one has %d and %d" % (policy.obs_dim, policy.act_dim))
        return QUADROTOR
    if env is None and quadrotor_shaped:
        return QUADROTOR
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

    policy = load_policy(args.policy)
    env_id = pick_env(policy, args.env)
    if args.episodes is None:
        args.episodes = 100 if env_id == QUADROTOR else 10
    if env_id == QUADROTOR:
        return run_quadrotor(args, policy)
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
    if not all(r == r and abs(r) != float("inf") for r in returns):  # never "return nan +- nan" with exit 0
        raise CommandError("%s on %s: the returns are not finite numbers (%s): the policy's actions or the environment's states became NaN or infinite"
                           % (args.policy, env_id, ", ".join("%g" % r for r in list(returns)[:3])))
    if args.json:
        print(json.dumps({"policy": args.policy, "env": env_id, "episodes": args.episodes, "mean": mean, "std": std, "returns": list(returns)}))
    else:
        print("%s on %s: return %.1f +- %.1f over %d episodes" % (args.policy, env_id, mean, std, args.episodes))
    return 0


def run_quadrotor(args, policy):
    from ..envs.quadrotor import evaluate_policy, flight_summary

    rows = evaluate_policy(policy, args.episodes, args.seed)
    returns = rows[:, 0]
    result = {"policy": args.policy, "env": QUADROTOR, "episodes": args.episodes, "mean": float(returns.mean()), "std": float(returns.std()), "returns": [float(r) for r in returns]}
    result.update(flight_summary(rows))
    if args.json:
        print(json.dumps(result))
    else:
        print("%s on the quadrotor hover task: flies %.0f%% of %d episodes (within 0.1 m and 0.5 rad/s after 5 s, from +-0.5 m and 30 deg), "
              "final distance %.3f m (median), crashes %.0f%%, return %.1f +- %.1f"
              % (args.policy, 100 * result["success_rate"], args.episodes, result["position_error_m"], 100 * result["crash_rate"], result["mean"], result["std"]))
    return 0
