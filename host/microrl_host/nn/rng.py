"""A checkpointable random generator for compiled loops (splitmix64, one uint64 of state)."""
from math import cos, log, pi, sqrt

import numpy as np

from .jit import compiled_only

# ---------------------------------------------------------------- random numbers (splitmix64)
# One uint64 of state, so a checkpoint holds it exactly; the device core's Rng is for boards.


def new_rng(seed):
    return np.array([(int(seed) * 0x2545F4914F6CDD1D + 1) & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64)


@compiled_only
def next_u64(s):
    s[0] += np.uint64(0x9E3779B97F4A7C15)
    z = s[0]
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@compiled_only
def uniform(s, lo, hi):
    u = (next_u64(s) >> np.uint64(11)) * (1.0 / 9007199254740992.0)
    return lo + (hi - lo) * u


@compiled_only
def randint(s, n):
    return np.int64(next_u64(s) % np.uint64(n))


@compiled_only
def normal(s, mean, std):
    u1 = 1.0 - uniform(s, 0.0, 1.0)
    u2 = uniform(s, 0.0, 1.0)
    return mean + std * sqrt(-2.0 * log(u1)) * cos(2.0 * pi * u2)
