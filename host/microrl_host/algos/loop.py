"""The compiled off-policy training loop, one definition for TD3 and SAC. Each algorithm brings
two compiled functions: explore(S, hp, obs, out), the policy's exploratory action once the
warm-up is over, and update(S, hp), one gradient step from a replay batch, and binds them to
its State class with bind(). The loop finds them by the type of S when it is compiled, so numba
compiles (and caches on disk) one loop per algorithm from this one source. (Passing them as
arguments would do the same, but numba's disk cache misses such a loop in every new process.)
An algorithm may also bind job(S, hp, job, side), the two independent halves of a piece of its
update (side 0 and 1: critic 1 and critic 2), which begin()/end() run on two threads when a
worker serves (serve_in_thread()) and one after the other on one thread otherwise, with the
same arithmetic either way (nn/sync.py).

S is the algorithm's State, a namedtuple of arrays with at least counters, replay, rng, env,
obs, next_obs, action and reward (whose length is the batch); hp its hyperparameters as a
float64 array with the warm-up first.
"""
import numpy as np
from numba.extending import overload

from ..envs import quadrotor
from ..envs.pendulum import MAX_TORQUE, pendulum_reset, pendulum_step
from ..nn import sync
from ..nn.jit import COMPILED_ONLY, inline, jit, jit_nogil
from ..nn.rng import new_rng, uniform
from .replay import new_replay, replay_add

STEPS, UPDATES, EPISODES = 0, 1, 2  # S.counters
WARMUP = 0  # hp[WARMUP]: steps of uniform random actions before the first update



def loop_arrays(config, obs_dim, act_dim, seed):
    """The arrays of a State that the loop and both algorithms' updates use, by field name:
    replay, random generator, counters, environment, the current transition, and a batch's
    critic inputs, rewards, done flags, targets and critic gradients."""
    n, f32 = config.batch, np.float32
    return dict(
        replay=new_replay(config.replay_capacity, obs_dim, act_dim),
        rng=new_rng(seed),
        counters=np.zeros(3, np.int64),
        env=np.zeros(4),
        obs=np.zeros(obs_dim, f32),
        next_obs=np.zeros(obs_dim, f32),
        action=np.zeros(act_dim, f32),
        critic_in=np.zeros((n, obs_dim + act_dim), f32),
        next_in=np.zeros((n, obs_dim + act_dim), f32),
        actor_in=np.zeros((n, obs_dim), f32),
        reward=np.zeros(n, f32),
        done=np.zeros(n, f32),
        y=np.zeros(n, f32),
        dq=np.zeros((n, 1), f32),
        dx=np.zeros((n, obs_dim + act_dim), f32),
        q2=np.zeros(n, f32),  # critic 2's (or its target's) values, beside y and q1
        dq2=np.zeros((n, 1), f32),  # critic 2's output gradient, beside dq
        sync=sync.new_sync(),  # the two threads' handshake; not part of a checkpoint
    )


_BOUND = {}  # State class -> (explore, update)


def bind(state_class, explore, update, job):
    """Make explore(S, hp, obs, out), update(S, hp) and job(S, hp, job, side), plain Python
    functions in numba's subset, this loop's calls for states of this class (once per
    algorithm, at import)."""
    _BOUND[state_class] = (explore, update, job)


def algorithm_explore(S, hp, obs, out):
    """The explore() bound to S's class: compiled code only."""
    raise TypeError("algorithm_explore runs in compiled code only")


def algorithm_update(S, hp):
    """The update() bound to S's class: compiled code only."""
    raise TypeError("algorithm_update runs in compiled code only")


# numba compiles the bound function itself as the implementation: one function, called from
# compiled code only (no wrapper for Python callers), with the numpy error model of nn/jit.py
@overload(algorithm_explore, jit_options=COMPILED_ONLY)
def _algorithm_explore(S, hp, obs, out):
    return _BOUND[S.instance_class][0]


@overload(algorithm_update, jit_options=COMPILED_ONLY)
def _algorithm_update(S, hp):
    return _BOUND[S.instance_class][1]


def algorithm_job(S, hp, job, side):
    """The job() bound to S's class: compiled code only."""
    raise TypeError("algorithm_job runs in compiled code only")


@overload(algorithm_job, jit_options=COMPILED_ONLY)
def _algorithm_job(S, hp, job, side):
    return _BOUND[S.instance_class][2]


# ---------------------------------------------------------------- the second thread


@inline
def begin(S, hp, job):
    """Start job's side 1 on the worker, if one serves (returns whether); the caller then does
    side 0 or other work that touches neither side's arrays, and calls end()."""
    return sync.hand_over(S.sync, job)


@inline
def end(S, hp, job, handed):
    """Side 1 of job done: waited for, or run here when no worker took it."""
    if handed:
        sync.wait_worker(S.sync)
    else:
        algorithm_job(S, hp, job, 1)


@inline
def both_sides(S, hp, job):
    """Both halves of job, on two threads when a worker serves."""
    handed = begin(S, hp, job)
    algorithm_job(S, hp, job, 0)
    end(S, hp, job, handed)


@inline
def serve(S, hp):
    """The worker thread: run the side 1 of every job handed over, until QUIT."""
    while True:
        job = sync.next_job(S.sync)
        if job == sync.QUIT:
            sync.job_done(S.sync)
            return
        algorithm_job(S, hp, job, 1)
        sync.job_done(S.sync)


@jit
def stop_worker(s):
    """Tell the worker serving sync array s to return."""
    s[sync.JOB] = sync.QUIT
    sync.store_release(s, sync.REQUESTED, s[sync.REQUESTED] + 1)


def serve_in_thread(run, S, hp, *args):
    """Start a thread running run(S, hp, *args) as the worker of the updates the calling
    thread makes next; returns a function that stops and joins it. run is one of this module's
    loops, whose last argument is its role (the worker's args end in SERVE)."""
    import threading

    S.sync[:] = 0
    S.sync[sync.SERVING] = 1
    thread = threading.Thread(target=run, args=(S, hp) + tuple(args), name="microrl-update-worker", daemon=True)
    thread.start()

    def stop():
        stop_worker(S.sync)
        thread.join()
        S.sync[sync.SERVING] = 0

    return stop


def run_chunk(run, S, hp, threads, *args):
    """run(S, hp, *args) as the training thread, with a worker thread for the second halves of
    its updates when threads > 1 (the same run either way)."""
    if threads < 2:
        return run(S, hp, *args, TRAIN)
    stop = serve_in_thread(run, S, hp, *(args + (SERVE,)))
    try:
        return run(S, hp, *args, TRAIN)
    finally:
        stop()


def default_threads():
    """2 where this process may use two CPUs or more (MICRORL_THREADS overrides), else 1: the
    worker spins while it waits, which only pays on a CPU of its own."""
    import os

    given = os.environ.get("MICRORL_THREADS")
    if given:
        try:
            return max(1, int(given))
        except ValueError:
            raise ValueError("MICRORL_THREADS=%r: give a whole number of threads (1 or 2)" % given)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return 2 if cpus >= 2 else 1


@inline
def explore(S, hp, obs, out):
    """Training-time action in [-1, 1]: uniform during the warm-up, then the algorithm's."""
    if S.counters[STEPS] < hp[WARMUP]:
        for i in range(out.shape[0]):
            out[i] = uniform(S.rng, -1.0, 1.0)
        return
    algorithm_explore(S, hp, obs, out)


@inline
def observe(S, hp, obs, action, reward, next_obs, terminated, train_every):
    """Store a transition, count the step, and once the warm-up is over and a batch is stored,
    update every train_every steps."""
    replay_add(S.replay, obs, action, reward, next_obs, terminated)
    S.counters[STEPS] += 1
    if S.counters[STEPS] >= hp[WARMUP] and S.replay.count[1] >= S.reward.shape[0] and S.counters[STEPS] % train_every == 0:
        algorithm_update(S, hp)


TRAIN, SERVE = 0, 1  # a loop's role: the training thread, or the worker of its updates

# nogil: the training thread and its worker run these loops at the same time


@jit_nogil
def run_pendulum(S, hp, n_steps, ep_step, ep_return, role):
    """n_steps of training on the compiled Pendulum. Episode ends go to ep_step/ep_return;
    returns how many. role SERVE: be the worker of another thread's run (serve_in_thread)."""
    if role == SERVE:
        serve(S, hp)
        return 0
    ended = 0
    for _ in range(n_steps):
        explore(S, hp, S.obs, S.action)
        r, truncated = pendulum_step(S.env, MAX_TORQUE * S.action[0], S.next_obs)
        observe(S, hp, S.obs, S.action, r, S.next_obs, False, 1)
        if truncated:
            ep_step[ended] = S.counters[STEPS]
            ep_return[ended] = S.env[3]
            ended += 1
            S.counters[EPISODES] += 1
            pendulum_reset(S.env, S.rng, S.obs)
        else:
            for i in range(S.obs.shape[0]):
                S.obs[i] = S.next_obs[i]
    return ended


@jit_nogil
def run_quadrotor(S, hp, n_steps, ep_step, ep_return, train_every, role):
    """n_steps of training on the compiled quadrotor (envs/quadrotor.py; S.env is its array),
    one update every train_every steps (L2F: 10); role as run_pendulum's."""
    if role == SERVE:
        serve(S, hp)
        return 0
    ended = 0
    for _ in range(n_steps):
        explore(S, hp, S.obs, S.action)
        r, terminated, truncated = quadrotor.step(S.env, S.action, S.next_obs)
        observe(S, hp, S.obs, S.action, r, S.next_obs, terminated, train_every)
        if terminated or truncated:
            if ended < ep_step.shape[0]:
                ep_step[ended] = S.counters[STEPS]
                ep_return[ended] = S.env[quadrotor.RETURN]
                ended += 1
            S.counters[EPISODES] += 1
            quadrotor.reset(S.env, S.rng, S.obs)
        else:
            for i in range(S.obs.shape[0]):
                S.obs[i] = S.next_obs[i]
    return ended
