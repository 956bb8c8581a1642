# Sim-to-real perturbations that any task gets from its runner, written once for both runners
# (microrl.task.Env on a board; the host compiles these same functions into its training loop
# and evaluation, as it compiles a task): Gaussian observation noise and an action delay of
# whole control steps, set by two generic parameters (NAMES) that live beside the task's own
# parameters P, in a small array G. What only the task can know (forces on its body, which of
# its physical constants vary from episode to episode) is the task's, in its P (docs/tasks.md).
#
# Their random numbers come from the runner's second generator, the perturbation stream, which
# nothing else draws from: a run with perturbations on meets the same start states, exploration
# noise and replay batches as the same seed's run without them, and with them off a run is the
# run it was before they existed, bit for bit.
from math import cos, log, pi, sin, sqrt

from .compat import const

OBSERVATION_NOISE = const(0)  # G[0]: std of the noise added to each observation, times the task's OBS_NOISE[i]
ACTION_DELAY = const(1)  # G[1]: whole control steps between choosing an action and the task receiving it
GENERIC_DIM = const(2)
NAMES = ("observation_noise", "action_delay")
MAX_DELAY = const(32)  # learning-to-fly's action history: 0.32 s of a 100 Hz loop


def noise_draws(obs_dim):
    """Uniforms the observation noise of one observation takes (Box-Muller pairs)."""
    return obs_dim + (obs_dim & 1)


def add_noise(obs, n, scale, shape, u):
    """obs[i] += scale * shape[i] * z_i for i < n, z_i standard normals made from the uniforms
    u[0:noise_draws(n)] in [0, 1) by Box-Muller, a pair of normals from each pair of uniforms."""
    for i in range(0, n, 2):
        r = sqrt(-2.0 * log(1.0 - u[i]))
        t = 2.0 * pi * u[i + 1]
        obs[i] += scale * shape[i] * r * cos(t)
        if i + 1 < n:
            obs[i + 1] += scale * shape[i + 1] * r * sin(t)


def delay_action(line, a, n, steps, fresh):
    """Hold the action a[0:n] back by steps (1..MAX_DELAY) control steps: a leaves holding the
    action chosen steps calls earlier, and the one given waits in line (steps * n floats, the
    oldest first). fresh: an episode's first step, which fills the line with the action given,
    so that an episode starts by holding its first command until the delayed ones arrive."""
    if fresh:
        for k in range(steps * n):
            line[k] = a[k % n]
    last = (steps - 1) * n
    for i in range(n):
        oldest = line[i]
        for k in range(i, last, n):
            line[k] = line[k + n]
        line[last + i] = a[i]
        a[i] = oldest
