"""`microrl import` of hostile files that need no import extra to be refused (issue 39): pickles
that run code (a VecNormalize .pkl) are refused without running it, zip bombs (an SB3 .zip's
'data', a torch .pt's storage) are refused by size before they are inflated, in little memory,
and options that contradict each other are refused. tests/test_import.py has the cases that need
torch, SB3 or onnx to make."""
import json
import os
import pickle
import sys

import pytest

from helpers import ROOT, assert_refused, repo_env, run_cpython
from helpers import run_microrl as microrl

sys.path.insert(0, os.path.join(ROOT, "bench"))
import bad_command_lines as sweep  # noqa: E402  (its zip bomb and hand-written zips, shared)

GB = 1 << 30


class _Runs:
    """A pickle that, loaded, writes the file `marker` (with pickle.load: exec runs)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (exec, ("open(%r, 'w').write('ran')" % self.marker,))


def _sb3_data():
    """An SB3 'data' as far as microrl reads it before torch: a TD3's policy class."""
    return json.dumps({"policy_class": {":type:": "<class 'abc.ABCMeta'>", "__module__": "stable_baselines3.td3.policies"}})


def _peak(*argv):
    """`microrl ARGV` in a subprocess that reports its own peak memory: (proc, peak bytes). Linux's
    VmHWM, the high-water mark of this process's own memory (getrusage's ru_maxrss carries the
    parent's across fork and exec: a pytest process that loaded SB3 would count); elsewhere
    ru_maxrss."""
    code = ("import resource, runpy, sys\nsys.argv = ['microrl'] + sys.argv[1:]\ntry:\n    runpy.run_module('microrl_host.cli', run_name='__main__')\n"
            "except SystemExit as e:\n    code = e.code\ntry:\n    peak = [int(l.split()[1]) * 1024 for l in open('/proc/self/status') if l.startswith('VmHWM:')][0]\n"
            "except (OSError, IndexError):\n    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == 'darwin' else 1024)\n"
            "print(peak)\nsys.exit(code)\n")
    proc = run_cpython(["-c", code] + [str(a) for a in argv], timeout=300)
    return proc, int(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("lies", [False, True], ids=["declared", "header-lies"])
def test_sb3_zip_whose_data_inflates_to_1_gb_is_refused_in_little_memory(tmp_path, lies):
    """A 1 MB zip whose 'data' inflates to 1 GB (issue 39: 2.3 GB of memory before the refusal).
    Its header declares the 1 GB (refused unread), or lies with 1 kB (refused as the stream
    goes past what the header says: Python's zipfile stops there and the CRC fails)."""
    stream, crc = sweep.zeros_deflated(GB)
    assert len(stream) < 1.1e6
    bomb = tmp_path / "bomb.zip"
    sweep.write_zip(bomb, [("data", stream, 8, crc, 1024 if lies else GB), ("policy.pth", b"x" * 10)])
    proc, peak = _peak("import", bomb, "--out", tmp_path / "x.mrlp")
    assert_refused(proc, "bomb.zip", "fails its CRC check" if lies else "a zip bomb")
    assert peak < 200 << 20, peak  # the 1 GB never in memory (the CLI itself takes some 60 MB)
    assert not list(tmp_path.glob("*.mrlp"))


def test_torch_checkpoint_whose_storage_inflates_past_the_limit_is_refused_before_torch_reads_it(tmp_path):
    """A .pt is a zip: a storage member that inflates to 512 MiB (torch reads deflated members
    too) is refused by its size, before torch.load, with or without torch installed."""
    stream, crc = sweep.zeros_deflated(GB // 2)
    pt = tmp_path / "actor.pt"
    sweep.write_zip(pt, [("archive/data.pkl", pickle.dumps({})), ("archive/data/0", stream, 8, crc, GB // 2), ("archive/version", b"3\n")])
    proc, peak = _peak("import", pt, "--out", tmp_path / "x.mrlp")
    assert_refused(proc, "actor.pt", "more than microrl import reads (256 MiB)")
    assert peak < 200 << 20, peak


def test_obs_stats_npz_bomb_is_refused_before_numpy_inflates_it(tmp_path):
    """--obs-stats takes a .npz, a zip: one whose member inflates to 1 GB is refused by size."""
    stream, crc = sweep.zeros_deflated(GB)
    sweep.write_zip(tmp_path / "stats.npz", [("mean.npy", stream, 8, crc, GB)])
    (tmp_path / "net.onnx").write_bytes(b"not read")
    proc, peak = _peak("import", tmp_path / "net.onnx", "--obs-stats", tmp_path / "stats.npz", "--out", tmp_path / "x.mrlp")
    assert_refused(proc, "--obs-stats", "stats.npz", "a zip bomb")
    assert peak < 200 << 20, peak


def test_vecnormalize_pickle_that_runs_code_is_refused_without_running_it(tmp_path):
    """A VecNormalize .pkl whose pickle runs code (issue 39: exit 0, the code ran): refused by
    the allow-list unpickler, the code never runs; before torch is needed. The pickle does run
    code under pickle.load (checked here), so the refusal is what keeps it from running."""
    marker = tmp_path / "ran"
    pkl = tmp_path / "vec.pkl"
    pkl.write_bytes(pickle.dumps({"obs_rms": _Runs(marker)}))
    model = tmp_path / "model.zip"
    sweep.write_zip(model, [("data", _sb3_data().encode()), ("policy.pth", b"x")])
    assert_refused(microrl("import", model, "--vecnormalize", pkl, "--out", tmp_path / "x.mrlp"), "vec.pkl", "builtins.exec", "--trust-pickle")
    assert not marker.exists()
    pickle.loads(pkl.read_bytes())  # what SB3's VecNormalize.load does with it
    assert marker.exists()


def test_deep_sb3_data_says_so_with_and_without_the_import_extra(tmp_path):
    """'data' is read before torch is needed: a zip whose 'data' is no SB3 JSON gets the same
    one line on a machine without the extra (torch and SB3 made unimportable here)."""
    model = tmp_path / "model.zip"
    sweep.write_zip(model, [("data", ("[" * 100000 + "]" * 100000).encode()), ("policy.pth", b"x")])
    blocker = tmp_path / "blocker"
    for name in ("torch", "stable_baselines3"):
        (blocker / name).mkdir(parents=True)
        (blocker / name / "__init__.py").write_text("raise ImportError('not installed (test)')\n")
    env = repo_env()
    env["PYTHONPATH"] = os.pathsep.join([str(blocker), env["PYTHONPATH"]])
    import subprocess

    for e in (None, env):
        proc = subprocess.run([sys.executable, "-m", "microrl_host.cli", "import", str(model), "--out", str(tmp_path / "x.mrlp")],
                              capture_output=True, text=True, env=e or repo_env(), timeout=300)
        assert_refused(proc, "without readable 'data'")


def test_references_more_than_the_check_and_action_bounds_that_do_not_apply_are_refused(tmp_path):
    """issue 39 item 9: --references 500 --check 10 stored 10; --action-low/--action-high were
    ignored where the source does not use them, even low above high."""
    onnx_file = tmp_path / "net.onnx"
    onnx_file.write_bytes(b"not read")
    out = tmp_path / "x.mrlp"
    assert_refused(microrl("import", onnx_file, "--references", 500, "--check", 10, "--out", out), "--references 500 is more than --check 10")
    assert_refused(microrl("import", onnx_file, "--action-low", "-1", "--action-high", "1", "--out", out), "--scale-actions or --clip-actions")
    assert_refused(microrl("import", onnx_file, "--clip-actions", "--action-low", "1", "--action-high", "-1", "--out", out),
                   "each low bound must be below its high bound")
    assert_refused(microrl("import", onnx_file, "--clip-actions", "--action-low", "1", "--action-high", "1", "--out", out),
                   "each low bound must be below its high bound")
    model = tmp_path / "model.zip"
    sweep.write_zip(model, [("data", _sb3_data().encode()), ("policy.pth", b"x")])
    assert_refused(microrl("import", model, "--action-low", "-1", "--action-high", "1", "--out", out), "--action-low", "not for sb3 sources")
    assert not out.exists()
