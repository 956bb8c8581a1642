"""Many copies of a task written against the task interface (docs/tasks.md), stepped together in
compiled code, with the surface of MujocoVectorEnv (num_envs, obs_dim, act_dim, the spaces,
reset(seed), step(actions) with same-step resets, infos["final_obs"] and infos["episode"]), so
that PPO (algos/ppo.py) trains a task as it trains a MuJoCo one.

Each copy is one env array of envs/task.py's Layout (its return so far, parameters, state,
uniforms, action and the sim-to-real perturbations' arrays) and one splitmix64 generator; the
step and the reset are the task's episode (envs/episode.py), the training loop's and the
evaluation's own, compiled once per task (bound_copy with CompiledTask.bindings, cached on disk
under the task's key). The task's start curriculum
(curriculum() over TRAINING's curriculum_steps) narrows every copy's start ranges as the run
goes (set_step).

    envs = TaskVectorEnv(CompiledTask(quadrotor, perturbations=training(quadrotor)), 64)
    obs, _ = envs.reset(seed=0)
    obs, rewards, terminated, truncated, infos = envs.step(actions)   # actions in the task's units
"""
import numpy as np

from ..nn.jit import bound_copy, jit
from ..nn.rng import new_rng
from .episode import RETURN


class TaskVectorEnv:
    """num_envs copies of a CompiledTask (envs/task.py) under its training parameters and
    perturbations, stepped in compiled code (see the module's docstring)."""

    def __init__(self, task, num_envs=1):
        if int(num_envs) < 1:
            raise ValueError("num_envs must be at least 1, got %r" % (num_envs,))
        self.task = task
        self.num_envs = n = int(num_envs)
        self.obs_dim, self.act_dim = task.obs_dim, task.act_dim
        self.max_episode_steps = getattr(task.module, "EPISODE_STEPS", None)
        self.envs = np.stack([task.new_env() for _ in range(n)])
        self.rngs = np.zeros(n, np.uint64)
        self._obs = np.zeros((n, self.obs_dim), np.float32)
        self._step = 0
        self._needs_reset = True
        self._kernels = None
        try:
            from gymnasium.spaces import Box
            from gymnasium.vector.utils import batch_space

            high = np.full(self.obs_dim, np.inf, np.float32)
            self.single_observation_space = Box(-high, high, dtype=np.float32)
            self.single_action_space = Box(task.low, task.high, dtype=np.float32)
            self.observation_space = batch_space(self.single_observation_space, n)
            self.action_space = batch_space(self.single_action_space, n)
        except ImportError:  # gymnasium is optional: what PPO reads of the spaces
            self.single_action_space = _Bounds(task.low, task.high)

    def _compiled(self):
        if self._kernels is None:
            b = self.task.bindings
            self._kernels = bound_copy(step_copies, "step_copies_" + self.task.key, b, jit)
        return self._kernels

    def set_step(self, step):
        """The run's step: the task's curriculum (if any) sets every copy's start ranges for it;
        they apply from each copy's next episode."""
        self._step = int(step)
        if getattr(self.task.module, "curriculum", None) is not None and self.task.training.get("curriculum_steps"):
            for env in self.envs:
                self.task.curriculum(env, self._step)

    def reset(self, seed=None, options=None):
        """Start every copy's episode; seed: copy i draws from a generator seeded seed + i (and
        its perturbation stream from that)."""
        base = 0 if seed is None else int(seed)
        for i in range(self.num_envs):
            self.rngs[i] = new_rng(base + i)[0]
            self.envs[i, :] = self.task.new_env()
        self.set_step(self._step)
        self._call(np.zeros((self.num_envs, self.act_dim)), True)
        self._needs_reset = False
        return self._obs.copy(), {}

    def step(self, actions):
        """Step every copy with actions (num_envs, act_dim) in the task's units; finished copies
        start their next episode in the same step (the observation returned is its first; the
        last is in infos["final_obs"])."""
        if self._needs_reset:
            raise RuntimeError("call reset() before step()")
        actions = np.ascontiguousarray(actions, np.float64)
        if actions.shape != (self.num_envs, self.act_dim):
            raise ValueError("actions must have shape (%d, %d) (num_envs, action size), got %s" % (self.num_envs, self.act_dim, actions.shape))
        rewards, terminated, truncated, final_obs, returns, lengths = self._call(actions, False)
        infos = {}
        done = terminated | truncated
        if done.any():
            infos = {"final_obs": final_obs, "_final_obs": done, "episode": {"r": returns, "l": lengths}, "_episode": done.copy()}
        return self._obs.copy(), rewards, terminated, truncated, infos

    def _call(self, actions, begin):
        n = self.num_envs
        out = (np.zeros(n), np.zeros(n, np.bool_), np.zeros(n, np.bool_), np.zeros((n, self.obs_dim), np.float32), np.zeros(n), np.zeros(n, np.int64))
        self._compiled()(self.envs, self.rngs, actions, self._obs, *out, begin)
        return out

    def close(self, **kwargs):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _Bounds:
    def __init__(self, low, high):
        self.low, self.high = np.asarray(low, np.float32), np.asarray(high, np.float32)
        self.shape = self.low.shape


# ---------------------------------------------------------------- compiled, bound per task
# the names a bound copy sees in place of these: the task's episode (envs/episode.py, bound to the
# task in CompiledTask.bindings) and the episode's step count in its array
episode_begin = episode_reset = episode_set_action = episode_step = None
T = 0


def step_copies(envs, rngs, actions, obs, rewards, terminated, truncated, final_obs, returns, lengths, begin):
    """One step of every copy with actions in the task's units, as run_task steps one; a copy
    whose episode ends leaves its last observation in final_obs, its return and length in
    returns and lengths, and starts its next episode as run_task starts one. begin: start every
    copy's first episode instead (its perturbation stream seeded from its generator)."""
    for i in range(envs.shape[0]):
        env = envs[i]
        rng = rngs[i : i + 1]
        o = obs[i]
        fresh = begin
        if begin:
            episode_begin(env, rng)
        else:
            episode_set_action(env, actions[i])
            r, done, cut = episode_step(env, rng, o)
            rewards[i] = r
            terminated[i] = done
            truncated[i] = cut
            if done or cut:
                for k in range(o.shape[0]):
                    final_obs[i, k] = o[k]
                returns[i] = env[RETURN]
                lengths[i] = np.int64(env[T])
                fresh = True
        if fresh:
            episode_reset(env, rng, o)
