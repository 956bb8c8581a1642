# Any task module (microrl.tasks.pendulum, microrl.tasks.quadrotor, a user's own: the interface
# is docs/tasks.md) as the environment object that TD3, evaluate() and the board's server use:
# reset(rng) -> obs, step(action) -> (obs, reward, terminated, truncated). It owns the task's
# arrays (parameters, state, uniforms, action), allocated once, and draws the task's uniforms
# from a microrl.rng.Rng; the observation buffer is reused between calls. The generic
# perturbations (observation noise, action delay: microrl.perturb) are applied here, around the
# task's own reset and step (imported only when a perturbation is on: a board's heap is small).
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


class Env:
    """task: a task module. params: its parameter values (default: the task's PARAMETERS).
    rng: the Rng that reset() and step() draw from (reset(rng) may give another). evaluation:
    starts from the task's evaluation distribution (its evaluation() hook) rather than
    training's. perturbations: {name: value} of sim-to-real perturbations (microrl.perturb.names();
    default none: the nominal task; the task's PERTURBATIONS: what it trains with).
    pending_actions: under an action delay, the observation carries the commands sent but not
    yet applied after the task's own (OBS_DIM + delay * ACT_DIM numbers; microrl.perturb.
    pending_actions), as a policy trained with the delay expects them (its file's `pending`)."""

    def __init__(self, task, params=None, rng=None, evaluation=False, perturbations=None, pending_actions=False):
        self.task = task
        self.name = task.NAME
        delay = int(perturbations.get("action_delay", 0)) if perturbations and pending_actions else 0
        self.obs_dim = task.OBS_DIM + delay * task.ACT_DIM
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
        self.obs = zeros(self.obs_dim)
        self.t = 0
        # sim-to-real perturbations (microrl.perturb), only when some are asked for
        self.perturbed = None
        if perturbations:
            from .perturb import Perturbed

            self.perturbed = Perturbed(self, perturbations)

    def _draw(self, n):
        rng = self.rng
        u = self.u
        for i in range(n):
            u[i] = rng.uniform(0.0, 1.0)

    def reset(self, rng=None):
        if rng is not None:
            self.rng = rng
        self._draw(self.task.RESET_DRAWS)
        if self.perturbed:
            self.perturbed.reset(self)
        self.task.reset(self.P, self.s, self.u, self.obs)
        if self.perturbed:
            self.perturbed.observe(self)
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
        if self.perturbed:
            self.perturbed.act(self, a)
        self._draw(self.task.STEP_DRAWS)
        reward, terminated, truncated = self.task.step(self.P, self.s, a, self.u, self.obs)
        if self.perturbed:
            self.perturbed.observe(self)
        self.t += 1
        return self.obs, reward, terminated, truncated

    def set_state(self, values):
        """Put the task in a given state (its first len(values) numbers; tests, comparisons with
        other simulators); returns the observation (the task's observe() hook)."""
        for i in range(len(values)):
            self.s[i] = values[i]
        self.task.observe(self.P, self.s, self.obs)
        return self.obs


def task_obs_dim(policy):
    """The task's observation a policy takes: its input less the pending actions it observes."""
    return policy.sizes[0] - getattr(policy, "pending", 0) * policy.sizes[-1]


def policy_perturbations(policy, perturbations=None):
    """The perturbations to run policy under: perturbations ({name: value}, or None) with, for
    a policy that observes pending actions (its file's `pending`: trained under that action
    delay), its own delay; ValueError when another delay is asked of it."""
    pending = getattr(policy, "pending", 0)
    if not pending:
        return perturbations
    chosen = dict(perturbations or {})
    asked = chosen.get("action_delay", pending)
    if asked != pending:
        raise ValueError("this policy was trained with an action delay of %d steps and observes its %d pending actions; "
                         "it runs with that delay only, not %g" % (pending, pending, asked))
    chosen["action_delay"] = pending
    return chosen


def policy_env(task, policy, perturbations=None, **options):
    """An Env of task for policy: under its own action delay and observing the pending actions
    when the policy expects them (policy_perturbations), as it was trained. options: Env's."""
    chosen = policy_perturbations(policy, perturbations)
    return Env(task, perturbations=chosen, pending_actions=bool(getattr(policy, "pending", 0)), **options)
