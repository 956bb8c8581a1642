"""The cart-pole swing-up task module (device/microrl/tasks/cartpole.py) on its own: the task
interface's constants, its start states, a hand-made controller that swings it up (the task can be
solved, and success() says so), and the same steps run by MicroPython, and the commands (train, eval, render, export) on it by name.
numba's compiled steps equal the device core's bit for bit: tests/test_tasks.py, for every built-in task.
Against dm_control's model under MuJoCo: tests/test_cartpole_dm_control.py."""
import math
import os
import sys
import subprocess

import numpy as np
import pytest

from helpers import ROOT, needs_micropython, repo_env, run_micropython_code
from microrl.rng import Rng
from microrl.tasks import cartpole as C


def parameters():
    return np.array(C.PARAMETERS, dtype=np.float64)


def run_episode(P, policy, seed):
    """A local runner over the module's pure functions (reset with RESET_DRAWS uniforms from
    microrl's Rng, step until truncated): (return, success, final state, steps)."""
    rng = Rng(seed)
    s = np.zeros(C.STATE_DIM)
    u = np.array([rng.uniform() for _ in range(C.RESET_DRAWS)])
    obs = np.zeros(C.OBS_DIM)
    a = np.zeros(C.ACT_DIM)
    C.reset(P, s, u, obs)
    total = 0.0
    steps = 0
    while True:
        a[0] = policy(s, obs)
        r, terminated, truncated = C.step(P, s, a, u[:C.STEP_DRAWS], obs)
        total += r
        steps += 1
        assert not terminated
        if truncated:
            return total, C.success(P, s), s.copy(), steps


def test_constants_follow_the_task_interface():
    assert C.NAME == "cartpole"
    assert C.PARAM_DIM == len(C.PARAMETERS) == len(C.PARAM_NAMES) == len(set(C.PARAM_NAMES))
    assert all(isinstance(v, float) for v in C.PARAMETERS)
    assert len(C.ACTION_LOW) == len(C.ACTION_HIGH) == C.ACT_DIM
    assert len(C.OBS_HIGH) == C.OBS_DIM
    # the index constants name the parameter they index
    for name, value in vars(C).items():
        if name.isupper() and name.lower() in C.PARAM_NAMES:
            assert C.PARAM_NAMES[value] == name.lower(), name
    assert sum(1 for n in vars(C) if n.lower() in C.PARAM_NAMES and n.isupper()) == C.PARAM_DIM
    assert C.WORK + 20 == C.STATE_DIM
    assert abs(C.DT - C.PARAMETERS[C.TIMESTEP] * C.PARAMETERS[C.SUBSTEPS]) < 1e-15


def test_start_states_are_dm_controls_gaussians():
    """reset maps its uniforms to N(0, 0.01) cart position and velocities and a pole at
    N(pi, 0.01): 2,000 draws, means and standard deviations within sampling error."""
    P = parameters()
    rng = Rng(3)
    s = np.zeros(C.STATE_DIM)
    obs = np.zeros(C.OBS_DIM)
    starts = []
    for _ in range(2000):
        u = np.array([rng.uniform() for _ in range(C.RESET_DRAWS)])
        s[C.STEPS] = 7.0
        C.reset(P, s, u, obs)
        assert s[C.STEPS] == 0.0
        assert np.allclose(obs, [s[0], math.cos(s[1]), math.sin(s[1]), s[2], s[3]])
        starts.append(s[:4].copy())
    starts = np.array(starts)
    centre = np.array([0.0, math.pi, 0.0, 0.0])
    n = len(starts)
    for i in range(4):
        assert abs(starts[:, i].mean() - centre[i]) < 4 * 0.01 / math.sqrt(n)
        assert 0.9 < starts[:, i].std() / 0.01 < 1.1
    assert abs(np.corrcoef(starts.T)[np.triu_indices(4, 1)]).max() < 0.1  # independent draws
    # the extreme uniforms stay finite (u in [0, 1): 1 - u > 0)
    C.reset(P, s, np.array([0.0, 0.999999, 0.999999, 0.0]), obs)
    assert np.isfinite(s[:4]).all()


def swing_up_controller(P):
    """bench/cartpole.py's controller made by hand from the model (energy pumping, then LQR on
    the linearised model), the one that calibrates the bench's "solved"."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    try:
        from cartpole import reference_controller
    finally:
        sys.path.remove(os.path.join(ROOT, "bench"))
    control = reference_controller(P)
    return lambda s, obs: control(s)


def test_a_hand_made_controller_swings_it_up():
    """From dm_control's start (hanging, at rest), energy pumping then LQR balances the pole
    upright at the centre: every episode ends in success with a return above 800 of the
    1,000 steps' at most 1 each (the swing-up itself costs about 135); doing nothing never
    succeeds and scores near 0 (the pole hangs: upright factor 0)."""
    P = parameters()
    policy = swing_up_controller(P)
    for seed in range(3):
        total, ok, s, steps = run_episode(P, policy, seed)
        assert steps == C.EPISODE_STEPS
        assert ok and total > 800.0, (seed, total, s[:4])
        assert abs(s[C.X]) < 0.01 and math.cos(s[C.THETA]) > 0.9999
    total, ok, s, steps = run_episode(P, lambda s, obs: 0.0, 0)
    assert not ok and total < 1.0


def test_control_is_clipped_and_rewarded_as_dm_control():
    """An action beyond [-1, 1] acts as +-1 (MuJoCo's ctrllimited motor) and scores as one."""
    P = parameters()
    out = []
    for action in (1.0, 5.0):
        s = np.zeros(C.STATE_DIM)
        s[C.THETA] = 0.3
        obs = np.zeros(C.OBS_DIM)
        r, _, _ = C.step(P, s, np.array([action]), np.zeros(0), obs)
        out.append((r, s[:4].copy(), s[C.CONTROL]))
    assert out[0][0] == out[1][0] and (out[0][1] == out[1][1]).all() and out[1][2] == 1.0
    # at rest upright and centred with no control the reward is 1, its bound
    s = np.zeros(C.STATE_DIM)
    r, _, _ = C.step(P, s, np.array([0.0]), np.zeros(0), np.zeros(C.OBS_DIM))
    assert abs(r - C.REWARD_BOUND) < 1e-9


def test_substeps_divide_the_control_step():
    """Two RK4 steps of half the time step land where one full step does, to RK4's accuracy."""
    P = parameters()
    P2 = parameters()
    P2[C.TIMESTEP] = P[C.TIMESTEP] / 2
    P2[C.SUBSTEPS] = 2.0
    s1 = np.zeros(C.STATE_DIM)
    s1[:4] = (0.3, 2.0, -1.0, 3.0)
    s2 = s1.copy()
    obs = np.zeros(C.OBS_DIM)
    C.step(P, s1, np.array([0.4]), None, obs)
    C.step(P2, s2, np.array([0.4]), None, obs)
    assert 0 < np.abs(s1[:4] - s2[:4]).max() < 1e-7


STEPS = 400
ACTIONS = "[((k * 7919) %% 201 - 100) / 80.0 for k in range(%d)]" % STEPS  # +-1.25: some clipped


def python_rollout():
    P = parameters()
    s = np.zeros(C.STATE_DIM)
    obs = np.zeros(C.OBS_DIM)
    C.reset(P, s, np.array([0.1, 0.2, 0.3, 0.4]), obs)
    rewards = []
    for a in eval(ACTIONS):
        r, _, _ = C.step(P, s, np.array([a]), None, obs)
        rewards.append(r)
    return s[:6].copy(), np.array(rewards)


@needs_micropython
def test_micropython_steps_as_cpython():
    """The same start and STEPS actions under the micropython command (double floats): the
    states and rewards equal CPython's to rounding."""
    code = """
import json
from array import array
from microrl.tasks import cartpole as C
P = array('d', C.PARAMETERS)
s = array('d', bytes(8 * C.STATE_DIM))
obs = array('d', bytes(8 * C.OBS_DIM))
a = array('d', [0.0])
C.reset(P, s, array('d', [0.1, 0.2, 0.3, 0.4]), obs)
rewards = []
for v in %s:
    a[0] = v
    r, terminated, truncated = C.step(P, s, a, None, obs)
    rewards.append(r)
print(json.dumps({"s": list(s[:6]), "rewards": rewards}))
""" % ACTIONS
    import json

    mp = json.loads(run_micropython_code(code).strip().splitlines()[-1])
    s0, rewards0 = python_rollout()
    assert np.allclose(mp["s"], s0, rtol=1e-9, atol=1e-9), (mp["s"], s0)
    assert np.allclose(mp["rewards"], rewards0, rtol=1e-9, atol=1e-9)
    assert abs(s0[C.X]) > 0.1 and mp["s"][C.STEPS] == STEPS  # it moved, and counted its steps


def microrl(*args, cwd):
    return subprocess.run([sys.executable, "-m", "microrl_host.cli"] + [str(a) for a in args], capture_output=True, text=True, timeout=600, env=repo_env(), cwd=cwd)


def test_the_commands_take_it_by_name(tmp_path):
    """A built-in task by being a module of microrl/tasks/: train, eval, render and export name it
    and nothing else was registered anywhere (issue 31)."""
    import json

    proc = microrl("train", "cartpole", "--steps", 1500, "--seed", 2, "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert r["task"] == "cartpole" and r["steps"] == 1500 and "success_rate" in r
    proc = microrl("eval", "cartpole-td3.mrlp", "--episodes", 2, "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert r["env"] == "cartpole" and r["episodes"] == 2 and 0 <= r["mean"] <= C.EPISODE_STEPS * C.REWARD_BOUND
    proc = microrl("render", "cartpole-td3.mrlp", "--size", 48, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "cartpole-td3.gif").read_bytes()[:3] == b"GIF"  # render names the GIF after the policy file
    proc = microrl("export", "cartpole-td3.mrlp", "--int16", "--eval-episodes", 2, "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["task"] == "cartpole" and (tmp_path / "cartpole-td3.mrlq").exists()
