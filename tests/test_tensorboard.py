"""TensorBoard logs (`microrl train --tensorboard`): every algorithm's scalars and the settings as
hyperparameters, read back with TensorBoard's own reader; the same run with and without them;
a clear line when tensorboardX is missing. Skips, saying so, without the extra."""
import os

import pytest

from helpers import run_cpython

pytest.importorskip("tensorboardX", reason='tensorboardX not installed: pip install "microrl[tensorboard]"')
pytest.importorskip("tensorboard", reason='tensorboard (the reader) not installed: pip install "microrl[tensorboard]"')

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402
from tensorboard.plugins.hparams import plugin_data_pb2  # noqa: E402

from microrl_host.algos import sac, td3  # noqa: E402
from microrl_host.tensorboard import TensorBoard  # noqa: E402

CHARTS = {"charts/episode_return", "charts/steps_per_s", "charts/learning_rate_actor", "charts/learning_rate_critic"}
EVAL = {"eval/return_mean", "eval/return_std"}


def read(folder):
    """({tag: [(step, value)]}, {hyperparameter: value}) of a TensorBoard log folder."""
    ea = EventAccumulator(str(folder))
    ea.Reload()
    scalars = {tag: [(e.step, e.value) for e in ea.Scalars(tag)] for tag in ea.Tags()["scalars"]}
    hparams = {}
    for content in ea.PluginTagToContent("hparams").values():
        data = plugin_data_pb2.HParamsPluginData.FromString(content)
        if data.HasField("session_start_info"):
            for k, v in data.session_start_info.hparams.items():
                hparams[k] = getattr(v, v.WhichOneof("kind"))
    return scalars, hparams


@pytest.mark.parametrize("algo,own", [(td3, {"losses/critic", "losses/actor"}), (sac, {"losses/critic", "losses/actor", "losses/alpha", "losses/alpha_loss"})])
def test_offpolicy_scalars_and_hyperparameters(tmp_path, algo, own):
    run = algo.ALGO.run("pendulum", steps=2000, seed=1, eval_every=1000, eval_episodes=2, callbacks=TensorBoard(tmp_path / "tb"))
    scalars, hparams = read(tmp_path / "tb")
    assert CHARTS | EVAL | own <= set(scalars), sorted(scalars)
    assert [s for s, _ in scalars["eval/return_mean"]] == [1000, 2000]
    assert [v for _, v in scalars["eval/return_mean"]] == pytest.approx([m for _, m, _ in run.evals], rel=1e-6)
    assert all(v > 0 for _, v in scalars["charts/steps_per_s"])
    assert all(v >= 0 for _, v in scalars["losses/critic"])
    assert scalars["hparam/eval_return"][-1][1] == pytest.approx(run.stats["eval_mean"], rel=1e-6)
    assert hparams["algo"] == algo.NAME and hparams["task"] == "pendulum" and hparams["seed"] == 1 and hparams["steps"] == 2000
    assert hparams["hidden"] == "64,64" and hparams["actor_lr"] == pytest.approx(algo.ALGO.config().actor_lr)


def test_recording_leaves_the_run_unchanged(tmp_path):
    """The losses are measured with a generator of their own: the same seed trains the same
    policy with and without TensorBoard."""
    plain = td3.ALGO.run("pendulum", steps=2000, seed=2, eval_every=1000, eval_episodes=1)
    logged = td3.ALGO.run("pendulum", steps=2000, seed=2, eval_every=1000, eval_episodes=1, callbacks=TensorBoard(tmp_path / "tb"))
    assert bytes(plain.policy.params) == bytes(logged.policy.params)
    assert plain.evals == logged.evals


def test_a_resumed_run_continues_the_same_logs(tmp_path):
    tb, run_dir = tmp_path / "tb", str(tmp_path / "run")
    td3.ALGO.run("pendulum", steps=2000, seed=0, eval_every=1000, eval_episodes=1, run_dir=run_dir, checkpoint_every=1000, callbacks=TensorBoard(tb))
    td3.ALGO.run("pendulum", steps=3000, eval_every=1000, eval_episodes=1, run_dir=run_dir, resume=True, callbacks=TensorBoard(tb))
    scalars, _ = read(tb)
    assert [s for s, _ in scalars["eval/return_mean"]] == [1000, 2000, 3000]


def test_success_rate_of_a_task_with_a_success_test(tmp_path):
    td3.ALGO.run("quadrotor", steps=2000, seed=0, eval_every=1000, eval_episodes=2, callbacks=TensorBoard(tmp_path / "tb"))
    scalars, _ = read(tmp_path / "tb")
    assert "eval/success_rate" in scalars and "hparam/success_rate" in scalars
    assert all(0.0 <= v <= 1.0 for _, v in scalars["eval/success_rate"])


def test_ppo_scalars(tmp_path):
    pytest.importorskip("mujoco", reason="mujoco not installed: pip install 'microrl[mujoco]'")
    from microrl_host.algos import ppo

    config = ppo.PPOSettings(steps=1024, envs=8, rollout_steps=64, hidden=(16, 16), seed=3, threads=1)
    ppo.train(config, "inverted_pendulum", TensorBoard(tmp_path / "tb"), eval_every=512, eval_episodes=2)
    scalars, hparams = read(tmp_path / "tb")
    assert {"losses/policy", "losses/value", "losses/entropy", "losses/approx_kl", "losses/clipfrac", "charts/steps_per_s", "charts/learning_rate_actor"} | EVAL <= set(scalars), sorted(scalars)
    assert [s for s, _ in scalars["losses/value"]] == [512, 1024]
    assert hparams["algo"] == "ppo" and hparams["envs"] == 8 and hparams["hidden"] == "16,16"


def test_command_line_writes_into_the_run_folder_by_default(tmp_path):
    proc = run_cpython(["-m", "microrl_host.cli", "train", "pendulum", "--steps", "1000", "--eval-episodes", "1", "--quiet",
                        "--out", str(tmp_path / "p.mrlp"), "--tensorboard"], timeout=600)
    assert proc.returncode == 0, proc.stderr
    scalars, hparams = read(tmp_path / "p.run" / "tensorboard")
    assert "eval/return_mean" in scalars and hparams["algo"] == "td3"


def test_without_tensorboardx_one_line_and_nothing_written(tmp_path):
    code = ("import sys; sys.modules['tensorboardX'] = None\n"  # as if not installed
            "from microrl_host.cli import main\n"
            "sys.exit(main(sys.argv[1:]))")
    proc = run_cpython(["-c", code, "train", "pendulum", "--steps", "1000", "--out", str(tmp_path / "p.mrlp"), "--tensorboard", str(tmp_path / "tb")], timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert "tensorboardX" in proc.stderr and "microrl[tensorboard]" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not os.listdir(tmp_path)
