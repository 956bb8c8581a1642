# Pendulum-v1, as gymnasium defines it (classic_control/pendulum.py), defined once: the device
# core steps it, and the host trainers compile these same scalar functions with numba.
from math import cos, pi, sin

from .compat import zeros

MAX_SPEED = 8.0
MAX_TORQUE = 2.0
DT = 0.05
G = 10.0
M = 1.0
L = 1.0
EPISODE_STEPS = 200
OBS_DIM = 3
ACT_DIM = 1
OBS_HIGH = (1.0, 1.0, MAX_SPEED)
# the largest cost of a step (angle pi, full speed, full torque): rewards lie in [-REWARD_BOUND, 0]
REWARD_BOUND = pi * pi + 0.1 * MAX_SPEED * MAX_SPEED + 0.001 * MAX_TORQUE * MAX_TORQUE
RESET_HIGH_THETA = pi
RESET_HIGH_THETADOT = 1.0


def angle_normalize(x):
    return ((x + pi) % (2.0 * pi)) - pi


def dynamics(th, thdot, u):
    """One step from (theta, theta_dot) under torque u: (new_theta, new_theta_dot, reward)."""
    if u > MAX_TORQUE:
        u = MAX_TORQUE
    elif u < -MAX_TORQUE:
        u = -MAX_TORQUE
    a = angle_normalize(th)
    cost = a * a + 0.1 * thdot * thdot + 0.001 * u * u
    newthdot = thdot + (3.0 * G / (2.0 * L) * sin(th) + 3.0 / (M * L * L) * u) * DT
    if newthdot > MAX_SPEED:
        newthdot = MAX_SPEED
    elif newthdot < -MAX_SPEED:
        newthdot = -MAX_SPEED
    newth = th + newthdot * DT
    return newth, newthdot, -cost


def observe(th, thdot, obs, offset=0):
    obs[offset] = cos(th)
    obs[offset + 1] = sin(th)
    obs[offset + 2] = thdot


class Pendulum:
    """Pendulum-v1 with a 200-step limit. The observation buffer is reused between calls."""

    obs_dim = OBS_DIM
    act_dim = ACT_DIM
    action_low = -MAX_TORQUE
    action_high = MAX_TORQUE
    max_steps = EPISODE_STEPS
    obs_high = OBS_HIGH  # bounds of each observation field and of |reward|: compact replay rows
    reward_bound = REWARD_BOUND

    def __init__(self, rng=None):
        self.rng = rng
        self.th = 0.0
        self.thdot = 0.0
        self.t = 0
        self.obs = zeros(OBS_DIM)

    def reset(self, rng=None):
        rng = rng or self.rng
        self.th = rng.uniform(-RESET_HIGH_THETA, RESET_HIGH_THETA)
        self.thdot = rng.uniform(-RESET_HIGH_THETADOT, RESET_HIGH_THETADOT)
        self.t = 0
        observe(self.th, self.thdot, self.obs)
        return self.obs

    def set_state(self, th, thdot):
        self.th = th
        self.thdot = thdot
        observe(th, thdot, self.obs)
        return self.obs

    def step(self, action):
        """action: torque (a float or a one-element sequence). Returns (obs, reward, terminated, truncated)."""
        u = action if isinstance(action, float) else action[0]
        self.th, self.thdot, reward = dynamics(self.th, self.thdot, u)
        self.t += 1
        observe(self.th, self.thdot, self.obs)
        return self.obs, reward, False, self.t >= EPISODE_STEPS
