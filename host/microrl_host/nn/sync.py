"""Two threads inside one compiled update: the main thread hands a job's second half (critic 2
beside critic 1, one target network beside the other) to a worker thread and does the first
half itself. The halves touch disjoint arrays and each is computed exactly as on one thread, so
a run is bit for bit the same with one thread or two.

The handshake is a small int64 array (a State's `sync`) with acquire/release atomics, spun on
rather than slept on: a job lasts 2-60 microseconds, less than a wake-up from the OS takes. A
wait that runs out of patience yields the CPU at each turn (the machine is busy); without a
worker serving (SERVING == 0), the main thread does the second half itself (algos/twin.py).
"""
import platform

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .jit import compiled_only

# sync[...]: jobs requested so far (main thread), jobs done (worker), the current job, whether
# a worker serves, and whether it has started
REQUESTED, DONE, JOB, SERVING, STARTED = range(5)
SYNC_SIZE = 5
QUIT = -1  # the job that ends the worker's loop

_X86 = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")


def new_sync():
    return np.zeros(SYNC_SIZE, np.int64)


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


# How long a wait spins before it yields its CPU: a busy machine may have put the other thread
# off its CPU, and spinning then would only keep it off for a time slice. On x86 in time-stamp
# counter ticks (about 100 microseconds at 2.5 GHz: `pause` lasts 5 cycles on some AMD CPUs and
# 140 on Intel's, so spins are no clock); elsewhere in spins.
PATIENCE = 250000 if _X86 else 20000
_YIELD = "SwitchToThread" if platform.system() == "Windows" else "sched_yield"


@intrinsic
def spin_while(typingctx, array, index, value):
    """Spin while array[index] (int64, read with acquire ordering) equals value; once PATIENCE
    has run out, yield the CPU at each turn. Returns 1 if it ran out of patience, else 0. A
    function of its own that LLVM may not inline: the loop inside a large update made numba's
    first compile of the training loop half again as long."""
    sig = types.int64(array, index, types.int64)

    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, sig.args[0], ary, [args[1]])
        value = context.cast(builder, args[2], sig.args[2], types.int64)
        module = builder.module
        i64 = ir.IntType(64)
        # bump the number when the body changes: one name, one body, in every cached library
        fn = cgutils.get_or_insert_function(module, ir.FunctionType(i64, [ptr.type, i64]), "microrl_spin_while_2")
        if fn.is_declaration:
            fn.linkage = "linkonce_odr"
            fn.attributes.add("noinline")
            entry, spin, pause, give_way, done = (fn.append_basic_block(k) for k in ("entry", "spin", "pause", "give_way", "done"))
            clock = cgutils.get_or_insert_function(module, ir.FunctionType(i64, []), "llvm.readcyclecounter") if _X86 else None
            b = ir.IRBuilder(entry)
            start = b.call(clock, []) if _X86 else i64(0)
            b.branch(spin)
            b = ir.IRBuilder(spin)
            count = b.phi(i64)
            gave = b.phi(i64)
            count.add_incoming(i64(0), entry)
            gave.add_incoming(i64(0), entry)
            seen = b.load_atomic(fn.args[0], "acquire", 8)
            b.cbranch(b.icmp_signed("!=", seen, fn.args[1]), done, pause)
            b = ir.IRBuilder(pause)
            following = b.add(count, i64(1))
            count.add_incoming(following, pause)
            count.add_incoming(following, give_way)
            gave.add_incoming(gave, pause)
            gave.add_incoming(i64(1), give_way)
            if _X86:
                b.call(cgutils.get_or_insert_function(module, ir.FunctionType(ir.VoidType(), []), "llvm.x86.sse2.pause"), [])
                spent = b.sub(b.call(clock, []), start)
            else:
                spent = following
            b.cbranch(b.icmp_unsigned("<", spent, i64(PATIENCE)), spin, give_way)
            b = ir.IRBuilder(give_way)
            b.call(cgutils.get_or_insert_function(module, ir.FunctionType(ir.IntType(32), []), _YIELD), [])
            b.branch(spin)
            b = ir.IRBuilder(done)
            b.ret(gave)
        ran_out = builder.call(fn, [ptr, value])
        # and for the caller's reads too: LLVM sees into fn, finds it touches only the sync
        # array, and would otherwise reuse the caller's earlier reads of what the other thread
        # has since written
        builder.fence("acquire")
        return ran_out

    return sig, codegen


@compiled_only
def hand_over(sync, job):
    """Give job's second half to the worker, if one serves; returns whether it was given."""
    if sync[SERVING] == 0:
        return False
    sync[JOB] = job
    store_release(sync, REQUESTED, sync[REQUESTED] + 1)
    return True


@compiled_only
def wait_worker(sync):
    """Until the worker has done every job handed to it (yielding the CPU after PATIENCE: on a
    busy machine the worker may be waiting for one; algos/twin.py's Threads then goes back to
    one thread for the chunks that follow)."""
    spin_while(sync, DONE, sync[REQUESTED] - 1)


@compiled_only
def next_job(sync):
    """The worker's side: wait until a job is requested and return it (QUIT ends the loop)."""
    spin_while(sync, REQUESTED, sync[DONE])
    return sync[JOB]


@compiled_only
def job_done(sync):
    store_release(sync, DONE, sync[DONE] + 1)
