# Pendulum-v1, as gymnasium defines it (classic_control/pendulum.py), written once against the
# task interface (docs/tasks.md): the device core steps it (microrl.task.Env), and the host
# trainers compile these same functions with numba into their training loop.
from math import cos, pi, sin

from ..compat import const

NAME = "pendulum"
OBS_DIM = const(3)  # cos(theta), sin(theta), theta_dot
ACT_DIM = const(1)  # torque

# ---------------------------------------------------------------- parameters P (float64)
MAX_SPEED = const(0)  # rad/s
MAX_TORQUE = const(1)  # N m: actions beyond it are clipped
TIME_STEP = const(2)  # s
GRAVITY = const(3)  # m/s^2
MASS = const(4)  # kg
LENGTH = const(5)  # m
START_ANGLE = const(6)  # a start's theta is uniform in +-this (rad)
START_SPEED = const(7)  # and its theta_dot in +-this (rad/s)
PARAMETERS = (8.0, 2.0, 0.05, 10.0, 1.0, 1.0, pi, 1.0)
PARAM_NAMES = ("max_speed", "max_torque", "time_step", "gravity", "mass", "length", "start_angle", "start_speed")

# ---------------------------------------------------------------- state s (float64)
THETA = const(0)  # rad, 0 upright
THETA_DOT = const(1)
STEP = const(2)  # steps into the episode
STATE_DIM = const(3)

RESET_DRAWS = const(2)  # uniforms in [0, 1): theta, theta_dot
STEP_DRAWS = const(0)
EPISODE_STEPS = const(200)
DT = PARAMETERS[TIME_STEP]
ACTION_LOW = (-PARAMETERS[MAX_TORQUE],)
ACTION_HIGH = (PARAMETERS[MAX_TORQUE],)
OBS_HIGH = (1.0, 1.0, PARAMETERS[MAX_SPEED])
# the largest cost of a step (angle pi, full speed, full torque): rewards lie in [-REWARD_BOUND, 0]
REWARD_BOUND = pi * pi + 0.1 * OBS_HIGH[2] * OBS_HIGH[2] + 0.001 * ACTION_HIGH[0] * ACTION_HIGH[0]


def angle_normalize(x):
    return ((x + pi) % (2.0 * pi)) - pi


def dynamics(P, th, thdot, u):
    """One step from (theta, theta_dot) under torque u: (new_theta, new_theta_dot, reward)."""
    max_torque = P[MAX_TORQUE]
    if u > max_torque:
        u = max_torque
    elif u < -max_torque:
        u = -max_torque
    a = angle_normalize(th)
    cost = a * a + 0.1 * thdot * thdot + 0.001 * u * u
    g = P[GRAVITY]
    m = P[MASS]
    length = P[LENGTH]
    dt = P[TIME_STEP]
    newthdot = thdot + (3.0 * g / (2.0 * length) * sin(th) + 3.0 / (m * length * length) * u) * dt
    max_speed = P[MAX_SPEED]
    if newthdot > max_speed:
        newthdot = max_speed
    elif newthdot < -max_speed:
        newthdot = -max_speed
    newth = th + newthdot * dt
    return newth, newthdot, -cost


def observe(P, s, obs):
    th = s[THETA]
    obs[0] = cos(th)
    obs[1] = sin(th)
    obs[2] = s[THETA_DOT]


def reset(P, s, u, obs):
    """theta and theta_dot uniform in +-their start ranges, from u[0:2]."""
    lo = -P[START_ANGLE]
    s[THETA] = lo + (P[START_ANGLE] - lo) * u[0]
    lo = -P[START_SPEED]
    s[THETA_DOT] = lo + (P[START_SPEED] - lo) * u[1]
    s[STEP] = 0.0
    observe(P, s, obs)


def step(P, s, a, u, obs):
    """Torque a[0] for one step: (reward, terminated, truncated); never terminates."""
    th, thdot, reward = dynamics(P, s[THETA], s[THETA_DOT], a[0])
    s[THETA] = th
    s[THETA_DOT] = thdot
    s[STEP] += 1.0
    observe(P, s, obs)
    return reward, False, s[STEP] >= EPISODE_STEPS


def picture(P, s):
    """For microrl render: the rod from the pivot (0, 0) to its tip, y up, within [-1, 1]."""
    th = s[THETA]
    return (("line", 0.0, 0.0, 0.75 * sin(th), 0.75 * cos(th), 0.08), ("disc", 0.0, 0.0, 0.04))
