"""What the host's off-policy trainers (td3.py, sac.py) share: the training driver (run log,
evaluation, checkpoints, resume) over a task compiled into the loop (envs/task.py) or a gymnasium
env, and export to the policy file. It prints nothing: a caller follows a run through Callbacks
(callbacks.py). A task's suggested settings (its TRAINING), curriculum and success test are its
own data and hooks: nothing here knows a task by name.

An algorithm module describes itself as ALGO = Algorithm(name=..., squash=..., ...): its
settings (a Settings dataclass of config.py), hyperparameters(config) (the warm-up first), new_state(config, obs_dim,
act_dim, seed), actor_export(state), and compiled explore(S, hp, obs, out) and update(S, hp),
bound to its State class for the one compiled loop (loop.bind). Its State is a namedtuple of arrays (nested
namedtuples allowed), which is what a checkpoint holds.
"""
import copy
import os
import time

import numpy as np

from microrl.policy import Policy

from .. import tasks
from ..envs.gym import GymTask, evaluate_gym
from ..nn.blas import one_blas_thread
from ..nn import mlp
from ..nn.mlp import Net, greedy_action, view
from ..nn.rng import randint
from . import loop, run, twin
from .checkpoint import CheckpointError
from .config import BOARD_ONLY, PAPER
from ..runlog import CHECKPOINT
from .run import TrainingDiverged  # noqa: F401  (the one TrainingDiverged, where its callers look)

# settings removed with their code, and the value at which a run did without them: a checkpoint
# written with that value resumes, one written with another is refused (issue 40: the critics'
# target mix and the reward offset, refuted by the runs docs/quadrotor.md records)
REMOVED = {"target_min": 1.0, "reward_offset": 0.0}
# ---------------------------------------------------------------- state <-> flat arrays


def flatten(state, prefix=""):
    """{'actor.params': array, ...} for every array in a (nested) namedtuple; a network's
    sections by name (mlp.view), which is what checkpoints hold."""
    out = {}
    for name, value in zip(state._fields, state):
        key = prefix + name
        if isinstance(value, Net):
            out.update(flatten(view(value), key + "."))
        elif hasattr(value, "_fields"):
            out.update(flatten(value, key + "."))
        else:
            out[key] = value
    return out


SCRATCH = {"actor_x", "q1", "q2", "dq2", "dx2"}  # work buffers a checkpoint of an earlier version may lack
NOT_SAVED = ("sync", "half.")  # the threads' handshake, and views and scratch of the split actor step
REPLAY_ROWS = ("replay.obs", "replay.act", "replay.rew", "replay.next_obs", "replay.done")


def checkpoint_arrays(state):
    """Everything needed to continue training, by name: the state's arrays but the threads'
    handshake, the replay buffer's filled part only."""
    arrays = dict(flatten(state))
    for k in [k for k in arrays if k.startswith(NOT_SAVED)]:
        del arrays[k]
    size = int(state.replay.count[1])
    for k in REPLAY_ROWS:  # only the filled part of the replay buffer
        arrays[k] = arrays[k][:size]
    return arrays


def restore(state, arrays, path):
    """Copy checkpoint arrays into a freshly built state of the same configuration."""
    flat = flatten(state)
    missing = sorted(k for k in set(flat) - set(arrays) - SCRATCH if not k.startswith(NOT_SAVED))
    if missing:
        raise CheckpointError("checkpoint %s lacks %s; it was written by another version" % (path, ", ".join(missing[:5])))
    for k, dst in flat.items():
        if (k in SCRATCH and k not in arrays) or k.startswith(NOT_SAVED):
            continue
        src = arrays[k]
        if k in REPLAY_ROWS and src.shape[1:] == dst.shape[1:] and src.shape[0] <= dst.shape[0] and src.dtype == dst.dtype:
            dst[: src.shape[0]] = src
            continue
        if k == "env" and src.shape != dst.shape:
            raise CheckpointError("checkpoint %s holds the task's state in another layout (written by an earlier version of microrl, or of the task); "
                                  "start a new run (another --run-dir)" % path)
        if src.shape != dst.shape or src.dtype != dst.dtype:
            raise CheckpointError("checkpoint %s: %s is %s %s, expected %s %s" % (path, k, src.dtype, src.shape, dst.dtype, dst.shape))
        dst[...] = src
    if state.replay.count[1] != arrays["replay.rew"].shape[0]:
        raise CheckpointError("checkpoint %s: replay buffer size does not match its contents" % path)


# ---------------------------------------------------------------- losses for a recorder
LOSS_ROWS = 256  # replay transitions the losses are measured on (the update's own batch is gone by then)


def critic_input(obs, actions):
    return np.ascontiguousarray(np.concatenate([obs, actions], axis=1), np.float32)


def q_values(net, x):
    """A critic's (or target critic's) values of the rows of x, as of now (a copy)."""
    return np.array(mlp.numpy_net(net, x.shape[0]).forward(x.shape[0], x)[:, 0], np.float64)


def critic_loss(state, scale, obs, act, y):
    """Both critics' losses towards y as the update has them (scale / 2 * mean squared error
    each), summed: Stable-Baselines3's critic_loss."""
    x = critic_input(obs, act)
    return sum(scale / 2.0 * float(np.mean((q_values(c, x) - y) ** 2)) for c in (state.critic1, state.critic2))


# ---------------------------------------------------------------- checks


def non_finite(state):
    """The name of the first network array of a state (weights, Adam moments, SAC's temperature)
    holding a NaN or an infinity, or None."""
    for k, v in flatten(state).items():
        if (k.endswith((".params", ".m", ".v")) or k == "alpha") and not np.isfinite(v).all():
            return k
    return None


# ---------------------------------------------------------------- the algorithm front end


def make_task(task, perturbations=None, pending_actions=True):
    """The environment a task means (tasks.resolve: a registry name, a task module or file, a
    gymnasium id or Env): compiled in the loop when it is written against the task interface.
    perturbations: {name: value} of the sim-to-real perturbations to train with (None: the
    task's own choice, its PERTURBATIONS; {}: none); ValueError for one it does not have.
    pending_actions: under an action delay, observe the commands not yet applied (CompiledTask)."""
    found = tasks.resolve(task)
    if found.module is not None:
        from microrl.perturb import training as training_perturbations

        from ..envs.task import CompiledTask

        chosen = training_perturbations(found.module) if perturbations is None else perturbations
        return CompiledTask(found.module, name=found.name, perturbations=chosen, pending_actions=pending_actions)
    if perturbations:
        raise ValueError("%s is a gymnasium environment: sim-to-real perturbations (%s) need a task written against the task interface (docs/tasks.md)"
                         % (found.name, ", ".join(sorted(perturbations))))
    return GymTask(found.gym_id if found.gym_env is None else found.gym_env, name=found.name)


def evaluation_perturbations(env):
    """What evaluations during training perturb: the action delay trained with, if any (a delay
    belongs to the craft the policy will fly), nothing else (the nominal task, comparable from
    run to run; microrl eval reports both)."""
    delay = getattr(env, "perturbations", {}).get("action_delay", 0)
    return {"action_delay": delay} if delay else None


class Algorithm:
    """An off-policy algorithm (td3.py, sac.py) as its parts, and the training driver over them.
    Each module ends with ALGO = Algorithm(...) naming its own functions."""

    def __init__(self, name, squash, settings, hyperparameters, new_state, actor_export, losses=None, model_actor_index=None):
        self.name = name
        self.settings_class = settings  # its Settings dataclass (config.py)
        self.model_actor_index = model_actor_index  # TD3: hp's flag that hands the actor's steps to a model gradient (model_gradient.py)
        self.losses = losses  # losses(state, config, rng) -> {tag: float}, measured on a replay sample for a recorder
        self.squash = squash
        self.hyperparameters = hyperparameters
        self.new_state = new_state
        self.actor_export = actor_export

    # configuration ---------------------------------------------------
    def config(self, **overrides):
        """The default settings with overrides (None: keep the default), checked; ValueError names
        an unknown setting, or every one out of range."""
        for k in [k for k in overrides if k in BOARD_ONLY]:
            if overrides.pop(k) not in (None, getattr(PAPER, k)):
                raise ValueError("%s is a setting of TD3 on a board (microrl train-on-board); the host's %s has none (its replay holds float32 "
                                 "rows in a ring, its critics take the rewards as they are)" % (k, self.name))
        return self.settings_class(**overrides)

    def default_config(self):
        return self.settings_class()

    def settings(self, config=None):
        """{name: value} of a configuration (the defaults without one)."""
        return (config or self.default_config()).as_dict()

    # training ----------------------------------------------------------
    def train(self, config, env=None, callbacks=None, seed=None, **options):
        """Train with a configuration (self.config(...)) on env (a task: tasks.resolve; default
        tasks.DEFAULT); returns a Run. options: those of run() (eval_every, out, run_dir, resume, ...)."""
        settings = self.settings(config)
        steps = settings.pop("steps")
        return self.run(tasks.DEFAULT if env is None else env, steps=steps, seed=seed, callbacks=callbacks, **dict(settings, **options))

    def run(self, task, steps=None, seed=None, eval_every=None, eval_episodes=None, out=None, run_dir=None, checkpoint_every=None, resume=False, callbacks=None, threads=None,
            perturbations=None, pending_actions=True, keep_best=False, **settings):
        """Train on task (tasks.resolve: a registry name, a task module or its file, a gymnasium
        id or Env); returns a Run. Settings left None take the task's suggestion (its TRAINING),
        else: steps 10000, eval_every 1000, eval_episodes 10, checkpoint_every 0 (at the end).
        out: policy file to write; run_dir: folder for run.json, progress.csv and checkpoint.npz
        (checkpoints every checkpoint_every steps and at the end); resume: continue from
        run_dir's checkpoint; callbacks: a Callbacks, told of every chunk of up to 1000 steps
        (trainer: the State; figures: {"eval": the last evaluation's mean}); threads: 1, or 2 to
        run the twin critics' halves of each update on a second thread (default: 2 where two
        CPUs are free for this process; the run is the same either way); perturbations: {name:
        value} of the sim-to-real perturbations to train with (microrl.perturb.names;
        None: the task's own choice, its PERTURBATIONS; {}: the nominal task); pending_actions:
        under an action delay the actor and critics observe the commands sent but not yet
        applied, and the policy file says so (default; False: the task's observation alone, the
        way that does not learn a delay: docs/sim-to-real.md); keep_best: on a task with a success
        test, write the actor of the best evaluation rather than the final one (run.drive)."""
        threads = twin.default_threads() if threads is None else int(threads)
        if threads < 1:
            raise ValueError("threads must be 1 or more, not %d" % threads)
        with one_blas_thread():
            return self._run(task, steps, seed, eval_every, eval_episodes, out, run_dir, checkpoint_every, resume, callbacks, settings, threads, perturbations, pending_actions,
                             keep_best)

    def _run(self, task, steps, seed, eval_every, eval_episodes, out, run_dir, checkpoint_every, resume, callbacks, settings, threads, perturbations=None, pending_actions=True,
             keep_best=False):
        wall0 = time.perf_counter()
        env = make_task(task, perturbations, pending_actions)
        trained_with = dict(getattr(env, "perturbations", {}))
        suggested = getattr(env, "training", {})

        def default(value, key, otherwise):
            return value if value is not None else suggested.get(key, otherwise)

        steps = default(steps, "steps", 10000)
        eval_every = default(eval_every, "eval_every", 1000)
        eval_episodes = default(eval_episodes, "eval_episodes", 10)
        checkpoint_every = default(checkpoint_every, "checkpoint_every", 0)
        resumed = None
        try:
            if resume:
                resumed = run.read_resume(run_dir, self.name, env.name)
                meta = resumed[0]
                saved = dict(meta["config"])
                for k, plain in REMOVED.items():
                    if k in saved and saved.pop(k) != plain:
                        raise CheckpointError("the checkpoint in %s was trained with %s=%r, a setting microrl no longer has (removed in issue 40, refuted by its runs); "
                                              "start a new run (another --run-dir)" % (run_dir, k, meta["config"][k]))
                config = self.config(**saved)
                differences = run.resume_differences(dict(self.settings(config), seed=meta["seed"]), dict(settings, seed=seed))
                run.refuse_differences(run_dir, differences + run.task_differences(meta, env))
                seed = meta["seed"]
            else:
                given = {k: v for k, v in settings.items() if v is not None}
                config = self.config(**dict(self.settings_class.suggested(env), **given))
                seed = 0 if seed is None else seed
            config.steps = int(steps)
            learner = OffPolicyLearner(self, env, config, int(seed), steps, threads, int(suggested.get("train_every", 1)), eval_episodes)
            learner.path = os.path.join(run_dir, CHECKPOINT) if run_dir else None
        except BaseException:
            env.close()
            raise
        meta = {"perturbations": trained_with}
        if getattr(env, "pending", 0):
            meta["pending_actions"] = env.pending  # the observation's width (checkpoints before it had none)
        return run.drive(learner, steps, seed, out=out, run_dir=run_dir, resumed=resumed, eval_every=eval_every, eval_episodes=eval_episodes,
                         checkpoint_every=checkpoint_every, callbacks=callbacks, keep_best=keep_best, meta=meta, wall0=wall0)

    def _run_gym(self, env, state, hp, n, ep_step, ep_return):
        """n steps of a gymnasium env from Python; networks and updates stay compiled."""
        e = env.env
        scale = (env.high - env.low) / 2.0
        offset = (env.high + env.low) / 2.0
        ended = 0
        for _ in range(n):
            if env.obs is None:
                obs, _ = e.reset(seed=int(randint(state.rng, 2**31)))
                env.obs = np.asarray(obs, np.float32).reshape(-1)
                env.episode_return = 0.0
            loop.explore(state, hp, env.obs, state.action)
            act = (scale * state.action + offset).reshape(e.action_space.shape)
            next_obs, reward, terminated, truncated, _ = e.step(act)
            next_obs = np.asarray(next_obs, np.float32).reshape(-1)
            loop.observe(state, hp, env.obs, state.action, float(reward), next_obs, bool(terminated), 1)
            env.episode_return += float(reward)
            if terminated or truncated:
                if ended < len(ep_step):
                    ep_step[ended] = state.counters[0]
                    ep_return[ended] = env.episode_return
                    ended += 1
                env.obs = None
            else:
                env.obs = next_obs
        return ended

    def policy(self, state, env, params=None):
        """The deterministic actor (or exported actor parameters saved earlier) as a
        microrl.policy.Policy in environment units."""
        sizes, acts, actor_params = self.actor_export(state)
        params = actor_params if params is None else params
        scale = (env.high.astype(np.float64) - env.low) / 2.0
        offset = (env.high.astype(np.float64) + env.low) / 2.0
        policy = Policy([int(s) for s in sizes], [int(a) for a in acts], params=_farray(params), act_scale=list(scale), act_offset=list(offset))
        if getattr(env, "pending", 0):
            policy.pending = env.pending  # its input: the task's observation, then the pending actions
        return policy


class OffPolicyLearner(run.Learner):
    """TD3 or SAC on a task, for the driver (run.drive): chunks of up to 1000 steps of the one
    compiled loop (or of a gymnasium env from Python), the twin critics' halves on two threads."""

    CHUNK = 1000
    advice = " (smaller learning rates or rewards may help)"

    def __init__(self, algorithm, env, config, seed, steps, threads, train_every, eval_episodes):
        self.algorithm, self.env, self.config, self.steps = algorithm, env, config, steps
        self.algo, self.task = algorithm.name, env.name
        self.module = env.module if env.compiled and env.has_success else None
        self.train_every, self.eval_episodes = train_every, eval_episodes
        self.model = None
        if getattr(config, "model_horizon", 0):
            from .model_gradient import ModelActor

            self.model = ModelActor(env, config, seed)  # ValueError: a task it cannot roll
        self.state = algorithm.new_state(config, env.obs_dim, env.act_dim, int(seed))
        if env.compiled:
            self.state = self.state._replace(env=env.new_env())
        self.trainer = self.state
        self.hp = algorithm.hyperparameters(config)
        self.runner = twin.Threads(threads)  # one thread or two, chunk by chunk (the worker runs the loop's own code)
        self.ep_step = np.zeros(1024, np.int64)
        self.ep_return = np.zeros(1024)
        self.closed = False
        import numba
        import scipy

        self.used = (np, numba, scipy)
        if not env.compiled:
            import gymnasium

            self.used += (gymnasium,)

    @property
    def step(self):
        return int(self.state.counters[0])

    def prepare(self, callbacks):
        # compile (or load from numba's cache) before the clock starts: cold vs warm is visible
        callbacks.on_compile("compiling the training loop, first run only (numba caches it)")
        env, state, hp = self.env, self.state, self.hp
        if env.compiled:
            self.run_loop = loop.bind_task(env)
            if self.step == 0:
                env.curriculum(state.env, 0)
                self.run_loop(state, hp, loop.BEGIN, self.ep_step, self.ep_return, self.train_every)
            self.run_loop(state, hp, 0, self.ep_step, self.ep_return, self.train_every)
            if self.eval_episodes:
                env.evaluate(state.actor, self.algorithm.squash, 0, 0, perturbations=evaluation_perturbations(env))
        else:
            rng = state.rng.copy()
            loop.explore(state, hp, state.obs, state.action)
            state.rng[:] = rng  # compiling must not change the run
            greedy_action(state.actor, state.obs, self.algorithm.squash, state.action)
            env.obs = None

    def advance(self, limit):
        config, state, hp, step = self.config, self.state, self.hp, self.step
        n = min(limit, self.CHUNK)
        lr_share = learning_rate_share(config, step, self.steps)
        if lr_share != 1.0:
            hp[:] = self.algorithm.hyperparameters(scaled_learning_rates(config, lr_share))
        if self.model:
            n = min(n, self.model.chunk(step))
            self.model.before_chunk(hp, self.algorithm.model_actor_index, step)
        if self.env.compiled:
            self.env.curriculum(state.env, step)
            ended = self.runner.run(self.run_loop, state, hp, n, self.ep_step, self.ep_return, self.train_every)
        else:
            ended = self.algorithm._run_gym(self.env, state, hp, n, self.ep_step, self.ep_return)
        if self.model:
            self.model.after_chunk(state, self.step, config.warmup)
        episodes = [(int(self.ep_step[k]), float(self.ep_return[k])) for k in range(ended)]
        return run.Chunk(episodes, scalars={"charts/learning_rate_actor": config.actor_lr * lr_share, "charts/learning_rate_critic": config.critic_lr * lr_share},
                         done=n)

    def evaluate(self, episodes, seed):
        env, state = self.env, self.state
        if env.compiled:
            rows = env.evaluate(state.actor, self.algorithm.squash, episodes, seed, perturbations=evaluation_perturbations(env))
            if env.has_success:
                self.summary = tasks.summary(env.module, rows)
            returns = np.ascontiguousarray(rows[:, 0])
            return float(returns.mean()), float(returns.std())
        if env.gym_env is None:
            return evaluate_gym(self.policy(), env.name, episodes, seed)[:2]
        result = evaluate_gym(self.policy(), env.gym_env, episodes, seed)
        if getattr(env.gym_env, "spec", None) is None:
            env.obs = None  # evaluated on the Env itself: training starts a new episode
        return result[:2]

    def non_finite(self):
        return non_finite(self.state)

    def policy(self, snapshot=None):
        return self.algorithm.policy(self.state, self.env, params=snapshot)

    def snapshot(self):
        return self.algorithm.actor_export(self.state)[2]

    def observations(self):
        # observations spread over the replay buffer
        return self.state.replay.obs[: max(1, int(self.state.replay.count[1]))]

    def settings(self):
        return self.algorithm.settings(self.config)

    def checkpoint(self):
        return {}, checkpoint_arrays(self.state), False

    def restore(self, meta, arrays):
        restore(self.state, arrays, self.path)
        return {"evals": meta.get("evals", []), "elapsed": meta.get("elapsed", 0.0)}

    def scalars(self, chunk, rng):
        if self.algorithm.losses and self.state.replay.count[1]:
            return self.algorithm.losses(self.state, self.config, rng)
        return {}

    def close(self):
        if not self.closed:
            self.closed = True
            self.env.close()


def learning_rate_share(config, step, steps):
    """lr_end's schedule, as the device core's TD3 has it: the learning rates fall linearly from
    their value at step 0 to lr_end times it at the last step (1.0: constant)."""
    end = getattr(config, "lr_end", 1.0)
    if end == 1.0 or steps <= 0:
        return 1.0
    return end + (1.0 - end) * max(0.0, 1.0 - step / float(steps))


def scaled_learning_rates(config, share):
    """A copy of config with both learning rates times share."""
    c = copy.copy(config)
    c.actor_lr = config.actor_lr * share
    c.critic_lr = config.critic_lr * share
    return c


def _farray(values):
    from array import array

    return array("f", np.ascontiguousarray(values, np.float32).tobytes())
