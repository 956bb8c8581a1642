# A seeded generator of our own: the same numbers on CPython and every MicroPython port
# (MicroPython's random differs by port and lacks gauss). xorshift128 over 32-bit words;
# uniforms take the top 24 bits, which float32 and float64 both represent exactly.
from math import cos, log, pi, sin, sqrt

_M32 = 0xFFFFFFFF
_INV24 = 1.0 / 16777216.0


def _mix(z):
    # splitmix-style avalanche so that nearby seeds give unrelated streams
    z = (z + 0x9E3779B9) & _M32
    z = ((z ^ (z >> 16)) * 0x85EBCA6B) & _M32
    z = ((z ^ (z >> 13)) * 0xC2B2AE35) & _M32
    return z ^ (z >> 16)


class Rng:
    def __init__(self, seed=0):
        self.seed(seed)

    def seed(self, seed):
        z = int(seed) & _M32
        s = []
        for _ in range(4):
            z = _mix(z)
            s.append(z)
        if not (s[0] | s[1] | s[2] | s[3]):
            s[0] = 1
        self.x, self.y, self.z, self.w = s
        self.spare = None

    def getstate(self):
        return (self.x, self.y, self.z, self.w, self.spare)

    def setstate(self, state):
        self.x, self.y, self.z, self.w, self.spare = state

    def next_u32(self):
        t = self.x ^ ((self.x << 11) & _M32)
        self.x = self.y
        self.y = self.z
        self.z = self.w
        w = self.w
        w = w ^ (w >> 19) ^ t ^ (t >> 8)
        self.w = w
        return w

    def uniform(self, lo=0.0, hi=1.0):
        """Uniform in [lo, hi)."""
        return lo + (hi - lo) * ((self.next_u32() >> 8) * _INV24)

    def randint(self, n):
        """Uniform integer in [0, n)."""
        return ((self.next_u32() >> 8) * n) >> 24

    def normal(self, mean=0.0, std=1.0):
        """Gaussian by Box-Muller; the second value of each pair is kept for the next call."""
        z = self.spare
        if z is None:
            u1 = ((self.next_u32() >> 8) + 1) * _INV24  # (0, 1]: log is finite
            u2 = (self.next_u32() >> 8) * _INV24
            r = sqrt(-2.0 * log(u1))
            z = r * cos(2.0 * pi * u2)
            self.spare = r * sin(2.0 * pi * u2)
        else:
            self.spare = None
        return mean + std * z
