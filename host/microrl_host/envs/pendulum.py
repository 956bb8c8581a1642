"""Pendulum-v1 compiled into the host's training loops, from the device core's own definition
(microrl.tasks.pendulum): the dynamics are numba-compiled unchanged, the state is a float64[4] array."""
import numpy as np
from numba.extending import register_jitable

from microrl.tasks import pendulum

from ..nn.jit import device, inline, jit
from ..nn.mlp import greedy_action
from ..nn.rng import uniform

PENDULUM = "pendulum"

# ---------------------------------------------------------------- Pendulum, from the device core
# dynamics() calls angle_normalize(); registering it lets numba compile dynamics() unchanged.
register_jitable(pendulum.angle_normalize)
register_jitable(pendulum.observe)
pendulum_dynamics = device(pendulum.dynamics)
PARAMS = pendulum.PARAMETERS
PENDULUM_STEPS = pendulum.EPISODE_STEPS
RESET_THETA = PARAMS[pendulum.START_ANGLE]
RESET_THETADOT = PARAMS[pendulum.START_SPEED]
MAX_TORQUE = PARAMS[pendulum.MAX_TORQUE]


# ---------------------------------------------------------------- Pendulum state for compiled loops
# env[0] theta, env[1] theta_dot, env[2] steps into the episode, env[3] episode return so far


@inline
def pendulum_reset(env, rng, obs):
    env[0] = uniform(rng, -RESET_THETA, RESET_THETA)
    env[1] = uniform(rng, -RESET_THETADOT, RESET_THETADOT)
    env[2] = 0.0
    env[3] = 0.0
    pendulum.observe(PARAMS, env, obs)


@inline
def pendulum_step(env, torque, next_obs):
    """Advance one step; returns (reward, truncated). next_obs gets the new observation."""
    th, thdot, reward = pendulum_dynamics(PARAMS, env[0], env[1], torque)
    env[0] = th
    env[1] = thdot
    env[2] += 1.0
    env[3] += reward
    pendulum.observe(PARAMS, env, next_obs)
    return reward, env[2] >= PENDULUM_STEPS


@jit
def evaluate_pendulum(net, squash, episodes, seed):
    """Returns of `episodes` deterministic Pendulum episodes (random starts from seed)."""
    rng = np.zeros(1, np.uint64)
    rng[0] = np.uint64(seed) * np.uint64(0x2545F4914F6CDD1D) + np.uint64(7)
    env = np.zeros(4)
    obs = np.zeros(3, np.float32)
    act = np.zeros(1, np.float32)
    returns = np.zeros(episodes)
    for e in range(episodes):
        pendulum_reset(env, rng, obs)
        done = False
        while not done:
            greedy_action(net, obs, squash, act)
            r, done = pendulum_step(env, MAX_TORQUE * act[0], obs)
        returns[e] = env[3]
    return returns


class CompiledPendulum:
    """Pendulum-v1 from microrl.tasks.pendulum, simulated inside the compiled training loop."""

    name = PENDULUM
    obs_dim = pendulum.OBS_DIM
    act_dim = pendulum.ACT_DIM
    low = np.array(pendulum.ACTION_LOW, np.float32)
    high = np.array(pendulum.ACTION_HIGH, np.float32)
    compiled = True
