# Sim-to-real perturbations that any task gets from its runner, written once for both runners
# (microrl.task.Env on a board; the host compiles these same functions into its training loop
# and evaluation, as it compiles a task): Gaussian observation noise and an action delay of
# whole control steps, set by two generic parameters (NAMES) that live beside the task's own
# parameters P, in a small array G; and the per-episode randomisation of the task's parameters
# that its RANDOMISED names (randomise()). What only the task can know (which of its physical
# constants vary, how far, a force on its body) is the task's, in its P (docs/sim-to-real.md).
#
# Their random numbers come from the runner's second generator, the perturbation stream, which
# nothing else draws from: a run with perturbations on meets the same start states, exploration
# noise and replay batches as the same seed's run without them, and with them off a run is the
# run it was before they existed, bit for bit.
from math import cos, log, pi, sin, sqrt

from .compat import const, zeros

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


def randomise_draws(spec):
    """Uniforms one randomise() of spec takes."""
    n = 0
    for group in spec:
        n += 1 if group[3] == 0 else 2 * group[1]
    return n


def randomise(P, nominal, spec, u):
    """The episode's parameters: for each (first, count, spread index, kind) of spec whose
    spread P[spread index] is not 0, P[first:first+count] = nominal's times one factor uniform in
    1 +- spread (kind 0), or nominal's plus a normal with std spread each (kind 1), from the
    uniforms u[0:randomise_draws(spec)] in [0, 1). A spread of 0 leaves its group as it is."""
    j = 0
    for group in spec:
        first = group[0]
        count = group[1]
        spread = P[group[2]]
        if group[3] == 0:
            if spread != 0.0:
                factor = 1.0 + spread * (2.0 * u[j] - 1.0)
                for k in range(first, first + count):
                    P[k] = nominal[k] * factor
            j += 1
        else:
            for k in range(first, first + count):
                if spread != 0.0:
                    P[k] = nominal[k] + spread * sqrt(-2.0 * log(1.0 - u[j])) * cos(2.0 * pi * u[j + 1])
                j += 2


def start_line(line, n, steps, neutral):
    """An episode's line before its first command: steps commands of neutral[0:n] each (the
    middle of the action range: nothing commanded yet). It is what the first steps apply, and
    what an observation of the pending actions shows at the start, so that they name the
    commands the task will apply whatever the step."""
    for k in range(steps * n):
        line[k] = neutral[k % n]


def delay_action(line, a, n, steps):
    """Hold the action a[0:n] back by steps (1..MAX_DELAY) control steps: a leaves holding the
    action sent steps calls earlier (start_line's before the first), and the one given waits in
    line (steps * n floats, the oldest first)."""
    last = (steps - 1) * n
    for i in range(n):
        oldest = line[i]
        for k in range(i, last, n):
            line[k] = line[k + n]
        line[last + i] = a[i]
        a[i] = oldest


def pending_actions(obs, first, line, n, steps, scale, offset):
    """The commands sent but not yet applied (the line of delay_action, the oldest first) into
    obs[first:first + steps * n], in the policy's own [-1, 1] units ((a - offset) / scale, as the
    policy file's act_scale/act_offset map them): under a delay of d steps the task's
    observation alone is not Markov, with these d commands it is (the augmented state of the
    delay literature; learning-to-fly's action history)."""
    for k in range(steps * n):
        i = k % n
        obs[first + k] = (line[k] - offset[i]) / scale[i]


def pending_count(task, width):
    """How many steps of pending actions an input of width numbers carries beside the task's
    observation: 0 for the task's own OBS_DIM, else (width - OBS_DIM) / ACT_DIM, at most
    MAX_DELAY; ValueError for a width that is neither."""
    extra = width - task.OBS_DIM
    if extra < 0 or extra % task.ACT_DIM or extra // task.ACT_DIM > MAX_DELAY:
        raise ValueError("%s observes %d numbers (and %d per step of pending actions, up to %d steps), not %d"
                         % (task.NAME, task.OBS_DIM, task.ACT_DIM, MAX_DELAY, width))
    return extra // task.ACT_DIM


def pending_of(head, sizes, where):
    """The pending actions a version 3 policy header declares (bytes 14-15; docs/policy-format.md),
    checked against the layer sizes: 1..MAX_DELAY steps whose actions leave room in the input
    for an observation; CorruptPolicyError otherwise. Here rather than in the loaders: a board
    that loads a policy without them does not hold this code."""
    pending = head[14] | (head[15] << 8)
    if not 1 <= pending <= MAX_DELAY or pending * sizes[-1] >= sizes[0]:
        from .fileformat import CorruptPolicyError, refuse

        refuse(CorruptPolicyError, "pending", where, pending, sizes[0], sizes[-1])
    return pending


def action_range(task):
    """(scale, offset) of the task's actions: the networks' [-1, 1] onto ACTION_LOW..ACTION_HIGH."""
    low = task.ACTION_LOW
    high = task.ACTION_HIGH
    n = task.ACT_DIM
    scale = zeros(n, "d")
    offset = zeros(n, "d")
    for i in range(n):
        scale[i] = (high[i] - low[i]) / 2.0
        offset[i] = (high[i] + low[i]) / 2.0
    return scale, offset


def names(task):
    """The names of every perturbation the task can be given: the generic ones (observation
    noise, action delay) and the task's own (the keys of its PERTURBATIONS, which name some of its
    PARAM_NAMES). Each is off at 0."""
    return NAMES + tuple(k for k in getattr(task, "PERTURBATIONS", {}) if k not in NAMES)


def training(task):
    """{name: value} of the perturbations the task trains with unless told otherwise (its
    PERTURBATIONS; none for a task without)."""
    return dict(getattr(task, "PERTURBATIONS", {}))


def set_values(task, P, G, settings):
    """Write perturbations given by name ({name: value}) into the task's parameters P (its own,
    by PARAM_NAMES) and the generic array G (microrl.perturb.NAMES). ValueError for a name that
    is neither."""
    params = getattr(task, "PARAM_NAMES", ())
    own = names(task)
    for name in settings:
        value = settings[name]
        if name in NAMES:
            G[NAMES.index(name)] = value
        elif name in own and name in params:
            P[params.index(name)] = value
        else:
            raise ValueError("%s has no perturbation %r; it has %s" % (task.NAME, name, ", ".join(own)))
    check_values(task, P, G)


def check_values(task, P, G):
    """ValueError naming the first perturbation out of range: the action delay a whole number of
    steps from 0 to microrl.perturb.MAX_DELAY, every other one a finite number >= 0 (the task's
    randomised fractions below 1)."""
    delay = G[ACTION_DELAY]
    if not (0 <= delay <= MAX_DELAY and delay == int(delay)):
        raise ValueError("action_delay must be a whole number of steps from 0 to %d, got %g" % (MAX_DELAY, delay))
    noise = G[OBSERVATION_NOISE]
    if not (0.0 <= noise < 1e300):
        raise ValueError("observation_noise must be a finite number >= 0, got %g" % noise)
    params = getattr(task, "PARAM_NAMES", ())
    for name in names(task):
        if name in NAMES or name not in params:
            continue
        value = P[params.index(name)]
        high = 1.0 if name.startswith("vary_") else 1e300
        if not (0.0 <= value < high):
            raise ValueError("%s must be a number from 0 to below %s, got %r" % (name, "1" if high == 1.0 else "infinity", value))


def noise_shape(task):
    """The std of each observation's noise at observation_noise 1: the task's OBS_NOISE, else 1
    (noise in the observation's own units)."""
    shape = getattr(task, "OBS_NOISE", None)
    return tuple(shape) if shape is not None else (1.0,) * task.OBS_DIM


class Perturbed:
    """The perturbations of a microrl.task.Env (settings: {name: value}, written into env.P and
    a G array): its perturbation stream, randomised parameters, delayed actions (observed when
    env.obs is wider than the task's observation: pending_actions), noise."""

    def __init__(self, env, settings):
        task = env.task
        G = zeros(GENERIC_DIM, "d")
        set_values(task, env.P, G, settings)
        self.nominal = zeros(len(env.P), "d")
        for i in range(len(env.P)):
            self.nominal[i] = env.P[i]
        self.spec = getattr(task, "RANDOMISED", ())
        self.r = zeros(max(1, randomise_draws(self.spec)), "d")
        self.delay = int(G[ACTION_DELAY])
        self.line = zeros(max(1, self.delay * task.ACT_DIM), "d")
        self.scale, self.offset = action_range(task)
        self.noise = G[OBSERVATION_NOISE]
        self.shape = noise_shape(task)
        self.w = zeros(noise_draws(task.OBS_DIM), "d")
        self.rng = None

    def uniform(self, env):
        """The perturbation stream's next uniform in [0, 1): a generator of its own, seeded from
        env's main one when first needed, without drawing from it."""
        if self.rng is None:
            from .rng import Rng

            state = env.rng.getstate()
            self.rng = Rng(state[0] ^ state[3] ^ 0x5BD1E995)
        return self.rng.uniform(0.0, 1.0)

    def reset(self, env):
        """Before the task's reset: the episode's parameters, and its line of delayed actions."""
        r = self.r
        for i in range(len(r)):
            r[i] = self.uniform(env)
        randomise(env.P, self.nominal, self.spec, r)
        if self.delay:
            start_line(self.line, env.task.ACT_DIM, self.delay, self.offset)

    def act(self, env, a):
        """Before the task's step: hold the action a back by the delay."""
        if self.delay:
            delay_action(self.line, a, env.task.ACT_DIM, self.delay)

    def observe(self, env):
        """After the task's reset or step: add the noise to the task's part of env.obs, and the
        pending actions after it when env.obs has room for them."""
        n = env.task.OBS_DIM
        if self.noise:
            w = self.w
            for i in range(len(w)):
                w[i] = self.uniform(env)
            add_noise(env.obs, n, self.noise, self.shape, w)
        if env.obs_dim > n:
            pending_actions(env.obs, n, self.line, env.task.ACT_DIM, self.delay, self.scale, self.offset)


class PendingActions:
    """A policy that observes its pending actions (its `pending`, trained under that action
    delay) as a controller of the task's observation alone, on the craft itself: each call gives
    the policy the observation followed by the commands this controller sent and the craft has
    not applied yet (pending_actions, of its own line: start_line's neutral commands, then each
    action it returned), and puts the new one in line. reset() starts a new flight. The board's
    server answers INFER so for such a policy; microrl.task.Env observes its own line the same
    way in simulation."""

    def __init__(self, policy):
        n = policy.act_dim
        self.policy = policy
        self.steps = policy.pending
        self.n_obs = policy.sizes[0] - self.steps * n
        self.x = zeros(policy.sizes[0], "d")
        self.line = zeros(self.steps * n, "d")
        self.sent = zeros(n, "d")
        # the policy file's map of the network's [-1, 1] onto the task's units (training writes it)
        self.scale = zeros(n, "d")
        self.offset = zeros(n, "d")
        for i in range(n):
            self.scale[i] = 1.0 if policy.act_scale is None else policy.act_scale[i]
            self.offset[i] = 0.0 if policy.act_offset is None else policy.act_offset[i]
        self.reset()

    def reset(self):
        start_line(self.line, len(self.sent), self.steps, self.offset)

    def __call__(self, obs):
        x = self.x
        n = len(self.sent)
        for i in range(self.n_obs):
            x[i] = obs[i]
        pending_actions(x, self.n_obs, self.line, n, self.steps, self.scale, self.offset)
        a = self.policy(x)
        sent = self.sent
        for i in range(n):
            sent[i] = a[i]
        delay_action(self.line, sent, n, self.steps)  # (sent leaves holding the command the craft applies now)
        return a
