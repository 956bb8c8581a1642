"""Compiled code that ships with the package: a first run loads it instead of compiling.

numba compiles the training loops the first time a process needs them (17-23 s on the slower
2-core hosts) and caches them on disk for the next run. The seed is that cache, made ahead of
time by `python tools/build_seed.py` for one numba version, one CPython version and the
x86-64-v3 level (AVX2 and FMA: every x86 host of the last decade, and the same bits as the host's
own CPU name: numba contracts no multiply-adds without fastmath). A cache miss on a host that
has those instructions looks the function up here before numba compiles it: by the cache's own
file name, the signature and the hashes of the function's bytecode and closure that numba's
index keys on, so edited code never matches a stale entry and compiles as before. Nothing is
copied into the user's cache: what the seed holds is loaded from it each run (as fast as a
cache load).

Not used where the user chose numba's target (NUMBA_CPU_NAME, NUMBA_CPU_FEATURES), where the
CPU lacks the level, or with MICRORL_SEED=0 (what `build` runs under). The seed is our own code
compiled; tests/test_seed.py checks that a cold `microrl train pendulum` compiles nothing.
"""
import os
import pickle
import sys
import zlib

LEVEL = "x86-64-v3"
# LLVM's names of the instructions x86-64-v3 adds to x86-64
LEVEL_FEATURES = ("avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave")
HERE = os.path.dirname(os.path.abspath(__file__))
FOLDER = os.path.join(HERE, "seed")

_entries = None


def file_name():
    import numba

    return "numba%s-py%d%d-%s.seed" % (numba.__version__, sys.version_info[0], sys.version_info[1], LEVEL)


def usable():
    """The seed applies in this process: asked for, a host of its level, numba's target left alone."""
    if os.environ.get("MICRORL_SEED", "1") == "0":
        return False
    from numba.core import config

    if config.CPU_NAME is not None or config.CPU_FEATURES is not None:
        return False
    try:
        import llvmlite.binding as llvm

        features = llvm.get_host_cpu_features()
    except Exception:  # not x86, or llvmlite cannot tell: compile as before
        return False
    return all(features.get(name, False) for name in LEVEL_FEATURES)


def _load_entries():
    global _entries
    if _entries is None:
        _entries = {}
        path = os.path.join(FOLDER, file_name())
        if usable() and os.path.exists(path):
            try:
                with open(path, "rb") as f:
                    _entries = pickle.load(f)
            except Exception:  # a damaged seed costs a compile, never the run
                _entries = {}
    return _entries


def key(cache, sig, codegen):
    """The seed's key of one overload: numba's index key less its CPU (the seed's is its level)."""
    index_key = cache._index_key(sig, codegen)
    return (cache._cache_file._index_name, str(index_key[0]), index_key[2])


def load(cache, sig, target_context):
    """The overload from the seed, rebuilt as numba's cache rebuilds it, or None."""
    entries = _load_entries()
    if not entries:
        return None
    blob = entries.get(key(cache, sig, target_context.codegen()))
    if blob is None:
        return None
    return cache._impl.rebuild(target_context, pickle.loads(zlib.decompress(blob)))


def collect(cache_dir):
    """The seed's entries from a numba cache folder that build filled."""
    import numba

    entries = {}
    for root, _, files in os.walk(cache_dir):
        for name in sorted(files):
            if not name.endswith(".nbi"):
                continue
            with open(os.path.join(root, name), "rb") as f:
                if pickle.load(f) != numba.__version__:
                    continue
                _, overloads = pickle.loads(f.read())
            for (sig, magic, hashes), data_name in overloads.items():
                if magic[1] != LEVEL:
                    continue
                with open(os.path.join(root, data_name), "rb") as f:
                    entries[(name, str(sig), hashes)] = zlib.compress(f.read(), 9)
    return entries


def build(commands, out_folder=FOLDER):
    """Run commands (`microrl` argument lists, each given --out and --run-dir) compiling at the
    seed's level into an empty cache, and write the seed file of what they compiled."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        cache = os.path.join(tmp, "cache")
        host = os.path.dirname(os.path.dirname(HERE))  # this code, not another installed copy
        path = os.pathsep.join([host, os.path.join(os.path.dirname(host), "device")] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, NUMBA_CPU_NAME=LEVEL, NUMBA_CPU_FEATURES="", MICRORL_SEED="0", PYTHONPATH=path)
        for i, args in enumerate(commands):
            run = os.path.join(tmp, "run%d" % i)
            cmd = [sys.executable, "-m", "microrl_host.cli"] + args + ["--out", run + ".mrlp", "--run-dir", run]
            subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
        entries = collect(cache)
    os.makedirs(out_folder, exist_ok=True)
    for old in os.listdir(out_folder):  # one seed per numba and CPython version: the built one replaces its own
        if old == file_name():
            os.remove(os.path.join(out_folder, old))
    path = os.path.join(out_folder, file_name())
    with open(path + ".tmp", "wb") as f:
        pickle.dump(entries, f, protocol=4)
    os.replace(path + ".tmp", path)
    return path, len(entries)

