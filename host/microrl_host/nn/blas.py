"""BLAS on one thread while training (PPO and the off-policy loops share this)."""


def one_blas_thread(scipy_blas=True):
    """A context with BLAS on one thread. Two reasons, both measured here: its spinning threads
    fight the simulators' threads for the CPUs (a PPO iteration on Ant took 2.8 times longer with
    two), and OpenBLAS splits some products of TD3's batch of 256 across threads in a way that
    changes their last bits, so that the same seed gave another quadrotor policy with two threads
    than with one. With one thread a seed gives the same run whatever OPENBLAS_NUM_THREADS says."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - a core dependency; without it, BLAS keeps its threads
        import contextlib

        return contextlib.nullcontext()
    # numba's np.dot calls scipy's BLAS, which loads on first use: load it now, because the
    # limits reach only the libraries loaded when they are set. scipy_blas=False: a caller that
    # uses numpy's BLAS only (PPO) saves the 28 MB that scipy's OpenBLAS costs a process.
    if scipy_blas:
        load_scipy_blas()
    return threadpool_limits(limits=1, user_api="blas")


def load_scipy_blas():
    """Load scipy.linalg.cython_blas, the BLAS numba's np.dot calls, without running
    scipy.linalg's __init__: that imports all of scipy.linalg (about 0.3 s of every training
    process's start, measured here) for one extension module. The module is registered under
    its name, where numba looks it up. A later `import scipy.linalg` runs as usual, and
    `from scipy.linalg import cython_blas` finds this module; only the attribute
    scipy.linalg.cython_blas stays unset (the plain import sets it)."""
    import sys

    name = "scipy.linalg.cython_blas"
    if name in sys.modules:
        return
    if "scipy.linalg" in sys.modules:  # loaded already: nothing to save, and the plain import sets its attribute
        import scipy.linalg.cython_blas  # noqa: F401

        return
    try:
        import glob
        import importlib.util
        import os

        import scipy

        found = [f for f in glob.glob(os.path.join(os.path.dirname(scipy.__file__), "linalg", "cython_blas.*")) if f.endswith((".so", ".pyd"))]
        spec = importlib.util.spec_from_file_location(name, found[0]) if len(found) == 1 else None
        if spec is None:
            raise ImportError("no single cython_blas extension")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[name] = module
    except Exception:  # another layout of scipy: the plain import
        import scipy.linalg.cython_blas  # noqa: F401
