# sim/motor_io.py: a simulated DC motor behind the three functions of motor_io.py, for the
# virtual board (docs/tasks.md, "A hardware task"): the task and on-board training run
# unchanged against it. Copy it to the virtual board's folder as motor_io.py. The motor: first
# order, speed' = (GAIN * volts - speed) / TAU, with Coulomb friction; wait() advances it.

GAIN = 5.0  # rad/s per volt at steady state (30 rad/s at 6 V)
TAU = 0.1  # s: mechanical time constant
FRICTION = 3.0  # rad/s^2 against the motion
SUBSTEPS = 10  # Euler steps per wait

_state = [0.3, 0.0, 0.0]  # angle (rad), speed (rad/s), volts applied
waited = [0.0, 0]  # seconds simulated, waits: what a test reads to see the plant was driven


def drive(volts):
    _state[2] = volts


def wait(seconds):
    h = seconds / SUBSTEPS
    angle, speed, volts = _state
    for _ in range(SUBSTEPS):
        accel = (GAIN * volts - speed) / TAU
        if speed > 0.0:
            accel -= FRICTION
        elif speed < 0.0:
            accel += FRICTION
        speed += h * accel
        angle += h * speed
    _state[0] = angle
    _state[1] = speed
    waited[0] += seconds
    waited[1] += 1


def angle():
    return _state[0]
