"""A task's compiled loop is cached on disk under CompiledTask.key. numba's cache checks only the
file of the bound copy itself (algos/loop.py), while the loop inlines the algorithms' updates
(td3.py, sac.py, twin.py), the networks (nn/) and the perturbations: an edit there once loaded
the stale loop (a TD3 setting added to td3.py's update had no effect until the cache was
cleared). The key must change with every source compiled into the loop."""
import os

from microrl.tasks import pendulum
from microrl_host.envs import task as T


def test_the_key_covers_the_sources_compiled_into_the_loop():
    names = {os.path.relpath(p, os.path.dirname(os.path.dirname(p))) for p in T.compiled_sources()}
    for needed in ("algos/td3.py", "algos/sac.py", "algos/twin.py", "algos/loop.py", "algos/replay.py", "nn/mlp.py", "envs/task.py", "envs/episode.py", "microrl/perturb.py"):
        assert needed in names, needed


def test_an_edited_source_changes_the_key(tmp_path, monkeypatch):
    source = tmp_path / "update.py"
    source.write_text("def update(S, hp):\n    pass\n")
    monkeypatch.setattr(T, "compiled_sources", lambda: [str(source)])
    before = T.CompiledTask(pendulum).key
    source.write_text("def update(S, hp):\n    return 1\n")
    T._DIGESTS.clear()
    after = T.CompiledTask(pendulum).key
    assert before != after
    assert before.startswith("pendulum_") and after.startswith("pendulum_")
