"""The one training driver, for every algorithm: the run log, resume and checkpoint metadata,
timing, Ctrl-C, evaluation (one seed rule), divergence, the policy file with its reference
vectors, and one results shape (results.Run). It names no algorithm and no task.

An algorithm is a Learner (below): it advances some steps, evaluates its deterministic policy,
says whether its networks stayed finite, gives its policy, and saves and restores its state.
TD3 and SAC (offpolicy.py) advance in chunks of their compiled loop; PPO (ppo.py) a rollout and
its update at a time."""
import os
import time

from microrl.policy import save as save_policy
from microrl.refusals import count

from .. import atomic
from ..references import attach as attach_references
from ..runlog import CHECKPOINT, RunLog
from . import checkpoint
from .callbacks import NONE
from .checkpoint import CheckpointError
from .results import Run, run_result

POLICY = "policy.mrlp"  # the run folder's copy of the policy, written with each checkpoint
EVAL_SEED = 10000  # evaluation episode k of a run of seed S starts from seed EVAL_SEED + S (+ k)


class TrainingDiverged(Exception):
    """A run whose losses or networks became NaN or infinite: stopped; nothing written after the
    last good checkpoint."""


def evaluation_seed(seed):
    """The seed of a run's evaluations: the same starts at every evaluation of a run, other
    starts for another seed, none of them the training's own."""
    return EVAL_SEED + int(seed)


def resume_differences(saved, given, resumable=("steps",)):
    """['hidden: the checkpoint has (64, 64), given (32, 32)', ...] for every setting given
    (not None) that differs from the checkpoint's (saved); resumable ones may differ."""
    out = []
    for k in sorted(given):
        if k in resumable or given[k] is None:
            continue
        mine, theirs = given[k], saved.get(k)
        if isinstance(mine, (list, tuple)):
            mine, theirs = tuple(mine), tuple(theirs) if isinstance(theirs, (list, tuple)) else theirs
        if mine != theirs:
            out.append("%s: the checkpoint has %r, given %r" % (k, theirs, mine))
    return out


def refuse_differences(run_dir, differences):
    if differences:
        raise CheckpointError("the checkpoint in %s was made with other settings: %s; resume without them, or start a new run (another --run-dir)"
                              % (run_dir, "; ".join(differences)))


def task_differences(meta, env):
    """['perturbations: ...'] where the checkpoint's meta differs from the task env (a
    CompiledTask: its perturbations trained with, the pending actions observed) of the run
    resuming it: a run continues on the task it trained on."""
    out = []
    saved, given = meta.get("perturbations", {}), dict(getattr(env, "perturbations", {}))
    if saved != given:
        out.append("perturbations: the checkpoint has %r, given %r" % (saved, given))
    if meta.get("pending_actions", 0) != getattr(env, "pending", 0):
        out.append("pending actions observed: the checkpoint's %d steps, given %d" % (meta.get("pending_actions", 0), getattr(env, "pending", 0)))
    return out


def read_resume(run_dir, algo, task):
    """(meta, arrays) of the run folder's checkpoint, for algo on task; CheckpointError (a
    FileNotFoundError where there is none) in one line."""
    path = os.path.join(run_dir, CHECKPOINT) if run_dir else None
    if not path or not os.path.exists(path):
        raise MissingCheckpoint("nothing to resume: no %s in %s; start without --resume" % (CHECKPOINT, run_dir or "a run without a run folder"))
    meta, arrays = checkpoint.read(path)
    if meta.get("algo") != algo or str(meta.get("task", "")).lower() != task.lower():
        raise CheckpointError("the checkpoint in %s is for %s on %s, not %s on %s" % (run_dir, meta.get("algo"), meta.get("task"), algo, task))
    return meta, arrays


class MissingCheckpoint(CheckpointError, FileNotFoundError):
    """--resume with no checkpoint to resume."""


class DeferredInterrupt:
    """The first Ctrl-C lets the current chunk finish (the driver then saves a checkpoint, which
    is consistent there, and raises KeyboardInterrupt); a second one stops at once. Only in the
    main thread, where Python delivers signals."""

    def __init__(self, say):
        import signal
        import threading

        self.pending, self.say, self.previous = False, say, None
        if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            self.previous = signal.signal(signal.SIGINT, self._handler)

    def _handler(self, signum, frame):
        if self.pending:
            raise KeyboardInterrupt
        self.pending = True
        self.say("Ctrl-C: finishing these steps, then saving a checkpoint (Ctrl-C again to stop now)")

    def restore(self):
        if self.previous is not None:
            import signal

            signal.signal(signal.SIGINT, self.previous)
            self.previous = None


class Learner:
    """What the driver asks of an algorithm. algo, task: names (checkpoints, results); step: the
    steps done; trainer: what on_progress hands a callback (the algorithm's own object).
    Chunk: what advance() returns."""

    algo = task = None
    step = 0
    trainer = None
    module = None  # a task written against the task interface: its module (its success test)
    summary = None  # after evaluate(), on a task with a success test: tasks.summary of it
    advice = ""  # what may help when the run diverges

    def prepare(self, callbacks):
        """Compile (or load from numba's cache) before the clock starts."""

    def advance(self, limit):
        """Train up to limit steps (an algorithm that steps in whole iterations may go past it);
        returns a Chunk."""
        raise NotImplementedError

    def evaluate(self, episodes, seed):
        """(mean, std) of the deterministic policy's returns over episodes starting from seed;
        sets self.summary on a task with a success test."""
        raise NotImplementedError

    def non_finite(self):
        """What became NaN or infinite (a name), or None."""
        raise NotImplementedError

    def policy(self, snapshot=None):
        """The deterministic policy (a microrl.policy.Policy), or that of a snapshot()."""
        raise NotImplementedError

    def snapshot(self):
        """The actor's parameters as of now (a copy), for keep_best."""
        raise NotImplementedError

    def observations(self):
        """Observations the policy met (rows), for the policy file's reference vectors."""
        raise NotImplementedError

    def settings(self):
        """{name: value} of the configuration (checkpoint metadata, run.json)."""
        raise NotImplementedError

    def checkpoint(self):
        """(meta, arrays, compress): the state a checkpoint holds."""
        raise NotImplementedError

    def restore(self, meta, arrays):
        """Restore a checkpoint's state; returns {step, evals, elapsed} as far as it has them."""
        raise NotImplementedError

    def scalars(self, chunk, rng):
        """{tag: float} for a recorder at an evaluation (losses), {} for none."""
        return {}

    def close(self):
        pass

    used = ()  # the modules of results.PACKAGES the run used


class Chunk:
    """What advance() did: steps (now done in all), episodes [(step, return)] that ended,
    figures {name: float} to show, scalars {tag: float} for a recorder."""

    def __init__(self, episodes=(), figures=None, scalars=None, done=None):
        self.episodes = list(episodes)
        self.figures = figures or {}
        self.scalars = scalars or {}
        self.done = done


def drive(learner, steps, seed, out=None, run_dir=None, resumed=None, eval_every=0, eval_episodes=10, checkpoint_every=0, callbacks=None,
          keep_best=False, meta=None, wall0=None, max_chunk=None):
    """Train learner up to steps (in all, counting those before a resume); returns a results.Run.
    resumed: (meta, arrays) of the checkpoint continued (read_resume), after the caller checked
    its settings. eval_every: steps between evaluations (0: at the end only), each of
    eval_episodes episodes (0: none); checkpoint_every likewise (0: at the end only). keep_best:
    on a task with a success test, keep the actor of the best evaluation rather than the final
    one. meta: what the checkpoint and run.json say of the run besides the learner's settings."""
    callbacks = callbacks or NONE
    wall0 = time.perf_counter() if wall0 is None else wall0
    ckpt_path = os.path.join(run_dir, CHECKPOINT) if run_dir else None
    evals, elapsed_before = [], 0.0
    if resumed is not None:
        got = learner.restore(*resumed)
        evals, elapsed_before = [tuple(e) for e in got.get("evals", [])], float(got.get("elapsed", 0.0))
    start = learner.step
    if start > steps:
        raise CheckpointError("the checkpoint is at step %d, beyond --steps %d; ask for more steps" % (start, steps))
    meta = dict(meta or {}, algo=learner.algo, task=learner.task, seed=int(seed), config=_plain(learner.settings()))
    log = None
    if run_dir:
        if resumed is not None:
            _truncate_progress(os.path.join(run_dir, "progress.csv"), start)
        log = RunLog(run_dir, dict(meta, steps=int(steps), out=out), resume=resumed is not None)
    interrupt = DeferredInterrupt(callbacks.on_message)
    try:
        return _drive(learner, steps, seed, out, run_dir, ckpt_path, resumed is not None, start, evals, elapsed_before, eval_every, eval_episodes,
                      checkpoint_every, callbacks, keep_best, meta, wall0, log, interrupt, max_chunk)
    finally:
        interrupt.restore()
        callbacks.on_end()
        learner.close()
        if log:
            log.close()


def _drive(learner, steps, seed, out, run_dir, ckpt_path, resumed, start, evals, elapsed_before, eval_every, eval_episodes, checkpoint_every, callbacks,
           keep_best, meta, wall0, log, interrupt, max_chunk):
    learner.prepare(callbacks)
    t_start = time.perf_counter()
    compile_s = t_start - wall0  # building the environments, compiling or loading the code
    train_s = train_cpu_s = eval_s = 0.0
    best = None  # keep_best: (score, step, summary, actor parameters) of the best evaluation
    last_eval = evals[-1][1] if evals else None
    last_good = [start if resumed else None]  # the step of the last checkpoint written
    step = start
    next_eval = (step // eval_every + 1) * eval_every if eval_every else None
    next_ckpt = (step // checkpoint_every + 1) * checkpoint_every if checkpoint_every else None
    sample_rng = None
    callbacks.on_start(steps, min(step, steps), "%s %s" % (learner.algo, learner.task))
    if callbacks.records:
        import numpy as np

        callbacks.on_settings(dict(meta["config"], algo=learner.algo, task=learner.task, seed=int(seed), steps=int(steps)))
        sample_rng = np.random.default_rng(int(seed))  # a recorder's samples: the run's own generators are left alone

    def now():
        return elapsed_before + time.perf_counter() - t_start

    def save_checkpoint():
        extra, arrays, compress = learner.checkpoint()
        checkpoint.write(ckpt_path, dict(meta, step=learner.step, evals=[list(e) for e in evals], elapsed=now(), **extra), arrays, compress=compress)
        last_good[0] = learner.step
        save_policy(os.path.join(run_dir, POLICY), attach_references(learner.policy(), learner.observations()))

    consistent = True  # the learner's state is whole (not in the middle of a chunk): a checkpoint now resumes exactly
    try:
        while step < steps:
            n = steps - step
            for every in (eval_every, checkpoint_every):
                if every:
                    n = min(n, every - step % every)
            if max_chunk:
                n = min(n, max_chunk)
            consistent = False
            t0, c0 = time.perf_counter(), time.process_time()
            chunk = learner.advance(n)
            chunk_s = time.perf_counter() - t0
            train_s += chunk_s
            train_cpu_s += time.process_time() - c0
            previous, step = step, learner.step
            bad = learner.non_finite()
            if bad:
                raise TrainingDiverged(
                    "%s on %s diverged: %s became NaN or infinite between step %d and step %d; stopped, no policy written%s%s"
                    % (learner.algo, learner.task, bad, previous, step,
                       "; %s keeps the checkpoint of step %d" % (ckpt_path, last_good[0]) if last_good[0] is not None else "", learner.advice))
            consistent = True
            if log:
                for at, episode_return in chunk.episodes:
                    log.row(at, episode_return=episode_return, time_s=now())
            figures = dict(chunk.figures)
            scalars = None
            if callbacks.records:
                scalars = dict(chunk.scalars, **{"charts/steps_per_s": (step - previous) / chunk_s if chunk_s > 0 else None})
                if chunk.episodes:
                    import numpy as np

                    scalars["charts/episode_return"] = float(np.mean([r for _, r in chunk.episodes]))
            if eval_episodes and (step >= steps or (next_eval and step >= next_eval)):
                t0 = time.perf_counter()
                mean, std = learner.evaluate(eval_episodes, evaluation_seed(seed))
                eval_s += time.perf_counter() - t0
                evals.append((step, mean, std))
                last_eval = mean
                if keep_best and learner.summary is not None:
                    from .. import tasks

                    score = tasks.score(learner.module, learner.summary, mean)
                    if best is None or score > best[0]:
                        best = (score, step, dict(learner.summary), learner.snapshot())
                if log:
                    log.row(step, eval_mean=mean, eval_std=std, time_s=now())
                if scalars is not None:
                    scalars.update({"eval/return_mean": mean, "eval/return_std": std})
                    scalars.update({"eval/" + k: v for k, v in (learner.summary or {}).items() if isinstance(v, float)})
                    scalars.update(learner.scalars(chunk, sample_rng))
                success = ", success %.0f%%" % (100.0 * learner.summary["success_rate"]) if learner.summary is not None else ""
                callbacks.on_message("step %d: deterministic return %.1f +- %.1f%s (%s)" % (step, mean, std, success, count(eval_episodes, "episode")))
            if next_eval and step >= next_eval:
                next_eval = (step // eval_every + 1) * eval_every
            if ckpt_path and (step >= steps or (next_ckpt and step >= next_ckpt)):
                save_checkpoint()
            if next_ckpt and step >= next_ckpt:
                next_ckpt = (step // checkpoint_every + 1) * checkpoint_every
            if last_eval is not None:
                figures.setdefault("eval", last_eval)
            callbacks.on_progress(step, chunk.done if chunk.done is not None else step - previous, learner.trainer, figures)
            if scalars is not None:
                callbacks.on_record(step, {k: v for k, v in scalars.items() if v is not None})
            if interrupt.pending:
                raise KeyboardInterrupt
    except KeyboardInterrupt:
        learner.close()  # a worker thread may still be writing the networks
        if ckpt_path and consistent and last_good[0] != learner.step:  # keep what was learned: the run continues with --resume
            save_checkpoint()
            callbacks.on_message("interrupted at step %d; checkpoint saved in %s (continue with --resume)" % (learner.step, run_dir))
        elif ckpt_path and not consistent:
            callbacks.on_message("stopped in the middle of a chunk; %s keeps the last checkpoint (continue with --resume)" % run_dir)
        raise
    policy = learner.policy()
    summary = learner.summary
    policy_step = step
    if best is not None:
        # learning is not monotone (TD3 on the quadrotor: a policy that flies can be lost later):
        # keep_best keeps the actor of the best evaluation, as a checkpoint-on-best would
        final_success = summary["success_rate"]
        summary = dict(best[2], final_success_rate=final_success)
        policy_step = best[1]
        if best[1] != step:
            policy = learner.policy(best[3])
    attach_references(policy, learner.observations())
    if out:
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        save_policy(out, policy)
    stats = run_result(
        learner.algo, learner.task, seed, steps, start if resumed else None, wall_s=time.perf_counter() - wall0, train_s=train_s, train_cpu_s=train_cpu_s,
        compile_s=compile_s, eval_s=eval_s, evals=evals, policy=out, run_dir=run_dir, used=learner.used,
    )
    if summary is not None:  # a task with a success test: success rate, final error, termination rate of the policy written
        stats.update(summary)
        stats["policy_step"] = policy_step
        stats.setdefault("final_success_rate", summary["success_rate"])
    for k in ("perturbations", "pending_actions"):
        if meta.get(k):
            stats[k] = meta[k]
    return Run(policy, evals, stats, learner.trainer)


def _plain(settings):
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in settings.items()}


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
