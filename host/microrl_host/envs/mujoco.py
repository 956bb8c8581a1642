"""Many copies of a gymnasium MuJoCo task, stepped together.

With MuJoCo 4, a task that reads no contact forces steps all copies with mujoco.batch.Batch: C
threads, one MjData per thread, the copies' states in rows, bit for bit a loop of mj_step. Other
tasks (or an older MuJoCo) give each copy its own MjData, one shared MjModel: a step sets every
copy's controls, then runs `mj_step` (and `mj_rnePostConstraint`, as gymnasium does) for all
copies from a few threads: both calls release the GIL, so the physics of different copies runs
in parallel while Python only loops over the copies. Observations, rewards and terminations are
then computed for all copies at once with numpy (Ant's, for a few copies, with ant_kernels), with
the same formulas (and the same floating-point operations) as gymnasium's own environments, so
that for the same states and actions the results are the same.

    envs = MujocoVectorEnv("Ant-v5", num_envs=64)
    obs, infos = envs.reset(seed=0)               # copy i is seeded seed + i, as gymnasium's vector envs
    obs, rewards, terminated, truncated, infos = envs.step(actions)

It is a gymnasium.vector.VectorEnv with autoreset_mode SAME_STEP: a copy that terminates or
reaches the time limit is reset within the same step; the observation returned is the new
episode's first, the last one is in infos["final_obs"][i] (rows valid where infos["_final_obs"]),
and infos["episode"] = {"r", "l"} (with mask "_episode") gives the finished episodes' returns
and lengths, as gymnasium's RecordEpisodeStatistics does.
"""
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from microrl.refusals import count

from ..tasks import MUJOCO_FAMILIES, UnknownTask, mujoco_id, mujoco_names

MUJOCO_HINT = "install it with: pip install 'microrl[mujoco]'  (mujoco and gymnasium[mujoco])"

# task families: which formulas serve which gymnasium ids (the task registry's table)
FAMILIES = MUJOCO_FAMILIES
# Ant's formulas run compiled (ant_kernels, numba) for fewer copies than this, with numpy for
# more: numpy's fixed cost per call (some 60 us a step) matters against one copy's physics (about
# 300 us) but not against 16 or more, and numba costs a process about 95 MB (LLVM and the loaded
# kernels), a third of PPO's memory on Ant. Both give gymnasium's results bit for bit.
COMPILED_BELOW = 16


class MujocoMissingError(ImportError):
    pass


def gym_id(task):
    """The gymnasium id of a MuJoCo task with compiled formulas (tasks.mujoco_id: "ant" ->
    "Ant-v5"); UnknownTask naming the choices for any other."""
    found = mujoco_id(task) if isinstance(task, str) else None
    if found is None:
        raise UnknownTask("unknown MuJoCo task %r; supported: %s" % (task, mujoco_names()))
    return found


def require_mujoco():
    """Import mujoco and gymnasium's MuJoCo environments, or raise MujocoMissingError saying how to install them."""
    try:
        import mujoco
        import gymnasium
        from gymnasium.envs.mujoco import mujoco_env  # noqa: F401  (needs gymnasium[mujoco])
    except ImportError as e:
        raise MujocoMissingError("MuJoCo is not available (%s); %s" % (e, MUJOCO_HINT)) from e
    return mujoco, gymnasium


def make_gymnasium_env(task, **kwargs):
    """gymnasium's own environment for a task (for evaluation and reference)."""
    _, gym = require_mujoco()
    return gym.make(gym_id(task), **kwargs)


def _clip(x, lo, hi):
    # np.clip's result through two ufuncs, without its Python wrapper (a few us a call)
    return np.minimum(np.maximum(x, lo), hi)


def _row_sum(x):
    # np.sum(x, axis=1) (the same pairwise summation per row), without the wrapper
    return np.add.reduce(x, axis=1)


def _row_all(x):
    return np.logical_and.reduce(x, axis=1)


class _Formulas:
    """Observation, reward and termination of one task family for a batch of copies, read from
    gymnasium's environment object so that its keyword arguments are honoured."""

    def __init__(self, task, env, model):
        import mujoco

        self.task = task
        self.family = FAMILIES[task]
        self.version = int(task.rsplit("-v", 1)[1])
        self.dt = env.dt
        g = lambda attr, default=None: getattr(env, attr, default)  # noqa: E731
        self.ctrl_cost_weight = g("_ctrl_cost_weight", 0.0)
        self.forward_reward_weight = g("_forward_reward_weight", 1.0)
        self.healthy_reward = g("_healthy_reward", 1.0)
        self.terminate_when_unhealthy = g("_terminate_when_unhealthy", True)
        self.healthy_z_range = g("_healthy_z_range")
        self.healthy_angle_range = g("_healthy_angle_range")
        self.healthy_state_range = g("_healthy_state_range")
        self.contact_force_range = g("_contact_force_range")
        self.contact_cost_weight = g("_contact_cost_weight", 0.0)
        self.contact_cost_range = g("_contact_cost_range")
        self.reset_noise_scale = g("_reset_noise_scale", 0.01)
        self.exclude_positions = g("_exclude_current_positions_from_observation", False)
        self.body_mass = np.array(model.body_mass)
        f = self.family
        # what to gather from each copy after a step
        self.need_cfrc = (f == "ant" and (self.version >= 5 or g("_use_contact_forces", False))) or (f == "humanoid")
        if f == "ant":  # compiled: ant_kernels
            main = g("_main_body", 1) if self.version >= 5 else "torso"
            self.xy_body = main if isinstance(main, int) else mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, main)
            obs_cfrc = g("_include_cfrc_ext_in_observation", False) if self.version >= 5 else g("_use_contact_forces", False)
            contact_cost_on = self.version >= 5 or g("_use_contact_forces", False)
            self.clip_forces = bool(obs_cfrc or contact_cost_on)
            self.forces_from = (1 if self.version >= 5 else 0) if obs_cfrc else -1
            self.obs_dim = model.nq + model.nv - (2 if self.exclude_positions else 0) + (6 * (model.nbody - max(self.forces_from, 0)) if obs_cfrc else 0)
            lo, hi = self.contact_force_range or (-1.0, 1.0)
            self.force_range = (float(lo), float(hi))
            zlo, zhi = self.healthy_z_range
            self.ant_params = np.array([self.dt, self.forward_reward_weight, self.healthy_reward, self.contact_cost_weight, zlo, zhi], np.float64)
            self.ant_flags = np.array([self.xy_body, self.version, bool(self.terminate_when_unhealthy), contact_cost_on], np.int64)
            self._ctrl_weights = {}  # the control cost weight in each actions type, as numpy casts it
            self._no_forces = np.zeros((1, 1, 6))
        self.humanoid = f == "humanoid"
        if self.humanoid:
            if self.version >= 5:  # optional parts, without the world body's rows (and the free joint's 6 for forces)
                self.obs_parts = [g("_include_cinert_in_observation"), g("_include_cvel_in_observation"), g("_include_qfrc_actuator_in_observation"), g("_include_cfrc_ext_in_observation")]
                self.obs_starts = (1, 1, 6, 1)
            else:  # v4: all four, whole
                self.obs_parts, self.obs_starts = [True] * 4, (0, 0, 0, 0)
        self.compiled = True  # Ant: ant_kernels (numba) or numpy; the vector env chooses (COMPILED_BELOW)
        # gaussian velocity noise for Ant and HalfCheetah, uniform for the others
        self.gaussian_qvel = f in ("ant", "cheetah")

    # -- reset noise, drawn from each copy's own generator in gymnasium's order
    def reset_state(self, rng, init_qpos, init_qvel):
        s = self.reset_noise_scale
        qpos = init_qpos + rng.uniform(low=-s, high=s, size=init_qpos.shape[0])
        if self.gaussian_qvel:
            qvel = init_qvel + s * rng.standard_normal(init_qvel.shape[0])
        else:
            qvel = init_qvel + rng.uniform(low=-s, high=s, size=init_qvel.shape[0])
        return qpos, qvel

    def _healthy_reward(self, healthy):
        if self.version >= 5:
            return healthy * self.healthy_reward
        if self.terminate_when_unhealthy:  # v4: (healthy or terminate) * reward, here always the reward
            return self.healthy_reward
        return healthy.astype(np.float64) * self.healthy_reward

    def observe(self, s):
        """Observations of the copies, (n, obs_dim) float64, from the gathered state s."""
        f = self.family
        # qpos and qvel lie side by side in s["qposvel"]: one slice is both
        qpos, qvel, posvel = s["qpos"], s["qvel"], s["qposvel"]
        if f == "pendulum":
            return posvel.copy()
        if f == "cheetah":
            return (posvel[:, 1:] if self.exclude_positions else posvel).copy()
        if f in ("hopper", "walker"):
            pos = qpos[:, 1:] if self.exclude_positions else qpos
            return np.concatenate((pos, _clip(qvel, -10, 10)), axis=1)
        if self.exclude_positions:
            posvel = posvel[:, 2:]
        n = qpos.shape[0]
        if f == "ant" and not self.compiled:
            cf = s["cfrc_clipped"] = _clip(s["cfrc_ext"], *self.force_range).reshape(n, -1) if self.clip_forces else np.empty((n, 0))  # reused by the contact cost
            if self.forces_from >= 0:
                return np.concatenate((posvel, cf[:, 6 * self.forces_from :]), axis=1)
            return posvel.copy()
        if f == "ant":
            from . import ant_kernels

            out = np.empty((n, self.obs_dim))
            cf = s["cfrc_clipped"] = np.empty((n, s["cfrc_ext"][0].size) if self.clip_forces else (n, 0))  # reused by the contact cost
            ant_kernels.observe(s["qposvel"], s["cfrc_ext"] if self.clip_forces else self._no_forces, out, 2 if self.exclude_positions else 0, self.clip_forces, self.forces_from, self.force_range[0], self.force_range[1], cf)
            return out
        # humanoid
        parts = [posvel]
        for use, key, start in zip(self.obs_parts, ("cinert", "cvel", "qfrc_actuator", "cfrc_ext"), self.obs_starts):
            if use:
                parts.append(s[key][:, start:].reshape(n, -1))
        return np.concatenate(parts, axis=1)

    def x_progress(self, s):
        """The quantity whose change over a step is the forward velocity (per copy)."""
        f = self.family
        if f == "ant":
            return s["xpos"][:, self.xy_body, :2].copy()
        if f == "humanoid":
            num = np.einsum("b,nbj->nj", self.body_mass, s["xipos"])
            return (num / self.body_mass.sum())[:, 0:2].copy()
        return s["qpos"][:, 0].copy()

    def reward_done(self, before, s, actions):
        """(reward, terminated, x_progress now) per copy after a step; before = x_progress before it."""
        f = self.family
        qpos, qvel = s["qpos"], s["qvel"]
        n = qpos.shape[0]
        if f == "pendulum":
            obs = self.observe(s)
            terminated = ~_row_all(np.isfinite(obs)) | (np.abs(obs[:, 1]) > 0.2)
            reward = (~terminated).astype(np.float64) if self.version >= 5 else np.ones(n)
            return reward, terminated, None
        if f == "ant" and not self.compiled:  # gymnasium's operations, one row per copy
            if actions.dtype.kind != "f":
                actions = actions.astype(np.float64)
            after = s["xpos"][:, self.xy_body, :2].copy()
            x_velocity = ((after - before) / self.dt)[:, 0]
            zlo, zhi = self.healthy_z_range
            z = qpos[:, 2]
            healthy = _row_all(np.isfinite(s["qposvel"])) & (zlo <= z) & (z <= zhi)
            forward = self.forward_reward_weight * x_velocity
            rewards = forward + self._healthy_reward(healthy)
            costs = self.ctrl_cost_weight * _row_sum(np.square(actions))
            if self.ant_flags[3]:  # the contact cost
                costs = costs + self.contact_cost_weight * _row_sum(np.square(s["cfrc_clipped"]))
            terminated = ~healthy if self.terminate_when_unhealthy else np.zeros(n, dtype=bool)
            return rewards - costs, terminated, after
        if f == "ant":
            from . import ant_kernels

            if actions.dtype.kind != "f":
                actions = actions.astype(np.float64)
            weight = self._ctrl_weights.get(actions.dtype)
            if weight is None:
                weight = self._ctrl_weights[actions.dtype] = np.array([self.ctrl_cost_weight], actions.dtype)
            after, rewards, terminated = np.empty((n, 2)), np.empty(n), np.empty(n, dtype=bool)
            ant_kernels.reward_done(s["qposvel"], s["xpos"], s["cfrc_clipped"], actions, weight, before, after, self.ant_params, self.ant_flags, rewards, terminated)
            return rewards, terminated, after
        after = self.x_progress(s)
        velocity = (after - before) / self.dt
        x_velocity = velocity[:, 0] if velocity.ndim == 2 else velocity
        if f == "humanoid":
            ctrl_cost = self.ctrl_cost_weight * _row_sum(np.square(s["ctrl"]))
        else:
            ctrl_cost = self.ctrl_cost_weight * _row_sum(np.square(actions))
        if f == "cheetah":
            return self.forward_reward_weight * x_velocity - ctrl_cost, np.zeros(n, dtype=bool), after
        if f == "hopper":
            state = np.concatenate([qpos, qvel], axis=1)[:, 2:]
            slo, shi = self.healthy_state_range
            zlo, zhi = self.healthy_z_range
            alo, ahi = self.healthy_angle_range
            z, angle = qpos[:, 1], qpos[:, 2]
            healthy = _row_all((slo < state) & (state < shi)) & (zlo < z) & (z < zhi) & (alo < angle) & (angle < ahi)
        elif f == "walker":
            zlo, zhi = self.healthy_z_range
            alo, ahi = self.healthy_angle_range
            z, angle = qpos[:, 1], qpos[:, 2]
            healthy = (zlo < z) & (z < zhi) & (alo < angle) & (angle < ahi)
        else:  # humanoid
            zlo, zhi = self.healthy_z_range
            healthy = (zlo < qpos[:, 2]) & (qpos[:, 2] < zhi)
        forward = self.forward_reward_weight * x_velocity
        rewards = forward + self._healthy_reward(healthy)
        costs = ctrl_cost
        if f == "humanoid" and self.version >= 5:  # v4 has no contact cost
            contact = self.contact_cost_weight * _row_sum(np.square(s["cfrc_ext"]).reshape(n, -1))
            lo, hi = self.contact_cost_range
            costs = ctrl_cost + np.clip(contact, lo, hi)
        terminated = ~healthy if self.terminate_when_unhealthy else np.zeros(n, dtype=bool)
        return rewards - costs, terminated, after


class _StageTimerOff:
    """MuJoCo's Python bindings install a clock as mjcb_time when they load, so that every mj_step
    times its stages into MjData.timer: a clock_gettime call at each stage's start and end. Without
    it Ant's physics took 0.86 of the CPU here (bench/mujoco_timer.py). Training reads no timers: while
    copies step, this sets the C callback to NULL (MuJoCo's own default, timers stay zero) and puts
    the bindings' clock back afterwards. The physics is the same bit for bit (tested). A callback the
    user set with mujoco.set_mjcb_time is left alone, and where libmujoco cannot be found (another
    platform's layout) nothing changes."""

    def __init__(self):
        self.enabled = True
        self._lock = threading.Lock()
        self._depth = 0
        self._saved = None
        self._slot = False  # not looked up yet; None: not found

    def _find_slot(self, mujoco):
        try:
            import ctypes
            import glob

            here = os.path.dirname(mujoco.__file__)
            libs = [f for pattern in ("libmujoco.so*", "libmujoco*.dylib", "mujoco.dll") for f in glob.glob(os.path.join(here, pattern))]
            return ctypes.c_void_p.in_dll(ctypes.CDLL(sorted(libs)[0]), "mjcb_time") if libs else None
        except (OSError, ValueError, AttributeError):
            return None

    def enter(self, mujoco):
        with self._lock:
            if self._depth == 0:
                if self._slot is False:
                    self._slot = self._find_slot(mujoco)
                self._saved = None
                # the bindings' clock is there when no Python callback is set (bindings that cannot
                # say so keep theirs)
                user_callback = getattr(mujoco, "get_mjcb_time", lambda: True)()
                if self.enabled and self._slot is not None and self._slot.value and user_callback is None:
                    self._saved = self._slot.value
                    self._slot.value = None
            self._depth += 1

    def leave(self):
        with self._lock:
            self._depth -= 1
            if self._depth == 0 and self._saved is not None:
                self._slot.value = self._saved
                self._saved = None


STAGE_TIMER_OFF = _StageTimerOff()


class MujocoVectorEnv:
    """num_envs copies of a gymnasium MuJoCo task stepped together (see the module's docstring).

    task: a gymnasium id or name (gym_id); threads: worker threads including the caller's
    (default: one per 4 copies, at most one per CPU); max_episode_steps: the time limit (default
    gymnasium's, 1000); other keyword arguments go to the gymnasium environment (e.g.
    ctrl_cost_weight=0.1) and are honoured the same way."""

    def __init__(self, task, num_envs=1, threads=None, max_episode_steps=None, **task_kwargs):
        mujoco, gym = require_mujoco()
        self._mujoco = mujoco
        self.task = gym_id(task)
        if int(num_envs) < 1:
            raise ValueError("num_envs must be at least 1, got %r" % (num_envs,))
        self.num_envs = n = int(num_envs)
        spec = gym.spec(self.task)
        self.max_episode_steps = int(max_episode_steps or spec.max_episode_steps or 1000)
        template = gym.make(self.task, **task_kwargs).unwrapped  # the reference: model, spaces, parameters
        self._template = template
        self.model = template.model
        # Island discovery splits the constraints into independent groups; one robot on a floor
        # is one group, so for these tasks it is bookkeeping only (states bit for bit the same
        # as gymnasium's env, which keeps it: test_identical_to_gymnasium). About 1.5% of Ant's
        # physics CPU here (perf).
        island = getattr(getattr(mujoco, "mjtDisableBit", None), "mjDSBL_ISLAND", None)
        if island is not None:
            self.model.opt.disableflags |= int(island)
        self.frame_skip = template.frame_skip
        self.dt = template.dt
        self.init_qpos = template.init_qpos.copy()
        self.init_qvel = template.init_qvel.copy()
        self.formulas = _Formulas(self.task, template, self.model)
        self.formulas.compiled = n < COMPILED_BELOW
        self.single_observation_space = template.observation_space
        self.single_action_space = template.action_space
        from gymnasium.vector.utils import batch_space

        self.observation_space = batch_space(self.single_observation_space, n)
        self.action_space = batch_space(self.single_action_space, n)
        self.obs_dim = int(np.prod(self.single_observation_space.shape))
        self.act_dim = int(np.prod(self.single_action_space.shape))
        self.metadata = {"autoreset_mode": _same_step_mode()}
        self.render_mode = None
        self.spec = None
        self.closed = False
        f = self.formulas
        if threads is None:  # as the paper: a thread for every 4 or more copies, at most one per CPU
            threads = min(os.cpu_count() or 1, max(1, n // 4))
        self.threads = max(1, min(int(threads), n))
        # MuJoCo 4's Batch steps all copies in C on its own threads (no Python per copy, one MjData
        # per thread instead of per copy: some 28 MB less for 64 Ants), bit for bit as a loop of
        # mj_step; it has no mj_rnePostConstraint, so tasks that read contact forces keep the loop
        self._batch = _make_batch(mujoco, self.model, n, self.threads) if not (f.need_cfrc or f.humanoid) else None
        self.datas = [mujoco.MjData(self.model) for _ in range(n if self._batch is None else 1)]
        self._rngs = [None] * n
        self._fields = ["qpos", "qvel"]
        if f.family == "ant":
            self._fields.append("xpos")
        if f.humanoid:
            self._fields += ["xipos", "cinert", "cvel", "qfrc_actuator", "ctrl"]
        if f.need_cfrc:
            self._fields.append("cfrc_ext")
        d0 = self.datas[0]
        self._state = {k: np.zeros((n,) + getattr(d0, k).shape) for k in self._fields}
        # qpos and qvel side by side in one array: the health check tests both with one call
        joint = np.zeros((n, self.model.nq + self.model.nv))
        self._state.update(qposvel=joint, qpos=joint[:, : self.model.nq], qvel=joint[:, self.model.nq :])
        self._ctrl = np.zeros((n, self.model.nu))
        self._episode_return = np.zeros(n)
        self._episode_length = np.zeros(n, dtype=np.int64)
        self._needs_reset = True
        if self._batch is not None:
            self._bound = {k: self._batch.bind(k) for k in self._fields + ["ctrl"]}
        bounds = np.linspace(0, n, self.threads + 1).astype(int)
        self._chunks = [(bounds[k], bounds[k + 1]) for k in range(self.threads)]
        self._pool = ThreadPoolExecutor(self.threads - 1, thread_name_prefix="microrl-mujoco") if self.threads > 1 and self._batch is None else None

    # -- gymnasium VectorEnv surface
    @property
    def unwrapped(self):
        return self

    @property
    def np_random_seeds(self):
        return None

    def reset(self, seed=None, options=None):
        """Reset every copy. seed: an int (copy i gets seed + i), a list of one per copy, or None."""
        from gymnasium.utils import seeding

        n = self.num_envs
        if seed is None:
            seeds = [None] * n
        elif isinstance(seed, (list, tuple, np.ndarray)):
            if len(seed) != n:
                raise ValueError("give one seed per copy: %s for %s" % (count(len(seed), "seed"), count(n, "copy", "copies")))
            seeds = list(seed)
        else:
            seeds = [int(seed) + i for i in range(n)]
        for i, s in enumerate(seeds):
            if s is not None or self._rngs[i] is None:
                self._rngs[i], _ = seeding.np_random(s)
        self._reset_copies(range(n))
        self._needs_reset = False
        self._progress = self.formulas.x_progress(self._state)
        return self.formulas.observe(self._state), {}

    def step(self, actions):
        """Step every copy with actions (num_envs, act_dim); returns (obs, rewards, terminated,
        truncated, infos) as numpy arrays, finished copies already reset (SAME_STEP)."""
        if self._needs_reset:
            raise RuntimeError("call reset() before step()")
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs, self.act_dim):
            raise ValueError("actions must have shape (%d, %d) (num_envs, action size), got %s" % (self.num_envs, self.act_dim, actions.shape))
        f = self.formulas
        before = self._progress
        self._ctrl[:] = actions  # float64, as MjData.ctrl holds them
        STAGE_TIMER_OFF.enter(self._mujoco)
        try:
            if self._batch is not None:
                self._bound["ctrl"][:] = self._ctrl
                self._batch.step(nstep=self.frame_skip)  # releases the GIL
            else:
                self._run_all(self._step_chunk)
        finally:
            STAGE_TIMER_OFF.leave()
        if self._batch is not None:
            for k in self._fields:
                self._state[k][:] = self._bound[k]
        obs = f.observe(self._state)
        rewards, terminated, self._progress = f.reward_done(before, self._state, actions)
        self._episode_return += rewards
        self._episode_length += 1
        truncated = self._episode_length >= self.max_episode_steps  # as gymnasium's TimeLimit: also when terminated
        done = terminated | truncated
        infos = {}
        if done.any():  # rare: the Python below does not run on most steps
            idx = np.flatnonzero(done)
            infos["final_obs"] = obs.copy()
            infos["_final_obs"] = done.copy()
            infos["episode"] = {"r": np.where(done, self._episode_return, 0.0), "l": np.where(done, self._episode_length, 0)}
            infos["_episode"] = done.copy()
            self._reset_copies(idx)
            obs[idx] = f.observe({k: v[idx] for k, v in self._state.items()})
            self._progress = f.x_progress(self._state)
        return obs, rewards, terminated, truncated, infos

    def close(self, **kwargs):
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        self.closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    # -- state access, for tests and tools
    def get_state(self, i):
        """(qpos, qvel) of copy i."""
        if self._batch is not None:
            return self._bound["qpos"][i].copy(), self._bound["qvel"][i].copy()
        return self.datas[i].qpos.copy(), self.datas[i].qvel.copy()

    # -- internals
    def _reset_copies(self, indices):
        mujoco = self._mujoco
        m, f = self.model, self.formulas
        if self._batch is not None:  # as mj_resetData, the reset noise, mj_forward, for these copies
            ids = np.fromiter(indices, dtype=np.int32)
            self._batch.reset(ids, stage=mujoco.mjtStage.mjSTAGE_NONE.value)
            qpos, qvel = self._bound["qpos"], self._bound["qvel"]
            for i in ids:
                qpos[i], qvel[i] = f.reset_state(self._rngs[i], self.init_qpos, self.init_qvel)
            self._batch.forward(ids)
            for k in self._fields:
                self._state[k][ids] = self._bound[k][ids]
            self._episode_return[ids] = 0.0
            self._episode_length[ids] = 0
            return
        for i in indices:
            d = self.datas[i]
            mujoco.mj_resetData(m, d)
            qpos, qvel = f.reset_state(self._rngs[i], self.init_qpos, self.init_qvel)
            d.qpos[:] = qpos
            d.qvel[:] = qvel
            mujoco.mj_forward(m, d)
            self._gather(i, d)
            self._episode_return[i] = 0.0
            self._episode_length[i] = 0

    def _gather(self, i, d):
        for k in self._fields:
            self._state[k][i] = getattr(d, k)

    def _step_chunk(self, lo, hi):
        mujoco = self._mujoco
        m, nstep, post = self.model, self.frame_skip, self.formulas.need_cfrc or self.formulas.humanoid
        datas, ctrl = self.datas, self._ctrl
        for i in range(lo, hi):
            d = datas[i]
            d.ctrl[:] = ctrl[i]
            mujoco.mj_step(m, d, nstep)  # releases the GIL
            if post:
                mujoco.mj_rnePostConstraint(m, d)  # gymnasium's step calls it; cfrc_ext needs it
            self._gather(i, d)

    def _run_all(self, fn):
        chunks = self._chunks
        if self._pool is None:
            fn(*chunks[0])
            return
        futures = [self._pool.submit(fn, lo, hi) for lo, hi in chunks[1:]]
        fn(*chunks[0])  # the caller's share
        for fut in futures:
            fut.result()


def _make_batch(mujoco, model, n, threads):
    """A mujoco.batch.Batch of n copies on threads threads, or None (MuJoCo before 4 has none)."""
    try:
        from mujoco.batch import Batch
    except ImportError:
        return None
    return Batch(model, n, nthread=threads)


def _same_step_mode():
    try:
        from gymnasium.vector import AutoresetMode

        return AutoresetMode.SAME_STEP
    except ImportError:  # older gymnasium
        return "SameStep"


def _register_as_vector_env():
    # subclass gymnasium's VectorEnv when it is there, so isinstance checks in other libraries pass
    global MujocoVectorEnv
    try:
        from gymnasium.vector import VectorEnv
    except ImportError:
        return
    MujocoVectorEnv = type("MujocoVectorEnv", (MujocoVectorEnv, VectorEnv), {"__doc__": MujocoVectorEnv.__doc__, "__module__": __name__})


_register_as_vector_env()
