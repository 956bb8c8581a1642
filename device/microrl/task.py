# Any task module (microrl.tasks.pendulum, microrl.tasks.quadrotor, a user's own: the interface
# is docs/tasks.md) as the environment object that TD3, evaluate() and the board's server use:
# reset(rng) -> obs, step(action) -> (obs, reward, terminated, truncated). It owns the task's
# arrays (parameters, state, uniforms, action), allocated once, and draws the task's uniforms
# from a microrl.rng.Rng; the observation buffer is reused between calls. The generic
# perturbations (observation noise, action delay: microrl.perturb) are applied here, around the
# task's own reset and step.
from . import perturb as _perturb
from .compat import zeros


def parameters(task, values=None):
    """A task's parameter array (float64): its defaults, or values (PARAM_DIM numbers)."""
    values = task.PARAMETERS if values is None else values
    n = len(task.PARAMETERS)
    if len(values) != n:
        raise ValueError("%s takes %d parameters, got %d" % (task.NAME, n, len(values)))
    P = zeros(n, "d")
    for i in range(n):
        P[i] = values[i]
    return P


def perturbation_names(task):
    """The names of every perturbation the task can be given: the generic ones (observation
    noise, action delay) and the task's own (the keys of its PERTURBATIONS, which name some of its
    PARAM_NAMES). Each is off at 0."""
    return _perturb.NAMES + tuple(k for k in getattr(task, "PERTURBATIONS", {}) if k not in _perturb.NAMES)


def training_perturbations(task):
    """{name: value} of the perturbations the task trains with unless told otherwise (its
    PERTURBATIONS; none for a task without)."""
    return dict(getattr(task, "PERTURBATIONS", {}))


def set_perturbations(task, P, G, settings):
    """Write perturbations given by name ({name: value}) into the task's parameters P (its own,
    by PARAM_NAMES) and the generic array G (microrl.perturb.NAMES). ValueError for a name that
    is neither."""
    names = getattr(task, "PARAM_NAMES", ())
    own = perturbation_names(task)
    for name in settings:
        value = settings[name]
        if name in _perturb.NAMES:
            G[_perturb.NAMES.index(name)] = value
        elif name in own and name in names:
            P[names.index(name)] = value
        else:
            raise ValueError("%s has no perturbation %r; it has %s" % (task.NAME, name, ", ".join(own)))
    check_perturbations(task, P, G)


def check_perturbations(task, P, G):
    """ValueError naming the first perturbation out of range: the action delay a whole number of
    steps from 0 to microrl.perturb.MAX_DELAY, every other one a finite number >= 0 (the task's
    randomised fractions below 1)."""
    delay = G[_perturb.ACTION_DELAY]
    if not (0 <= delay <= _perturb.MAX_DELAY and delay == int(delay)):
        raise ValueError("action_delay must be a whole number of steps from 0 to %d, got %g" % (_perturb.MAX_DELAY, delay))
    noise = G[_perturb.OBSERVATION_NOISE]
    if not (0.0 <= noise < 1e300):
        raise ValueError("observation_noise must be a finite number >= 0, got %g" % noise)
    names = getattr(task, "PARAM_NAMES", ())
    for name in perturbation_names(task):
        if name in _perturb.NAMES or name not in names:
            continue
        value = P[names.index(name)]
        high = 1.0 if name.startswith("vary_") else 1e300
        if not (0.0 <= value < high):
            raise ValueError("%s must be a number from 0 to below %s, got %r" % (name, "1" if high == 1.0 else "infinity", value))


def noise_shape(task):
    """The std of each observation's noise at observation_noise 1: the task's OBS_NOISE, else 1
    (noise in the observation's own units)."""
    shape = getattr(task, "OBS_NOISE", None)
    return tuple(shape) if shape is not None else (1.0,) * task.OBS_DIM


class Env:
    """task: a task module. params: its parameter values (default: the task's PARAMETERS).
    rng: the Rng that reset() and step() draw from (reset(rng) may give another). evaluation:
    starts from the task's evaluation distribution (its evaluation() hook) rather than
    training's. perturbations: {name: value} of sim-to-real perturbations (perturbation_names();
    default none: the nominal task; training_perturbations(task): what it trains with)."""

    def __init__(self, task, params=None, rng=None, evaluation=False, perturbations=None):
        self.task = task
        self.name = task.NAME
        self.obs_dim = task.OBS_DIM
        self.act_dim = task.ACT_DIM
        self.action_low = task.ACTION_LOW
        self.action_high = task.ACTION_HIGH
        self.max_steps = task.EPISODE_STEPS
        # bounds of each observation field and of |reward|: compact replay rows (replay.bounds)
        self.obs_high = getattr(task, "OBS_HIGH", None)
        self.reward_bound = getattr(task, "REWARD_BOUND", None)
        self.rng = rng
        self.P = parameters(task, params)
        if evaluation and hasattr(task, "evaluation"):
            task.evaluation(self.P)
        self.s = zeros(task.STATE_DIM, "d")
        self.u = zeros(max(task.RESET_DRAWS, task.STEP_DRAWS, 1), "d")
        self.a = zeros(task.ACT_DIM, "d")
        self.obs = zeros(task.OBS_DIM)
        self.t = 0
        self.G = zeros(_perturb.GENERIC_DIM, "d")
        if perturbations:
            set_perturbations(task, self.P, self.G, perturbations)
        self.delay = int(self.G[_perturb.ACTION_DELAY])
        self.line = zeros(self.delay * task.ACT_DIM, "d") if self.delay else None
        self.noise = self.G[_perturb.OBSERVATION_NOISE]
        self.noise_shape = noise_shape(task) if self.noise else None
        self.w = zeros(_perturb.noise_draws(task.OBS_DIM), "d") if self.noise else None
        # the uniforms of each reset and step past these come from the perturbation stream
        self.reset_main = task.RESET_DRAWS - getattr(task, "RESET_PERTURBATION_DRAWS", 0)
        self.step_main = task.STEP_DRAWS - getattr(task, "STEP_PERTURBATION_DRAWS", 0)
        self.prng = None

    def _draw(self, n, main):
        rng = self.rng
        u = self.u
        for i in range(main):
            u[i] = rng.uniform(0.0, 1.0)
        if main < n:
            self._perturbation_rng()
            rng = self.prng
            for i in range(main, n):
                u[i] = rng.uniform(0.0, 1.0)

    def _perturbation_rng(self):
        # seeded from the main generator's state when first needed, without drawing from it
        if self.prng is None:
            from .rng import Rng

            state = self.rng.getstate()
            self.prng = Rng(state[0] ^ state[3] ^ 0x5BD1E995)
        return self.prng

    def _add_noise(self):
        if self.noise:
            rng = self._perturbation_rng()
            w = self.w
            for i in range(len(w)):
                w[i] = rng.uniform(0.0, 1.0)
            _perturb.add_noise(self.obs, self.task.OBS_DIM, self.noise, self.noise_shape, w)

    def reset(self, rng=None):
        if rng is not None:
            self.rng = rng
        self._draw(self.task.RESET_DRAWS, self.reset_main)
        self.task.reset(self.P, self.s, self.u, self.obs)
        self._add_noise()
        self.t = 0
        return self.obs

    def step(self, action):
        """action: in the task's units (a float, or act_dim numbers). Returns (obs, reward,
        terminated, truncated)."""
        a = self.a
        if isinstance(action, (float, int)):
            a[0] = action
        else:
            for i in range(self.act_dim):
                a[i] = action[i]
        if self.delay:
            _perturb.delay_action(self.line, a, self.act_dim, self.delay, self.t == 0)
        self._draw(self.task.STEP_DRAWS, self.step_main)
        reward, terminated, truncated = self.task.step(self.P, self.s, a, self.u, self.obs)
        self._add_noise()
        self.t += 1
        return self.obs, reward, terminated, truncated

    def set_state(self, values):
        """Put the task in a given state (its first len(values) numbers; tests, comparisons with
        other simulators); returns the observation (the task's observe() hook)."""
        for i in range(len(values)):
            self.s[i] = values[i]
        self.task.observe(self.P, self.s, self.obs)
        return self.obs
