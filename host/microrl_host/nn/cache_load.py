"""Loading compiled functions from numba's disk cache without numba's compiler registries.

Before it loads a function from its disk cache, numba refreshes its target context: it imports
and installs every typing and lowering registry it has (its numpy, math, random, typed
containers, cffi, ...), about 0.05 s of a warm `microrl train pendulum` process here (0.11 s of
cache load became 0.06 s in exploratory runs), for machine code that needs none of them. Loading needs only numba's
runtime (NRT), whose functions the loaded code links against; numba's other symbols come with
its target context (its C helpers) or with the modules that rebuilding the cached environments
imports (the hash secret of numba's string hashing: tests/test_cache_load.py loads a function
that hashes a string first thing). Every compile refreshes both contexts itself (numba's
CompilerBase), so a cache miss compiles exactly as before.

Like link_only.py this reaches into numba's internals (Cache.load_overload), so it is on for the
numba versions it was tested with only; MICRORL_FAST_CACHE_LOAD=0 turns it off.
"""
import os

from numba.core.caching import FunctionCache
from numba.core.runtime import rtsys

from . import link_only, seed

ENABLED = os.environ.get("MICRORL_FAST_CACHE_LOAD", "1") != "0" and link_only.NUMBA_TESTED


class FastLoadingCache(FunctionCache):
    """numba's cache of one function, loading without refreshing the target context first."""

    def load_overload(self, sig, target_context):
        rtsys.initialize(target_context)  # the runtime the loaded code links against (once per process)
        with self._guard_against_spurious_io_errors():
            loaded = self._load_overload(sig, target_context)
            if loaded is None and self._enabled:  # a first run: the code shipped ahead of time (seed.py)
                loaded = seed.load(self, sig, target_context)
            return loaded


def fast_loading(dispatcher):
    """The dispatcher, its disk cache (if it has one) loading without the refresh."""
    if ENABLED and type(getattr(dispatcher, "_cache", None)) is FunctionCache:
        dispatcher._cache.__class__ = FastLoadingCache
    return dispatcher


def cached(decorate):
    """A numba decorator (njit(cache=True, ...)) whose functions load fast from its cache."""

    def decorate_fast_loading(f):
        return fast_loading(decorate(f))

    return decorate_fast_loading
