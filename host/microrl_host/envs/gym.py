"""gymnasium environments for the host trainers: any env with Box observations and actions,
stepped from Python (TD3/SAC), and the one evaluation loop of a policy on a gymnasium env."""
import numpy as np

from ..tasks import GYM_EXAMPLES, TaskError, builtin_names


class GymTask:
    """A gymnasium environment with Box observations and actions, stepped from Python: env is
    its id, or an Env (the Python API's; evaluations run on a fresh one made from its spec, else
    on it, after which training starts a new episode)."""

    compiled = False

    def __init__(self, env, name=None):
        self.name = name or env
        self.gym_env = None if isinstance(env, str) else env
        self.env = make_gym_env(env)
        self.obs_dim = int(np.prod(self.env.observation_space.shape))
        self.act_dim = int(np.prod(self.env.action_space.shape))
        self.low = np.asarray(self.env.action_space.low, np.float32).reshape(-1)
        self.high = np.asarray(self.env.action_space.high, np.float32).reshape(-1)
        self.obs = None
        self.episode_return = 0.0

    def close(self):
        if self.gym_env is None:  # a user's Env stays theirs to close
            self.env.close()


def make_gym_env(env_id, **kwargs):
    """gymnasium.make with errors a user can act on (TaskError); an Env given in place of the id
    is checked the same way and returned."""
    try:
        import gymnasium as gym
    except ImportError as e:  # pragma: no cover - gymnasium is a core dependency
        raise TaskError("gymnasium is not installed (pip install gymnasium): %s" % e)
    try:
        env = env_id if hasattr(env_id, "action_space") else gym.make(env_id, **kwargs)
    except gym.error.Error as e:
        mujoco_id = _mujoco_id(env_id)
        if mujoco_id:  # a name only `train --algo ppo` takes: every command takes the id
            raise TaskError("unknown task %r: that short name of the MuJoCo task %s is `microrl train --algo ppo`'s; here give its gymnasium id, %s" % (env_id, mujoco_id, mujoco_id))
        raise TaskError("unknown task %r (%s); use a built-in task (%s: compiled, fastest), a task file or module (docs/tasks.md), or a gymnasium id with "
                        "continuous actions, e.g. %s (module:EnvId imports the module that registers it)"
                        % (env_id, e, ", ".join(builtin_names()), ", ".join(GYM_EXAMPLES)))
    except ImportError as e:
        raise TaskError("task %r needs a package that is not installed: %s" % (env_id, e))
    from gymnasium import spaces

    if not isinstance(env.action_space, spaces.Box):
        env.close()
        raise TaskError("task %r has %s actions; TD3 and SAC need continuous (Box) actions, e.g. %s" % (env_id, type(env.action_space).__name__, ", ".join(GYM_EXAMPLES)))
    if not isinstance(env.observation_space, spaces.Box):
        env.close()
        raise TaskError("task %r has %s observations; only flat Box observations are supported" % (env_id, type(env.observation_space).__name__))
    if not np.all(np.isfinite(env.action_space.low)) or not np.all(np.isfinite(env.action_space.high)):
        env.close()
        raise TaskError("task %r has unbounded actions; TD3 and SAC need finite action bounds" % env_id)
    if not has_time_limit(env):  # evaluations run episodes to their end: one that never ends would hang them
        if env is not env_id:
            env.close()
        raise TaskError("task %r has no time limit (no max_episode_steps in its spec, no TimeLimit wrapper): an episode that never ends would "
                        "never finish an evaluation; wrap it, gymnasium.wrappers.TimeLimit(env, max_episode_steps=N), or register it with "
                        "max_episode_steps=N" % (env_id if isinstance(env_id, str) else type(getattr(env_id, "unwrapped", env_id)).__name__))
    return env


def _mujoco_id(name):
    """The gymnasium id of a short MuJoCo name such as 'ant' (Ant-v5), else None."""
    from .mujoco import UnknownTaskError, resolve_task

    try:
        return resolve_task(name) if isinstance(name, str) else None
    except UnknownTaskError:
        return None


def has_time_limit(env):
    """Whether a gymnasium env ends its episodes after a number of steps (a TimeLimit wrapper, or
    its spec's max_episode_steps)."""
    from gymnasium.wrappers import TimeLimit

    spec = getattr(env, "spec", None)
    if spec is not None and spec.max_episode_steps:
        return True
    while env is not None:
        if isinstance(env, TimeLimit):
            return True
        env = getattr(env, "env", None)
    return False


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
    """(mean, std, returns) of a policy on the gymnasium env env_id (see rollout_returns); an Env
    in its place: on a fresh one made from its spec, else on it."""
    given = not isinstance(env_id, str)
    if given and getattr(env_id, "spec", None) is not None:
        env_id, given = env_id.spec, False
    env = env_id if given else make_gym_env(env_id)
    try:
        return rollout_returns(policy, env, episodes, seed)
    finally:
        if not given:
            env.close()
