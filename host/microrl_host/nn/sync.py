"""Two threads inside one compiled update: the main thread hands a job's second half (critic 2
beside critic 1, one target network beside the other) to a worker thread and does the first
half itself. The halves touch disjoint arrays and each is computed exactly as on one thread, so
a run is bit for bit the same with one thread or two.

The handshake is a small int64 array (a State's `sync`) with acquire/release atomics, spun on
rather than slept on: a job lasts 2-60 microseconds, less than a wake-up from the OS takes.
Without a worker serving (SERVING == 0), end() runs the second half on the calling thread.
"""
import platform

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .jit import inline

# sync[...]: jobs requested so far (main thread), jobs done (worker), the current job, and
# whether a worker serves
REQUESTED, DONE, JOB, SERVING = range(4)
SYNC_SIZE = 4
QUIT = -1  # the job that ends the worker's loop

_X86 = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")


def new_sync():
    return np.zeros(SYNC_SIZE, np.int64)


@intrinsic
def load_acquire(typingctx, array, index):
    """array[index] read with acquire ordering (int64 arrays)."""
    sig = types.int64(array, index)

    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, sig.args[0], ary, [args[1]])
        return builder.load_atomic(ptr, "acquire", 8)

    return sig, codegen


@intrinsic
def store_release(typingctx, array, index, value):
    """array[index] = value with release ordering (int64 arrays)."""
    sig = types.void(array, index, types.int64)

    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, sig.args[0], ary, [args[1]])
        value = context.cast(builder, args[2], sig.args[2], types.int64)
        builder.store_atomic(value, ptr, "release", 8)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def spin_pause(typingctx):
    """The CPU's spin-wait hint (x86 `pause`; nothing elsewhere)."""
    sig = types.void()

    def codegen(context, builder, sig, args):
        if _X86:
            fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), []), "llvm.x86.sse2.pause")
            builder.call(fn, [])
        return context.get_dummy_value()

    return sig, codegen


@inline
def hand_over(sync, job):
    """Give job's second half to the worker, if one serves; returns whether it was given."""
    if sync[SERVING] == 0:
        return False
    sync[JOB] = job
    store_release(sync, REQUESTED, sync[REQUESTED] + 1)
    return True


@inline
def wait_worker(sync):
    """Until the worker has done every job handed to it."""
    requested = sync[REQUESTED]
    while load_acquire(sync, DONE) != requested:
        spin_pause()


@inline
def next_job(sync):
    """The worker's side: spin until a job is requested and return it (QUIT ends the loop)."""
    done = sync[DONE]
    while load_acquire(sync, REQUESTED) == done:
        spin_pause()
    return sync[JOB]


@inline
def job_done(sync):
    store_release(sync, DONE, sync[DONE] + 1)
