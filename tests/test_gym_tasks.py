"""A gymnasium environment of the user's own, end to end as docs/tasks.md shows it: `module:Id`
from the current folder through train, eval, export (calibrated on the environment's own
episodes: export refused gymnasium ids before) and deploy; a registered id and an Env instance
in the Python API."""
import json
import os
import re

import pytest

from boardkit import board, cli, needs_board  # noqa: F401 (fixture)
from helpers import ROOT

gym = pytest.importorskip("gymnasium")


def docs_example():
    """myenvs.py as docs/tasks.md gives it."""
    with open(os.path.join(ROOT, "docs", "tasks.md")) as f:
        return re.search(r"```python\n(# myenvs\.py.*?)```", f.read(), re.S).group(1)


def ok(proc):
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """The docs' example trained by `microrl train myenvs:Drift-v0` in a folder of its own."""
    folder = tmp_path_factory.mktemp("myenvs")
    (folder / "myenvs.py").write_text(docs_example())
    r = ok(cli("train", "myenvs:Drift-v0", "--algo", "sac", "--steps", 1500, "--eval-every", 1500, "--eval-episodes", 2, "--json", cwd=folder))
    assert r["task"] == "Drift-v0" and r["steps"] == 1500 and (folder / "drift-v0-sac.mrlp").exists()
    return folder


def test_eval_and_export_take_the_module_and_id(trained):
    r = ok(cli("eval", "drift-v0-sac.mrlp", "--task", "myenvs:Drift-v0", "--episodes", 3, "--json", cwd=trained))
    assert r["env"] == "Drift-v0" and len(r["returns"]) == 3
    r = ok(cli("export", "drift-v0-sac.mrlp", "--int16", "--task", "myenvs:Drift-v0", "--eval-episodes", 3, "--json", cwd=trained))
    # calibrated on Drift's episodes (5 of 100 steps), not on uniform samples (2,000)
    assert r["task"] == "Drift-v0" and r["calibration_observations"] == 500
    assert abs(r["mean_difference"]) < 0.05 * max(1.0, abs(r["float_mean"])), r
    q = ok(cli("eval", "drift-v0-sac.mrlq", "--task", "myenvs:Drift-v0", "--episodes", 3, "--json", cwd=trained))
    assert q["env"] == "Drift-v0" and len(q["returns"]) == 3 and q["mean"] > -100  # the int16 file runs on it too


@needs_board
def test_the_exported_policy_deploys(trained, board):
    # --mpy: since issue 39's checks, microrl's .py files compiled on this board leave no 8 kB
    # block for the int16 file (deploy says so and names --mpy)
    r = ok(cli("deploy", "--port", board.port, "--policy", str(trained / "drift-v0-sac.mrlq"), "--mpy", "--json", cwd=trained))
    assert r["policy_max_diff"] < 1e-5


def test_the_python_api_takes_a_registered_id_and_an_instance(tmp_path, monkeypatch):
    from microrl_host.algos import sac

    (tmp_path / "myenvs.py").write_text(docs_example())
    monkeypatch.syspath_prepend(str(tmp_path))
    import myenvs

    run = sac.ALGO.run("Drift-v0", steps=300, seed=1, eval_every=300, eval_episodes=1, threads=1, out=str(tmp_path / "drift.mrlp"))
    assert run.stats["task"] == "Drift-v0" and (tmp_path / "drift.mrlp").exists()
    env = gym.make("Drift-v0")  # an instance: with the time limit its registration gives
    run = sac.ALGO.run(env, steps=300, seed=1, eval_every=300, eval_episodes=1, threads=1)
    assert run.stats["steps"] == 300 and len(run.evals) == 1


def test_an_env_without_a_time_limit_is_refused_not_run_for_ever(tmp_path, monkeypatch):
    """Drift() itself has no time limit and never ends an episode: training on it ran its first
    evaluation for ever. It is refused with what to do; wrapped in a TimeLimit it trains."""
    from gymnasium.wrappers import TimeLimit

    from microrl_host.algos import sac
    from microrl_host.tasks import TaskError

    (tmp_path / "myenvs.py").write_text(docs_example())
    monkeypatch.syspath_prepend(str(tmp_path))
    import myenvs

    with pytest.raises(TaskError, match="no time limit.*TimeLimit"):
        sac.ALGO.run(myenvs.Drift(), steps=200, eval_every=200, eval_episodes=1, threads=1)
    run = sac.ALGO.run(TimeLimit(myenvs.Drift(), max_episode_steps=50), steps=200, seed=1, eval_every=200, eval_episodes=1, threads=1)
    assert run.stats["steps"] == 200 and len(run.evals) == 1
