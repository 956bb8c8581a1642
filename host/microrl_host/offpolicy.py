"""What the host's off-policy trainers (td3.py, sac.py) share: environments (Pendulum compiled
in-loop, or any gymnasium Box-action env stepped from Python), the training driver (progress,
run log, evaluation, checkpoints, resume), export to the policy file, and the command line.

An algorithm module provides: NAME, SQUASH, default_config(), hyperparameters(config),
new_state(config, obs_dim, act_dim, seed), actor_export(state), and compiled explore(S, hp, obs,
out), observe(S, hp, obs, action, reward, next_obs, terminated), run_pendulum(S, hp, n, ep_step,
ep_return). Its State is a namedtuple of arrays (nested namedtuples allowed), which is what a
checkpoint holds.
"""
import io
import json
import math
import os
import sys
import time
import zipfile

import numpy as np

from microrl import pendulum
from microrl.policy import Policy

from . import atomic, nets

PENDULUM = "pendulum"
QUADROTOR = "quadrotor"
# The quadrotor trains as L2F's TD3 does (learning-to-fly src/config/config.h): batch 256, one
# update every 10 environment steps, 15,000 steps before the first; the settings a user gives win.
QUADROTOR_SETTINGS = {"batch": 256, "warmup": 15000}
QUADROTOR_TRAIN_EVERY = 10
QUADROTOR_STEPS = 300000  # L2F's budget
# steps over which the quadrotor's start states widen from near hover to L2F's full distribution
QUADROTOR_CURRICULUM_STEPS = 50000
QUADROTOR_EVERY = 10000  # its evaluations fly 100 episodes of up to 500 steps
QUADROTOR_EVAL_EPISODES = 100  # success rates need more episodes than a Pendulum return
# the paper keeps 10,000 transitions for 10,000 steps, i.e. all of them; the host keeps up to
# a million (memory is only used as the buffer fills, and checkpoints hold the filled part)
REPLAY_CAPACITY = 1000000
DEFAULT_EVERY = 1000  # steps between evaluations and between checkpoints, from the command line
CHECKPOINT_FORMAT = "microrl-checkpoint"
CHECKPOINT_VERSION = 1
# options every algorithm shares, defined by commands/train.py; the rest come from add_arguments
SHARED = ("hidden", "gamma", "activation", "steps")
HELP = {
    "batch": "transitions per update",
    "tau": "Polyak rate of the target networks",
    "actor_lr": "actor learning rate (Adam)",
    "critic_lr": "critic learning rate (Adam)",
    "alpha_lr": "entropy temperature learning rate (Adam)",
    "exploration_noise": "std of the Gaussian action noise while training, in units of the [-1, 1] action range",
    "policy_delay": "critic updates per actor and target update",
    "target_noise": "std of the target policy smoothing noise",
    "target_noise_clip": "clip of the target policy smoothing noise",
    "replay_capacity": "transitions the replay buffer keeps",
    "warmup": "uniform random steps before the actor acts and training starts",
    "initial_alpha": "starting entropy temperature",
    "target_entropy": "entropy the temperature is tuned towards (default: -action_dim)",
}
EXAMPLE_ENVS = ("Pendulum-v1", "MountainCarContinuous-v0", "LunarLanderContinuous-v3", "BipedalWalker-v3")


class TaskError(ValueError):
    """A task (environment) that cannot be trained: unknown id, or not continuous actions."""


class CheckpointError(ValueError):
    """A checkpoint that is missing, damaged, or for another run."""


# ---------------------------------------------------------------- environments


class CompiledPendulum:
    """Pendulum-v1 from microrl.pendulum, simulated inside the compiled training loop."""

    name = PENDULUM
    obs_dim = pendulum.OBS_DIM
    act_dim = pendulum.ACT_DIM
    low = np.array([-pendulum.MAX_TORQUE], np.float32)
    high = np.array([pendulum.MAX_TORQUE], np.float32)
    compiled = True


class CompiledQuadrotor:
    """The quadrotor hover task from microrl.quadrotor, simulated inside the compiled loop
    (quadrotor_env). Actions are the 4 motor commands in [-1, 1]."""

    name = QUADROTOR
    obs_dim = 13
    act_dim = 4
    low = -np.ones(4, np.float32)
    high = np.ones(4, np.float32)
    compiled = True
    privileged = 4  # rotor speeds: an asymmetric critic's extra inputs (quadrotor_env.PRIVILEGED)


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


def make_task(task):
    if task.lower() == PENDULUM:
        return CompiledPendulum()
    if task.lower() == QUADROTOR:
        return CompiledQuadrotor()
    return GymTask(task)


# ---------------------------------------------------------------- state <-> flat arrays


def flatten(state, prefix=""):
    """{'actor.params': array, ...} for every array in a (nested) namedtuple."""
    out = {}
    for name, value in zip(state._fields, state):
        key = prefix + name
        if hasattr(value, "_fields"):
            out.update(flatten(value, key + "."))
        else:
            out[key] = value
    return out


SCRATCH = {"actor_x"}  # work buffers a checkpoint of an earlier version may lack
REPLAY_ROWS = ("replay.obs", "replay.act", "replay.rew", "replay.next_obs", "replay.done")


def save_checkpoint(path, state, meta):
    """Everything needed to continue training, written atomically (one .npz)."""
    arrays = dict(flatten(state))
    size = int(state.replay.count[1])
    for k in REPLAY_ROWS:  # only the filled part of the replay buffer
        arrays[k] = arrays[k][:size]
    arrays["__meta__"] = np.frombuffer(json.dumps(meta, sort_keys=True).encode(), dtype=np.uint8)
    buf = io.BytesIO()
    np.savez(buf, **arrays)  # uncompressed: a replay buffer of random floats does not compress
    atomic.write_bytes(path, buf.getvalue())


def read_checkpoint(path):
    """(meta, {name: array}); CheckpointError if missing or damaged."""
    if not os.path.exists(path):
        raise CheckpointError("no checkpoint at %s (train without --resume to start a new run)" % path)
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
        meta = json.loads(bytes(arrays.pop("__meta__")).decode())
    except (zipfile.BadZipFile, ValueError, KeyError, EOFError, OSError, UnicodeDecodeError) as e:
        raise CheckpointError("checkpoint %s is damaged or not a microrl checkpoint (%s: %s); start a new run without --resume" % (path, type(e).__name__, e))
    if meta.get("format") != CHECKPOINT_FORMAT or meta.get("version") != CHECKPOINT_VERSION:
        raise CheckpointError("%s is not a microrl checkpoint of version %d" % (path, CHECKPOINT_VERSION))
    return meta, arrays


def restore(state, arrays, path):
    """Copy checkpoint arrays into a freshly built state of the same configuration."""
    flat = flatten(state)
    missing = sorted(set(flat) - set(arrays) - SCRATCH)
    if missing:
        raise CheckpointError("checkpoint %s lacks %s; it was written by another version" % (path, ", ".join(missing[:5])))
    for k, dst in flat.items():
        if k in SCRATCH and k not in arrays:
            continue
        src = arrays[k]
        if k in REPLAY_ROWS and src.shape[1:] == dst.shape[1:] and src.shape[0] <= dst.shape[0] and src.dtype == dst.dtype:
            dst[: src.shape[0]] = src
            continue
        if src.shape != dst.shape or src.dtype != dst.dtype:
            raise CheckpointError("checkpoint %s: %s is %s %s, expected %s %s" % (path, k, src.dtype, src.shape, dst.dtype, dst.shape))
        dst[...] = src
    if state.replay.count[1] != arrays["replay.rew"].shape[0]:
        raise CheckpointError("checkpoint %s: replay buffer size does not match its contents" % path)


# ---------------------------------------------------------------- the algorithm front end


class Run:
    """What a training run returns: the policy, evaluations [(step, mean, std)], figures, and the
    final training state (networks, optimiser, replay: the arrays a checkpoint holds)."""

    def __init__(self, policy, evals, stats, state=None):
        self.state = state
        self.policy = policy
        self.evals = evals
        self.stats = stats


class Algorithm:
    """The front end of an algorithm module (td3.py, sac.py): configuration, command line,
    training driver. Created at the end of the module as ALGO = Algorithm(__name__)."""

    def __init__(self, module_name):
        self.module_name = module_name

    @property
    def m(self):
        return sys.modules[self.module_name]

    # configuration ---------------------------------------------------
    def config(self, **overrides):
        c = self.m.default_config()
        for k, v in overrides.items():
            if v is None:
                continue
            if not hasattr(c, k):
                raise ValueError("unknown %s setting %r; known: %s" % (self.m.NAME, k, ", ".join(sorted(self.settings(c)))))
            setattr(c, k, v)
        c.hidden = tuple(int(h) for h in c.hidden)
        return c

    def settings(self, config=None):
        c = config or self.m.default_config()
        return {k: getattr(c, k) for k in dir(c) if not k.startswith("_") and not callable(getattr(c, k))}

    def add_arguments(self, parser):
        """Options for this algorithm's hyperparameters (the shared ones are train.py's)."""
        group = parser.add_argument_group("%s hyperparameters" % self.m.NAME.upper())
        for k, default in sorted(self.settings().items()):
            if k in SHARED:
                continue
            kind = int if isinstance(default, int) and not isinstance(default, bool) else float
            if k == "replay_capacity":
                kind = int
            text = HELP.get(k, k.replace("_", " "))
            if default is not None:
                text += " (default %s)" % (default,)
            group.add_argument("--" + k.replace("_", "-"), dest=k, type=kind, default=None, metavar=kind.__name__.upper(), help=text)

    # training ----------------------------------------------------------
    def train_pendulum(self, steps=10000, seed=0, **kwargs):
        """Train on the compiled Pendulum; returns (microrl.policy.Policy, [(step, mean, std)])."""
        return self.train(PENDULUM, steps=steps, seed=seed, **kwargs)

    def train(self, task, steps=10000, seed=0, **kwargs):
        run = self.run(task, steps=steps, seed=seed, **kwargs)
        return run.policy, run.evals

    def run(self, task, steps=10000, seed=0, eval_every=1000, eval_episodes=10, out=None, run_dir=None, checkpoint_every=0, resume=False, quiet=True, progress=None, **settings):
        """Train; returns a Run. out: policy file to write; run_dir: folder for run.json,
        progress.csv and checkpoint.npz (checkpoints every checkpoint_every steps and at the end);
        resume: continue from run_dir's checkpoint; quiet=False shows a progress bar;
        progress(step, state, last_eval) is called after every chunk of up to 1000 steps, as
        microrl.train.train_pendulum calls it (last_eval: (step, mean, std) or None)."""
        from .progress import Progress
        from .runlog import RunLog

        m = self.m
        wall0 = time.perf_counter()
        env = make_task(task)
        self.flight_stats = {}
        ckpt_path = os.path.join(run_dir, "checkpoint.npz") if run_dir else None
        meta = None
        if resume:
            if not ckpt_path:
                raise CheckpointError("resuming needs a run folder holding checkpoint.npz")
            meta, arrays = read_checkpoint(ckpt_path)
            if meta["algo"] != m.NAME or meta["task"].lower() != env.name.lower():
                raise CheckpointError("checkpoint %s is for %s on %s, not %s on %s" % (ckpt_path, meta["algo"], meta["task"], m.NAME, env.name))
            config = self.config(**meta["config"])
            seed = meta["seed"]
        else:
            if env.name == QUADROTOR:
                settings = dict(QUADROTOR_SETTINGS, **{k: v for k, v in settings.items() if v is not None})
            config = self.config(**settings)
        config.steps = int(steps)
        if getattr(env, "privileged", 0) and getattr(m, "ASYMMETRIC", False):
            state = m.new_state(config, env.obs_dim, env.act_dim, int(seed), privileged=env.privileged)
        else:
            state = m.new_state(config, env.obs_dim, env.act_dim, int(seed))
        if env.name == QUADROTOR:
            from . import quadrotor_env

            state = state._replace(env=quadrotor_env.new_env())
        if resume:
            restore(state, arrays, ckpt_path)
        hp = m.hyperparameters(config)
        meta = {
            "format": CHECKPOINT_FORMAT,
            "version": CHECKPOINT_VERSION,
            "algo": m.NAME,
            "task": env.name,
            "seed": int(seed),
            "config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.settings(config).items()},
        }
        start = int(state.counters[0])
        if start > steps:
            raise CheckpointError("the checkpoint is at step %d, beyond --steps %d; ask for more steps" % (start, steps))
        log = None
        if run_dir:
            if resume:
                _truncate_progress(os.path.join(run_dir, "progress.csv"), start)
            log = RunLog(run_dir, dict(meta, steps=int(steps), out=out), resume=resume)

        # compile (or load from numba's cache) before the clock starts: cold vs warm is visible
        t0 = time.perf_counter()
        ep_step = np.zeros(1024, np.int64)
        ep_return = np.zeros(1024)
        if env.name == QUADROTOR:
            from . import quadrotor_env

            if start == 0:
                quadrotor_env.reset(state.env, state.rng, state.obs)
            m.run_quadrotor(state, hp, 0, ep_step, ep_return, QUADROTOR_TRAIN_EVERY)
            quadrotor_env.evaluate(state.actor, m.SQUASH, 0, 0, state.env[quadrotor_env.P0 :])
        elif env.compiled:
            if start == 0:
                nets.pendulum_reset(state.env, state.rng, state.obs)
            m.run_pendulum(state, hp, 0, ep_step, ep_return)
            nets.evaluate_pendulum(state.actor, m.SQUASH, 0, 0)
        else:
            rng = state.rng.copy()
            m.explore(state, hp, state.obs, state.action)
            state.rng[:] = rng  # compiling must not change the run
            nets.greedy_action(state.actor, state.obs, m.SQUASH, state.action)
            env.obs = None
        compile_s = time.perf_counter() - t0

        evals = []
        train_s = 0.0
        train_cpu_s = 0.0
        eval_s = 0.0
        step = start
        last_eval = None
        bar = Progress(steps, desc="%s %s" % (m.NAME, env.name), quiet=quiet, initial=start)
        try:
            while step < steps:
                n = steps - step
                for every in (eval_every, checkpoint_every):
                    if every:
                        n = min(n, every - step % every)
                n = min(n, 1000)
                t0 = time.perf_counter()
                c0 = time.process_time()
                if env.name == QUADROTOR:
                    _quadrotor_curriculum(state, step)
                    ended = m.run_quadrotor(state, hp, n, ep_step, ep_return, QUADROTOR_TRAIN_EVERY)
                elif env.compiled:
                    ended = m.run_pendulum(state, hp, n, ep_step, ep_return)
                else:
                    ended = self._run_gym(env, state, hp, n, ep_step, ep_return)
                train_s += time.perf_counter() - t0
                train_cpu_s += time.process_time() - c0
                step = int(state.counters[0])
                if log:
                    for k in range(ended):
                        log.row(int(ep_step[k]), episode_return=float(ep_return[k]))
                if eval_episodes and ((eval_every and step % eval_every == 0) or step == steps):
                    t0 = time.perf_counter()
                    mean, std = self.evaluate_state(env, state, eval_episodes, seed=10000 + int(seed))
                    eval_s += time.perf_counter() - t0
                    evals.append((step, mean, std))
                    last_eval = mean
                    if log:
                        log.row(step, eval_mean=mean, eval_std=std)
                if ckpt_path and ((checkpoint_every and step % checkpoint_every == 0) or step == steps):
                    save_checkpoint(ckpt_path, state, dict(meta, step=step))
                postfix = {"eval": "%.1f" % last_eval} if last_eval is not None else {}
                bar.update(n, **postfix)
                if progress is not None:
                    progress(step, state, evals[-1] if evals else None)
        finally:
            bar.close()
            if log:
                log.close()
            if not env.compiled:
                env.close()
        policy = self.policy(state, env)
        if out:
            from microrl.policy import save

            folder = os.path.dirname(os.path.abspath(out))
            os.makedirs(folder, exist_ok=True)
            save(out, policy)
        done = steps - start
        stats = {
            "algo": m.NAME,
            "task": env.name,
            "seed": int(seed),
            "steps": int(steps),
            "resumed_from": start if resume else None,
            "compile_s": compile_s,
            "train_s": train_s,
            "train_cpu_s": train_cpu_s,
            "eval_s": eval_s,
            "wall_s": time.perf_counter() - wall0,
            "steps_per_s": done / train_s if train_s > 0 else None,
            "eval_mean": evals[-1][1] if evals else None,
            **self.flight_stats,
            "eval_std": evals[-1][2] if evals else None,
            "out": out,
            "run_dir": run_dir,
        }
        return Run(policy, evals, stats, state)

    def _run_gym(self, env, state, hp, n, ep_step, ep_return):
        """n steps of a gymnasium env from Python; networks and updates stay compiled."""
        m = self.m
        e = env.env
        scale = (env.high - env.low) / 2.0
        offset = (env.high + env.low) / 2.0
        ended = 0
        for _ in range(n):
            if env.obs is None:
                obs, _ = e.reset(seed=int(nets.randint(state.rng, 2**31)))
                env.obs = np.asarray(obs, np.float32).reshape(-1)
                env.episode_return = 0.0
            m.explore(state, hp, env.obs, state.action)
            act = (scale * state.action + offset).reshape(e.action_space.shape)
            next_obs, reward, terminated, truncated, _ = e.step(act)
            next_obs = np.asarray(next_obs, np.float32).reshape(-1)
            m.observe(state, hp, env.obs, state.action, float(reward), next_obs, bool(terminated))
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

    flight_stats = {}  # the quadrotor's success rate and position error at the last evaluation

    def evaluate_state(self, env, state, episodes, seed):
        if not episodes:
            return float("nan"), float("nan")
        if env.name == QUADROTOR:
            from . import quadrotor_env

            rows = quadrotor_env.evaluate(state.actor, self.m.SQUASH, max(episodes, QUADROTOR_EVAL_EPISODES), seed, state.env[quadrotor_env.P0 :])
            self.flight_stats = flight_summary(rows)
            return float(rows[:, 0].mean()), float(rows[:, 0].std())
        if env.compiled:
            returns = nets.evaluate_pendulum(state.actor, self.m.SQUASH, episodes, seed)
            return float(returns.mean()), float(returns.std())
        return evaluate_gym(self.policy(state, env), env.name, episodes, seed)[:2]

    def policy(self, state, env):
        """The deterministic actor as a microrl.policy.Policy in environment units."""
        sizes, acts, params = self.m.actor_export(state)
        scale = (env.high.astype(np.float64) - env.low) / 2.0
        offset = (env.high.astype(np.float64) + env.low) / 2.0
        return Policy([int(s) for s in sizes], [int(a) for a in acts], params=_farray(params), act_scale=list(scale), act_offset=list(offset))

    # command line --------------------------------------------------------
    def train_from_args(self, args):
        """Run `microrl train` with this algorithm; returns the exit code."""
        settings = {}
        for k in self.settings():
            if k in SHARED:
                continue
            v = getattr(args, k, None)
            if v is not None:
                settings[k] = v
        if args.hidden is not None:
            settings["hidden"] = args.hidden
        if args.gamma is not None:
            settings["gamma"] = args.gamma
        if args.activation is not None:
            settings["activation"] = args.activation
        every = QUADROTOR_EVERY if args.task.lower() == QUADROTOR else DEFAULT_EVERY
        run = self.run(
            args.task,
            steps=args.steps,
            seed=args.seed,
            eval_every=every if args.eval_every is None else args.eval_every,
            eval_episodes=args.eval_episodes,
            out=args.out,
            run_dir=args.run_dir,
            checkpoint_every=every if args.checkpoint_every is None else args.checkpoint_every,
            resume=args.resume,
            quiet=args.quiet or args.json,
            **settings
        )
        s = run.stats
        if args.json:
            print(json.dumps(s, sort_keys=True))
        elif not args.quiet and "success_rate" in s:
            print(
                "%s on %s: %d steps in %.2f s (%.0f steps/s; compile/cache load %.2f s); flies %.0f%% of %d episodes from +-0.5 m and 30 deg, "
                "final distance to the target %.3f m (median), return %.1f; policy: %s; run: %s"
                % (s["algo"], s["task"], s["steps"], s["train_s"], s["steps_per_s"] or 0.0, s["compile_s"], 100 * s["success_rate"], max(args.eval_episodes, QUADROTOR_EVAL_EPISODES), s["position_error_m"], _num(s["eval_mean"]), s["out"], s["run_dir"])
            )
        elif not args.quiet:
            print(
                "%s on %s: %d steps in %.2f s (%.0f steps/s; compile/cache load %.2f s), eval return %.1f +- %.1f; policy: %s; run: %s"
                % (s["algo"], s["task"], s["steps"], s["train_s"], s["steps_per_s"] or 0.0, s["compile_s"], _num(s["eval_mean"]), _num(s["eval_std"]), s["out"], s["run_dir"])
            )
        return 0


def _quadrotor_curriculum(state, step):
    from . import quadrotor_env

    state.env[quadrotor_env.CURRICULUM] = min(1.0, step / float(QUADROTOR_CURRICULUM_STEPS))


def flight_summary(rows):
    """success_rate, position_error_m (median final distance to the target) and crash_rate from
    quadrotor evaluation rows (return, success, final distance, steps)."""
    from microrl.quadrotor import EPISODE_STEPS

    return {
        "success_rate": float(rows[:, 1].mean()),
        "position_error_m": float(np.median(rows[:, 2])),
        "crash_rate": float((rows[:, 3] < EPISODE_STEPS).mean()),
    }


def evaluate_gym(policy, env_id, episodes=10, seed=12345):
    """(mean, std, returns) of a policy (obs -> action in env units) on a gymnasium env; episode
    e starts from reset(seed=seed + e)."""
    env = make_gym_env(env_id)
    returns = []
    try:
        for e in range(episodes):
            obs, _ = env.reset(seed=seed + e)
            total = 0.0
            done = False
            while not done:
                act = np.asarray(policy(np.asarray(obs, np.float32).reshape(-1)), np.float32).reshape(env.action_space.shape)
                obs, reward, terminated, truncated, _ = env.step(act)
                total += float(reward)
                done = terminated or truncated
            returns.append(total)
    finally:
        env.close()
    r = np.array(returns)
    return float(r.mean()), float(r.std()), returns


def _farray(values):
    from array import array

    return array("f", np.ascontiguousarray(values, np.float32).tobytes())


def _num(v):
    return float("nan") if v is None else v


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
