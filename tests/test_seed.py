"""The compiled code shipped with the package (nn/seed.py): a first `microrl train pendulum`, TD3
and SAC, on an empty numba cache compiles nothing (numba writes every function it compiles to the
cache folder: the folder stays empty). Fails when compiled code changed and the seed was not
rebuilt: `python tools/build_seed.py`. tests/test_cache_load.py checks that the seeded
run writes the policy a compiled one writes."""
import importlib.util
import os
import subprocess
import sys

import pytest

from helpers import ROOT, repo_env

from microrl_host.nn import cache_load, seed

_spec = importlib.util.spec_from_file_location("build_seed", os.path.join(ROOT, "tools", "build_seed.py"))
build_seed = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build_seed)


def _skip_reason():
    if not cache_load.ENABLED:
        return "the seed loads through nn/cache_load.py, on for the numba versions it was tested with only"
    if not seed.usable():
        return "the seed is x86-64-v3 code: this CPU lacks AVX2/FMA, or NUMBA_CPU_NAME/NUMBA_CPU_FEATURES/MICRORL_SEED=0 is set"
    if not os.path.exists(os.path.join(seed.FOLDER, seed.file_name())):
        return "no seed for this numba and CPython (%s): they compile on the first run" % seed.file_name()
    return None


@pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason()))
@pytest.mark.parametrize("args", build_seed.COMMANDS, ids=lambda a: a[3])
def test_a_first_run_compiles_nothing(tmp_path, args):
    cache = tmp_path / "cache"
    proc = subprocess.run([sys.executable, "-m", "microrl_host.cli"] + list(args) + ["--out", str(tmp_path / "p.mrlp"), "--run-dir", str(tmp_path / "run")],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path, env=repo_env(NUMBA_CACHE_DIR=str(cache)))
    assert proc.returncode == 0, proc.stderr[-3000:]
    compiled = sorted(name for _, _, files in os.walk(cache) for name in files if name.endswith(".nbi"))
    assert compiled == [], "compiled on a first run (stale seed? python tools/build_seed.py): %s" % compiled
