"""The twin critics' halves of an off-policy update (TD3, SAC), on two threads.

Every piece of an update that concerns the two critics (their targets' values, their Adam steps,
their values and action gradients for the actor, their targets' averaging) has two sides that
touch disjoint arrays: side 0 critic 1's, side 1 critic 2's. The training thread hands side 1 to
a worker thread (serve) and does side 0 itself; without a worker it does side 1 after side 0.
Each side is computed the same way on either thread, so a run is bit for bit the same with one
thread or two.

    handed = twin.begin(S, twin.CRITICS)
    twin.critic_step(S, hp, 0)
    if handed:
        twin.wait(S)
    else:
        twin.critic_step(S, hp, 1)

The updates write this out at each piece: a helper that chose the piece's function by its
number would carry every piece's code to every call, which numba compiles again each time.

The worker and side 1 run over a Twin, the State's arrays that the pieces touch, rather than the
whole State (about 55 arrays), which numba would spend seconds compiling more code over.

hp convention (td3.HP, sac.HP): tau at index 2, the critics' learning rate at 4, and the critics'
loss scale (2: mean squared error, 1: half of it) last.
"""
from collections import namedtuple

import numpy as np

from ..nn import mlp, sync
from ..nn.jit import compiled_only, inline, jit, jit_nogil
from ..nn.mlp import backward, forward, polyak
from .loop import UPDATES

TAU, CRITIC_LR, LOSS_SCALE = 2, 4, -1  # in hp
f32 = np.float32

# the pieces, as the worker is told them
TARGETS, CRITICS, ACTOR_Q, ACTOR_DQ, CRITIC_TARGETS, ACTOR_ROWS = range(6)

# TD3's actor step split by rows: half[side] of the batch through the actor and critic 1, side
# 1 on views of them with buffers of their own (mlp.rows_of), its gradient added to side 0's
Half = namedtuple("Half", "actor critic1 x ci dq dx da")
Twin = namedtuple("Twin", "critic1 critic2 critic1_target critic2_target critic_in next_in y q1 q2 dq dq2 dx dx2 counters sync actor half")


def new_half(actor, critic1, batch, obs_dim, act_dim):
    """The Half of a State: each side's rows (the batch's first and second half; an odd batch's
    spare row has a zero gradient)."""
    h = (batch + 1) // 2
    return Half(actor=mlp.rows_of(actor, h), critic1=mlp.rows_of(critic1, h), x=np.zeros((2, h, obs_dim), f32), ci=np.zeros((2, h, obs_dim + act_dim), f32),
                dq=np.zeros((2, h, 1), f32), dx=np.zeros((2, h, obs_dim + act_dim), f32), da=np.zeros((2, h, act_dim), f32))


@inline
def twin(S):
    return Twin(S.critic1, S.critic2, S.critic1_target, S.critic2_target, S.critic_in, S.next_in, S.y, S.q1, S.q2, S.dq, S.dq2, S.dx, S.dx2, S.counters, S.sync,
                S.actor, S.half)


def twin_of(S):
    """twin(S), from Python."""
    return Twin(*(getattr(S, k) for k in Twin._fields))


# ---------------------------------------------------------------- the pieces (T: a State or a Twin)


@inline
def target_values(T, side):
    """The target critic's values of next_in: critic 1's into y, critic 2's into q2."""
    if side == 0:
        mlp.values(T.critic1_target, T.next_in, T.y.shape[0], T.y)
    else:
        mlp.values(T.critic2_target, T.next_in, T.y.shape[0], T.q2)


@inline
def critic_step(T, hp, side):
    """One Adam step of the critic towards y (loss: hp's scale / 2 * mean squared error)."""
    n = T.y.shape[0]
    if side == 0:
        mlp.regress(T.critic1, T.critic_in, T.y, n, hp[LOSS_SCALE], hp[CRITIC_LR], T.counters[UPDATES], T.dq)
    else:
        mlp.regress(T.critic2, T.critic_in, T.y, n, hp[LOSS_SCALE], hp[CRITIC_LR], T.counters[UPDATES], T.dq2)


@inline
def critic_values(T, side):
    """The critic's values of critic_in (the actor's actions): critic 1's into q1, 2's into q2."""
    if side == 0:
        mlp.values(T.critic1, T.critic_in, T.y.shape[0], T.q1)
    else:
        mlp.values(T.critic2, T.critic_in, T.y.shape[0], T.q2)


@inline
def critic_input_grads(T, side):
    """Back through the critic's last critic_values from dq (dq2) to its inputs, dx (dx2)."""
    n = T.y.shape[0]
    if side == 0:
        backward(T.critic1, T.critic_in, n, T.dq, mlp.grads(T.critic1)[:0], T.dx)
    else:
        backward(T.critic2, T.critic_in, n, T.dq2, mlp.grads(T.critic2)[:0], T.dx2)


@inline
def critic_targets(T, hp):
    """Both critic targets follow their critics (a piece too small to split: side 1 only)."""
    polyak(T.critic1_target, T.critic1, hp[TAU])
    polyak(T.critic2_target, T.critic2, hp[TAU])


@inline
def _actor_rows(actor, critic, x, ci, dq, dx, da, rows, n):
    """TD3's actor gradient from x's first `rows` rows (the others padding): maximise
    Q1(s, pi(s)), dL/dQ = -1/n back through the critic to the actions, into grads(actor)."""
    h = x.shape[0]
    od = x.shape[1]
    a = forward(actor, x, h)
    for s in range(h):
        for i in range(a.shape[1]):
            ci[s, od + i] = a[s, i]
    forward(critic, ci, h)
    for s in range(h):
        dq[s, 0] = -1.0 / n if s < rows else 0.0
    backward(critic, ci, h, dq, mlp.grads(critic)[:0], dx)
    for s in range(h):
        for i in range(da.shape[1]):
            da[s, i] = dx[s, od + i]
    backward(actor, x, h, da, mlp.grads(actor), dx[:0])


@inline
def actor_rows(T, side):
    """Side 0: the batch's first half, on the actor and critic 1; side 1: the rest, on their
    views in T.half (gradient into T.half.actor's)."""
    n = T.y.shape[0]
    h = T.half.x.shape[1]
    H = T.half
    if side == 0:
        _actor_rows(T.actor, T.critic1, H.x[0], H.ci[0], H.dq[0], H.dx[0], H.da[0], h, n)
    else:
        _actor_rows(H.actor, H.critic1, H.x[1], H.ci[1], H.dq[1], H.dx[1], H.da[1], n - h, n)


@inline
def split_rows(S):
    """The batch's observations into the two halves' inputs (an odd batch's spare row zero)."""
    H = S.half
    h = H.x.shape[1]
    n = S.y.shape[0]
    od = H.x.shape[2]
    for side in range(2):
        for s in range(h):
            r = side * h + s
            for i in range(od):
                v = S.critic_in[r, i] if r < n else np.float32(0.0)
                H.x[side, s, i] = v
                H.ci[side, s, i] = v


@inline
def add_half_gradient(S):
    g, g1 = mlp.grads(S.actor), mlp.grads(S.half.actor)
    for k in range(g.shape[0]):
        g[k] += g1[k]


# ---------------------------------------------------------------- two threads


@compiled_only
def side_one(T, hp):
    """The worker's side 1 of the piece named in T.sync."""
    piece = T.sync[sync.JOB]
    if piece == TARGETS:
        target_values(T, 1)
    elif piece == CRITICS:
        critic_step(T, hp, 1)
    elif piece == ACTOR_Q:
        critic_values(T, 1)
    elif piece == ACTOR_DQ:
        critic_input_grads(T, 1)
    elif piece == CRITIC_TARGETS:
        critic_targets(T, hp)
    elif piece == ACTOR_ROWS:
        actor_rows(T, 1)


@inline
def begin(S, piece):
    """Hand side 1 of piece to the worker, if one serves (returns whether). The caller then
    does side 0, or other work touching neither side's arrays, then wait() if it was handed,
    else side 1 itself."""
    return sync.hand_over(S.sync, piece)


@inline
def wait(S):
    """Until the worker has done the side it was handed."""
    sync.wait_worker(S.sync)


@jit_nogil
def serve(T, hp):
    """The worker thread: side 1 of every piece handed over, until told to quit."""
    sync.store_release(T.sync, sync.STARTED, 1)
    while sync.next_job(T.sync) != sync.QUIT:
        side_one(T, hp)
        sync.job_done(T.sync)
    sync.job_done(T.sync)


@jit
def _stop(s):
    s[sync.JOB] = sync.QUIT
    sync.store_release(s, sync.REQUESTED, s[sync.REQUESTED] + 1)


def prepare_worker(S, hp):
    """Compile the worker's loop for S (or load it from numba's cache), before the clock starts
    as the training loop is. (Compiling it on a thread of its own during a first run slowed that
    run by half, and a short run ended before the compile did, leaving nothing in the cache.)"""
    from numba import typeof

    serve.compile((typeof(twin_of(S)), typeof(hp)))


class WorkerCompile:
    """prepare_worker(S, hp) on a thread of its own, so that training starts on one thread while
    numba compiles the worker's loop (a first run) or loads it from its cache. The training
    loops release the GIL, so the compile takes the other CPU; Threads uses two threads once
    ready() says so."""

    def __init__(self, S, hp):
        import threading

        self.error = None
        self.thread = threading.Thread(target=self._compile, args=(S, hp), name="microrl-compile-worker", daemon=True)
        self.thread.start()

    def _compile(self, S, hp):
        try:
            prepare_worker(S, hp)
        except Exception as e:  # noqa: BLE001 - finish() returns it; the run trains on one thread
            self.error = e

    def ready(self):
        return not self.thread.is_alive() and self.error is None

    def finish(self):
        """Wait for the compile (numba writes its cache as it ends); returns its error, or None."""
        self.thread.join()
        return self.error


def run_threaded(run, S, hp, *args):
    """run(S, hp, *args) (a compiled training loop) on this thread, with a worker thread for
    side 1 of its updates' pieces."""
    import threading
    import time

    S.sync[:] = 0
    S.sync[sync.SERVING] = 1
    worker = threading.Thread(target=serve, args=(twin_of(S), hp), name="microrl-twin-critic", daemon=True)
    worker.start()
    # the worker is spinning before the first piece is handed to it: a wait longer than a
    # thread takes to start would yield the CPU, and Threads would judge two threads slower
    while not S.sync[sync.STARTED] and worker.is_alive():
        time.sleep(0)
    try:
        return run(S, hp, *args)
    finally:
        _stop(S.sync)
        worker.join(timeout=10.0)
        S.sync[sync.SERVING] = 0
        if worker.is_alive():  # a handshake gone wrong must not hang the run
            raise RuntimeError("the update worker thread did not stop; run with MICRORL_THREADS=1 and report this")


class Threads:
    """Runs a training loop chunk by chunk on one thread or two, whichever has been faster: a
    busy machine can make two threads slower than one (the worker waits for a CPU). The run is
    the same either way, so it may switch at any chunk."""

    PROBE_EVERY = 16  # chunks between tries of the slower choice (the machine's load changes)

    def __init__(self, threads, worker=None):
        self.threads = threads
        self.worker = worker  # a WorkerCompile: one thread until it is ready
        self.per_step = {1: None, 2: None}  # seconds per step of the last chunk on 1 and 2 threads
        self.chunks = 0

    def choose(self):
        if self.threads < 2 or (self.worker is not None and not self.worker.ready()):
            return 1
        one, two = self.per_step[1], self.per_step[2]
        if two is None or one is None:
            return 2 if two is None else 1
        best = 2 if two <= one else 1
        return 3 - best if self.chunks % self.PROBE_EVERY == 0 else best

    def run(self, run, S, hp, n, *args):
        """run(S, hp, n, *args): n steps of a compiled training loop."""
        import time

        threads = self.choose()
        updates = S.counters[UPDATES]
        t0 = time.perf_counter()
        result = (run_threaded(run, S, hp, n, *args) if threads == 2 else run(S, hp, n, *args))
        if n >= 100 and S.counters[UPDATES] - updates >= n // 10:  # a short chunk, or the warm-up's, says little
            self.per_step[threads] = (time.perf_counter() - t0) / n
        self.chunks += 1
        return result


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
