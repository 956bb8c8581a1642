# motor_position.py: a hardware task (docs/tasks.md, "A hardware task"). A DC motor with an
# encoder turns its shaft to a target angle and holds it there. The task is written against the
# task interface like any other, but its step drives the real motor and reads the real encoder
# through motor_io, a small module of yours on the board (motor_io.py here: an H-bridge and a
# quadrature encoder; sim/motor_io.py: a simulated motor behind the same three functions, for
# the virtual board). It runs on the board only: the host has no motor_io.
#
#   microrl train-on-board --port PORT --task ./motor_position.py --steps 6000
#
# trains TD3 on the board against the motor itself; deploy copies this file to the board's
# microrl/tasks/, motor_io.py you copy once (mpremote cp motor_io.py :lib/motor_io.py).
from math import cos, pi, sin

from microrl.compat import const

import motor_io  # drive(volts), wait(seconds), angle() -> rad: your hardware

NAME = "motor_position"
OBS_DIM = const(3)  # cos and sin of the angle to the target, shaft speed (rad/s)
ACT_DIM = const(1)  # motor voltage

# ---------------------------------------------------------------- parameters P
MAX_VOLTS = const(0)  # V: actions beyond it are clipped
PERIOD = const(1)  # s: the control period (motor_io.wait holds the loop to it)
TARGET_RANGE = const(2)  # a target is the angle at reset +- up to this (rad)
SPEED_COST = const(3)  # reward weights
VOLTS_COST = const(4)
MAX_SPEED = const(5)  # rad/s: speeds are clipped to it in the observation (the replay's bounds)
PARAMETERS = (6.0, 0.02, pi, 0.005, 0.01, 40.0)
PARAM_NAMES = ("max_volts", "period", "target_range", "speed_cost", "volts_cost", "max_speed")

# ---------------------------------------------------------------- state s
TARGET = const(0)  # rad, in the encoder's angle
ANGLE = const(1)  # the last angle read
SPEED = const(2)  # rad/s over the last period
STEP = const(3)
STATE_DIM = const(4)

RESET_DRAWS = const(1)  # the target
STEP_DRAWS = const(0)
EPISODE_STEPS = const(100)  # 2 s at 50 Hz
DT = PARAMETERS[PERIOD]
ACTION_LOW = (-PARAMETERS[MAX_VOLTS],)
ACTION_HIGH = (PARAMETERS[MAX_VOLTS],)
OBS_HIGH = (1.0, 1.0, PARAMETERS[MAX_SPEED])
REWARD_BOUND = pi * pi + PARAMETERS[SPEED_COST] * OBS_HIGH[2] * OBS_HIGH[2] + PARAMETERS[VOLTS_COST] * ACTION_HIGH[0] * ACTION_HIGH[0]
ERROR_NAME = "angle_error_rad"


def error(s):
    """The angle to the target, in [-pi, pi)."""
    return ((s[ANGLE] - s[TARGET] + pi) % (2.0 * pi)) - pi


def observe(P, s, obs):
    e = error(s)
    obs[0] = cos(e)
    obs[1] = sin(e)
    v = s[SPEED]
    limit = P[MAX_SPEED]
    obs[2] = limit if v > limit else (-limit if v < -limit else v)


def measure(P, s):
    """Wait out the control period, read the encoder: the shaft's angle and speed into s."""
    motor_io.wait(P[PERIOD])
    angle = motor_io.angle()
    s[SPEED] = (angle - s[ANGLE]) / P[PERIOD]
    s[ANGLE] = angle


def reset(P, s, u, obs):
    """The motor stopped where it is; a new target within +-TARGET_RANGE of it (from u[0])."""
    motor_io.drive(0.0)
    s[ANGLE] = motor_io.angle()
    measure(P, s)
    s[TARGET] = s[ANGLE] + P[TARGET_RANGE] * (2.0 * u[0] - 1.0)
    s[STEP] = 0.0
    observe(P, s, obs)


def step(P, s, a, u, obs):
    """a[0] volts for one control period: (reward, terminated, truncated)."""
    volts = a[0]
    limit = P[MAX_VOLTS]
    volts = limit if volts > limit else (-limit if volts < -limit else volts)
    motor_io.drive(volts)
    measure(P, s)
    observe(P, s, obs)
    e = error(s)
    speed = obs[2]
    s[STEP] += 1.0
    reward = -(e * e + P[SPEED_COST] * speed * speed + P[VOLTS_COST] * volts * volts)
    return reward, False, s[STEP] >= EPISODE_STEPS


def success(P, s):
    """Held: within 0.1 rad of the target, turning slower than 1 rad/s, at the episode's end."""
    return abs(error(s)) < 0.1 and abs(s[SPEED]) < 1.0


def final_error(P, s):
    return abs(error(s))
