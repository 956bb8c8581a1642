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
        import scipy.linalg.cython_blas  # noqa: F401

    return threadpool_limits(limits=1, user_api="blas")
