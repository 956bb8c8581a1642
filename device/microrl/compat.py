# What CPython lacks of MicroPython and the reverse, in one place.
try:
    from micropython import const  # noqa: F401
except ImportError:  # CPython

    def const(x):
        return x


try:
    from math import erf  # noqa: F401
except ImportError:  # ports built without math's special functions
    from math import exp as _exp

    def erf(x):
        # Abramowitz-Stegun 7.1.26, error below 1.5e-7: enough for float32.
        s = 1.0
        if x < 0.0:
            s = -1.0
            x = -x
        t = 1.0 / (1.0 + 0.3275911 * x)
        p = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t
        return s * (1.0 - p * _exp(-x * x))


def zeros(n, typecode="f"):
    """A zero-filled array of n floats without a temporary of n boxed floats or a second full-size copy."""
    from array import array

    size = 4 if typecode == "f" else 8
    if n <= 1024:
        return array(typecode, bytes(size * n))
    a = array(typecode, range(n))  # exact size, no temporary list
    for i in range(n):
        a[i] = 0.0
    return a
