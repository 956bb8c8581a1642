"""What the host's off-policy trainers (td3.py, sac.py) share: the training driver (run log,
evaluation, checkpoints, resume) over a task compiled into the loop (envs/task.py) or a gymnasium
env, and export to the policy file. It prints nothing: a caller follows a run through Callbacks
(callbacks.py). A task's suggested settings (its TRAINING), curriculum and success test are its
own data and hooks: nothing here knows a task by name.

An algorithm module describes itself as ALGO = Algorithm(name=..., squash=..., ...): its
default_config(), hyperparameters(config) (the warm-up first), new_state(config, obs_dim,
act_dim, seed), actor_export(state), and compiled explore(S, hp, obs, out) and update(S, hp),
bound to its State class for the one compiled loop (loop.bind). Its State is a namedtuple of arrays (nested
namedtuples allowed), which is what a checkpoint holds.
"""
import copy
import math
import os
import time

import numpy as np

from microrl.policy import Policy, save

from .. import atomic, tasks
from ..envs.gym import GymTask, evaluate_gym
from ..nn.blas import one_blas_thread
from ..nn import mlp
from ..nn.mlp import Net, greedy_action, view
from ..nn.rng import randint
from ..references import attach as attach_references
from ..runlog import RunLog
from . import checkpoint, loop, twin
from .callbacks import NONE
from .checkpoint import CheckpointError
from .checkpoint import read as read_checkpoint
from .config import settings as config_settings
from .results import run_result

# settings of a task's TRAINING (its suggestions, which a user's own settings override) that
# configure the algorithm; the rest configure the driver
ALGORITHM_SETTINGS = ("batch", "warmup")
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


def save_checkpoint(path, state, meta):
    """Everything needed to continue training, written atomically (one .npz)."""
    arrays = dict(flatten(state))
    for k in [k for k in arrays if k.startswith(NOT_SAVED)]:
        del arrays[k]
    size = int(state.replay.count[1])
    for k in REPLAY_ROWS:  # only the filled part of the replay buffer
        arrays[k] = arrays[k][:size]
    checkpoint.write(path, meta, arrays)


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


class TrainingDiverged(Exception):
    """A run whose networks became NaN or infinite: stopped; nothing written after the last
    good checkpoint."""


def non_finite(state):
    """The name of the first network array of a state (weights, Adam moments, SAC's temperature)
    holding a NaN or an infinity, or None."""
    for k, v in flatten(state).items():
        if (k.endswith((".params", ".m", ".v")) or k == "alpha") and not np.isfinite(v).all():
            return k
    return None


def _finite(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def check_config(c):
    """ValueError naming every setting of an off-policy configuration (TD3's or SAC's) out of
    range: whole numbers >= 1 (batch, replay capacity >= batch, policy delay, hidden widths),
    0 < gamma <= 1, 0 < tau <= 1, finite positive learning rates, finite noise >= 0, 0 <= lr_end <= 1."""
    problems = []
    for k, low in (("batch", 1), ("replay_capacity", 1), ("policy_delay", 1), ("warmup", 0), ("steps", 1)):
        if hasattr(c, k):
            v = getattr(c, k)
            if not (_finite(v) and v == int(v) and v >= low):
                problems.append("%s must be a whole number >= %d, got %r" % (k, low, v))
    if not problems and c.replay_capacity < c.batch:
        problems.append("replay_capacity (%d) must be at least batch (%d): a batch is drawn from the replay buffer" % (c.replay_capacity, c.batch))
    if not c.hidden or min(c.hidden) < 1:
        problems.append("hidden sizes must be at least 1, got %r" % (c.hidden,))
    for k in ("gamma", "tau"):
        v = getattr(c, k)
        if not (_finite(v) and 0 < v <= 1):
            problems.append("%s must be in (0, 1], got %r" % (k, v))
    for k in ("actor_lr", "critic_lr", "alpha_lr", "initial_alpha", "model_lr"):
        if hasattr(c, k):
            v = getattr(c, k)
            if not (_finite(v) and v > 0):
                problems.append("%s must be a finite number above 0, got %r" % (k, v))
    for k in ("exploration_noise", "target_noise", "target_noise_clip"):
        if hasattr(c, k):
            v = getattr(c, k)
            if not (_finite(v) and v >= 0):
                problems.append("%s must be a finite number >= 0, got %r" % (k, v))
    if hasattr(c, "lr_end") and not (_finite(c.lr_end) and 0 <= c.lr_end <= 1):
        problems.append("lr_end must be a finite number from 0 to 1 (the share of the learning rates left at the last step; 1: constant), got %r" % (c.lr_end,))
    if hasattr(c, "target_min") and not (_finite(c.target_min) and c.target_min >= 0):
        problems.append("target_min must be a finite number >= 0 (1: the twin critics' min, 0: their mean), got %r" % (c.target_min,))
    if hasattr(c, "reward_offset") and not _finite(c.reward_offset):
        problems.append("reward_offset must be a finite number, got %r" % (c.reward_offset,))
    elif getattr(c, "reward_offset", 0.0) and c.gamma == 1:
        problems.append("reward_offset needs gamma below 1 (a terminating step takes offset/(1-gamma) more)")
    for k, low in (("model_horizon", 0), ("model_batch", 1), ("model_every", 1), ("model_start", 0)):
        if hasattr(c, k):
            v = getattr(c, k)
            if not (_finite(v) and v == int(v) and v >= low):
                problems.append("%s must be a whole number >= %d, got %r" % (k, low, v))
    if hasattr(c, "model_value") and not (_finite(c.model_value) and c.model_value >= 0):
        problems.append("model_value must be a finite number >= 0, got %r" % (c.model_value,))
    if getattr(c, "target_entropy", None) is not None and not _finite(c.target_entropy):
        problems.append("target_entropy must be a finite number (or unset), got %r" % (c.target_entropy,))
    if problems:
        raise ValueError("; ".join(problems))


def resume_differences(saved, saved_seed, given, given_seed):
    """['hidden: the checkpoint has (64, 64), given (32, 32)', ...] for every setting given to a
    resumed run that differs from the checkpoint's (steps may grow: not compared)."""
    out = []
    for k in sorted(given):
        if k == "steps" or given[k] is None:
            continue
        mine, theirs = given[k], saved.get(k)
        if isinstance(mine, (list, tuple)):
            mine, theirs = tuple(mine), tuple(theirs) if isinstance(theirs, (list, tuple)) else theirs
        if mine != theirs:
            out.append("%s: the checkpoint has %r, given %r" % (k, theirs, mine))
    if given_seed is not None and int(given_seed) != int(saved_seed):
        out.append("seed: the checkpoint has %d, given %d" % (saved_seed, given_seed))
    return out


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


class Run:
    """What a training run returns: the policy, evaluations [(step, mean, std)], stats (the one
    result shape of results.py), and the final training state (networks, optimiser, replay: the arrays a checkpoint holds)."""

    def __init__(self, policy, evals, stats, state=None):
        self.state = state
        self.policy = policy
        self.evals = evals
        self.stats = stats


class Algorithm:
    """An off-policy algorithm (td3.py, sac.py) as its parts, and the training driver over them.
    Each module ends with ALGO = Algorithm(...) naming its own functions."""

    def __init__(self, name, squash, default_config, hyperparameters, new_state, actor_export, losses=None, model_actor_index=None):
        self.name = name
        self.model_actor_index = model_actor_index  # TD3: hp's flag that hands the actor's steps to a model gradient (model_gradient.py)
        self.losses = losses  # losses(state, config, rng) -> {tag: float}, measured on a replay sample for a recorder
        self.squash = squash
        self.default_config = default_config
        self.hyperparameters = hyperparameters
        self.new_state = new_state
        self.actor_export = actor_export
        self.task_stats = {}  # a task with a success test: its evaluation summary (tasks.summary)

    # configuration ---------------------------------------------------
    def config(self, **overrides):
        """The default configuration with overrides (None: keep the default); ValueError names
        an unknown setting."""
        c = self.default_config()
        for k, v in overrides.items():
            if v is None:
                continue
            if not hasattr(c, k):
                raise ValueError("unknown %s setting %r; known: %s" % (self.name, k, ", ".join(sorted(self.settings(c)))))
            setattr(c, k, v)
        c.hidden = tuple(int(h) for h in c.hidden)
        check_config(c)
        return c

    def settings(self, config=None):
        """{name: value} of a configuration (the defaults without one)."""
        return config_settings(config or self.default_config())

    # training ----------------------------------------------------------
    def train(self, config, env=None, callbacks=None, seed=None, **options):
        """Train with a configuration (self.config(...)) on env (a task: tasks.resolve; default
        tasks.DEFAULT); returns a Run. options: those of run() (eval_every, out, run_dir, resume, ...)."""
        settings = self.settings(config)
        steps = settings.pop("steps")
        return self.run(tasks.DEFAULT if env is None else env, steps=steps, seed=seed, callbacks=callbacks, **dict(settings, **options))

    def run(self, task, steps=None, seed=None, eval_every=None, eval_episodes=None, out=None, run_dir=None, checkpoint_every=None, resume=False, callbacks=None, threads=None,
            perturbations=None, pending_actions=True, **settings):
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
        way that does not learn a delay: docs/sim-to-real.md)."""
        threads = twin.default_threads() if threads is None else int(threads)
        if threads < 1:
            raise ValueError("threads must be 1 or more, not %d" % threads)
        with one_blas_thread():
            return self._run(task, steps, seed, eval_every, eval_episodes, out, run_dir, checkpoint_every, resume, callbacks, settings, threads, perturbations, pending_actions)

    def _run(self, task, steps, seed, eval_every, eval_episodes, out, run_dir, checkpoint_every, resume, callbacks, settings, threads, perturbations=None, pending_actions=True):
        callbacks = callbacks or NONE
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
        train_every = int(suggested.get("train_every", 1))
        self.task_stats = {}
        ckpt_path = os.path.join(run_dir, "checkpoint.npz") if run_dir else None
        meta = None
        if resume:
            if not ckpt_path:
                raise CheckpointError("resuming needs a run folder holding checkpoint.npz")
            meta, arrays = read_checkpoint(ckpt_path)
            if meta["algo"] != self.name or meta["task"].lower() != env.name.lower():
                raise CheckpointError("checkpoint %s is for %s on %s, not %s on %s" % (ckpt_path, meta["algo"], meta["task"], self.name, env.name))
            config = self.config(**meta["config"])
            differences = resume_differences(self.settings(config), meta["seed"], settings, seed)
            saved = meta.get("perturbations", {})
            if saved != trained_with:
                differences.append("perturbations: the checkpoint has %r, given %r" % (saved, trained_with))
            if meta.get("pending_actions", 0) != getattr(env, "pending", 0):
                differences.append("pending actions observed: the checkpoint's %d steps, given %d" % (meta.get("pending_actions", 0), getattr(env, "pending", 0)))
            if differences:
                raise CheckpointError("the checkpoint in %s was made with other settings: %s; resume without them, or start a new run (another --run-dir)" % (run_dir, "; ".join(differences)))
            seed = meta["seed"]
        else:
            given = {k: v for k, v in settings.items() if v is not None}
            config = self.config(**dict({k: suggested[k] for k in ALGORITHM_SETTINGS if k in suggested}, **given))
            seed = 0 if seed is None else seed
        config.steps = int(steps)
        model = None
        if getattr(config, "model_horizon", 0):
            from .model_gradient import ModelActor

            model = ModelActor(env, config, seed)  # ValueError: a task it cannot roll
        state = self.new_state(config, env.obs_dim, env.act_dim, int(seed))
        if env.compiled:
            state = state._replace(env=env.new_env())
        if resume:
            restore(state, arrays, ckpt_path)
        hp = self.hyperparameters(config)
        meta = {
            "format": checkpoint.FORMAT,
            "version": checkpoint.VERSION,
            "algo": self.name,
            "task": env.name,
            "seed": int(seed),
            "config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.settings(config).items()},
            "perturbations": trained_with,
        }
        if getattr(env, "pending", 0):
            meta["pending_actions"] = env.pending  # the observation's width (checkpoints before it had none)
        start = int(state.counters[0])
        if start > steps:
            raise CheckpointError("the checkpoint is at step %d, beyond --steps %d; ask for more steps" % (start, steps))
        log = None
        if run_dir:
            if resume:
                _truncate_progress(os.path.join(run_dir, "progress.csv"), start)
            log = RunLog(run_dir, dict(meta, steps=int(steps), out=out), resume=resume)

        # compile (or load from numba's cache) before the clock starts: cold vs warm is visible
        callbacks.on_compile("compiling the training loop, first run only (numba caches it)")
        t0 = time.perf_counter()
        ep_step = np.zeros(1024, np.int64)
        ep_return = np.zeros(1024)
        if env.compiled:
            run_loop = loop.bind_task(env)
            if start == 0:
                env.curriculum(state.env, 0)
                run_loop(state, hp, loop.BEGIN, ep_step, ep_return, train_every)
            run_loop(state, hp, 0, ep_step, ep_return, train_every)
            if eval_episodes:
                env.evaluate(state.actor, self.squash, 0, 0, perturbations=evaluation_perturbations(env))
        else:
            rng = state.rng.copy()
            loop.explore(state, hp, state.obs, state.action)
            state.rng[:] = rng  # compiling must not change the run
            greedy_action(state.actor, state.obs, self.squash, state.action)
            env.obs = None
        compile_s = time.perf_counter() - t0

        evals = []
        best = None  # a task with a success test: (score, step, its summary, actor parameters) of the best evaluation
        train_s = 0.0
        train_cpu_s = 0.0
        eval_s = 0.0
        step = start
        last_eval = None
        last_checkpoint = start if resume else None
        runner = twin.Threads(threads)  # one thread or two, chunk by chunk (the worker runs the loop's own code)
        callbacks.on_start(steps, start, "%s %s" % (self.name, env.name))
        if callbacks.records:
            callbacks.on_settings(dict(meta["config"], algo=self.name, task=env.name, seed=int(seed), steps=int(steps)))
            sample_rng = np.random.default_rng(int(seed))  # the losses' replay samples: the run's own generator is left alone
        try:
            while step < steps:
                n = steps - step
                for every in (eval_every, checkpoint_every):
                    if every:
                        n = min(n, every - step % every)
                n = min(n, 1000)
                lr_share = learning_rate_share(config, step, steps)
                if lr_share != 1.0:
                    hp[:] = self.hyperparameters(scaled_learning_rates(config, lr_share))
                if model:
                    n = min(n, model.chunk(step))
                    model.before_chunk(hp, self.model_actor_index, step)
                t0 = time.perf_counter()
                c0 = time.process_time()
                if env.compiled:
                    env.curriculum(state.env, step)
                    ended = runner.run(run_loop, state, hp, n, ep_step, ep_return, train_every)
                else:
                    ended = self._run_gym(env, state, hp, n, ep_step, ep_return)
                if model:
                    model.after_chunk(state, int(state.counters[0]), config.warmup)
                chunk_s = time.perf_counter() - t0
                train_s += chunk_s
                train_cpu_s += time.process_time() - c0
                previous, step = step, int(state.counters[0])
                bad = non_finite(state)
                if bad:
                    raise TrainingDiverged(
                        "%s on %s diverged: %s became NaN or infinite between step %d and step %d; stopped, no policy written%s "
                        "(smaller learning rates or rewards may help)" % (self.name, env.name, bad, previous, step,
                                                                           "; %s keeps the checkpoint of step %d" % (ckpt_path, last_checkpoint) if last_checkpoint is not None else ""))
                if log:
                    for k in range(ended):
                        log.row(int(ep_step[k]), episode_return=float(ep_return[k]))
                scalars = None
                if callbacks.records:
                    scalars = {"charts/steps_per_s": (step - previous) / chunk_s if chunk_s > 0 else None,
                               "charts/learning_rate_actor": config.actor_lr * lr_share, "charts/learning_rate_critic": config.critic_lr * lr_share}
                    if ended:
                        scalars["charts/episode_return"] = float(ep_return[:ended].mean())
                if eval_episodes and ((eval_every and step % eval_every == 0) or step == steps):
                    t0 = time.perf_counter()
                    mean, std = self.evaluate_state(env, state, eval_episodes, seed=10000 + int(seed))
                    eval_s += time.perf_counter() - t0
                    evals.append((step, mean, std))
                    last_eval = mean
                    if self.task_stats:
                        score = tasks.score(env.module, self.task_stats, mean)
                        if best is None or score > best[0]:
                            best = (score, step, dict(self.task_stats), self.actor_export(state)[2])
                    if log:
                        log.row(step, eval_mean=mean, eval_std=std)
                    if scalars is not None:
                        scalars.update({"eval/return_mean": mean, "eval/return_std": std})
                        scalars.update({"eval/" + k: v for k, v in self.task_stats.items() if isinstance(v, float)})
                        if self.losses and state.replay.count[1]:
                            scalars.update(self.losses(state, config, sample_rng))
                if ckpt_path and ((checkpoint_every and step % checkpoint_every == 0) or step == steps):
                    save_checkpoint(ckpt_path, state, dict(meta, step=step))
                    last_checkpoint = step
                callbacks.on_progress(step, n, state, {"eval": last_eval} if last_eval is not None else {})
                if scalars is not None:
                    callbacks.on_record(step, {k: v for k, v in scalars.items() if v is not None})
        finally:
            callbacks.on_end()
            if log:
                log.close()
            env.close()
        policy = self.policy(state, env)
        if best is not None:
            # learning is not monotone (TD3 on the quadrotor: a policy that flies can be lost
            # later), so a run on a task with a success test keeps the actor of its best
            # evaluation, as a checkpoint-on-best would
            final_success = self.task_stats["success_rate"]
            self.task_stats = dict(best[2], policy_step=best[1], final_success_rate=final_success)
            if best[1] != step:
                policy = self.policy(state, env, params=best[3])
        # reference vectors for the file: observations spread over the replay buffer
        attach_references(policy, state.replay.obs[: max(1, int(state.replay.count[1]))])
        if out:
            folder = os.path.dirname(os.path.abspath(out))
            os.makedirs(folder, exist_ok=True)
            save(out, policy)
        import numba
        import scipy

        used = (np, numba, scipy)
        if not env.compiled:
            import gymnasium

            used += (gymnasium,)
        stats = run_result(
            self.name, env.name, seed, steps, start if resume else None, wall_s=time.perf_counter() - wall0, train_s=train_s, train_cpu_s=train_cpu_s,
            compile_s=compile_s, eval_s=eval_s, evals=evals, policy=out, run_dir=run_dir, used=used,
        )
        stats.update(self.task_stats)  # a task with a success test: success rate, final error, termination rate
        if trained_with:
            stats["perturbations"] = trained_with  # a run with sim-to-real perturbations: which
        if policy.pending:
            stats["pending_actions"] = policy.pending
        return Run(policy, evals, stats, state)

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

    def evaluate_state(self, env, state, episodes, seed):
        if not episodes:
            return float("nan"), float("nan")
        if env.compiled:
            rows = env.evaluate(state.actor, self.squash, episodes, seed, perturbations=evaluation_perturbations(env))
            if env.has_success:
                self.task_stats = tasks.summary(env.module, rows)
            returns = np.ascontiguousarray(rows[:, 0])
            return float(returns.mean()), float(returns.std())
        if env.gym_env is None:
            return evaluate_gym(self.policy(state, env), env.name, episodes, seed)[:2]
        result = evaluate_gym(self.policy(state, env), env.gym_env, episodes, seed)
        if getattr(env.gym_env, "spec", None) is None:
            env.obs = None  # evaluated on the Env itself: training starts a new episode
        return result[:2]

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


def _truncate_progress(path, step):
    """Drop progress.csv rows past the checkpoint being resumed (and a row cut by a kill)."""
    if not os.path.exists(path):
        return
    with open(path, newline="") as f:
        text = f.read()
    lines = text.split("\n")
    if not text.endswith("\n"):
        lines = lines[:-1]  # cut short by a kill
    keep = lines[:1]
    for line in lines[1:]:
        fields = line.split(",")
        if len(fields) != 5:
            continue
        try:
            if int(fields[0]) <= step:
                keep.append(line)
        except ValueError:
            continue
    atomic.write_text(path, "\n".join(keep) + "\n")
