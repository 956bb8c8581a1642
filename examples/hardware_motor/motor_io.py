# motor_io.py on the board: the hardware behind motor_position.py. An example for a DC gear
# motor on an H-bridge (two PWM inputs, e.g. a DRV8833 or L298N) and a quadrature encoder on two
# pins: change the pins, the supply and the counts to your wiring. Three functions are the whole
# interface the task uses; sim/motor_io.py simulates a motor behind the same three.
# Copy it once: mpremote cp motor_io.py :lib/motor_io.py
from math import pi

import time
from machine import PWM, Pin

SUPPLY_VOLTS = 6.0  # the H-bridge's supply: full duty
COUNTS_PER_TURN = 1400  # encoder edges per turn of the output shaft (both edges of channel A)

_in1 = PWM(Pin(12), freq=20000, duty_u16=0)
_in2 = PWM(Pin(13), freq=20000, duty_u16=0)
_a = Pin(14, Pin.IN, Pin.PULL_UP)
_b = Pin(15, Pin.IN, Pin.PULL_UP)
_count = 0
_next = time.ticks_us()


def _edge(pin):
    global _count
    if _a.value() == _b.value():
        _count -= 1
    else:
        _count += 1


_a.irq(_edge, Pin.IRQ_RISING | Pin.IRQ_FALLING)


def drive(volts):
    """Apply volts (sign: direction) until the next call."""
    duty = int(min(1.0, abs(volts) / SUPPLY_VOLTS) * 65535)
    if volts >= 0:
        _in2.duty_u16(0)
        _in1.duty_u16(duty)
    else:
        _in1.duty_u16(0)
        _in2.duty_u16(duty)


def wait(seconds):
    """Sleep until `seconds` after the previous wait ended: the control loop's period. A step whose
    work (training updates included) takes longer than the period runs late, not faster."""
    global _next
    _next = time.ticks_add(_next, int(seconds * 1000000))
    late = time.ticks_diff(time.ticks_us(), _next)
    if late < 0:
        time.sleep_us(-late)
    elif late > 0:
        _next = time.ticks_us()  # behind: start the next period from now


def angle():
    """The shaft's angle in radians (the encoder's count since power-up)."""
    return _count * (2.0 * pi / COUNTS_PER_TURN)
