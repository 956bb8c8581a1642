"""Our parallel MuJoCo environments against gymnasium's own: same seeds and actions must give
the same observations, rewards, terminations, truncations and resets, bit for bit."""
import subprocess
import sys

import numpy as np
import pytest

from helpers import ROOT, repo_env

pytest.importorskip("mujoco", reason="mujoco not installed: pip install 'microrl[mujoco]'")
gym = pytest.importorskip("gymnasium")
pytest.importorskip("gymnasium.envs.mujoco.mujoco_env", reason="gymnasium[mujoco] not installed: pip install 'microrl[mujoco]'")

from microrl_host.envs.mujoco import FAMILIES, MujocoVectorEnv, gym_id  # noqa: E402
from microrl_host.tasks import UnknownTask  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def reference(task, n, limit):
    return gym.vector.SyncVectorEnv([lambda: gym.make(task, max_episode_steps=limit) for _ in range(n)], autoreset_mode="SameStep")


def run_both(task, n=3, steps=150, limit=60, seed=7, threads=2, dtype=np.float32, **kwargs):
    """Step ours and gymnasium's vector env with the same random actions; yield both results."""
    ours = MujocoVectorEnv(task, n, threads=threads, max_episode_steps=limit, **kwargs)
    ref = gym.vector.SyncVectorEnv([lambda: gym.make(task, max_episode_steps=limit, **kwargs) for _ in range(n)], autoreset_mode="SameStep")
    o1, _ = ours.reset(seed=seed)
    o2, _ = ref.reset(seed=seed)
    yield o1, o2
    rng = np.random.default_rng(seed)
    high = ours.single_action_space.high
    for _ in range(steps):
        a = (rng.uniform(-1.2, 1.2, size=(n, ours.act_dim)) * high).astype(dtype)  # some beyond the bounds
        yield ours.step(a), ref.step(a)
    ours.close()
    ref.close()


@pytest.mark.parametrize("task", sorted(FAMILIES))
def test_identical_to_gymnasium(task):
    gen = run_both(task)
    o1, o2 = next(gen)
    np.testing.assert_array_equal(o1, o2)
    ends = 0
    for r1, r2 in gen:
        for k, what in enumerate(("observations", "rewards", "terminated", "truncated")):
            np.testing.assert_array_equal(np.asarray(r1[k], np.float64), np.asarray(r2[k], np.float64), err_msg=what)
        done = r1[2] | r1[3]
        ends += done.sum()
        if done.any():
            np.testing.assert_array_equal(r1[4]["_final_obs"], r2[4]["_final_obs"])
            for i in np.flatnonzero(done):
                np.testing.assert_array_equal(r1[4]["final_obs"][i], r2[4]["final_obs"][i])
    assert ends > 0, "the check must cover at least one reset"


ANT_KEYWORDS = [
    ("Ant-v4", {"use_contact_forces": True}),
    ("Ant-v4", {"use_contact_forces": True, "exclude_current_positions_from_observation": False, "contact_force_range": (-0.5, 0.5)}),
    ("Ant-v4", {"terminate_when_unhealthy": False, "healthy_reward": 2.0}),
    ("Ant-v5", {"exclude_current_positions_from_observation": False, "dtype": np.float64}),
    ("Ant-v5", {"main_body": 2, "forward_reward_weight": 0.5, "contact_cost_weight": 1e-3, "dtype": np.float64}),
    ("Ant-v5", {"include_cfrc_ext_in_observation": False, "ctrl_cost_weight": 0.1, "healthy_z_range": (0.3, 0.9)}),
]


@pytest.mark.parametrize("task, kwargs", ANT_KEYWORDS + [
    ("Hopper-v5", {"exclude_current_positions_from_observation": False, "terminate_when_unhealthy": False}),
    ("Walker2d-v4", {"terminate_when_unhealthy": False, "reset_noise_scale": 0.1}),
])
def test_gymnasium_keyword_arguments_are_honoured(task, kwargs):
    gen = run_both(task, steps=80, **kwargs)
    o1, o2 = next(gen)
    np.testing.assert_array_equal(o1, o2)
    for r1, r2 in gen:
        for k in range(4):
            np.testing.assert_array_equal(np.asarray(r1[k], np.float64), np.asarray(r2[k], np.float64))


ANT_SETTINGS = [("Ant-v4", {}), ("Ant-v5", {})] + ANT_KEYWORDS


@pytest.mark.parametrize("task, kwargs", ANT_SETTINGS)
def test_ant_with_numpy_as_with_its_kernels(task, kwargs, monkeypatch):
    """Many copies take Ant's formulas from numpy, few from the compiled kernels (the tests above,
    three copies): the numpy path is gymnasium's too, bit for bit, resets and float64 actions included."""
    from microrl_host.envs import mujoco as envs_module

    monkeypatch.setattr(envs_module, "COMPILED_BELOW", 0)
    kwargs = {k: v for k, v in kwargs.items() if k != "dtype"}  # run_both's action type, tried both ways here
    for dtype in (np.float32, np.float64):
        gen = run_both(task, steps=80, dtype=dtype, **kwargs)
        o1, o2 = next(gen)
        np.testing.assert_array_equal(o1, o2)
        for r1, r2 in gen:
            for k in range(4):
                np.testing.assert_array_equal(np.asarray(r1[k], np.float64), np.asarray(r2[k], np.float64))
            if (r1[2] | r1[3]).any():
                for i in np.flatnonzero(r1[2] | r1[3]):
                    np.testing.assert_array_equal(r1[4]["final_obs"][i], r2[4]["final_obs"][i])


def test_many_ant_copies_do_not_load_numba():
    # numba costs a process about 95 MB; PPO's 64 copies use numpy for Ant's formulas
    code = (
        "import sys, numpy as np\n"
        "from microrl_host.envs.mujoco import MujocoVectorEnv, COMPILED_BELOW\n"
        "envs = MujocoVectorEnv('Ant-v4', COMPILED_BELOW, threads=1)\n"
        "envs.reset(seed=0)\n"
        "for _ in range(300): envs.step(np.random.default_rng(0).uniform(-1, 1, (COMPILED_BELOW, 8)))\n"
        "print('numba' in sys.modules, 'scipy' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True, env=repo_env(), cwd=ROOT, timeout=120)
    assert proc.stdout.split() == ["False", "False"], proc.stdout + proc.stderr


def test_terminations_and_episode_statistics():
    """Hopper falls under random actions: terminations (not truncations), resets in the same step,
    and infos['episode'] carries each finished episode's return and length."""
    envs = MujocoVectorEnv("Hopper-v5", 4, threads=1)
    envs.reset(seed=3)
    rng = np.random.default_rng(0)
    totals, lengths, finished = np.zeros(4), np.zeros(4, int), []
    for _ in range(300):
        obs, rew, term, trunc, infos = envs.step(rng.uniform(-1, 1, (4, 3)))
        totals += rew
        lengths += 1
        assert not trunc.any()
        if term.any():
            for i in np.flatnonzero(term):
                assert infos["_episode"][i]
                assert infos["episode"]["r"][i] == pytest.approx(totals[i], rel=1e-12)
                assert infos["episode"]["l"][i] == lengths[i]
                # the returned observation is the new episode's first: near the initial pose
                assert abs(obs[i, 0] - envs.init_qpos[1]) < 0.01
                finished.append(totals[i])
                totals[i], lengths[i] = 0.0, 0
    assert len(finished) >= 4


def test_termination_on_the_time_limit_step_is_both_as_in_gymnasium():
    # gymnasium's TimeLimit reports truncated=True even when the episode also terminated
    task, n = "Hopper-v5", 2
    acts = np.random.default_rng(0).uniform(-1, 1, (300, n, 3))
    probe = MujocoVectorEnv(task, n, threads=1)
    probe.reset(seed=3)
    limit = next(t for t in range(300) if probe.step(acts[t])[2][0]) + 1  # copy 0's first episode length
    ours = MujocoVectorEnv(task, n, threads=1, max_episode_steps=limit)
    ref = reference(task, n, limit)
    ours.reset(seed=3)
    ref.reset(seed=3)
    for t in range(limit):
        r1, r2 = ours.step(acts[t]), ref.step(acts[t])
    assert r1[2][0] and r1[3][0], "copy 0 must both terminate and reach the limit on this step"
    for k in range(4):
        np.testing.assert_array_equal(np.asarray(r1[k], np.float64), np.asarray(r2[k], np.float64))


@pytest.mark.parametrize("task", ["ant", "Ant-v4"])  # v5 steps a loop of MjData (contact forces), v4 MuJoCo's Batch
def test_seeds_and_threads(task):
    a = np.random.default_rng(1).uniform(-1, 1, (20, 5, 8))
    results = []
    for threads in (1, 3):
        envs = MujocoVectorEnv(task, 5, threads=threads)
        obs = [envs.reset(seed=11)[0]]
        obs += [envs.step(a[t])[0] for t in range(20)]
        results.append(np.array(obs))
        envs.close()
    np.testing.assert_array_equal(results[0], results[1])
    envs = MujocoVectorEnv(task, 5)
    first, _ = envs.reset(seed=[11, 12, 13, 14, 15])
    np.testing.assert_array_equal(first, results[0][0])
    other, _ = envs.reset(seed=99)
    assert not np.array_equal(other, first)
    envs.close()


def test_gymnasium_vector_api():
    envs = MujocoVectorEnv("HalfCheetah-v5", 2)
    assert isinstance(envs, gym.vector.VectorEnv)
    assert envs.observation_space.shape == (2, 17) and envs.action_space.shape == (2, 6)
    assert envs.metadata["autoreset_mode"] == gym.vector.AutoresetMode.SAME_STEP
    obs, _ = envs.reset(seed=0)
    assert obs.shape == (2, 17) and obs.dtype == np.float64
    obs, rew, term, trunc, infos = envs.step(envs.action_space.sample())
    assert rew.shape == term.shape == trunc.shape == (2,)
    with pytest.raises(ValueError, match="shape"):
        envs.step(np.zeros((3, 6)))
    envs.close()


def test_unknown_task_is_a_clear_error():
    assert gym_id("ant") == "Ant-v5"
    assert gym_id("ANT-V4") == "Ant-v4"
    assert gym_id("walker2d") == "Walker2d-v5"
    assert gym_id("half_cheetah") == "HalfCheetah-v5"
    with pytest.raises(UnknownTask, match="unknown MuJoCo task 'Antt'.*Ant-v5"):
        MujocoVectorEnv("Antt", 2)


def test_missing_mujoco_is_a_clear_error():
    # a real import failure: the interpreter is told mujoco does not exist
    code = (
        "import sys; sys.modules['mujoco'] = None\n"
        "from microrl_host.envs.mujoco import MujocoVectorEnv, MujocoMissingError\n"
        "try:\n    MujocoVectorEnv('Ant-v5', 2)\nexcept MujocoMissingError as e:\n    print('ERR', e)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=repo_env(), cwd=ROOT, timeout=120)
    assert "ERR MuJoCo is not available" in proc.stdout and "pip install 'microrl[mujoco]'" in proc.stdout, proc.stdout + proc.stderr


def test_ant_kernels_sum_in_numpys_order():
    # bit-identity with gymnasium rests on summing as numpy does (pairwise, halving above 128)
    from microrl_host.envs.ant_kernels import pairwise_sum

    rng = np.random.default_rng(0)
    for n in (1, 5, 8, 13, 84, 128, 129, 300, 1000, 4100):
        for dtype in (np.float32, np.float64):
            for _ in range(20):
                a = (rng.normal(size=n) * 10 ** rng.uniform(-3, 3, size=n)).astype(dtype)
                assert pairwise_sum(a) == np.add.reduce(a), (n, dtype)


def test_stage_timers_are_off_while_copies_step_and_back_after():
    """MuJoCo's bindings time every mj_step's stages with a clock (mjcb_time); stepping turns
    it off (MjData.timer stays zero) and puts it back; the physics is unchanged, which
    test_identical_to_gymnasium checks against gymnasium's env, whose timers run."""
    import mujoco

    from microrl_host.envs import mujoco as mujoco_envs

    off = mujoco_envs.STAGE_TIMER_OFF
    slot = off._find_slot(mujoco)  # the C global mjcb_time, or None where libmujoco is not found
    step_timer = mujoco.mjtTimer.mjTIMER_STEP
    durations = {}
    for enabled in (True, False):
        off.enabled = enabled
        try:
            envs = MujocoVectorEnv("Humanoid-v4", 2, threads=1)  # one MjData per copy: its timers are readable
            envs.reset(seed=0)
            before = slot.value if slot else None
            for _ in range(3):
                envs.step(np.zeros((2, envs.act_dim)))
            assert off._depth == 0
            assert (slot.value if slot else None) == before  # the bindings' clock is back
            durations[enabled] = envs.datas[0].timer[step_timer].duration
            assert envs.datas[0].timer[step_timer].number == 3 * envs.frame_skip
            envs.close()
        finally:
            off.enabled = True
    if slot is None:
        pytest.skip("libmujoco's mjcb_time not found on this platform: timers stay on")
    assert durations[True] == 0.0 and durations[False] > 0.0


def test_a_timer_callback_the_user_set_is_kept():
    import mujoco

    calls = []

    def clock():
        calls.append(1)
        return float(len(calls))

    mujoco.set_mjcb_time(clock)
    try:
        envs = MujocoVectorEnv("Humanoid-v4", 1, threads=1)
        envs.reset(seed=0)
        envs.step(np.zeros((1, envs.act_dim)))
        assert calls and envs.datas[0].timer[mujoco.mjtTimer.mjTIMER_STEP].duration > 0.0
        envs.close()
    finally:
        mujoco.set_mjcb_time(None)  # the bindings' clock again
