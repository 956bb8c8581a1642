# A quadrotor hovering at a target, as L2F (RLtools' "Learning to Fly in Seconds",
# arXiv 2311.13081; PyPI `l2f` 2.0.18, rl_tools/rl/environments/l2f) simulates a Crazyflie 2.x,
# written once against the task interface (docs/tasks.md): the device core steps it
# (microrl.task.Env, fly()), and the host trainer compiles these same functions with numba into
# its training loop. Differences from L2F: docs/quadrotor.md.
#
# Everything is a flat float array indexed by the constants below (data), and free functions
# that read and write such arrays at offsets (operations): nothing here allocates an array.
#   P  parameters (PARAM_DIM): airframe, motors, time step, initial-state ranges, reward, limits,
#      sim-to-real perturbations (the runner redraws the randomised ones each episode: RANDOMISED)
#   s  state (STATE_DIM): the simulated craft (PHYSICS_DIM: position, orientation quaternion
#      (w, x, y, z), linear velocity (world frame), angular velocity (body frame), rotor speeds
#      (normalised, RPM_MIN..RPM_MAX)), the step count, an RK4 step's work space, the rotor
#      setpoints and the integral of the position error (what the policy observes of its past)
from math import acos, cos, exp, pi, sin, sqrt

from ..compat import const, zeros

NAME = "quadrotor"

# ---------------------------------------------------------------- parameters
MASS = const(0)  # kg
GRAVITY = const(1)  # m/s^2, pointing down (-z)
J_XX = const(2)  # inertia about the body axes, kg m^2 (diagonal, as every L2F airframe's is)
J_YY = const(3)
J_ZZ = const(4)
THRUST_C0 = const(5)  # thrust of one rotor in N: C0 + C1 * rpm + C2 * rpm^2 (rpm normalised)
THRUST_C1 = const(6)
THRUST_C2 = const(7)
TORQUE_CONSTANT = const(8)  # yaw torque per N of thrust, m
TAU_RISING = const(9)  # first-order motor time constants, s (L2F: separate up and down)
TAU_FALLING = const(10)
RPM_MIN = const(11)  # action -1 maps to RPM_MIN, +1 to RPM_MAX
RPM_MAX = const(12)
TIME_STEP = const(13)  # s per control step (one RK4 step)
ROTOR_X = const(14)  # 4 rotor positions x (m), body frame
ROTOR_Y = const(18)  # 4 rotor positions y (m)
ROTOR_SPIN = const(22)  # 4 yaw torque directions (+1 / -1)
INIT_GUIDANCE = const(26)  # probability of starting at the target, at rest
INIT_POSITION = const(27)  # start position uniform in +-this, per axis (m)
INIT_ANGLE = const(28)  # start tilt: a rotation about a random axis by an angle uniform in [0, this] (rad)
INIT_VELOCITY = const(29)  # start linear velocity uniform in +-this, per axis (m/s)
INIT_ANGULAR_VELOCITY = const(30)  # start angular velocity uniform in +-this, per axis (rad/s)
INIT_RPM_LOW = const(31)  # start rotor speeds uniform in hover + [LOW, HIGH] (normalised units)
INIT_RPM_HIGH = const(32)
REWARD_SCALE = const(33)  # reward = CONSTANT - SCALE * (POSITION |p|^2 + ORIENTATION (1 - q_w^2)
REWARD_CONSTANT = const(34)  #   + VELOCITY |v|^2 + ACTION |a - hover command|^2); 0 on termination
REWARD_POSITION = const(35)
REWARD_ORIENTATION = const(36)
REWARD_VELOCITY = const(37)
REWARD_ACTION = const(38)
LIMIT_POSITION = const(39)  # termination: any coordinate of position (m), velocity (m/s) or
LIMIT_VELOCITY = const(40)  # angular velocity (rad/s) beyond these
LIMIT_ANGULAR_VELOCITY = const(41)
# sim-to-real (docs/sim-to-real.md): 0 turns each off. As learning-to-fly, a constant force
# (world frame) and torque (body frame) on the craft, each axis normal with these stds, redrawn
# each episode; beyond it, mass, inertia, thrust curve and motor time constants each varied by
# a factor uniform within 1 +- these fractions. The runner (microrl.perturb.randomise) draws
# them into P from RANDOMISED below; the physics reads P as ever.
DISTURBANCE_FORCE = const(42)  # N
DISTURBANCE_TORQUE = const(43)  # N m
VARY_MASS = const(44)
VARY_INERTIA = const(45)
VARY_THRUST = const(46)
VARY_MOTOR = const(47)
FORCE = const(48)  # 3: the episode's force, N (a constant wind, when set by hand)
TORQUE = const(51)  # 3: the episode's torque, N m
PARAM_DIM = const(54)

# Crazyflie 2.x as L2F has it (parameters/dynamics/crazyflie.h): 27 g take-off weight plus
# SD-card and flow decks, thrust curve and motor time constants identified on the real craft.
CRAZYFLIE = (
    0.027 + 0.0017 + 0.0003 + 0.0016,  # mass
    9.81,  # gravity
    9.416556729130406e-06,  # J_xx
    9.644051701582312e-06,  # J_yy
    1.745951732253285e-05,  # J_zz
    0.00352526,  # thrust C0
    0.01437313,  # thrust C1
    0.09223048,  # thrust C2
    4.665e-3,  # torque constant
    0.05545454545454546,  # tau rising
    0.24939393939393945,  # tau falling
    0.0,  # rpm min
    1.0,  # rpm max
    0.01,  # dt: 100 Hz
    0.028, -0.028, -0.028, 0.028,  # rotor x
    -0.028, -0.028, 0.028, 0.028,  # rotor y
    -1.0, 1.0, -1.0, 1.0,  # rotor spin
    0.1,  # init guidance
    0.2,  # init position: learning-to-fly's
    pi / 2.0,  # init angle: learning-to-fly's orientation_biggest_angle (90 deg)
    1.0,  # init velocity
    1.0,  # init angular velocity
    0.0,  # init rpm low: at hover, as learning-to-fly starts its motors
    0.0,  # init rpm high
    0.5,  # reward scale: L2F's hover reward (learning-to-fly, reward_squared_position_only_torque)
    2.0,  # reward constant
    10.0,  # reward position: L2F's 5 doubled (its curriculum raises it towards 40); with 5 the
    #        policies hovered 0.2 to 0.6 m off the target in 2 of 5 seeds
    5.0,  # reward orientation
    0.01,  # reward velocity (curriculum: towards 1)
    0.01,  # reward action (curriculum: towards 1)
    0.6,  # termination position: learning-to-fly's fast_learning
    1000.0,  # termination velocity: none, as learning-to-fly's fast_learning
    1000.0,  # termination angular velocity: none
    0.0, 0.0,  # no disturbances
    0.0, 0.0, 0.0, 0.0,  # the airframe as it is
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0,  # no force or torque
)

PARAMETERS = CRAZYFLIE
PARAM_NAMES = (
    "mass", "gravity", "j_xx", "j_yy", "j_zz", "thrust_c0", "thrust_c1", "thrust_c2", "torque_constant", "tau_rising", "tau_falling",
    "rpm_min", "rpm_max", "time_step", "rotor_x_0", "rotor_x_1", "rotor_x_2", "rotor_x_3", "rotor_y_0", "rotor_y_1", "rotor_y_2", "rotor_y_3",
    "rotor_spin_0", "rotor_spin_1", "rotor_spin_2", "rotor_spin_3", "init_guidance", "init_position", "init_angle", "init_velocity",
    "init_angular_velocity", "init_rpm_low", "init_rpm_high", "reward_scale", "reward_constant", "reward_position", "reward_orientation",
    "reward_velocity", "reward_action", "limit_position", "limit_velocity", "limit_angular_velocity",
    "disturbance_force", "disturbance_torque", "vary_mass", "vary_inertia", "vary_thrust", "vary_motor",
    "force_x", "force_y", "force_z", "torque_x", "torque_y", "torque_z",
)

# ---------------------------------------------------------------- state, observation, task
POSITION = const(0)
ORIENTATION = const(3)  # w, x, y, z
VELOCITY = const(7)
ANGULAR_VELOCITY = const(10)
RPM = const(13)
PHYSICS_DIM = const(17)  # the simulated craft
STEP = const(17)  # steps into the episode
WORK = const(18)  # an RK4 step's work space: k1, k2, k3, k4 and one intermediate state
WORK_DIM = const(85)
SETPOINT = const(103)  # the four rotor speed setpoints of the step
# the position error summed over the episode (x TIME_STEP, m s), clipped at +-INTEGRAL_LIMIT per
# axis and observed after the rotor speeds over INTEGRAL_LIMIT: a memoryless policy hovers off
# the target under a constant force (the training disturbance); with the integral PPO's final
# policies hold it (docs/quadrotor.md, "The integral of the position error")
INTEGRAL = const(107)
INTEGRAL_DIM = const(3)
INTEGRAL_LIMIT = 0.5
STATE_DIM = const(110)
RESET_DRAWS = const(17)  # uniforms in [0, 1) that initial_state() consumes
STEP_DRAWS = const(0)

# a model-gradient actor (TD3's model_horizon: host/microrl_host/algos/model_gradient.py) rolls
# the step from states rebuilt from observations (state_from_observation); only these first
# entries of s carry the craft (the rest: the step count, RK4's work space, the setpoints, the
# integral)
MODEL_DIM = PHYSICS_DIM

OBS_DIM = const(25)  # position error, rotation matrix, linear and angular velocity, rotor speeds, integral
ACT_DIM = const(4)  # motor commands in [-1, 1]
ACTION_LOW = (-1.0, -1.0, -1.0, -1.0)
ACTION_HIGH = (1.0, 1.0, 1.0, 1.0)
EPISODE_STEPS = const(500)  # 5 s at 100 Hz
DT = CRAZYFLIE[TIME_STEP]
# bounds of the 16-bit replay rows (values beyond are clipped): position (terminates beyond
# 0.6 m), rotation matrix, velocities, rotor speeds, integral; rewards lie in about [-6, 2] at the limits
OBS_HIGH = (1.0,) * 3 + (1.0,) * 9 + (5.0,) * 3 + (30.0,) * 3 + (1.0,) * 4 + (1.0,) * 3
REWARD_BOUND = 10.0

# what "it flies" means in microrl eval: from a start within +-0.5 m and 30 deg of tilt, at rest,
# after EPISODE_STEPS without termination, within 0.1 m of the target and turning slowly
SUCCESS_POSITION = 0.1  # m
SUCCESS_ANGULAR_VELOCITY = 0.5  # rad/s
EVAL_POSITION = 0.5
EVAL_ANGLE = pi / 6.0
# evaluations report the median final distance and the share of crashed episodes under these names
ERROR_NAME = "position_error_m"
TERMINATED_NAME = "crash_rate"

# sim-to-real: the parameters the runner redraws each episode (first index, count, the index of
# their spread, 0: a factor uniform in 1 +- spread on the nominal values, 1: the nominal value
# plus a normal with std spread, per entry); what training perturbs unless told otherwise (as
# learning-to-fly trains, src/config/parameters.h: its observation noise (position and rotation
# matrix 0.001, velocities 0.002, none on the rotor speeds) and disturbances (force std 1/20 of a
# 27 g craft's weight, torque 1/10000 of it); beyond it, the airframe +-10%); and the std of each
# observation's noise at observation_noise 1
RANDOMISED = ((MASS, 1, VARY_MASS, 0), (J_XX, 3, VARY_INERTIA, 0), (THRUST_C0, 3, VARY_THRUST, 0), (TAU_RISING, 2, VARY_MOTOR, 0),
              (FORCE, 3, DISTURBANCE_FORCE, 1), (TORQUE, 3, DISTURBANCE_TORQUE, 1))
PERTURBATIONS = {"observation_noise": 1.0, "disturbance_force": 0.01324, "disturbance_torque": 0.0000265,
                 "vary_mass": 0.1, "vary_inertia": 0.1, "vary_thrust": 0.1, "vary_motor": 0.1}
OBS_NOISE = (0.001,) * 12 + (0.002,) * 6 + (0.0,) * 4 + (0.0,) * 3

# how the host trains it, where a user gives no other setting: as L2F's TD3 does
# (learning-to-fly src/config/config.h) batch 256 and 15,000 steps before the first update, but
# one update every 5 environment steps (L2F: 10; in exploratory runs here, 10 left most seeds
# crashing at 300,000 steps); evaluations of 100 flights (success rates need more episodes than
# a Pendulum return) every 10,000 steps; start states widening from near hover to L2F's full
# distribution over the first 50,000 steps (curriculum()). 500,000 steps: L2F's budget is
# 300,000; here (bench/quadrotor.py --seeds 10) 9 of 10 seeds had flown by 500,000, 8 by 300,000
TRAINING = {"steps": 500000, "batch": 256, "warmup": 15000, "train_every": 5, "eval_every": 10000, "eval_episodes": 100,
            "checkpoint_every": 10000, "curriculum_steps": 50000}

# the algorithm `microrl train quadrotor` uses when none is named: PPO's final policy flies in
# every seed measured, and reaches 90% sooner than TD3's; TD3's final actor rests off the target
# (docs/quadrotor.md). PPO trains under an action delay too (--action-delay, --latency-from: docs/sim-to-real.md).
ALGO = "ppo"
# how PPO trains it (microrl train quadrotor --algo ppo; docs/quadrotor.md, "PPO", "Fewer
# steps" and "Sooner than the zoo"): 64 copies x 32 steps per rollout, 3 epochs of 4 minibatches
# of 512, 64-64 tanh, advantages normalised, gradients clipped at 0.5; the critic's rate falls
# from 3e-3 to 6e-4 over the first 500,000 steps (at 6e-4 from the start the value takes some
# 700,000 steps to reach the returns' scale, and the policy crashes meanwhile; at 3e-3 to the end
# the final policies hold the training disturbance in fewer seeds); the action std falls from 0.3
# to 0.07 over the run instead of being learned (the motors rise 4.5x faster than they fall, so
# noisy commands spin the rotors faster on average than their mean: a policy trained with a
# large std commands less thrust than hovering needs, and its mean action hovers below the
# target; ending at 0.1, one seed of 5 flew 89% under the training disturbance). 90% after
# 0.40-0.60M steps (bench/quadrotor.py); 3M steps let the final policy settle.
TRAINING_PPO = {"steps": 3000000, "envs": 64, "rollout_steps": 32, "epochs": 3, "minibatches": 4, "hidden": (64, 64), "activation": "tanh",
                "adv_norm": True, "max_grad_norm": 0.5, "critic_lr": 3e-3, "critic_final_lr": 6e-4, "critic_decay_steps": 500000,
                "init_std": 0.3, "final_std": 0.07, "eval_every": 500000, "eval_episodes": 100}


def new_parameters(values=CRAZYFLIE):
    p = zeros(PARAM_DIM, "d")
    for i in range(PARAM_DIM):
        p[i] = values[i]
    return p


def hover_rpm(P):
    """Rotor speed at which four rotors carry the weight (solves the thrust quadratic)."""
    c0 = P[THRUST_C0]
    c1 = P[THRUST_C1]
    c2 = P[THRUST_C2]
    f = P[MASS] * P[GRAVITY] / 4.0
    return (-c1 + sqrt(c1 * c1 - 4.0 * c2 * (c0 - f))) / (2.0 * c2)


def hover_action(P):
    """The motor command in [-1, 1] that holds hover_rpm."""
    return 2.0 * (hover_rpm(P) - P[RPM_MIN]) / (P[RPM_MAX] - P[RPM_MIN]) - 1.0


def rpm_setpoint(P, a):
    """Motor command in [-1, 1] (clipped) to a rotor speed setpoint."""
    if a > 1.0:
        a = 1.0
    elif a < -1.0:
        a = -1.0
    half = (P[RPM_MAX] - P[RPM_MIN]) / 2.0
    return a * half + P[RPM_MIN] + half


def derivative(P, x, xo, sp, so, d, do):
    """d[do:do+PHYSICS_DIM] = time derivative of the state x[xo:xo+PHYSICS_DIM] under rotor speed
    setpoints sp[so:so+4] (L2F's multirotor_dynamics: thrust and torque from the rotor speeds,
    quaternion kinematics, Euler's equations, first-order motors)."""
    qw = x[xo + 3]
    qx = x[xo + 4]
    qy = x[xo + 5]
    qz = x[xo + 6]
    wx = x[xo + 10]
    wy = x[xo + 11]
    wz = x[xo + 12]
    c0 = P[THRUST_C0]
    c1 = P[THRUST_C1]
    c2 = P[THRUST_C2]
    km = P[TORQUE_CONSTANT]
    thrust = 0.0
    tx = 0.0
    ty = 0.0
    tz = 0.0
    for i in range(4):
        r = x[xo + 13 + i]
        f = c0 + c1 * r + c2 * r * r
        thrust += f
        tz += P[ROTOR_SPIN + i] * km * f
        tx += P[ROTOR_Y + i] * f  # rotor position x (0, 0, f)
        ty -= P[ROTOR_X + i] * f
        target = sp[so + i]
        tau = P[TAU_RISING] if target >= r else P[TAU_FALLING]
        d[do + 13 + i] = (target - r) / tau
    d[do] = x[xo + 7]
    d[do + 1] = x[xo + 8]
    d[do + 2] = x[xo + 9]
    d[do + 3] = 0.5 * (-qx * wx - qy * wy - qz * wz)
    d[do + 4] = 0.5 * (qw * wx + qy * wz - qz * wy)
    d[do + 5] = 0.5 * (qw * wy + qz * wx - qx * wz)
    d[do + 6] = 0.5 * (qw * wz + qx * wy - qy * wx)
    a = thrust / P[MASS]  # body z axis, rotated into the world
    d[do + 7] = 2.0 * (qx * qz + qw * qy) * a
    d[do + 8] = 2.0 * (qy * qz - qw * qx) * a
    d[do + 9] = (1.0 - 2.0 * (qx * qx + qy * qy)) * a - P[GRAVITY]
    jx = P[J_XX]
    jy = P[J_YY]
    jz = P[J_ZZ]
    for i in range(3):  # the episode's force and torque (none: exactly the sums without them)
        if P[FORCE + i] != 0.0:
            d[do + 7 + i] += P[FORCE + i] / P[MASS]
    if P[TORQUE] != 0.0 or P[TORQUE + 1] != 0.0 or P[TORQUE + 2] != 0.0:
        tx += P[TORQUE]
        ty += P[TORQUE + 1]
        tz += P[TORQUE + 2]
    d[do + 10] = (tx - (wy * jz * wz - wz * jy * wy)) / jx
    d[do + 11] = (ty - (wz * jx * wx - wx * jz * wz)) / jy
    d[do + 12] = (tz - (wx * jy * wy - wy * jx * wx)) / jz


def _axpy(x, xo, a, y, yo, out, oo):
    for i in range(PHYSICS_DIM):
        out[oo + i] = x[xo + i] + a * y[yo + i]


def step_state(P, s):
    """Advance s by one control step with its rotor setpoints s[SETPOINT:SETPOINT+4]: classic RK4
    as L2F integrates (in s's work space), then the quaternion renormalised and rotor speeds
    clipped to their range (L2F's post_integration)."""
    h = P[TIME_STEP]
    w = WORK
    derivative(P, s, 0, s, SETPOINT, s, w)
    _axpy(s, 0, 0.5 * h, s, w, s, w + 68)
    derivative(P, s, w + 68, s, SETPOINT, s, w + 17)
    _axpy(s, 0, 0.5 * h, s, w + 17, s, w + 68)
    derivative(P, s, w + 68, s, SETPOINT, s, w + 34)
    _axpy(s, 0, h, s, w + 34, s, w + 68)
    derivative(P, s, w + 68, s, SETPOINT, s, w + 51)
    for i in range(PHYSICS_DIM):
        s[i] = s[i] + h / 6.0 * s[w + i] + h / 3.0 * s[w + 17 + i] + h / 3.0 * s[w + 34 + i] + h / 6.0 * s[w + 51 + i]
    n = sqrt(s[3] * s[3] + s[4] * s[4] + s[5] * s[5] + s[6] * s[6])
    for i in range(3, 7):
        s[i] = s[i] / n
    lo = P[RPM_MIN]
    hi = P[RPM_MAX]
    for i in range(13, 17):
        if s[i] < lo:
            s[i] = lo
        elif s[i] > hi:
            s[i] = hi


def terminated(P, s):
    """Left the box, too fast, or spinning (L2F: any coordinate beyond its limit)."""
    lp = P[LIMIT_POSITION]
    lv = P[LIMIT_VELOCITY]
    lw = P[LIMIT_ANGULAR_VELOCITY]
    for i in range(3):
        if abs(s[i]) > lp or abs(s[7 + i]) > lv or abs(s[10 + i]) > lw:
            return True
    return False


def advance(P, s, a):
    """One control step of the craft from commands a[0:4] in [-1, 1]: (reward, terminated). The
    reward (L2F's squared reward) reads the state before the step; termination the state after it."""
    hover = hover_action(P)
    action = 0.0
    for i in range(4):
        s[SETPOINT + i] = rpm_setpoint(P, a[i])
        e = a[i] - hover
        action += e * e
    position = s[0] * s[0] + s[1] * s[1] + s[2] * s[2]
    orientation = 1.0 - s[3] * s[3]
    velocity = s[7] * s[7] + s[8] * s[8] + s[9] * s[9]
    step_state(P, s)
    if terminated(P, s):
        return 0.0, True
    cost = P[REWARD_POSITION] * position + P[REWARD_ORIENTATION] * orientation + P[REWARD_VELOCITY] * velocity + P[REWARD_ACTION] * action
    return P[REWARD_CONSTANT] - P[REWARD_SCALE] * cost, False


def initial_state(P, s, u, position, angle, velocity, angular_velocity, guidance, rpm_low, rpm_high):
    """A start state from RESET_DRAWS uniforms u[0:17] in [0, 1): with probability guidance at
    the target at rest, else position and velocities uniform in +-their ranges, tilted about a
    uniformly random axis by an angle uniform in [0, angle]; rotor speeds uniform in
    hover_rpm + [rpm_low, rpm_high]. (L2F's sample_initial_state with its ranges as arguments,
    so that a curriculum or the evaluation can narrow them.)"""
    h = hover_rpm(P)
    rpm_low += h
    rpm_high += h
    at_target = u[0] < guidance
    for i in range(3):
        s[i] = 0.0 if at_target else position * (2.0 * u[1 + i] - 1.0)
        s[7 + i] = 0.0 if at_target else velocity * (2.0 * u[4 + i] - 1.0)
        s[10 + i] = 0.0 if at_target else angular_velocity * (2.0 * u[7 + i] - 1.0)
    if at_target or angle <= 0.0:
        s[3] = 1.0
        s[4] = 0.0
        s[5] = 0.0
        s[6] = 0.0
    else:
        phi = 2.0 * pi * u[10]
        ct = 1.0 - 2.0 * u[11]
        st = sqrt(1.0 - ct * ct)
        half = 0.5 * angle * u[12]
        sh = sin(half)
        s[3] = cos(half)
        s[4] = st * cos(phi) * sh
        s[5] = st * sin(phi) * sh
        s[6] = ct * sh
    for i in range(4):
        s[13 + i] = rpm_low + (rpm_high - rpm_low) * u[13 + i]


def observe(P, s, obs):
    """OBS_DIM values: position error to the target (the origin), the rotation matrix (body to
    world, row by row; L2F's attitude input: with a quaternion the policies hovered at
    yaw-dependent offsets), linear velocity (world), angular velocity (body), and the four rotor
    speeds scaled to [-1, 1] like the commands (the motors lag the commands by 55 to 250 ms;
    without them the policies wobbled; a craft without rotor-speed sensing feeds the motor
    model's estimate, motor_estimate())."""
    qw = s[3]
    qx = s[4]
    qy = s[5]
    qz = s[6]
    obs[0] = s[0]
    obs[1] = s[1]
    obs[2] = s[2]
    obs[3] = 1.0 - 2.0 * (qy * qy + qz * qz)
    obs[4] = 2.0 * (qx * qy - qw * qz)
    obs[5] = 2.0 * (qx * qz + qw * qy)
    obs[6] = 2.0 * (qx * qy + qw * qz)
    obs[7] = 1.0 - 2.0 * (qx * qx + qz * qz)
    obs[8] = 2.0 * (qy * qz - qw * qx)
    obs[9] = 2.0 * (qx * qz - qw * qy)
    obs[10] = 2.0 * (qy * qz + qw * qx)
    obs[11] = 1.0 - 2.0 * (qx * qx + qy * qy)
    for i in range(6):
        obs[12 + i] = s[7 + i]
    lo = P[RPM_MIN]
    span = P[RPM_MAX] - lo
    for i in range(4):
        obs[18 + i] = 2.0 * (s[13 + i] - lo) / span - 1.0
    for i in range(3):
        obs[22 + i] = s[INTEGRAL + i] / INTEGRAL_LIMIT


def integrate(P, s):
    """Add this step's position error (x TIME_STEP) to the integral in s, each axis clipped at
    +-INTEGRAL_LIMIT (anti-windup)."""
    for i in range(3):
        v = s[INTEGRAL + i] + P[TIME_STEP] * s[i]
        s[INTEGRAL + i] = INTEGRAL_LIMIT if v > INTEGRAL_LIMIT else (-INTEGRAL_LIMIT if v < -INTEGRAL_LIMIT else v)


def state_from_observation(P, obs, s):
    """The craft's state s[0:MODEL_DIM] that observe() turns into obs (the inverse of observe:
    the quaternion, w >= 0, from the rotation matrix; a noisy matrix gives the nearest unit
    quaternion's direction), for a model-gradient actor's rollouts from replayed observations."""
    for i in range(3):
        s[i] = obs[i]
    r00 = obs[3]
    r01 = obs[4]
    r02 = obs[5]
    r10 = obs[6]
    r11 = obs[7]
    r12 = obs[8]
    r20 = obs[9]
    r21 = obs[10]
    r22 = obs[11]
    trace = r00 + r11 + r22
    if trace > 0.0:  # Shepperd's method: divide by the largest of the four
        k = 2.0 * sqrt(trace + 1.0)
        w = 0.25 * k
        x = (r21 - r12) / k
        y = (r02 - r20) / k
        z = (r10 - r01) / k
    elif r00 > r11 and r00 > r22:
        k = 2.0 * sqrt(1.0 + r00 - r11 - r22)
        w = (r21 - r12) / k
        x = 0.25 * k
        y = (r01 + r10) / k
        z = (r02 + r20) / k
    elif r11 > r22:
        k = 2.0 * sqrt(1.0 + r11 - r00 - r22)
        w = (r02 - r20) / k
        x = (r01 + r10) / k
        y = 0.25 * k
        z = (r12 + r21) / k
    else:
        k = 2.0 * sqrt(1.0 + r22 - r00 - r11)
        w = (r10 - r01) / k
        x = (r02 + r20) / k
        y = (r12 + r21) / k
        z = 0.25 * k
    n = sqrt(w * w + x * x + y * y + z * z)
    if w < 0.0:
        n = -n
    s[3] = w / n
    s[4] = x / n
    s[5] = y / n
    s[6] = z / n
    for i in range(6):
        s[7 + i] = obs[12 + i]
    lo = P[RPM_MIN]
    hi = P[RPM_MAX]
    for i in range(4):
        r = lo + (obs[18 + i] + 1.0) * 0.5 * (hi - lo)
        s[13 + i] = lo if r < lo else (hi if r > hi else r)
    for i in range(3):  # beyond MODEL_DIM: carried, not differentiated
        s[INTEGRAL + i] = obs[22 + i] * INTEGRAL_LIMIT


def motor_estimate(P, rpm, sp):
    """Advance rotor speed estimates rpm[0:4] by one control step towards the setpoints sp[0:4]
    with the first-order motor model (exact for a first-order lag held for DT): what a craft
    without rotor-speed sensing observes in place of the simulated rotor speeds."""
    for i in range(4):
        tau = P[TAU_RISING] if sp[i] >= rpm[i] else P[TAU_FALLING]
        rpm[i] = sp[i] + (rpm[i] - sp[i]) * exp(-P[TIME_STEP] / tau)


def tilt(s):
    """Angle between the body z axis and the world's up, rad."""
    c = 1.0 - 2.0 * (s[4] * s[4] + s[5] * s[5])
    return acos(c if c < 1.0 else 1.0) if c > -1.0 else pi


def success(P, s):
    """Close to the target and turning slowly (after an episode that did not terminate)."""
    p = sqrt(s[0] * s[0] + s[1] * s[1] + s[2] * s[2])
    w = sqrt(s[10] * s[10] + s[11] * s[11] + s[12] * s[12])
    return p < SUCCESS_POSITION and w < SUCCESS_ANGULAR_VELOCITY


def final_error(P, s):
    """Distance to the target, m."""
    return sqrt(s[0] * s[0] + s[1] * s[1] + s[2] * s[2])


# ---------------------------------------------------------------- the task interface


def reset(P, s, u, obs):
    """A start state from P's initial-state ranges (L2F's training distribution; narrowed by
    curriculum() or evaluation())."""
    initial_state(P, s, u, P[INIT_POSITION], P[INIT_ANGLE], P[INIT_VELOCITY], P[INIT_ANGULAR_VELOCITY], P[INIT_GUIDANCE], P[INIT_RPM_LOW], P[INIT_RPM_HIGH])
    s[STEP] = 0.0
    for i in range(3):
        s[INTEGRAL + i] = 0.0
    observe(P, s, obs)


def step(P, s, a, u, obs):
    """Motor commands a[0:4] in [-1, 1] for one step: (reward, terminated, truncated)."""
    r, done = advance(P, s, a)
    integrate(P, s)
    s[STEP] += 1.0
    observe(P, s, obs)
    return r, done, (not done) and s[STEP] >= EPISODE_STEPS


def evaluation(P):
    """microrl eval's starts: within +-0.5 m and 30 deg of tilt, at rest, rotors at hover."""
    P[INIT_POSITION] = EVAL_POSITION
    P[INIT_ANGLE] = EVAL_ANGLE
    P[INIT_VELOCITY] = 0.0
    P[INIT_ANGULAR_VELOCITY] = 0.0
    P[INIT_GUIDANCE] = 0.0
    P[INIT_RPM_LOW] = 0.0
    P[INIT_RPM_HIGH] = 0.0


def curriculum(P, nominal, level):
    """Start-state ranges at curriculum level in [0, 1]: from near hover (level 0) to the nominal
    ranges (level 1, L2F's full training distribution), linearly."""
    k = 0.2 + 0.8 * level
    P[INIT_POSITION] = nominal[INIT_POSITION] * k
    P[INIT_ANGLE] = nominal[INIT_ANGLE] * k
    P[INIT_VELOCITY] = nominal[INIT_VELOCITY] * k
    P[INIT_ANGULAR_VELOCITY] = nominal[INIT_ANGULAR_VELOCITY] * k


def fly(policy, episodes=10, seed=12345, params=None):
    """Run policy (obs -> 4 commands in [-1, 1]) from `microrl eval`'s start states drawn from
    Rng(seed): a list of (return, success 1/0, final distance to the target in m, steps flown)
    per episode. The same on the host and on a board."""
    from ..evaluate import rollouts
    from ..rng import Rng
    from ..task import Env
    from . import quadrotor

    return rollouts(policy, Env(quadrotor, params, Rng(seed), evaluation=True), episodes)
