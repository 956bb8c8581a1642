"""The twin critics' halves of an off-policy update (TD3, SAC), on two threads.

Every piece of an update that concerns the two critics (their targets' values, their Adam steps,
their values and action gradients for the actor, their targets' averaging) has two sides that
touch disjoint arrays: side 0 critic 1's, side 1 critic 2's. The training thread hands side 1 to
a worker thread (serve) and does side 0 itself; without a worker it does side 1 after side 0.
Each side is computed by the same compiled function (piece) on either thread, so a run is bit
for bit the same with one thread or two.

    twin.both_sides(S, hp, twin.CRITICS)

    handed = twin.begin(S, twin.CRITIC_TARGETS)   # side 1 to the worker, or nothing
    ...                                           # other work, touching neither side's arrays
    twin.finish(S, hp, twin.CRITIC_TARGETS, handed)

The pieces run over a Twin, the State's arrays that they touch, rather than the whole State
(about 55 arrays): one type for TD3's and SAC's, so numba types piece() once for both. The
worker thread runs the training loop itself (loop.SERVE), so that a first run compiles one
function, not two.

hp convention (td3.HP, sac.HP): tau at index 2, the critics' learning rate at 4, and the critics'
loss scale (2: mean squared error, 1: half of it) last.
"""
from collections import namedtuple

import numpy as np

from ..nn import mlp, sync
from ..nn.jit import compiled_only, inline, jit
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
def piece(T, hp, job, side):
    """Side 0 or 1 of the piece numbered job. One compiled function for every piece, both sides,
    both threads and both algorithms (their Twins have one type): numba types it once, and
    links it into the training loop without compiling it again at each call."""
    if job == TARGETS:
        target_values(T, side)
    elif job == CRITICS:
        critic_step(T, hp, side)
    elif job == ACTOR_Q:
        critic_values(T, side)
    elif job == ACTOR_DQ:
        critic_input_grads(T, side)
    elif job == CRITIC_TARGETS:
        if side == 1:  # side 0 is the caller's own work meanwhile
            critic_targets(T, hp)
    elif job == ACTOR_ROWS:
        actor_rows(T, side)


@inline
def begin(S, job):
    """Hand side 1 of piece job to the worker, if one serves (returns whether). The caller then
    does side 0, or other work touching neither side's arrays, then finish()."""
    return sync.hand_over(S.sync, job)


@inline
def finish(S, hp, job, handed):
    """After side 0 of job (or other work touching neither side's arrays): wait until the
    worker has done side 1, if it was handed, else do side 1 here."""
    if handed:
        sync.wait_worker(S.sync)
    else:
        piece(twin(S), hp, np.int64(job), np.int64(1))  # int64s: a constant would compile a copy per value


@inline
def both_sides(S, hp, job):
    """Piece job: side 1 to the worker if one serves, side 0 here, then side 1 here if none."""
    handed = begin(S, job)
    piece(twin(S), hp, np.int64(job), np.int64(0))
    finish(S, hp, job, handed)


def serve(S, hp):
    """The worker thread's loop (loop.SERVE): side 1 of every piece handed over, until told to
    quit. Compiled inside the training loop (an algorithm binds it with loop.bind)."""
    T = twin(S)
    sync.store_release(T.sync, sync.STARTED, 1)
    job = sync.next_job(T.sync)
    while job != sync.QUIT:
        piece(T, hp, job, np.int64(1))
        sync.job_done(T.sync)
        job = sync.next_job(T.sync)
    sync.job_done(T.sync)


@jit
def _stop(s):
    s[sync.JOB] = sync.QUIT
    sync.store_release(s, sync.REQUESTED, s[sync.REQUESTED] + 1)


def run_threaded(run, S, hp, n, *args):
    """run(S, hp, n, *args) (a compiled training loop) on this thread, and the same loop with
    n = loop.SERVE on a worker thread for side 1 of its updates' pieces."""
    import threading
    import time

    from .loop import SERVE

    S.sync[:] = 0
    S.sync[sync.SERVING] = 1
    worker = threading.Thread(target=run, args=(S, hp, SERVE) + args, name="microrl-twin-critic", daemon=True)
    worker.start()
    # the worker is spinning before the first piece is handed to it: a wait longer than a
    # thread takes to start would yield the CPU, and Threads would judge two threads slower
    while not S.sync[sync.STARTED] and worker.is_alive():
        time.sleep(0)
    try:
        return run(S, hp, n, *args)
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

    def __init__(self, threads):
        self.threads = threads
        self.per_step = {1: None, 2: None}  # seconds per step of the last chunk on 1 and 2 threads
        self.chunks = 0

    def choose(self):
        if self.threads < 2:
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

    from .config import threads_from_environment

    given = threads_from_environment()
    if given:
        return given
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return 2 if cpus >= 2 else 1
