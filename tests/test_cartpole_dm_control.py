"""microrl's cart-pole (device/microrl/tasks/cartpole.py) against dm_control's `cartpole`
`swingup`, as tests/test_quadrotor_l2f.py checks the quadrotor against L2F:

- dm_control's own model file (cartpole.xml, shipped in its wheel) under this environment's
  `mujoco`: the same parameters, and the same next states after setting both to the same state
  and control, over many random steps (inside and beyond the rail's soft limits, and chains of
  steps from dm_control's start states);
- dm_control itself (its reward, observation and start states): dm_control 1.0.50 does not load
  under mujoco 4 (`flex_vertedge`), so that part runs in a Python where it does, named by
  MICRORL_DM_CONTROL_PYTHON (e.g. a venv with `pip install dm_control==1.0.50 mujoco==3.17.0`),
  or in this one if its dm_control loads.

The model file is found in this environment's dm_control (`pip install --no-deps
dm_control==1.0.50` is enough: nothing of it is imported) or in MICRORL_DM_CONTROL_PYTHON's.
Where the integrators differ: docs/cartpole.md."""
import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from microrl.tasks import cartpole as C

mujoco = pytest.importorskip("mujoco", reason="mujoco is not installed: pip install -e '.[mujoco]'")

OTHER_PYTHON = os.environ.get("MICRORL_DM_CONTROL_PYTHON")
HOW = "pip install --no-deps dm_control==1.0.50 (its model file), or MICRORL_DM_CONTROL_PYTHON naming a Python with dm_control"


def _dm_control_dir():
    spec = importlib.util.find_spec("dm_control")
    if spec is not None and spec.submodule_search_locations:
        return list(spec.submodule_search_locations)[0]
    if OTHER_PYTHON:
        proc = subprocess.run([OTHER_PYTHON, "-c", "import dm_control, os; print(os.path.dirname(dm_control.__file__))"], capture_output=True, text=True, timeout=120)
        if proc.returncode == 0:
            return proc.stdout.strip()
    return None


@pytest.fixture(scope="module")
def model_file():
    where = _dm_control_dir()
    xml = where and os.path.join(where, "suite", "cartpole.xml")
    if not xml or not os.path.exists(xml):
        pytest.skip("dm_control's cartpole.xml not found: " + HOW)
    return xml


@pytest.fixture
def model(model_file):
    return mujoco.MjModel.from_xml_path(model_file)


def test_parameters_are_dm_controls(model):
    """Our parameter defaults are the numbers of dm_control's model as MuJoCo compiles it."""
    P = C.PARAMETERS
    m = model
    cart = m.body("cart").id
    pole = m.body("pole_1").id
    slider = m.joint("slider").id
    hinge = m.joint("hinge_1").id
    assert m.nq == m.nv == 2 and m.nu == 1
    assert P[C.CART_MASS] == m.body_mass[cart] and abs(P[C.POLE_MASS] - m.body_mass[pole]) < 1e-15
    assert np.allclose(m.body_ipos[pole], [0, 0, P[C.POLE_CENTRE]], atol=1e-15)
    # the hinge turns about y; the inertia about the pole's centre for that axis (its principal
    # axes are the body's: a capsule along z)
    assert np.allclose(m.jnt_axis[hinge], [0, 1, 0]) and np.allclose(m.jnt_axis[slider], [1, 0, 0])
    frame = np.zeros(9)
    mujoco.mju_quat2Mat(frame, m.body_iquat[pole])
    frame = frame.reshape(3, 3)
    about_hinge = frame.T @ m.jnt_axis[hinge]
    assert abs(P[C.POLE_INERTIA] - about_hinge @ (m.body_inertia[pole] * about_hinge)) < 1e-12
    assert P[C.GRAVITY] == -m.opt.gravity[2]
    assert P[C.GEAR] == m.actuator_gear[0][0] and tuple(m.actuator_ctrlrange[0]) == (C.ACTION_LOW[0], C.ACTION_HIGH[0])
    assert m.actuator_ctrllimited[0] and m.actuator_trntype[0] == mujoco.mjtTrn.mjTRN_JOINT and m.actuator_trnid[0][0] == slider
    assert (P[C.CART_DAMPING], P[C.POLE_DAMPING]) == (m.dof_damping[0], m.dof_damping[1])
    assert m.dof_armature.max() == 0 and m.dof_frictionloss.max() == 0
    assert m.jnt_limited[slider] and tuple(m.jnt_range[slider]) == (-P[C.SLIDER_LIMIT], P[C.SLIDER_LIMIT])
    assert not m.jnt_limited[hinge] and m.jnt_margin[slider] == 0
    assert tuple(m.jnt_solref[slider]) == (P[C.LIMIT_TIMECONST], P[C.LIMIT_DAMPRATIO])
    assert tuple(m.jnt_solimp[slider]) == (P[C.LIMIT_IMPEDANCE_MIN], P[C.LIMIT_IMPEDANCE_MAX], P[C.LIMIT_WIDTH], P[C.LIMIT_MIDPOINT], P[C.LIMIT_POWER])
    assert P[C.TIMESTEP] == m.opt.timestep and m.opt.integrator == mujoco.mjtIntegrator.mjINT_RK4
    assert m.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_CONTACT  # no contacts
    # the limit's regulariser scale: our upright-pose formula is MuJoCo's dof_invweight0
    mc, mp, l, inertia = P[C.CART_MASS], P[C.POLE_MASS], P[C.POLE_CENTRE], P[C.POLE_INERTIA]
    m22 = mp * l * l + inertia
    assert abs(m22 / ((mc + mp) * m22 - (mp * l) ** 2) - m.dof_invweight0[0]) < 1e-12


def _random_state(rng):
    """States across the task's range and beyond: the rail's ends and past them (the soft limit
    lets the cart in), pole at any angle, fast."""
    x = rng.uniform(-2.2, 2.2) if rng.random() < 0.7 else rng.choice([-1, 1]) * rng.uniform(1.78, 1.82)
    return np.array([x, rng.uniform(-7.0, 7.0), rng.uniform(-8.0, 8.0), rng.uniform(-25.0, 25.0)])


def _both(model, converged):
    """MuJoCo's model and data (its solver converged or at its defaults), our parameters, state
    and observation."""
    if converged:
        _converge(model)
    return model, mujoco.MjData(model), np.array(C.PARAMETERS), np.zeros(C.STATE_DIM), np.zeros(C.OBS_DIM)


def _compare(model, exact_solver, steps, seed):
    """steps (state, control) pairs: fresh random states, and chains of up to 100 steps from
    dm_control-like start states that follow MuJoCo's own states. Returns the largest
    difference of the next state, for steps where no limit was near and where one was, and how
    many steps touched a limit."""
    m, d, P, s, obs = _both(model, exact_solver)
    rng = np.random.default_rng(seed)
    worst_free = worst_limit = 0.0
    at_limit = 0
    chain = None
    for k in range(steps):
        if chain is None or k % 100 == 0:
            if k % 200 == 0:
                chain = _random_state(rng)
            else:  # dm_control's swing-up start
                chain = np.array([0.01 * rng.standard_normal(), np.pi + 0.01 * rng.standard_normal(), 0.01 * rng.standard_normal(), 0.01 * rng.standard_normal()])
        u = rng.uniform(-1.0, 1.0) if rng.random() < 0.8 else rng.choice([-1.0, 1.0])
        mujoco.mj_resetData(m, d)
        d.qpos[:] = chain[:2]
        d.qvel[:] = chain[2:]
        d.ctrl[0] = u
        mujoco.mj_step(m, d)
        theirs = np.concatenate([d.qpos, d.qvel])
        s[:4] = chain
        s[C.STEPS] = 0.0
        C.step(P, s, np.array([u]), None, obs)
        err = np.abs(s[:4] - theirs).max()
        if max(abs(chain[0]), abs(theirs[0])) > P[C.SLIDER_LIMIT] - 0.1:  # a stage may cross the limit
            worst_limit = max(worst_limit, err)
            at_limit += abs(theirs[0]) > P[C.SLIDER_LIMIT]
        else:
            worst_free = max(worst_free, err)
        chain = theirs if rng.random() < 0.98 else None
    return worst_free, worst_limit, at_limit


STEPS = 20000


def test_next_states_match_mujoco(model):
    """Away from the rail's ends the two agree to rounding (the same equations, the same RK4).
    At the ends MuJoCo's solver may stop at its tolerance (1e-8 on its cost's improvement): next
    states within 1e-5 (measured: rounding in these draws, up to 7e-7 in others, as in the
    whole episode below); with its solver run to convergence, to rounding always."""
    free, limit, n = _compare(model, False, STEPS, 0)
    print("MuJoCo default solver: worst |next state difference| free %.3g, near the limits %.3g (%d steps in a limit)" % (free, limit, n))
    assert free < 1e-12 and limit < 1e-5, (free, limit)
    assert n > STEPS // 40  # the limits were exercised


def test_next_states_match_mujoco_with_a_converged_solver(model):
    free, limit, n = _compare(model, True, STEPS, 1)
    print("MuJoCo converged solver: worst |next state difference| free %.3g, near the limits %.3g (%d steps in a limit)" % (free, limit, n))
    assert free < 1e-12 and limit < 1e-11, (free, limit)
    assert n > STEPS // 40


def _converge(m):
    """MuJoCo's Newton solver run to convergence instead of stopping at its 1e-8 tolerance."""
    m.opt.tolerance = 0.0
    m.opt.ls_tolerance = 1e-15
    m.opt.iterations = 1000


@pytest.mark.parametrize("converged", [False, True])
def test_a_whole_episode_matches_mujoco(model, converged):
    """1,000 steps in lockstep from the same start under the same open-loop controls (pumping the
    pole round and hitting the rail's ends 200 times): with MuJoCo's solver converged, the
    trajectories stay together to rounding (measured: 5e-13); with its default tolerance each
    hit of a limit leaves up to 1e-6 between them, which the chaotic motion carries on
    (measured: 3e-5 by the end)."""
    m, d, P, s, obs = _both(model, converged)
    C.reset(P, s, np.array([0.3, 0.6, 0.2, 0.9]), obs)
    d.qpos[:] = s[:2]
    d.qvel[:] = s[2:4]
    rng = np.random.default_rng(5)
    worst = 0.0
    hits = 0
    for k in range(C.EPISODE_STEPS):
        u = float(np.sign(np.sin(2 * np.pi * k / 90.0))) if k < 600 else rng.uniform(-1, 1)
        d.ctrl[0] = u
        mujoco.mj_step(m, d)
        C.step(P, s, np.array([u]), None, obs)
        worst = max(worst, np.abs(s[:4] - np.concatenate([d.qpos, d.qvel])).max())
        hits += abs(s[0]) > P[C.SLIDER_LIMIT]
    print("whole episode (solver %s): worst difference %.3g, %d steps beyond the rail's ends" % ("converged" if converged else "default", worst, hits))
    assert worst < (1e-10 if converged else 1e-3) and hits > 100


# dm_control itself: reads JSON {"seed", "resets", "pairs": [[qpos0, qpos1, qvel0, qvel1, u]...]}
# on stdin; prints start states of its swing-up and, per pair, the next state, observation and
# reward of dm_control's own environment step from that state under that control
ORACLE = r"""
import json, sys
import numpy as np
from dm_control import suite
job = json.loads(sys.stdin.read())
env = suite.load("cartpole", "swingup", task_kwargs={"random": job["seed"]})
starts = []
for _ in range(job["resets"]):
    env.reset()
    starts.append(list(env.physics.data.qpos) + list(env.physics.data.qvel))
out = []
for k, (x, th, v, w, u) in enumerate(job["pairs"]):
    if k % 500 == 0:
        env.reset()  # stay inside the episode's 1,000 steps
    with env.physics.reset_context():
        env.physics.data.qpos[:] = (x, th)
        env.physics.data.qvel[:] = (v, w)
    t = env.step(np.array([u]))
    p = env.physics.data
    out.append([list(p.qpos) + list(p.qvel), list(t.observation["position"]) + list(t.observation["velocity"]), float(t.reward)])
print(json.dumps({"starts": starts, "steps": out}))
"""


def _dm_control_python():
    """A Python in which dm_control's cart-pole loads: this one, else MICRORL_DM_CONTROL_PYTHON."""
    probe = "from dm_control import suite; suite.load('cartpole', 'swingup')"
    for python in (sys.executable, OTHER_PYTHON):
        if python and subprocess.run([python, "-c", probe], capture_output=True, timeout=300).returncode == 0:
            return python
    pytest.skip("dm_control's cartpole swingup does not load here (1.0.50 needs mujoco 3.x) and MICRORL_DM_CONTROL_PYTHON names no Python where it does (e.g. a venv: pip install dm_control==1.0.50 mujoco==3.17.0)")


def test_reward_observation_and_start_match_dm_control():
    """dm_control's environment step (its reward and observation, the state after its physics
    step) from random states under random controls, against ours; and its start states drawn
    from the same distribution as ours (N(0, 0.01), pole at N(pi, 0.01))."""
    python = _dm_control_python()
    rng = np.random.default_rng(2)
    pairs = []
    for _ in range(2000):
        x, th, v, w = _random_state(rng)
        if rng.random() < 0.3:  # near upright and centred, where the reward is high
            x, th, v, w = rng.normal(0, 0.3), rng.normal(0, 0.3), rng.normal(0, 1), rng.normal(0, 2)
        pairs.append([x, th, v, w, rng.uniform(-1, 1)])
    job = json.dumps({"seed": 7, "resets": 1000, "pairs": pairs})
    proc = subprocess.run([python, "-c", ORACLE], input=job, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    theirs = json.loads(proc.stdout)
    P = np.array(C.PARAMETERS)
    s = np.zeros(C.STATE_DIM)
    obs = np.zeros(C.OBS_DIM)
    worst_state = worst_obs = worst_reward = 0.0
    rewards = []
    for (x, th, v, w, u), (state, observation, reward) in zip(pairs, theirs["steps"]):
        s[:4] = (x, th, v, w)
        s[C.STEPS] = 0.0
        r, terminated, truncated = C.step(P, s, np.array([u]), None, obs)
        assert not terminated and not truncated
        worst_state = max(worst_state, np.abs(s[:4] - state).max())
        worst_obs = max(worst_obs, np.abs(obs - observation).max())
        worst_reward = max(worst_reward, abs(r - reward))
        rewards.append(reward)
    print("dm_control: worst state %.3g, observation %.3g, reward %.3g" % (worst_state, worst_obs, worst_reward))
    assert worst_state < 1e-5 and worst_obs < 1e-5 and worst_reward < 1e-6
    assert max(rewards) > 0.9 and min(rewards) < 0.05  # the whole range of the reward was compared
    # start states: the same Gaussians (1,000 of theirs against 1,000 of ours)
    starts = np.array(theirs["starts"])
    from microrl.rng import Rng

    r = Rng(1)
    ours = []
    for _ in range(len(starts)):
        C.reset(P, s, np.array([r.uniform() for _ in range(C.RESET_DRAWS)]), obs)
        ours.append(s[:4].copy())
    ours = np.array(ours)
    n = len(starts)
    for i in range(4):
        assert abs(starts[:, i].mean() - ours[:, i].mean()) < 5 * 0.01 * np.sqrt(2.0 / n)
        assert 0.85 < starts[:, i].std() / ours[:, i].std() < 1.15
