"""The numba decorators of the host's compiled code. Compiled functions are cached on disk
(only the first run compiles). numpy's error model: a float division needs no zero check, so
loops such as Adam's vectorise (5x faster).

No reference counts (_nrt=False) in the training loops and what they call, except where numba
needs them (np.dot, functions that return a view: REFCOUNTED): with them numba wrote an
increment and a decrement for each of the state's 55 arrays wherever the state was handed on,
which LLVM then optimised away again, at a third of the first run's compile. Without them an
array that a loop receives from Python carries no reference count at all (numba's plain
adaptor), so the refcounted functions it calls find none to count either. The arrays belong to
the caller's state, which outlives every call; nothing here allocates (numba refuses to compile
an allocation without reference counts)."""
from numba import njit

from . import link_only

NO_REFCOUNT = {"error_model": "numpy", "_nrt": False}
jit = njit(cache=True, error_model="numpy")  # allocates (evaluations), or called from Python only
jit_nogil = njit(cache=True, nogil=True, **NO_REFCOUNT)  # the training loops, on two threads
# Thin functions (wrappers, accessors, random numbers, one-call-site steps) are inlined into
# their callers' numba IR: each function numba compiles on its own is optimised and turned into
# machine code again with everything it calls, so every level of wrappers repeated the work of
# the levels below (the first run's compile took about three times longer). Same arithmetic.
inline = njit(cache=True, inline="always", **NO_REFCOUNT)
# Functions called from compiled code only (forward, backward, Adam; an algorithm's update and
# explore, algos/loop.py) get no wrapper for Python callers (a wrapper converts every argument
# from Python objects: for an algorithm's state, about 55 arrays, that cost seconds of the first
# run's compile), and no machine code or disk cache of their own: link_only.py.
COMPILED_ONLY = {"no_cpython_wrapper": True, "no_cfunc_wrapper": True, **NO_REFCOUNT, **link_only.JIT_OPTIONS}
compiled_only = njit(cache=link_only.CACHE, **COMPILED_ONLY)
REFCOUNTED = dict(COMPILED_ONLY, _nrt=True)  # np.dot, or a view returned
compiled_only_refcounted = njit(cache=link_only.CACHE, **REFCOUNTED)
