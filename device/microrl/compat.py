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


try:
    from micropython import mem_info as _on_micropython  # noqa: F401
    _SMALL = 0  # a temporary bytes object would leave a hole in the heap beside the array
except ImportError:
    _SMALL = 1 << 30  # CPython: the fast way


_ITEM_BYTES = {"f": 4, "d": 8, "h": 2, "i": 4}  # the typecodes the core uses ('i' is 32-bit on both)


def zeros(n, typecode="f"):
    """A zero-filled array of n numbers ('f', 'd', 'h' or 'i') without a temporary of n boxed
    values or a second full-size copy; on MicroPython with no temporary at all, so that building
    many leaves no holes. Not array('h', range(n)) on CPython: it refuses values past 32767."""
    from array import array

    if n <= _SMALL:
        return array(typecode, bytes(_ITEM_BYTES[typecode] * n))
    a = array(typecode, range(n))  # exact size, no temporary list; MicroPython truncates into 'h'
    zero = 0.0 if typecode in "fd" else 0
    for i in range(n):
        a[i] = zero
    return a


def clip(values, low, high, n):
    """values[i] clipped to [low[i], high[i]] in place for i < n (the policies' input and action
    clipping: no allocation)."""
    for i in range(n):
        v = values[i]
        if v < low[i]:
            values[i] = low[i]
        elif v > high[i]:
            values[i] = high[i]
