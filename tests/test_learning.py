"""Learning checks: does each trainer still learn? (slow; marked `learning` too, so that .ci/run
can run them again under another CPU's BLAS kernels).

A short training run is chaotic: numpy's and scipy's OpenBLAS pick SIMD kernels per CPU, and a
last-bit difference becomes another policy. So no check hangs on one seed: each trains several
seeds and asserts on a quorum and on the median, with thresholds set from the spread measured over
10 seeds under several kernel settings (each docstring gives it and the command). A run is one
process of `bench/learning_checks.py --one CHECK SEED STEPS`, the same code the bench measures.
"""
import json
import os
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from helpers import ROOT, repo_env

pytestmark = [pytest.mark.slow, pytest.mark.learning]

BENCH = os.path.join(ROOT, "bench", "learning_checks.py")


def final_returns(check, seeds, steps=0, workers=2):
    """The final evaluation return of each seed's run (one process each, two at a time)."""

    def one(seed):
        proc = subprocess.run([sys.executable, BENCH, "--one", check, str(seed), str(steps)], capture_output=True, text=True,
                              env=repo_env(), cwd=ROOT, timeout=900)
        assert proc.returncode == 0, "%s seed %d failed:\n%s" % (check, seed, proc.stderr[-3000:])
        return json.loads(proc.stdout.strip().splitlines()[-1])[-1][1]

    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(one, seeds))


def assert_quorum(finals, threshold, quorum, median_at_least):
    solved = sum(f >= threshold for f in finals)
    assert solved >= quorum, "%d of %d seeds reached %s (need %d): %s" % (solved, len(finals), threshold, quorum, finals)
    assert statistics.median(finals) >= median_at_least, "median %.1f below %s: %s" % (statistics.median(finals), median_at_least, finals)


def test_host_td3_solves_pendulum():
    """The host's numba TD3, 10,000 steps, seeds 0-4: at least 4 reach -300, median -250 or better.

    Measured over seeds 0-9 under OPENBLAS_CORETYPE unset (AMD EPYC's own: Haswell kernels),
    Sandybridge and Haswell (30 runs), plus NUMBA_CPU_NAME=generic (same returns as Sandybridge):
    final returns -110 to -196, median -165 (`python bench/learning_checks.py host_td3 --seeds 0-9
    --settings own,Sandybridge,Haswell,generic`, 2026-11-23)."""
    assert_quorum(final_returns("host_td3", range(5)), -300, 4, -250)
