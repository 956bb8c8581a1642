# Replay buffer: a ring of rows (observation, action, reward) and one flag byte per row. A
# transition's next observation is the following row's observation, so it is stored once; at an
# episode end the final next observation takes a row of its own (a "tail" row, never sampled).
# Values are 16-bit fixed point with a scale per field when the environment gives bounds
# (obs_high, reward_bound), else float32. Pendulum: 11 bytes per row (36 with whole float rows).
from array import array

from .compat import const

_VALID = const(1)  # the row's action and reward are written and its successor holds its next obs
_TERMINATED = const(2)  # no bootstrapping from the next observation
_Q = 32767.0  # fixed point: a field's bound maps to +-32767


def row_values(obs_dim, act_dim):
    return obs_dim + act_dim + 1


def bytes_per_transition(obs_dim, act_dim, fixed=True):
    """Bytes per row: the values (2 bytes each in fixed point, else 4) and the flag byte."""
    return (2 if fixed else 4) * row_values(obs_dim, act_dim) + 1


def bounds(env):
    """Per-field bounds of a row (obs, action in [-1, 1], reward) from the environment, or None
    (float32 rows) when it does not give them."""
    high = getattr(env, "obs_high", None)
    reward = getattr(env, "reward_bound", None)
    if high is None or reward is None:
        return None
    return tuple(high) + (1.0,) * env.act_dim + (reward,)


def _zeros(n, typecode):
    # exact size with no temporary copy: MicroPython truncates range's values into 'h' (zeroed
    # below); CPython refuses them, and has the memory for a temporary
    try:
        a = array(typecode, range(n))
    except OverflowError:
        return array(typecode, bytes(2 * n))
    for i in range(n):
        a[i] = 0
    return a


class ReplayBuffer:
    """capacity rows; with bounds (one per field: obs..., action..., reward) rows are 16-bit."""

    def __init__(self, capacity, obs_dim, act_dim, bounds=None, rng=None):
        if capacity < 2:
            raise ValueError("replay capacity must be at least 2, got %r" % capacity)
        self.capacity = capacity
        self.obs_dim = obs_dim
        self.act_dim = act_dim
        self.row = row_values(obs_dim, act_dim)
        self.fixed = bounds is not None
        if self.fixed:
            if len(bounds) != self.row:
                raise ValueError("need %d bounds (obs, action, reward), got %d" % (self.row, len(bounds)))
            self.encode = array("f", [_Q / b for b in bounds])
            self.decode = array("f", [b / _Q for b in bounds])
        try:
            self.data = _zeros(capacity * self.row, "h" if self.fixed else "f")
            self.flags = bytearray(capacity)
        except MemoryError:
            from .refusals import out_of_memory

            raise out_of_memory("allocating the replay buffer (%d transitions)" % capacity, capacity * bytes_per_transition(obs_dim, act_dim, self.fixed))
        self.pos = 0  # the row the next transition goes into
        self.size = 0  # rows written (valid or tail)
        self._obs_written = False  # row pos already holds its observation (the last next obs)
        # rng given: once full, each new episode starts at a random row instead of the oldest, so
        # that a small buffer keeps some of the early (swing-up) episodes instead of only the last
        self.rng = rng

    def nbytes(self):
        return (2 if self.fixed else 4) * len(self.data) + len(self.flags)

    def _put(self, k, field, values, n):
        d = self.data
        if self.fixed:
            enc = self.encode
            for i in range(n):
                v = values[i] * enc[field + i]
                v = int(v + 0.5) if v >= 0.0 else int(v - 0.5)
                d[k + i] = 32767 if v > 32767 else (-32767 if v < -32767 else v)
        else:
            for i in range(n):
                d[k + i] = values[i]

    def add(self, obs, action, reward, next_obs, terminated, episode_end=False):
        """Store one transition; episode_end (terminated or truncated) keeps next_obs in a tail row."""
        od, ad, row, cap = self.obs_dim, self.act_dim, self.row, self.capacity
        pos = self.pos
        k = pos * row
        if not self._obs_written:
            self._put(k, 0, obs, od)
        self._put(k + od, od, action, ad)
        d = self.data
        k += od + ad
        if self.fixed:
            v = reward * self.encode[od + ad]
            v = int(v + 0.5) if v >= 0.0 else int(v - 0.5)
            d[k] = 32767 if v > 32767 else (-32767 if v < -32767 else v)
        else:
            d[k] = reward
        self.flags[pos] = _VALID | (_TERMINATED if terminated else 0)
        nxt = pos + 1
        if nxt == cap:
            nxt = 0
        self._put(nxt * row, 0, next_obs, od)  # overwrites the oldest row when full
        self.flags[nxt] = 0
        written = 2
        if episode_end:
            nxt += 1
            if nxt == cap:
                nxt = 0
            self._obs_written = False
            if self.rng is not None and self.size + 2 >= cap:
                nxt = self.rng.randint(cap)
                self.flags[nxt - 1 if nxt else cap - 1] = 0  # its successor is about to change
        else:
            written = 1
            self._obs_written = True
        self.pos = nxt
        size = self.size + written
        self.size = cap if size > cap else size

    def sample_into(self, rng, n, obs_act, obs_act_stride, reward, next_obs, done):
        """Gather n random transitions: obs and action side by side into obs_act (row stride
        obs_act_stride), rewards, next observations and terminated flags into their buffers."""
        d = self.data
        flags = self.flags
        row = self.row
        od = self.obs_dim
        oa = od + self.act_dim
        size = self.size
        cap = self.capacity
        fixed = self.fixed
        dec = self.decode if fixed else None
        for s in range(n):
            j = rng.randint(size)
            while not flags[j] & _VALID:  # a tail row (about one in 200 for Pendulum): draw again
                j = rng.randint(size)
            k = j * row
            nk = (j + 1) * row if j + 1 < cap else 0
            base = s * obs_act_stride
            nb = s * od
            if fixed:
                for i in range(oa):
                    obs_act[base + i] = d[k + i] * dec[i]
                reward[s] = d[k + oa] * dec[oa]
                for i in range(od):
                    next_obs[nb + i] = d[nk + i] * dec[i]
            else:
                for i in range(oa):
                    obs_act[base + i] = d[k + i]
                reward[s] = d[k + oa]
                for i in range(od):
                    next_obs[nb + i] = d[nk + i]
            done[s] = 1.0 if flags[j] & _TERMINATED else 0.0
