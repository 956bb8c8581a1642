"""The numba decorators of the host's compiled code. Compiled functions are cached on disk
(only the first run compiles). numpy's error model: a float division needs no zero check, so
loops such as Adam's vectorise (5x faster)."""
from numba import njit

from . import link_only

jit = njit(cache=True, error_model="numpy")
jit_nogil = njit(cache=True, error_model="numpy", nogil=True)  # loops that run on two threads
# Thin functions (wrappers, accessors, random numbers, one-call-site steps) are inlined into
# their callers' numba IR: each function numba compiles on its own is optimised and turned into
# machine code again with everything it calls, so every level of wrappers repeated the work of
# the levels below (the first run's compile took about three times longer). Same arithmetic.
inline = njit(cache=True, error_model="numpy", inline="always")
# Functions called from compiled code only (forward, backward, Adam; an algorithm's update and
# explore, algos/loop.py) get no wrapper for Python callers (a wrapper converts every argument
# from Python objects: for an algorithm's state, about 55 arrays, that cost seconds of the first
# run's compile), and no machine code or disk cache of their own: link_only.py.
COMPILED_ONLY = {"error_model": "numpy", "no_cpython_wrapper": True, "no_cfunc_wrapper": True, **link_only.JIT_OPTIONS}
compiled_only = njit(cache=link_only.CACHE, **COMPILED_ONLY)
