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
from types import FunctionType

from numba import njit
from numba.core.registry import CPUDispatcher

from . import link_only
from .cache_load import cached, fast_loading

NO_REFCOUNT = {"error_model": "numpy", "_nrt": False}
# every function cached on disk loads from it without numba's compiler registries (cache_load.py)
jit = cached(njit(cache=True, error_model="numpy"))  # allocates (evaluations), or called from Python only
jit_nogil = cached(njit(cache=True, nogil=True, **NO_REFCOUNT))  # the training loops, on two threads
device = cached(njit(cache=True))  # the device core's own functions (pendulum, quadrotor), compiled unchanged
# Wrappers and steps with one call site are inlined into their callers' numba IR (numba
# compiled each function on its own with everything it calls, so every level of wrappers repeated
# the work of the levels below). Same arithmetic.
inline = cached(njit(cache=True, inline="always", **NO_REFCOUNT))
# Functions called from compiled code (forward, backward, Adam; an algorithm's update and
# explore, algos/loop.py; accessors and random numbers called from many places) get no wrapper
# for Python callers (a wrapper converts every argument from Python objects: for an algorithm's
# state, about 55 arrays, that cost seconds of the first run's compile), and no machine code or
# disk cache of their own: link_only.py. Each is typed and lowered once per signature and linked
# where it is called; numba's IR inlining copied and typed such a function again at each of its
# call sites (with the random numbers, accessors and thread handshakes linked instead: TD3's cold
# first run about 2 s shorter). A call from Python gets a compiled copy of its own.
COMPILED_ONLY = {"no_cpython_wrapper": True, "no_cfunc_wrapper": True, **NO_REFCOUNT, **link_only.JIT_OPTIONS}
REFCOUNTED = dict(COMPILED_ONLY, _nrt=True)  # np.dot, or a view returned


class CompiledOnlyDispatcher(CPUDispatcher):
    """A compiled-only function, called from Python: numba would call its missing wrapper (a null
    pointer). Python calls go to a copy compiled with a wrapper (and cached under its own name)."""

    def __call__(self, *args, **kwargs):
        twin = self.__dict__.get("_from_python")
        if twin is None:
            f = self.py_func
            copy = FunctionType(f.__code__, f.__globals__, f.__name__, f.__defaults__, f.__closure__)
            copy.__qualname__ = f.__qualname__ + "_from_python"
            copy.__module__, copy.__doc__ = f.__module__, f.__doc__
            twin = self._from_python = fast_loading(njit(cache=True, error_model="numpy")(copy))
        return twin(*args, **kwargs)


def _compiled_only(options):
    decorate = njit(cache=link_only.CACHE, **options)

    def compiled_only(f):
        dispatcher = fast_loading(decorate(f))
        if type(dispatcher) is CPUDispatcher:  # not under NUMBA_DISABLE_JIT=1
            dispatcher.__class__ = CompiledOnlyDispatcher
        return dispatcher

    return compiled_only


compiled_only = _compiled_only(COMPILED_ONLY)
compiled_only_refcounted = _compiled_only(REFCOUNTED)


def bound_copy(template, name, bindings, decorate):
    """A copy of the plain function template, named name, that sees bindings (a dict) in place
    of the same global names of its module, compiled with decorate (one of the decorators
    above). numba compiles global names as constants, so one source compiles into one function
    per binding; its disk cache keys the copy by its name and template's file (numba's cache
    does not see other files: a name that changes with whatever the bindings were made from
    keeps a changed binding from loading stale code)."""
    scope = dict(template.__globals__)
    scope.update(bindings)
    copy = FunctionType(template.__code__, scope, name, template.__defaults__, template.__closure__)
    copy.__qualname__ = name
    copy.__module__, copy.__doc__ = template.__module__, template.__doc__
    return decorate(copy)
