"""Checkpoints written before the one run driver (issue 40; tests/data/checkpoints_before_issue40,
written by main's `microrl train pendulum --algo td3 --steps 300 --hidden 8,8 --warmup 100` and
`microrl train inverted_pendulum --algo ppo --steps 256 --envs 2 --rollout-steps 64 --hidden 8,8
--threads 1`) resume under it, and one made with a setting since removed is refused in one line."""
import json
import os
import shutil

import numpy as np
import pytest

from helpers import ROOT

from microrl_host.algos import checkpoint, td3
from microrl_host.algos.checkpoint import CheckpointError

DATA = os.path.join(ROOT, "tests", "data", "checkpoints_before_issue40")


def _copy(name, tmp_path):
    run = str(tmp_path / name)
    shutil.copytree(os.path.join(DATA, name), run)
    return run


def test_a_td3_checkpoint_of_before_resumes(tmp_path):
    run = _copy("td3-pendulum", tmp_path)
    result = td3.ALGO.run("pendulum", steps=400, run_dir=run, resume=True, eval_every=0, eval_episodes=1, threads=1)
    assert result.stats["resumed_from"] == 300 and result.stats["steps"] == 400
    assert int(result.state.counters[0]) == 400 and os.path.exists(os.path.join(run, "policy.mrlp"))


def test_a_checkpoint_with_a_removed_setting_is_refused_in_one_line(tmp_path):
    run = _copy("td3-pendulum", tmp_path)
    path = os.path.join(run, "checkpoint.npz")
    meta, arrays = checkpoint.read(path)
    meta["config"]["target_min"] = 0.5
    checkpoint.write(path, meta, arrays)
    with pytest.raises(CheckpointError, match=r"trained with target_min=0.5, a setting microrl no longer has"):
        td3.ALGO.run("pendulum", steps=400, run_dir=run, resume=True, eval_episodes=0, threads=1)


def test_a_ppo_checkpoint_of_before_resumes(tmp_path):
    pytest.importorskip("mujoco", reason="mujoco not installed: pip install 'microrl[mujoco]'")
    from microrl_host.algos import ppo

    run = _copy("ppo-inverted_pendulum", tmp_path)
    with open(os.path.join(run, "run.json")) as f:
        config = json.load(f)["config"]
    given = {k: v for k, v in config.items() if k in ppo.PPOSettings.names()}
    result = ppo.train(ppo.PPOSettings(**dict(given, steps=512)), "inverted_pendulum", run_dir=run, resume=True, eval_every=256, eval_episodes=1)
    assert result.stats["resumed_from"] == 256 and [e[0] for e in result.evals] == [256, 512]  # the earlier evaluation kept
    assert np.isfinite(result.stats["eval_mean"])
