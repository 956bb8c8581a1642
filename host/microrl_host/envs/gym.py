"""gymnasium environments for the host trainers: any env with Box observations and actions,
stepped from Python (TD3/SAC), and the one evaluation loop of a policy on a gymnasium env."""
import numpy as np

EXAMPLE_ENVS = ("Pendulum-v1", "MountainCarContinuous-v0", "LunarLanderContinuous-v3", "BipedalWalker-v3")


class TaskError(ValueError):
    """A task (environment) that cannot be trained: unknown id, or not continuous actions."""


class GymTask:
    """A gymnasium environment with Box observations and actions, stepped from Python."""

    compiled = False

    def __init__(self, env_id):
        self.name = env_id
        self.env = make_gym_env(env_id)
        self.obs_dim = int(np.prod(self.env.observation_space.shape))
        self.act_dim = int(np.prod(self.env.action_space.shape))
        self.low = np.asarray(self.env.action_space.low, np.float32).reshape(-1)
        self.high = np.asarray(self.env.action_space.high, np.float32).reshape(-1)
        self.obs = None
        self.episode_return = 0.0

    def close(self):
        self.env.close()


def make_gym_env(env_id, **kwargs):
    """gymnasium.make with errors a user can act on (TaskError)."""
    try:
        import gymnasium as gym
    except ImportError as e:  # pragma: no cover - gymnasium is a core dependency
        raise TaskError("gymnasium is not installed (pip install gymnasium): %s" % e)
    try:
        env = gym.make(env_id, **kwargs)
    except gym.error.Error as e:
        raise TaskError("unknown task %r (%s); use 'pendulum' (compiled, fastest) or a gymnasium id with continuous actions, e.g. %s; short MuJoCo names such as 'ant' are --algo ppo's" % (env_id, e, ", ".join(EXAMPLE_ENVS)))
    except ImportError as e:
        raise TaskError("task %r needs a package that is not installed: %s" % (env_id, e))
    from gymnasium import spaces

    if not isinstance(env.action_space, spaces.Box):
        env.close()
        raise TaskError("task %r has %s actions; TD3 and SAC need continuous (Box) actions, e.g. %s" % (env_id, type(env.action_space).__name__, ", ".join(EXAMPLE_ENVS)))
    if not isinstance(env.observation_space, spaces.Box):
        env.close()
        raise TaskError("task %r has %s observations; only flat Box observations are supported" % (env_id, type(env.observation_space).__name__))
    if not np.all(np.isfinite(env.action_space.low)) or not np.all(np.isfinite(env.action_space.high)):
        env.close()
        raise TaskError("task %r has unbounded actions; TD3 and SAC need finite action bounds" % env_id)
    return env


def rollout_returns(policy, env, episodes, seed, clip=False):
    """(mean, std, returns) of a policy (obs -> action in env units) on a gymnasium env; episode
    e starts from reset(seed=seed + e); clip: clip actions to the bounds first."""
    low, high = env.action_space.low, env.action_space.high
    returns = []
    for e in range(episodes):
        obs, _ = env.reset(seed=seed + e)
        total = 0.0
        done = False
        while not done:
            act = np.asarray(policy(np.asarray(obs).reshape(-1)), np.float32)
            if clip:
                act = np.clip(act, low, high)
            obs, reward, terminated, truncated, _ = env.step(act.reshape(env.action_space.shape))
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    r = np.array(returns)
    return float(r.mean()), float(r.std()), returns


def evaluate_gym(policy, env_id, episodes=10, seed=12345):
    """(mean, std, returns) of a policy on the gymnasium env env_id (see rollout_returns)."""
    env = make_gym_env(env_id)
    try:
        return rollout_returns(policy, env, episodes, seed)
    finally:
        env.close()
