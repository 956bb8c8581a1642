"""The off-policy replay buffer as arrays in a namedtuple, filled and sampled in compiled code."""
from collections import namedtuple

import numpy as np

from ..nn.jit import inline
from ..nn.rng import randint

# ---------------------------------------------------------------- replay buffer
# count[0] = next write position, count[1] = number stored
Replay = namedtuple("Replay", "obs act rew next_obs done count")


def new_replay(capacity, obs_dim, act_dim):
    return Replay(
        obs=np.zeros((capacity, obs_dim), np.float32),
        act=np.zeros((capacity, act_dim), np.float32),
        rew=np.zeros(capacity, np.float32),
        next_obs=np.zeros((capacity, obs_dim), np.float32),
        done=np.zeros(capacity, np.float32),
        count=np.zeros(2, np.int64),
    )


@inline
def replay_add(r, obs, act, rew, next_obs, terminated):
    k = r.count[0]
    for i in range(obs.shape[0]):  # loops, not slice copies: those compile shape-error messages
        r.obs[k, i] = obs[i]
        r.next_obs[k, i] = next_obs[i]
    for i in range(act.shape[0]):
        r.act[k, i] = act[i]
    r.rew[k] = rew
    r.done[k] = 1.0 if terminated else 0.0
    cap = r.rew.shape[0]
    r.count[0] = (k + 1) % cap
    if r.count[1] < cap:
        r.count[1] += 1


@inline
def replay_sample(r, rng, n, obs_act, rew, next_obs, done):
    """n random transitions: (obs, action) side by side into obs_act rows (a critic's input),
    next observations into next_obs rows."""
    od = r.obs.shape[1]
    ad = r.act.shape[1]
    size = r.count[1]
    for s in range(n):
        k = randint(rng, size)
        for i in range(od):
            obs_act[s, i] = r.obs[k, i]
            next_obs[s, i] = r.next_obs[k, i]
        for i in range(ad):
            obs_act[s, od + i] = r.act[k, i]
        rew[s] = r.rew[k]
        done[s] = r.done[k]


def replay_sample_numpy(r, rng, n):
    """n random stored transitions (obs, act, rew, next_obs, done) as numpy arrays, drawn with a
    numpy Generator: for measurements between chunks, which must not touch the run's own rng."""
    k = rng.integers(0, int(r.count[1]), n)
    return r.obs[k], r.act[k], r.rew[k], r.next_obs[k], r.done[k]
