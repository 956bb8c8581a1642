"""Loading from numba's disk cache without numba's compiler registries (nn/cache_load.py): a
function loaded in a new process skips them, computes what the compiled one did, and code
compiled afterwards in that process (which loads them) can call it; a warm training run writes
the same policy as the cold one that filled the cache."""
import json
import os
import subprocess
import sys

import pytest

from helpers import repo_env

from microrl_host.nn import cache_load

pytestmark = pytest.mark.skipif(not cache_load.ENABLED, reason="fast cache loading is on for the numba versions it was tested with only")

MODULE = '''
import numpy as np
from microrl_host.nn.jit import jit


@jit
def product(a, b):
    return np.dot(a, b).sum() + np.tanh(a[0, 0])


@jit
def text_hash(n):  # links against the hash secret that numba registers with LLVM at a refresh
    return hash(str(n))
'''

# a module that only numba's registry refresh imports: its presence says a refresh happened
PROBE = "numba.np.polynomial.polynomial_core"

SCRIPT = '''
import json, sys
import numpy as np
import cached_module
text_hash = cached_module.text_hash(1234)  # first: nothing has refreshed numba's registries yet
a = np.arange(6, dtype=np.float32).reshape(2, 3) / 7
b = np.ones((3, 2), np.float32)
value = float(cached_module.product(a, b))
refreshed = %r in sys.modules
from numba import njit

@njit
def caller(a, b):  # compiled here, after the load: numba refreshes its registries for it
    return cached_module.product(a, b) * 2.0

print(json.dumps({"text_hash": text_hash, "python_hash": hash("1234"), "value": value, "hits": sum(cached_module.product.stats.cache_hits.values()),
                  "refreshed_by_load": refreshed, "caller": float(caller(a, b))}))
''' % PROBE


def _run(folder, cache, **env):
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300, cwd=folder,
                          env=repo_env(NUMBA_CACHE_DIR=str(cache), PYTHONPATH=os.pathsep.join([repo_env()["PYTHONPATH"], str(folder)]), **env))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_cached_function_loads_without_the_registries_and_computes_the_same(tmp_path):
    (tmp_path / "cached_module.py").write_text(MODULE)
    cache = tmp_path / "cache"
    cold = _run(tmp_path, cache)
    warm = _run(tmp_path, cache)
    plain = _run(tmp_path, cache, MICRORL_FAST_CACHE_LOAD="0")
    assert (cold["hits"], warm["hits"], plain["hits"]) == (0, 1, 1)
    assert cold["refreshed_by_load"]  # compiling refreshes
    assert not warm["refreshed_by_load"]  # loading did not
    assert plain["refreshed_by_load"]  # numba's own load does: the probe tells them apart
    assert cold["value"] == warm["value"] == plain["value"]
    assert warm["text_hash"] == warm["python_hash"] and cold["text_hash"] == cold["python_hash"]
    assert cold["caller"] == warm["caller"] == plain["caller"] == 2.0 * cold["value"]


def test_a_warm_run_writes_the_cold_runs_policy(tmp_path):
    """Cold and warm without the shipped seed (nn/seed.py), then a first run that loads the seed:
    the same policy all three times (the seed's x86-64-v3 code against this CPU's own)."""
    policies, compile_s = [], []
    for run, cache, seeded in (("cold", "cache", "0"), ("warm", "cache", "0"), ("seeded", "empty", "1")):
        out = tmp_path / (run + ".mrlp")
        proc = subprocess.run([sys.executable, "-m", "microrl_host.cli", "train", "pendulum", "--steps", "600", "--seed", "3", "--eval-every", "0",
                               "--eval-episodes", "0", "--checkpoint-every", "0", "--threads", "1", "--out", str(out), "--json"],
                              capture_output=True, text=True, timeout=600, cwd=tmp_path,
                              env=repo_env(NUMBA_CACHE_DIR=str(tmp_path / cache), MICRORL_SEED=seeded))
        assert proc.returncode == 0, proc.stderr[-3000:]
        policies.append(out.read_bytes())
        compile_s.append(json.loads(proc.stdout.strip().splitlines()[-1])["compile_s"])
    assert compile_s[1] < compile_s[0] / 10  # the warm run loaded the loop (0.06 s here) that the cold one compiled (5-6 s)
    assert policies[0] == policies[1] == policies[2]
