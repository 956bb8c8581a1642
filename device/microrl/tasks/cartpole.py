# Cart-pole swing-up with a continuous force, as dm_control's `cartpole` `swingup` (1.0.50,
# suite/cartpole.py and cartpole.xml) defines it under MuJoCo, written as a task module
# (docs/task_interface.md): constants, a flat parameter array P and free functions over flat
# arrays, in the device core's MicroPython subset. numba compiles these same functions into the
# host's training loop; a board steps them as they are. Nothing in reset/step allocates an array.
# Where it differs from MuJoCo (nowhere measurable on ordinary steps): docs/cartpole.md.
#
# The model: a cart (CART_MASS) on a rail along x, pushed by GEAR x control (control in [-1, 1],
# clipped as MuJoCo clips a ctrllimited motor); a pole hinged on the cart, its centre of mass
# POLE_CENTRE from the hinge, POLE_INERTIA about that centre (MuJoCo's capsule: radius 0.045 m,
# length 1 m). theta = 0 is upright, positive theta tips the pole towards +x. Viscous damping on
# both joints. The rail ends at +-SLIDER_LIMIT as MuJoCo's soft joint limit: a constraint force
# from MuJoCo's reference acceleration (solref = time constant, damping ratio), impedance
# (solimp) and regularisation, the force MuJoCo's solver finds for a single active limit.
# Integrated by classic RK4 with time step TIMESTEP, SUBSTEPS of them per control step.
from math import cos, exp, log, pi, sin, sqrt

from ..compat import const

NAME = "cartpole"

# ---------------------------------------------------------------- parameters
CART_MASS = const(0)  # kg
POLE_MASS = const(1)  # kg
POLE_CENTRE = const(2)  # hinge to the pole's centre of mass, m
POLE_INERTIA = const(3)  # the pole's moment of inertia about its centre of mass, kg m^2
GRAVITY = const(4)  # m/s^2
GEAR = const(5)  # N of force on the cart per unit of control: the largest force
CART_DAMPING = const(6)  # N s/m
POLE_DAMPING = const(7)  # N m s/rad
SLIDER_LIMIT = const(8)  # the rail's ends, +-m (a soft limit: the cart may go slightly beyond)
LIMIT_TIMECONST = const(9)  # MuJoCo's solreflimit: time constant (s) and damping ratio
LIMIT_DAMPRATIO = const(10)
LIMIT_IMPEDANCE_MIN = const(11)  # MuJoCo's solimp: impedance at zero and at full penetration,
LIMIT_IMPEDANCE_MAX = const(12)  # the width (m) between them, midpoint and power of the curve
LIMIT_WIDTH = const(13)
LIMIT_MIDPOINT = const(14)
LIMIT_POWER = const(15)
TIMESTEP = const(16)  # s per RK4 step
SUBSTEPS = const(17)  # RK4 steps per control step (a whole number)
REWARD_CART_MARGIN = const(18)  # reward = upright x control x velocity x centred factors,
REWARD_CONTROL_MARGIN = const(19)  # each 1 at its best (dm_control's smooth swing-up reward):
REWARD_VELOCITY_MARGIN = const(20)  # upright = (cos(theta) + 1) / 2; the others are
REWARD_CENTRED_WEIGHT = const(21)  # (1 - weight) + weight * tolerance, tolerance falling from 1
REWARD_CONTROL_WEIGHT = const(22)  # at 0 to REWARD_VALUE_AT_MARGIN at the margin (a Gaussian;
REWARD_VELOCITY_WEIGHT = const(23)  # for the control 1 - (u / margin)^2, 0 beyond)
REWARD_VALUE_AT_MARGIN = const(24)
START_POSITION_STD = const(25)  # start: cart at N(0, std) m, pole at N(START_ANGLE, std) rad
START_ANGLE = const(26)  # (pi: hanging down), both velocities N(0, std)
START_ANGLE_STD = const(27)
START_VELOCITY_STD = const(28)
SUCCESS_POSITION = const(29)  # success at an episode's end: |x| below this, cos(theta) above
SUCCESS_COSINE = const(30)  # SUCCESS_COSINE (dm_control's swingup_sparse reward is 1 there),
SUCCESS_ANGULAR_VELOCITY = const(31)  # and |theta_dot| below this (not going round, rad/s)
PARAM_DIM = const(32)

PARAMETERS = (
    1.0,  # cart mass
    0.1,  # pole mass
    0.5,  # pole centre
    0.009424592767295598,  # pole inertia: MuJoCo's capsule (density fitted to 0.1 kg)
    9.81,  # gravity
    10.0,  # gear
    5e-4,  # cart damping
    2e-6,  # pole damping
    1.8,  # slider limit
    0.08,  # limit time constant (cartpole.xml's solreflimit)
    1.0,  # limit damping ratio
    0.9,  # limit impedance min (MuJoCo's default solimp)
    0.95,  # limit impedance max
    0.001,  # limit width
    0.5,  # limit midpoint
    2.0,  # limit power
    0.01,  # timestep: cartpole.xml's
    1.0,  # substeps: dm_control's control step is one physics step
    2.0,  # reward cart margin
    1.0,  # reward control margin
    5.0,  # reward velocity margin
    0.5,  # reward centred weight: (1 + tolerance) / 2
    0.2,  # reward control weight: (4 + tolerance) / 5
    0.5,  # reward velocity weight: (1 + tolerance) / 2
    0.1,  # reward value at margin
    0.01,  # start position std
    pi,  # start angle
    0.01,  # start angle std
    0.01,  # start velocity std
    0.25,  # success position (dm_control's _CART_RANGE)
    0.995,  # success cosine (dm_control's _ANGLE_COSINE_RANGE)
    1.0,  # success angular velocity
)
PARAM_NAMES = (
    "cart_mass", "pole_mass", "pole_centre", "pole_inertia", "gravity", "gear", "cart_damping",
    "pole_damping", "slider_limit", "limit_timeconst", "limit_dampratio", "limit_impedance_min",
    "limit_impedance_max", "limit_width", "limit_midpoint", "limit_power", "timestep", "substeps",
    "reward_cart_margin", "reward_control_margin", "reward_velocity_margin",
    "reward_centred_weight", "reward_control_weight", "reward_velocity_weight",
    "reward_value_at_margin", "start_position_std", "start_angle", "start_angle_std",
    "start_velocity_std", "success_position", "success_cosine", "success_angular_velocity",
)

# ---------------------------------------------------------------- state, observation, task
X = const(0)  # cart position, m
THETA = const(1)  # pole angle from upright, rad (not wrapped, as MuJoCo's hinge)
X_DOT = const(2)
THETA_DOT = const(3)
STEPS = const(4)  # control steps taken in this episode
CONTROL = const(5)  # the last control applied, clipped to [-1, 1] (for pictures)
WORK = const(6)  # RK4 scratch: four derivatives and one intermediate state (5 x 4)
STATE_DIM = const(26)

OBS_DIM = const(5)  # cart position, cos and sin of the pole angle, cart and pole velocities
ACT_DIM = const(1)  # control in [-1, 1]: force GEAR x control on the cart
ACTION_LOW = (-1.0,)
ACTION_HIGH = (1.0,)
RESET_DRAWS = const(4)
STEP_DRAWS = const(0)
EPISODE_STEPS = const(1000)  # dm_control's 10 s at 100 Hz
DT = 0.01  # s per control step with the default parameters (TIMESTEP x SUBSTEPS)
# bounds of the 16-bit replay rows (values beyond are stored clipped): above the largest seen in
# 30,000 episodes of random and bang-bang control (2.13 m, 10.6 m/s, 53 rad/s; docs/cartpole.md)
OBS_HIGH = (2.5, 1.0, 1.0, 15.0, 60.0)
REWARD_BOUND = 1.0  # rewards lie in [0, 1]


def _clip_impedance(d):
    return 0.0001 if d < 0.0001 else (0.9999 if d > 0.9999 else d)  # MuJoCo's mjMINIMP, mjMAXIMP


def impedance(P, depth):
    """MuJoCo's constraint impedance (solimp) at a penetration depth >= 0 (m)."""
    lo = _clip_impedance(P[LIMIT_IMPEDANCE_MIN])
    hi = _clip_impedance(P[LIMIT_IMPEDANCE_MAX])
    width = P[LIMIT_WIDTH]
    if lo == hi or width <= 1e-15:
        return 0.5 * (lo + hi)
    x = depth / width
    if x >= 1.0:
        return hi
    if x <= 0.0:
        return lo
    mid = P[LIMIT_MIDPOINT]
    power = P[LIMIT_POWER]
    if power == 1.0:
        y = x
    elif x <= mid:
        y = x ** power / mid ** (power - 1.0)
    else:
        y = 1.0 - (1.0 - x) ** power / (1.0 - mid) ** (power - 1.0)
    return lo + y * (hi - lo)


def derivative(P, x, xo, force, d, do):
    """d[do:do+4] = time derivative of the state x[xo:xo+4] (x, theta, x_dot, theta_dot) under a
    force on the cart (N): the cart-pole's equations of motion, joint damping, and the rail's
    soft limit as MuJoCo resolves a single active limit constraint."""
    mc = P[CART_MASS]
    mp = P[POLE_MASS]
    l = P[POLE_CENTRE]
    th = x[xo + 1]
    v = x[xo + 2]
    w = x[xo + 3]
    c = cos(th)
    s = sin(th)
    # mass matrix [[m11, m12], [m12, m22]] and right-hand sides
    m11 = mc + mp
    m12 = mp * l * c
    m22 = mp * l * l + P[POLE_INERTIA]
    f1 = force - P[CART_DAMPING] * v + mp * l * s * w * w
    f2 = mp * P[GRAVITY] * l * s - P[POLE_DAMPING] * w
    det = m11 * m22 - m12 * m12
    acc = (m22 * f1 - m12 * f2) / det
    alpha = (m11 * f2 - m12 * f1) / det
    # the rail's ends: at most one limit is active; j is its Jacobian (+1 lower, -1 upper)
    limit = P[SLIDER_LIMIT]
    pos = x[xo]
    j = 0.0
    dist = 0.0
    if pos < -limit:
        j = 1.0
        dist = pos + limit
    elif pos > limit:
        j = -1.0
        dist = limit - pos
    if j != 0.0:
        dmax = _clip_impedance(P[LIMIT_IMPEDANCE_MAX])
        h = P[TIMESTEP]
        tc = P[LIMIT_TIMECONST]
        if tc < 2.0 * h:  # MuJoCo's refsafe: no time constant below two time steps
            tc = 2.0 * h
        dr = P[LIMIT_DAMPRATIO]
        k = 1.0 / (dmax * dmax * tc * tc * dr * dr)
        b = 2.0 / (dmax * tc)
        imp = impedance(P, -dist)
        aref = -b * j * v - k * imp * dist
        inv11 = m22 / det  # J M^-1 J^T, exact
        m12_0 = mp * l  # M^-1's slider diagonal at the reference pose (upright): MuJoCo's
        diag0 = m22 / (m11 * m22 - m12_0 * m12_0)  # dof_invweight0, its regulariser's scale
        reg = (1.0 - imp) / imp * diag0
        lam = (aref - j * acc) / (inv11 + reg)
        if lam > 0.0:
            acc += m22 / det * j * lam
            alpha -= m12 / det * j * lam
    d[do] = v
    d[do + 1] = w
    d[do + 2] = acc
    d[do + 3] = alpha


def integrate(P, s, force):
    """Advance s by one TIMESTEP under a constant force: classic RK4, as MuJoCo's RK4 integrator."""
    h = P[TIMESTEP]
    k1 = WORK
    k2 = WORK + 4
    k3 = WORK + 8
    k4 = WORK + 12
    y = WORK + 16
    derivative(P, s, 0, force, s, k1)
    for i in range(4):
        s[y + i] = s[i] + 0.5 * h * s[k1 + i]
    derivative(P, s, y, force, s, k2)
    for i in range(4):
        s[y + i] = s[i] + 0.5 * h * s[k2 + i]
    derivative(P, s, y, force, s, k3)
    for i in range(4):
        s[y + i] = s[i] + h * s[k3 + i]
    derivative(P, s, y, force, s, k4)
    for i in range(4):
        s[i] = s[i] + h / 6.0 * (s[k1 + i] + 2.0 * s[k2 + i] + 2.0 * s[k3 + i] + s[k4 + i])


def observe(P, s, obs):
    obs[0] = s[X]
    obs[1] = cos(s[THETA])
    obs[2] = sin(s[THETA])
    obs[3] = s[X_DOT]
    obs[4] = s[THETA_DOT]


def tolerance(P, x, margin):
    """dm_control's rewards.tolerance with bounds (0, 0) and its Gaussian: 1 at 0, falling to
    REWARD_VALUE_AT_MARGIN at |x| = margin."""
    z = x / margin
    return exp(log(P[REWARD_VALUE_AT_MARGIN]) * z * z)


def reward(P, s, control):
    """dm_control's smooth swing-up reward of the state s after a step under control (in [-1, 1])."""
    upright = (cos(s[THETA]) + 1.0) / 2.0
    wc = P[REWARD_CENTRED_WEIGHT]
    centred = (1.0 - wc) + wc * tolerance(P, s[X], P[REWARD_CART_MARGIN])
    z = control / P[REWARD_CONTROL_MARGIN]
    quadratic = 1.0 - z * z if z * z < 1.0 else 0.0
    wu = P[REWARD_CONTROL_WEIGHT]
    small_control = (1.0 - wu) + wu * quadratic
    wv = P[REWARD_VELOCITY_WEIGHT]
    small_velocity = (1.0 - wv) + wv * tolerance(P, s[THETA_DOT], P[REWARD_VELOCITY_MARGIN])
    return upright * small_control * small_velocity * centred


def reset(P, s, u, obs):
    """A start state from RESET_DRAWS uniforms u[0:4] in [0, 1): Gaussians by Box-Muller, as
    dm_control draws its swing-up start (cart at 0, pole hanging, all +-0.01)."""
    r = sqrt(-2.0 * log(1.0 - u[0]))
    a = 2.0 * pi * u[1]
    s[X] = P[START_POSITION_STD] * r * cos(a)
    s[THETA] = P[START_ANGLE] + P[START_ANGLE_STD] * r * sin(a)
    r = sqrt(-2.0 * log(1.0 - u[2]))
    a = 2.0 * pi * u[3]
    s[X_DOT] = P[START_VELOCITY_STD] * r * cos(a)
    s[THETA_DOT] = P[START_VELOCITY_STD] * r * sin(a)
    s[STEPS] = 0.0
    s[CONTROL] = 0.0
    observe(P, s, obs)


def step(P, s, a, u, obs):
    """One control step under a[0] (clipped to [-1, 1]): (reward, terminated, truncated). The
    reward reads the state after the step, as dm_control's does; no termination."""
    control = a[0]
    if control > 1.0:
        control = 1.0
    elif control < -1.0:
        control = -1.0
    force = P[GEAR] * control
    for _ in range(int(P[SUBSTEPS])):
        integrate(P, s, force)
    s[CONTROL] = control
    s[STEPS] += 1.0
    observe(P, s, obs)
    return reward(P, s, control), False, s[STEPS] >= EPISODE_STEPS


def success(P, s):
    """Balanced: upright and centred (dm_control's sparse swing-up reward is 1 there) and
    turning slowly (a pole going round passes upright too)."""
    return abs(s[X]) < P[SUCCESS_POSITION] and cos(s[THETA]) > P[SUCCESS_COSINE] and abs(s[THETA_DOT]) < P[SUCCESS_ANGULAR_VELOCITY]


def picture(P, s):
    """For microrl render: the rail, the cart (dm_control's 0.4 x 0.2 m box), the pole (twice
    its centre's distance long) and the force on the cart, y up, within [-1, 1]."""
    k = 1.0 / (P[SLIDER_LIMIT] + 0.4)  # metres to picture units: the rail and a cart's half-width beside it
    y = -0.1
    x = s[X] * k
    length = 2.0 * P[POLE_CENTRE] * k
    th = s[THETA]
    end = P[SLIDER_LIMIT] * k
    return (
        ("line", -end, y, end, y, 0.01),
        ("disc", -end, y, 0.02),
        ("disc", end, y, 0.02),
        ("line", x - 0.2 * k, y, x + 0.2 * k, y, 0.2 * k),
        ("line", x, y, x + length * sin(th), y + length * cos(th), 0.09 * k),
        ("disc", x, y, 0.03),
        ("line", x, y - 0.15 * k, x + 0.4 * k * s[CONTROL], y - 0.15 * k, 0.02),
    )
