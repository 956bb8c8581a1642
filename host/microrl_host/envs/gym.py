"""gymnasium environments for the host trainers: any env with Box observations and actions,
stepped from Python (TD3/SAC one copy, PPO a vector of copies: GymVectorEnv), and the one
evaluation loop of a policy on a gymnasium env."""
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
        raise TaskError("unknown task %r (%s); use a built-in task (%s: compiled, fastest), a task file or module (docs/tasks.md), a MuJoCo task "
                        "such as 'ant', or a gymnasium id with continuous actions, e.g. %s (module:EnvId imports the module that registers it)"
                        % (env_id, e, ", ".join(builtin_names()), ", ".join(GYM_EXAMPLES)))
    except ImportError as e:
        raise TaskError("task %r needs a package that is not installed: %s" % (env_id, e))
    from gymnasium import spaces

    if not isinstance(env.action_space, spaces.Box):
        env.close()
        raise TaskError("task %r has %s actions; microrl's algorithms (TD3, SAC, PPO) need continuous (Box) actions, e.g. %s" % (_name(env_id), type(env.action_space).__name__, ", ".join(GYM_EXAMPLES)))
    if not isinstance(env.observation_space, spaces.Box):
        env.close()
        raise TaskError("task %r has %s observations; only Box observations are supported (flatten others with gymnasium.wrappers.FlattenObservation)" % (_name(env_id), type(env.observation_space).__name__))
    if not np.all(np.isfinite(env.action_space.low)) or not np.all(np.isfinite(env.action_space.high)):
        env.close()
        raise TaskError("task %r has unbounded actions; microrl's algorithms need finite action bounds" % _name(env_id))
    if not has_time_limit(env):  # evaluations run episodes to their end: one that never ends would hang them
        if env is not env_id:
            env.close()
        raise TaskError("task %r has no time limit (no max_episode_steps in its spec, no TimeLimit wrapper): an episode that never ends would "
                        "never finish an evaluation; wrap it, gymnasium.wrappers.TimeLimit(env, max_episode_steps=N), or register it with "
                        "max_episode_steps=N" % (env_id if isinstance(env_id, str) else type(getattr(env_id, "unwrapped", env_id)).__name__))
    return env


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


def _name(env):
    """An id, spec or Env as its name for messages."""
    if isinstance(env, str):
        return env
    spec = getattr(env, "spec", None) if not hasattr(env, "entry_point") else env
    return spec.id if spec is not None else type(getattr(env, "unwrapped", env)).__name__


class GymVectorEnv:
    """num_envs copies of a gymnasium environment with Box spaces, stepped one after another from
    Python: PPO's environments where no compiled MuJoCo family serves the task (envs/mujoco.py's
    MujocoVectorEnv, whose surface this one has). env: an id (or `module:Id`), an EnvSpec, or an
    Env made by gym.make (its spec makes the copies). Finished copies reset within the step (SAME_STEP): infos["final_obs"] (rows valid where
    infos["_final_obs"]) holds their last observations, infos["episode"] = {"r", "l"} (mask
    "_episode") their returns and lengths."""

    def __init__(self, env, num_envs=1, max_episode_steps=None):
        n = int(num_envs)
        if n < 1:
            raise ValueError("num_envs must be at least 1, got %r" % (num_envs,))
        kwargs = {"max_episode_steps": int(max_episode_steps)} if max_episode_steps else {}
        if hasattr(env, "action_space"):  # a user's Env: copies from its spec
            if getattr(env, "spec", None) is None:
                raise TaskError("%s has no spec to make copies from; register it (gymnasium.register) and give its id" % _name(env))
            env = env.spec
        make = lambda: make_gym_env(env, **kwargs)  # noqa: E731
        self.envs, self.closed = [], False
        try:
            for _ in range(n):
                self.envs.append(make())
        except BaseException:
            self.close()
            raise
        first = self.envs[0]
        self.num_envs = n
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.obs_dim = int(np.prod(first.observation_space.shape))
        self.act_dim = int(np.prod(first.action_space.shape))
        self._act_shape = first.action_space.shape
        self._return = np.zeros(n)
        self._length = np.zeros(n, dtype=np.int64)
        self.closed = False

    def reset(self, seed=None, options=None):
        """Reset every copy; seed: an int (copy i gets seed + i) or None."""
        obs = np.zeros((self.num_envs, self.obs_dim))
        for i, env in enumerate(self.envs):
            obs[i] = np.asarray(env.reset(seed=None if seed is None else int(seed) + i)[0], np.float64).reshape(-1)
        self._return[:] = 0.0
        self._length[:] = 0
        return obs, {}

    def step(self, actions):
        """Step every copy with actions (num_envs, act_dim): (obs, rewards, terminated, truncated, infos)."""
        n = self.num_envs
        obs = np.zeros((n, self.obs_dim))
        rewards = np.zeros(n)
        terminated = np.zeros(n, bool)
        truncated = np.zeros(n, bool)
        final = None
        for i, env in enumerate(self.envs):
            o, r, term, trunc, _ = env.step(np.asarray(actions[i], env.action_space.dtype).reshape(self._act_shape))
            obs[i] = np.asarray(o, np.float64).reshape(-1)
            rewards[i], terminated[i], truncated[i] = r, term, trunc
            if term or trunc:
                if final is None:
                    final = obs.copy()
                final[i] = obs[i]
                obs[i] = np.asarray(env.reset()[0], np.float64).reshape(-1)
        self._return += rewards
        self._length += 1
        infos = {}
        done = terminated | truncated
        if final is not None:
            infos["final_obs"], infos["_final_obs"] = final, done.copy()
            infos["episode"] = {"r": np.where(done, self._return, 0.0), "l": np.where(done, self._length, 0)}
            infos["_episode"] = done.copy()
            self._return[done] = 0.0
            self._length[done] = 0
        return obs, rewards, terminated, truncated, infos

    def close(self, **kwargs):
        for env in self.envs:
            env.close()
        self.envs = []
        self.closed = True


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
