"""The compiled off-policy training loop, one definition for TD3 and SAC and every task. Each
algorithm brings two compiled functions: explore(S, hp, obs, out), the policy's exploratory
action once the warm-up is over, and update(S, hp), one gradient step from a replay batch, and
binds them to its State class with bind(). The loop finds them by the type of S when it is
compiled, so numba compiles (and caches on disk) one loop per algorithm from this one source.
(Passing them as arguments would do the same, but numba's disk cache misses such a loop in
every new process.) A task (envs/task.py) is bound the other way, by bind_task(): a copy of the
loop compiled with the task's functions and layout as its constants, cached under the task's
name and a hash of its source. (A class per task in the State's type would do the same, but
numba's disk cache pickles such types into the loop's index, and a user's task module is not
importable in every later process.)

S is the algorithm's State, a namedtuple of arrays with at least counters, replay, rng, env,
obs, next_obs, action and reward (whose length is the batch); hp its hyperparameters as a
float64 array with the warm-up first. twin.run_threaded runs a loop with a second thread for the
critics' halves of its updates.
"""
import numpy as np
from numba.extending import overload

from ..nn import sync
from ..nn.jit import COMPILED_ONLY, bound_copy, inline, jit_nogil
from ..envs.episode import RETURN
from ..nn.rng import new_rng, uniform
from .replay import new_replay, replay_add

STEPS, UPDATES, EPISODES = 0, 1, 2  # S.counters
WARMUP = 0  # hp[WARMUP]: steps of uniform random actions before the first update
# n_steps of a loop called on the worker thread: it serves the second halves of the updates'
# pieces (algos/twin.py) until told to quit. The worker runs the training loop's own compiled
# code, so that a first run compiles (and the cache keeps) one function rather than two.
SERVE = -1
BEGIN = -2  # n_steps of a bound loop called to start the first episode of a run


def loop_arrays(config, obs_dim, act_dim, seed):
    """The arrays of a State that the loop and both algorithms' updates use, by field name:
    replay, random generator, counters, environment, the current transition, and a batch's
    critic inputs, rewards, done flags, targets and critic gradients."""
    n, f32 = config.batch, np.float32
    return dict(
        replay=new_replay(config.replay_capacity, obs_dim, act_dim),
        rng=new_rng(seed),
        counters=np.zeros(3, np.int64),
        env=np.zeros(0),  # the task's (envs/task.py), set by the driver
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
        # the second critic's side of the batch arrays (twin.py), and the threads' handshake
        q1=np.zeros(n, f32),
        q2=np.zeros(n, f32),
        dq2=np.zeros((n, 1), f32),
        dx2=np.zeros((n, obs_dim + act_dim), f32),
        sync=sync.new_sync(),
    )


_BOUND = {}  # State class -> (explore, update, serve)


def bind(state_class, explore, update, serve):
    """Make explore(S, hp, obs, out), update(S, hp) and serve(S, hp) (the worker thread's
    loop), plain Python functions in numba's subset, this loop's calls for states of this class
    (once per algorithm, at import)."""
    _BOUND[state_class] = (explore, update, serve)


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


def algorithm_serve(S, hp):
    """The serve() bound to S's class: compiled code only."""
    raise TypeError("algorithm_serve runs in compiled code only")


@overload(algorithm_serve, jit_options=COMPILED_ONLY)
def _algorithm_serve(S, hp):
    return _BOUND[S.instance_class][2]


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


# ---------------------------------------------------------------- the loop, bound to a task
# the names a bound copy of run_task sees in place of these: the task's episode (envs/episode.py,
# bound to the task in CompiledTask.bindings)
episode_begin = episode_reset = episode_act = episode_step = None


def run_task(S, hp, n_steps, ep_step, ep_return, train_every):
    """n_steps of training on the task bound to this copy (S.env is its array: envs/task.py),
    one update every train_every steps. Episode ends go to ep_step/ep_return (as many as they
    hold); returns how many. n_steps BEGIN: start the first episode; SERVE: the worker
    thread's loop (twin.py). nogil: the worker runs beside it. The sim-to-real perturbations set
    in the env array apply around the task's reset and step (envs/episode.py)."""
    if n_steps == SERVE:
        algorithm_serve(S, hp)
        return 0
    env = S.env
    fresh = n_steps == BEGIN  # an episode to start: the run's first (BEGIN), or after one ended
    if fresh:
        episode_begin(env, S.rng)
        n_steps = 1
    ended = 0
    for _ in range(n_steps):
        if not fresh:
            explore(S, hp, S.obs, S.action)
            episode_act(env, S.action)
            r, terminated, truncated = episode_step(env, S.rng, S.next_obs)
            observe(S, hp, S.obs, S.action, r, S.next_obs, terminated, train_every)
            if terminated or truncated:
                if ended < ep_step.shape[0]:
                    ep_step[ended] = S.counters[STEPS]
                    ep_return[ended] = env[RETURN]
                    ended += 1
                S.counters[EPISODES] += 1
                fresh = True
            else:
                for i in range(S.obs.shape[0]):
                    S.obs[i] = S.next_obs[i]
        if fresh:
            episode_reset(env, S.rng, S.obs)
            fresh = False
    return ended


_TASK_LOOPS = {}  # CompiledTask.key -> its loop


def bind_task(task):
    """run_task compiled for task (an envs.task.CompiledTask): run(S, hp, n_steps, ep_step,
    ep_return, train_every), one per task and process, cached on disk under task.key."""
    run = _TASK_LOOPS.get(task.key)
    if run is None:
        run = _TASK_LOOPS[task.key] = bound_copy(run_task, "run_task_" + task.key, task.bindings, jit_nogil)
    return run
