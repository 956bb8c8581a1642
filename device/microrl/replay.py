# Replay buffer: a ring over one compact float32 array. A transition takes
# 4 * (2 * obs_dim + act_dim + 2) bytes (obs, action, reward, next obs, terminated flag):
# 36 bytes for Pendulum, so 10,000 transitions fit in 360,000 bytes.
from .compat import zeros


def bytes_per_transition(obs_dim, act_dim):
    return 4 * (2 * obs_dim + act_dim + 2)


class ReplayBuffer:
    def __init__(self, capacity, obs_dim, act_dim):
        if capacity < 1:
            raise ValueError("replay capacity must be at least 1, got %r" % capacity)
        self.capacity = capacity
        self.obs_dim = obs_dim
        self.act_dim = act_dim
        self.row = 2 * obs_dim + act_dim + 2
        try:
            self.data = zeros(capacity * self.row)
        except MemoryError:
            from .refusals import out_of_memory

            raise out_of_memory("allocating the replay buffer (%d transitions)" % capacity, 4 * capacity * self.row)
        self.pos = 0
        self.size = 0

    def nbytes(self):
        return 4 * len(self.data)

    def add(self, obs, action, reward, next_obs, terminated):
        d = self.data
        k = self.pos * self.row
        for i in range(self.obs_dim):
            d[k + i] = obs[i]
        k += self.obs_dim
        for i in range(self.act_dim):
            d[k + i] = action[i]
        k += self.act_dim
        d[k] = reward
        k += 1
        for i in range(self.obs_dim):
            d[k + i] = next_obs[i]
        k += self.obs_dim
        d[k] = 1.0 if terminated else 0.0
        self.pos += 1
        if self.pos == self.capacity:
            self.pos = 0
        if self.size < self.capacity:
            self.size += 1

    def sample_into(self, rng, n, obs_act, obs_act_stride, reward, next_obs, done):
        """Gather n random transitions: obs and action side by side into obs_act (row stride
        obs_act_stride), rewards, next observations and terminated flags into their buffers."""
        d = self.data
        row = self.row
        od = self.obs_dim
        oa = od + self.act_dim
        size = self.size
        for s in range(n):
            k = rng.randint(size) * row
            base = s * obs_act_stride
            for i in range(oa):
                obs_act[base + i] = d[k + i]
            reward[s] = d[k + oa]
            k += oa + 1
            base = s * od
            for i in range(od):
                next_obs[base + i] = d[k + i]
            done[s] = d[k + od]
