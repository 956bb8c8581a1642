"""PPO for MuJoCo tasks (compiled copies: envs/mujoco.py), tasks written against the task interface
(compiled copies with the task's perturbations, curriculum and success test: envs/task_vector.py;
the task may suggest settings in its TRAINING_PPO) and any gymnasium environment with Box
spaces (copies stepped from Python: envs/gym.py's GymVectorEnv), on numpy float32 (BLAS) networks, with the two additions of the paper
(BackpropTools, section 4.2 and Appendix G) over plain PPO: observation normalisation and the
KL-adaptive learning rate. Each can be switched off for ablation.

Plain PPO here: a Gaussian policy (mean from an MLP, a learned state-independent log std), a
separate value MLP, GAE(lambda) (a time-limit cut bootstraps from the last observation's value),
the clipped surrogate objective, a squared-error value loss, an entropy bonus, several epochs of
minibatch Adam (PyTorch semantics, the device core's numpy kernel); optional advantage
normalisation and gradient-norm clipping.
The networks and their Adam are the device core's own (microrl.nn.MLP on its numpy backend: BLAS
over large batches), so the actor's parameters drop into microrl.policy.Policy unchanged: the saved policy is the
deterministic mean action, scaled to the environment's action bounds, with the observation
normalisation (obs_mean, obs_std) it was trained with.

    from microrl_host.algos import ppo
    run = ppo.train(ppo.PPOSettings(steps=1_000_000, seed=1), "ant", run_dir="runs/ant")  # a results.Run
`microrl train ant --algo ppo` (commands/train.py) calls train_task() with the options PPOSettings gives it.
"""
import dataclasses
import json
import math
import time
from typing import ClassVar

import numpy as np

from microrl.activations import IDENTITY, NAMES
from microrl.nn import MLP

from .. import tasks
from ..envs.gym import rollout_returns
from ..nn.blas import one_blas_thread
from ..runlog import CHECKPOINT  # noqa: F401  (the run folder's checkpoint, where its callers look)
from . import checkpoint, run
from .callbacks import NONE
from .run import TrainingDiverged  # noqa: F401  (the one TrainingDiverged, where its callers look)
from .settings import Settings, setting

LOG_2PI = math.log(2.0 * math.pi)


def _non_finite(learner):
    """What of a PPO learner became NaN or infinite (a loss, a statistic, a network array), or None."""
    for k, v in learner.stats.items():
        if isinstance(v, float) and not math.isfinite(v):
            return "the %s" % k
    for k, v in learner.state().items():
        if isinstance(v, np.ndarray) and v.dtype.kind == "f" and not np.isfinite(v).all():
            return k
    return None


@dataclasses.dataclass(init=False)
class PPOSettings(Settings):
    """Defaults are the paper's for Ant (64 envs x 64 steps, 256-256 ReLU, target KL 0.008) and
    those of its public Ant trainer (RLtools' src/rl/environments/mujoco/ant/ppo: minibatches of
    2048, 4 epochs, initial action std 0.5, no entropy bonus, no advantage normalisation, no
    gradient clipping, Adam at 3e-4 for the actor, where the adaptive rate starts, and 6e-4 for
    the critic). Appendix G gives the adaptation (target, factor, bounds), not the rates."""

    NAME: ClassVar[str] = "ppo"
    SUGGESTIONS: ClassVar[str] = "training_ppo"  # a task's TRAINING_PPO (docs/tasks.md)
    RESUMABLE: ClassVar[tuple] = ("steps", "threads")  # how long, and how many threads step the environments
    RUN_DEFAULTS: ClassVar[dict] = {"eval_every": "a tenth of the run", "checkpoint_every": 100_000}
    THREADS: ClassVar[str] = "1 or more (2+: the critic's update on a second thread; MuJoCo copies stepped on that many)"

    steps: int = setting(10_240_000, "steps in all", low=1, whole=True, option=False)
    envs: int = setting(64, "parallel environments", low=1, whole=True)
    rollout_steps: int = setting(64, "steps per environment per rollout", low=1, whole=True)
    epochs: int = setting(4, "passes over each rollout", low=1, whole=True)
    minibatches: int = setting(2, "minibatches per epoch", low=1, whole=True)
    hidden: tuple = setting((256, 256), "hidden layer sizes, e.g. 64,64")
    activation: str = setting("relu", "hidden activation", choices=NAMES[1:])
    gamma: float = setting(0.99, "discount factor", above=0, high=1)
    gae_lambda: float = setting(0.95, "GAE lambda", low=0, high=1)
    clip_coef: float = setting(0.2, "PPO clip range", above=0)
    ent_coef: float = setting(0.0, "entropy bonus weight", low=0)
    vf_coef: float = setting(0.5, "value loss weight", above=0)
    max_grad_norm: float = setting(0.0, "clip each network's gradient norm; 0 disables", low=0)
    adv_norm: bool = setting(False, "normalise advantages per minibatch")
    lr: float = setting(3e-4, "the actor's initial learning rate, adapted", above=0)
    critic_lr: float = setting(6e-4, "critic learning rate (Adam; the initial one with critic_final_lr)", above=0)
    critic_final_lr: float = setting(0.0, "lower the critic's learning rate geometrically to this over critic_decay_steps (a fast start: "
                                     "the value's scale, a settled end)", low=0, shown="0: constant", experimental=True)
    critic_decay_steps: int = setting(500_000, "steps over which the critic's rate falls to critic_final_lr", low=1, whole=True, experimental=True)
    kl_adaptive: bool = setting(True, "the paper's KL-adaptive learning rate (false: the rate stays fixed; ablation of its Appendix G)", experimental=True)
    target_kl: float = setting(0.008, "KL the adaptive learning rate aims for", above=0)
    kl_factor: float = setting(1.5, "the adaptive learning rate's factor per minibatch (Appendix G)", above=1, experimental=True)
    lr_min: float = setting(1e-6, "the adaptive learning rate's lower bound", above=0, experimental=True)
    lr_max: float = setting(1e-2, "the adaptive learning rate's upper bound", above=0, experimental=True)
    obs_norm: bool = setting(True, "observation normalisation (false: none; ablation)", experimental=True)
    init_log_std: float = setting(math.log(0.5), "the action std at the start, actions in [-1, 1]", given_as=("init_std", math.log, math.exp, 0))
    final_std: float = setting(0.0, "lower the action std to this by the end instead of learning it (docs/tasks.md)", low=0, shown="0: learned")
    threads: int = setting(None, "threads stepping the environments", low=1, whole=True, option=False)
    seed: int = setting(0, "random seed", low=0, whole=True, option=False)

    def relations(self):
        problems = []
        if self.envs * self.rollout_steps < self.minibatches:
            problems.append("minibatches (%d) exceeds the batch of envs x rollout_steps (%d)" % (self.minibatches, self.envs * self.rollout_steps))
        if self.lr_min > self.lr_max:
            problems.append("need lr_min <= lr_max")
        return problems

    def memory(self):
        """What training keeps in memory, for the command line's check: a rollout keeps envs x
        rollout_steps rows of observations, actions and returns."""
        rows = self.envs * self.rollout_steps
        return dict(hidden=self.hidden, update_rows=max(1, rows // self.minibatches), rows=rows, outputs=2, copies=4, row_bytes=8,
                    advice="use a smaller --hidden, --envs or --rollout-steps")


class RunningMeanStd:
    """Running mean and variance of observations (Chan et al.'s parallel update)."""

    def __init__(self, n):
        self.mean = np.zeros(n)
        self.var = np.ones(n)
        self.count = 1e-4

    def update(self, x):
        x = np.asarray(x, np.float64).reshape(-1, self.mean.shape[0])
        b_mean, b_var, b_n = x.mean(axis=0), x.var(axis=0), x.shape[0]
        delta = b_mean - self.mean
        total = self.count + b_n
        self.mean = self.mean + delta * b_n / total
        self.var = (self.var * self.count + b_var * b_n + delta * delta * self.count * b_n / total) / total
        self.count = total

    @property
    def std(self):
        return np.sqrt(self.var + 1e-8)


def adapt_lr(lr, kl, target_kl, factor, lr_min, lr_max):
    """The paper's Appendix G: raise the learning rate when the policy moved too little (KL below
    half the target), lower it when too much (above twice), keep it in [lr_min, lr_max]."""
    if kl < 0.5 * target_kl:
        lr = lr * factor
    elif kl > 2.0 * target_kl:
        lr = lr / factor
    return max(lr_min, min(lr, lr_max))


class PPO:
    """The learner: networks, optimiser, normalisation; collects with act() and learns with update()."""

    def __init__(self, obs_dim, act_dim, action_low, action_high, config):
        self.config = c = config
        self.obs_dim, self.act_dim = obs_dim, act_dim
        self.rng = np.random.default_rng(c.seed)
        batch = c.envs * c.rollout_steps
        self.minibatch = batch // c.minibatches
        rows = max(self.minibatch + batch % c.minibatches, c.envs)
        acts = [c.activation] * len(c.hidden)
        from ..nn import fast_tanh  # (loads numba: here, not where the commands read PPOSettings)

        # the device core's networks on its numpy backend (with a compiled tanh: nn/fast_tanh.py), whatever backend.py chose
        self.actor = MLP([obs_dim] + list(c.hidden) + [act_dim], acts + [IDENTITY], batch=rows, kernels=fast_tanh)
        self.critic = MLP([obs_dim] + list(c.hidden) + [1], acts + [IDENTITY], batch=rows, kernels=fast_tanh)
        init_orthogonal(self.actor, self.rng, math.sqrt(2.0), 0.01)
        init_orthogonal(self.critic, self.rng, math.sqrt(2.0), 1.0)
        # the state-independent log std, with its gradient and Adam moments beside the actor's
        self.log_std = np.full(act_dim, c.init_log_std, np.float32)
        self.log_std_grad = np.zeros(act_dim, np.float32)
        self.log_std_m = np.zeros(act_dim, np.float32)
        self.log_std_v = np.zeros(act_dim, np.float32)
        self.obs_rms = RunningMeanStd(obs_dim)
        self.lr = c.lr
        self.critic_rate = c.critic_lr  # as schedule() sets it
        low, high = np.asarray(action_low, np.float64), np.asarray(action_high, np.float64)
        self.action_low, self.action_high = low, high
        self.act_scale = ((high - low) / 2.0).astype(np.float32)
        self.act_offset = ((high + low) / 2.0).astype(np.float32)
        self.stats = {}
        self._pool = None  # the critic's thread in update(), started on first use

    # -- acting
    def normalize(self, obs):
        if not self.config.obs_norm:
            return np.asarray(obs, np.float32)
        return ((obs - self.obs_rms.mean) / self.obs_rms.std).astype(np.float32)

    def to_env(self, raw_actions):
        """Actions in the network's units to the environment's, clipped to its bounds."""
        return np.clip(raw_actions * self.act_scale + self.act_offset, self.action_low, self.action_high)

    def act(self, obs_n):
        """Sample actions for normalised observations: (raw actions, log-probs, means, values)."""
        mean = _forward(self.actor, obs_n).copy()
        value = _forward(self.critic, obs_n)[:, 0].copy()
        std = np.exp(self.log_std)
        noise = self.rng.standard_normal(mean.shape).astype(np.float32)
        raw = mean + std * noise
        logp = (-0.5 * noise * noise - self.log_std - 0.5 * LOG_2PI).sum(axis=1)
        return raw, logp, mean, value

    def schedule(self, step):
        """What changes with the run's step. With final_std set: the action std, falling
        geometrically from the initial one to final_std at the end of the run (the mean policy is
        what is deployed; a smaller exploration noise towards the end lets it settle where the
        deterministic policy does). With critic_final_lr set: the critic's rate, falling
        geometrically from critic_lr to it over critic_decay_steps (a high rate fits the value's
        scale early, when returns grow by hundreds; a lower one lets the policy settle)."""
        c = self.config
        if c.critic_final_lr:
            frac = min(1.0, step / float(c.critic_decay_steps))
            self.critic_rate = c.critic_lr * math.exp(frac * math.log(c.critic_final_lr / c.critic_lr))
        if c.final_std:
            frac = min(1.0, step / float(c.steps))
            self.log_std[:] = c.init_log_std + frac * (math.log(c.final_std) - c.init_log_std)

    def value(self, obs_n):
        return _forward(self.critic, obs_n)[:, 0].copy()

    def deterministic(self, obs, clip=True):
        """The deployed policy: mean action for raw observations, in environment units; clipped to
        the bounds unless clip=False (the saved Policy does not clip: clamp on the board)."""
        obs = np.asarray(obs, np.float64).reshape(-1, self.obs_dim)
        mean = _forward(self.actor, self.normalize(obs))
        return self.to_env(mean) if clip else mean * self.act_scale + self.act_offset

    # -- learning
    def update(self, batch):
        """Epochs of minibatch updates on a rollout: dict of obs, actions, logp, mean, advantages, returns."""
        c = self.config
        n = batch["obs"].shape[0]
        mb = self.minibatch
        kls, clipfracs, pg_losses, v_losses, entropies = [], [], [], [], []
        for _ in range(c.epochs):
            order = self.rng.permutation(n)
            for k in range(c.minibatches):
                idx = order[k * mb : (k + 1) * mb] if k < c.minibatches - 1 else order[k * mb :]
                stats = self._minibatch(batch, idx)
                kls.append(stats[0])
                clipfracs.append(stats[1])
                pg_losses.append(stats[2])
                v_losses.append(stats[3])
                entropies.append(stats[4])
                if c.kl_adaptive:
                    self.lr = adapt_lr(self.lr, stats[0], c.target_kl, c.kl_factor, c.lr_min, c.lr_max)
        self.stats = {"kl": float(np.mean(kls)), "clipfrac": float(np.mean(clipfracs)), "pg_loss": float(np.mean(pg_losses)), "v_loss": float(np.mean(v_losses)), "entropy": float(np.mean(entropies)), "lr": self.lr}
        return self.stats

    def _minibatch(self, batch, idx):
        """One minibatch step of both networks. The critic learns on a second thread while this
        one does the actor: the two share no buffers, and BLAS releases the GIL, so on two CPUs
        the update takes about half the time (the results are the same as one after the other)."""
        obs = batch["obs"][idx]
        if self.config.threads == 1:  # asked for one CPU: one after the other
            v_loss = self._critic_step(obs, batch["returns"][idx])
            kl, clipfrac, pg_loss, entropy = self._actor_step(batch, idx, obs)
            return kl, clipfrac, pg_loss, v_loss, entropy
        critic = self._worker().submit(self._critic_step, obs, batch["returns"][idx])
        try:
            kl, clipfrac, pg_loss, entropy = self._actor_step(batch, idx, obs)
        finally:
            v_loss = critic.result()
        return kl, clipfrac, pg_loss, v_loss, entropy

    def _worker(self):
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(1, thread_name_prefix="microrl-ppo-critic")
        return self._pool

    def close(self):
        """Stop the critic's thread (it also ends with the process)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def __reduce__(self):
        """Pickled as its state and rebuilt (neither the critic's thread nor the networks' views of
        their buffers pickle as they are); the thread restarts on use."""
        saved = {k: np.array(v) for k, v in self.state().items()}
        return _rebuild, (self.obs_dim, self.act_dim, self.action_low, self.action_high, self.config, saved, self.stats)

    def _actor_step(self, batch, idx, obs):
        c = self.config
        actions = batch["actions"][idx]
        old_logp = batch["logp"][idx]
        old_mean = batch["mean"][idx]
        old_log_std = batch["log_std"]
        adv = batch["advantages"][idx]
        m = obs.shape[0]
        if c.adv_norm:
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        mean = _forward(self.actor, obs)
        log_std = self.log_std.astype(np.float64)
        std = np.exp(log_std)
        z = (actions - mean) / std
        logp = (-0.5 * z * z - log_std - 0.5 * LOG_2PI).sum(axis=1)
        ratio = np.exp(logp - old_logp)
        surr1 = ratio * adv
        surr2 = np.clip(ratio, 1.0 - c.clip_coef, 1.0 + c.clip_coef) * adv
        pg_loss = -np.minimum(surr1, surr2).mean()
        # the clipped objective's gradient flows only where the unclipped term is the minimum
        active = surr1 <= surr2
        dlogp = np.where(active, -adv * ratio, 0.0) / m
        dmean = (dlogp[:, None] * z / std).astype(np.float32)  # dlogp/dmean = (a - mean) / std^2
        dlog_std = (dlogp[:, None] * (z * z - 1.0)).sum(axis=0)
        entropy = float((log_std + 0.5 + 0.5 * LOG_2PI).sum())
        dlog_std -= c.ent_coef  # the entropy bonus: d(-ent_coef * entropy)/dlog_std
        # KL(old || new) of diagonal Gaussians, exactly, before this minibatch's step
        var_ratio = np.exp(2.0 * (old_log_std - log_std))
        kl = float((log_std - old_log_std + 0.5 * (var_ratio + ((old_mean - mean) / std) ** 2) - 0.5).sum(axis=1).mean())
        clipfrac = float((np.abs(ratio - 1.0) > c.clip_coef).mean())
        self.actor.backward(dmean, m)
        self.log_std_grad[:] = dlog_std
        _clip_grad_norm([self.actor.g, self.log_std_grad], c.max_grad_norm)
        # the adaptive learning rate steers the policy only; the critic keeps its own
        self.actor.adam_step(self.lr)
        if not c.final_std:  # learned, else set by the schedule (schedule())
            self.actor.B.adam(self.log_std, self.log_std_grad, self.log_std_m, self.log_std_v, self.lr, 0.9, 0.999, 1e-8, self.actor.adam_step_count)
        return kl, clipfrac, pg_loss, entropy

    def _critic_step(self, obs, ret):
        c = self.config
        m = obs.shape[0]
        v = _forward(self.critic, obs)[:, 0]
        v_loss = 0.5 * float(((v - ret) ** 2).mean())
        dv = (c.vf_coef * (v - ret) / m).astype(np.float32)[:, None]
        self.critic.backward(np.ascontiguousarray(dv), m)
        _clip_grad_norm([self.critic.g], c.max_grad_norm)
        self.critic.adam_step(self.critic_rate)
        return v_loss

    # -- export and checkpoints
    def to_policy(self, params=None):
        """The device core's Policy: deterministic mean action, scaled to the action bounds,
        with this learner's observation normalisation (params: the actor's, saved earlier)."""
        from microrl.policy import Policy, array_of

        kwargs = {}
        if self.config.obs_norm:
            kwargs = {"obs_mean": self.obs_rms.mean.tolist(), "obs_std": self.obs_rms.std.tolist()}
        params = self.actor.params if params is None else params
        return Policy(self.actor.sizes, self.actor.acts, params=array_of(params.tolist()), act_scale=self.act_scale.tolist(), act_offset=self.act_offset.tolist(), **kwargs)

    def state(self):
        a, c = self.actor, self.critic
        return {
            "actor": a.p, "critic": c.p, "log_std": self.log_std,
            "adam_m0": a.mv, "adam_m1": self.log_std_m, "adam_m2": c.mv, "adam_v0": a.vv, "adam_v1": self.log_std_v, "adam_v2": c.vv,
            "adam_step": np.array(a.adam_step_count), "lr": np.array(self.lr),
            "obs_mean": self.obs_rms.mean, "obs_var": self.obs_rms.var, "obs_count": np.array(self.obs_rms.count),
            "rng": np.array(json.dumps(self.rng.bit_generator.state)),
        }

    def load_state(self, s):
        a, c = self.actor, self.critic
        a.p[:] = s["actor"]
        c.p[:] = s["critic"]
        self.log_std[:] = s["log_std"]
        for k, (m, v) in enumerate(((a.mv, a.vv), (self.log_std_m, self.log_std_v), (c.mv, c.vv))):
            m[:] = s["adam_m%d" % k]
            v[:] = s["adam_v%d" % k]
        a.adam_step_count = c.adam_step_count = int(s["adam_step"])
        self.lr = float(s["lr"])
        self.obs_rms.mean = np.array(s["obs_mean"], np.float64)
        self.obs_rms.var = np.array(s["obs_var"], np.float64)
        self.obs_rms.count = float(s["obs_count"])
        self.rng.bit_generator.state = json.loads(str(s["rng"]))


def _rebuild(obs_dim, act_dim, low, high, config, saved, stats):
    learner = PPO(obs_dim, act_dim, low, high, config)
    learner.load_state(saved)
    learner.stats = stats
    return learner


def _forward(net, x):
    """The network's outputs for the rows of x (a view into its buffers)."""
    n = x.shape[0]
    return net.forward(n, x)[:n]


def init_orthogonal(net, rng, hidden_gain, out_gain):
    """Orthogonal weights (gain hidden_gain for hidden layers, out_gain for the output, small for
    the policy's), zero biases: the usual PPO initialisation. net is an MLP on numpy views."""
    for l, W in enumerate(net.W):
        gain = out_gain if l == len(net.W) - 1 else hidden_gain
        a = rng.standard_normal((max(W.shape), min(W.shape)))
        q, r = np.linalg.qr(a)
        q *= np.sign(np.diag(r))
        W[:] = gain * (q if W.shape[0] >= W.shape[1] else q.T)[: W.shape[0], : W.shape[1]]
        net.b[l][:] = 0.0


def _clip_grad_norm(grads, max_norm):
    """Scale one network's gradients (a list of vectors) to a norm of at most max_norm (0: off)."""
    if max_norm and max_norm > 0:
        norm = math.sqrt(sum(float(np.dot(g, g)) for g in grads))
        if norm > max_norm:
            for g in grads:
                g *= max_norm / (norm + 1e-6)


def gae(rewards, values, dones, last_value, gamma, lam):
    """Advantages and returns, (T, N) each. dones[t] ends the episode after step t (a truncated
    episode's bootstrap is already in its reward)."""
    T = rewards.shape[0]
    adv = np.zeros_like(rewards)
    last = np.zeros(rewards.shape[1])
    next_value = last_value
    for t in range(T - 1, -1, -1):
        nonterminal = 1.0 - dones[t]
        delta = rewards[t] + gamma * next_value * nonterminal - values[t]
        last = delta + gamma * lam * nonterminal * last
        adv[t] = last
        next_value = values[t]
    return adv, adv + values


def suggested(task):
    """{PPOSettings field: value} of a task's TRAINING_PPO (task: a name, a task module, a
    CompiledTask, a tasks.Found; {} for any other task), with init_std as init_log_std; steps,
    eval_every and eval_episodes are the caller's (a run's length and evaluations, not the learner's)."""
    import types

    source = task if isinstance(task, (str, types.ModuleType, tasks.Found)) else getattr(task, "module", None)
    return PPOSettings.suggested(tasks.resolve(source)) if source is not None else {}


def _env_name(env):
    from ..envs.gym import _name

    return _name(env)


def evaluate_policy(policy, task, episodes=10, seed=12345, max_steps=None):
    """Deterministic returns of a device core Policy on gymnasium's own environment (a MuJoCo task
    or any gymnasium id or Env, tasks.resolve): (mean, std, returns). Episode k starts from
    reset(seed=seed + k); actions are clipped to the bounds."""
    found = tasks.resolve(task)
    source = found.gym
    kwargs = {"max_episode_steps": max_steps} if max_steps else {}
    if found.kind == "mujoco":
        from ..envs.mujoco import make_gymnasium_env  # MuJoCo and gymnasium load only when used

        env = make_gymnasium_env(source, **kwargs)
    else:
        from ..envs.gym import _name, make_gym_env
        from ..tasks import TaskError

        if not isinstance(source, str):  # a user's Env: a fresh copy from its spec
            if getattr(source, "spec", None) is None:
                raise TaskError("%s has no spec to make copies from; register it (gymnasium.register) and give its id" % _name(source))
            source = source.spec
        env = make_gym_env(source, **kwargs)
    try:
        return rollout_returns(policy, env, episodes, seed, clip=True)
    finally:
        env.close()


def train(config, env, callbacks=None, run_dir=None, out=None, resume=False, checkpoint_every=None, eval_every=None, eval_episodes=10, max_episode_steps=None, perturbations=None,
          keep_best=False, pending_actions=True):
    """Train PPO on a MuJoCo task (env: a name tasks.resolve knows, e.g. "ant" or "Ant-v5"), a task
    written against the task interface ("quadrotor", a task file or module: evaluated with its own
    starts and success test, trained with perturbations ({name: value}; None: the task's own
    choice, as TD3's; {}: none); under an action delay the policy observes the commands sent but not
    yet applied, and its file says so, as TD3's (pending_actions False: the task's observation
    alone; docs/sim-to-real.md)), or on any
    gymnasium environment with Box spaces (an id, `module:Id`, or an Env: copies made from its spec).
    The run is the one driver's (run.drive): run_dir (if given) gets run.json, progress.csv,
    checkpoint.npz (atomically, every checkpoint_every steps and at the end) and policy.mrlp;
    out: another path for the final policy; resume: continue from run_dir's checkpoint;
    eval_every: steps between evaluations (None or 0: at the end only); callbacks: a Callbacks,
    told of every iteration (trainer: the PPO learner; figures: lr, kl, return). Returns a
    results.Run (its trainer: the PPO learner)."""
    with one_blas_thread(scipy_blas=False):  # numpy's BLAS only
        return _train(env, config or PPOSettings(), run_dir, out, resume, checkpoint_every, eval_every, eval_episodes, callbacks, max_episode_steps, perturbations, keep_best,
                      pending_actions)


def train_task(task, steps=None, seed=None, eval_every=None, eval_episodes=None, out=None, run_dir=None, checkpoint_every=None, resume=False, callbacks=None, threads=None,
        perturbations=None, pending_actions=True, keep_best=False, **settings):
    """Train on task (tasks.resolve) with settings by name, as TD3's and SAC's Algorithm.run
    takes them (what `microrl train` calls): a setting left None is the checkpoint's on resume,
    else the task's suggestion (its TRAINING_PPO), else the default; eval_every None: the task's,
    else a tenth of the run (ppo_eval_every); checkpoint_every None: every 100,000 steps.
    Returns a results.Run."""
    found = tasks.resolve(task)
    config = PPOSettings.for_run(found, dict(settings, steps=steps, seed=seed, threads=threads), checkpoint.saved_settings(run_dir) if resume and run_dir else None)
    suggests = found.training_ppo
    episodes = eval_episodes or suggests.get("eval_episodes", 10)
    if eval_every is None:
        eval_every = suggests.get("eval_every") or ppo_eval_every(config.steps, config.envs * config.rollout_steps, episodes)
    return train(config, found, callbacks, run_dir=run_dir, out=out, resume=resume, checkpoint_every=checkpoint_every or 100_000, eval_every=eval_every or None,
                 eval_episodes=episodes, perturbations=perturbations, keep_best=keep_best, pending_actions=pending_actions)


PPO_EPISODE_STEPS = 1000  # the longest episode of gymnasium's MuJoCo tasks: what one evaluation episode may take
PPO_EVAL_SHARE = 4  # PPO's default evaluations step at most a quarter as much as training does


def ppo_eval_every(steps, per_iteration, episodes):
    """PPO's default steps between evaluations: a tenth of the run, at most 100,000, at least an
    iteration, and so that evaluating (episodes of up to 1,000 steps, one environment stepped in
    Python: per step as slow as training, measured on Ant) takes at most a quarter of the steps
    trained. A short run is evaluated at its end only (it always is, whatever the spacing)."""
    return max(per_iteration, min(100_000, steps // 10), PPO_EVAL_SHARE * episodes * PPO_EPISODE_STEPS)


def _train(task, c, run_dir, out, resume, checkpoint_every, eval_every, eval_episodes, callbacks, max_episode_steps, perturbations, keep_best, pending_actions):
    wall0 = time.perf_counter()
    (callbacks or NONE).on_compile("building the environments (a first run also compiles their kernels)")
    found = tasks.resolve(task)
    name = found.name if found.module is not None or isinstance(found.gym, str) else _env_name(found.gym)
    resumed = None
    if resume:
        resumed = run.read_resume(run_dir, "ppo", name)
        saved = dict(resumed[0].get("config") or {})
        given = {k: v for k, v in c.as_dict().items() if k in saved}  # a setting an older checkpoint lacks: not compared
        run.refuse_differences(run_dir, run.resume_differences(saved, given, resumable=PPOSettings.RESUMABLE))
    learner = PPOLearner(found, name, c, perturbations, max_episode_steps, pending_actions)
    compiled = learner.compiled
    if resumed:
        try:
            run.refuse_differences(run_dir, run.task_differences(resumed[0], compiled))
        except BaseException:
            learner.close()
            raise
    meta = {"perturbations": dict(compiled.perturbations)} if compiled is not None and compiled.perturbations else {}
    if compiled is not None and compiled.pending:
        meta["pending_actions"] = compiled.pending  # the observation's width
    return run.drive(learner, c.steps, c.seed, out=out, run_dir=run_dir, resumed=resumed, eval_every=eval_every or 0, eval_episodes=eval_episodes,
                     checkpoint_every=checkpoint_every or 0, callbacks=callbacks, keep_best=keep_best, meta=meta, wall0=wall0)


class PPOLearner(run.Learner):
    """PPO for the driver (run.drive): advance() is one rollout of envs x rollout_steps steps and
    its update; the environments are compiled copies of a task (envs/task_vector.py), MuJoCo
    copies (envs/mujoco.py) or gymnasium's (envs/gym.py)."""

    algo = "ppo"
    advice = " (a smaller --lr, --max-grad-norm or normalised observations may help)"

    def __init__(self, found, name, c, perturbations, max_episode_steps, pending_actions=True):
        self.task, self.config = name, c
        self.compiled = None  # the CompiledTask of a task written against the task interface
        self.source = found.gym
        if found.kind == "task":
            from ..envs.task_vector import TaskVectorEnv
            from .offpolicy import make_task

            self.compiled = make_task(found.module, perturbations, pending_actions)
            self.envs = TaskVectorEnv(self.compiled, c.envs)
            self.module = found.module if self.compiled.has_success else None
            import numba

            self.used = (np, numba)
        elif found.kind == "mujoco":
            from ..envs.mujoco import MujocoVectorEnv  # MuJoCo and gymnasium load only when used

            self.envs = MujocoVectorEnv(self.source, c.envs, threads=c.threads, max_episode_steps=max_episode_steps)
            import gymnasium
            import mujoco

            self.used = (np, mujoco, gymnasium)
        else:  # no compiled family: gymnasium's own copies, stepped in turn
            from ..envs.gym import GymVectorEnv

            self.envs = GymVectorEnv(self.source, c.envs, max_episode_steps=max_episode_steps)
            import gymnasium

            self.used = (np, gymnasium)
        envs = self.envs
        try:
            self.trainer = PPO(envs.obs_dim, envs.act_dim, envs.single_action_space.low, envs.single_action_space.high, c)
        except BaseException:
            envs.close()
            raise
        self.step, self.iteration = 0, 0
        T, N = c.rollout_steps, c.envs
        self.obs_buf = np.zeros((T, N, envs.obs_dim), np.float32)
        self.raw_obs = np.zeros((T, N, envs.obs_dim))
        self.act_buf = np.zeros((T, N, envs.act_dim), np.float32)
        self.mean_buf = np.zeros((T, N, envs.act_dim), np.float32)
        self.logp_buf = np.zeros((T, N))
        self.val_buf = np.zeros((T, N))
        self.rew_buf = np.zeros((T, N))
        self.done_buf = np.zeros((T, N))
        self.obs = None
        self.closed = False

    def prepare(self, callbacks):
        # resuming restarts the episodes (from a seed of its own): the learner continues exactly
        self.obs, _ = self.envs.reset(seed=int(self.config.seed) * 100_003 + self.iteration)

    def advance(self, limit):
        c, learner, envs = self.config, self.trainer, self.envs
        T = c.rollout_steps
        per_iter = T * c.envs
        recent = []
        if self.compiled is not None:
            envs.set_step(self.step)  # the task's start curriculum
        learner.schedule(self.step)
        obs = self.obs
        for t in range(T):
            self.raw_obs[t] = obs
            obs_n = learner.normalize(obs)
            self.obs_buf[t] = obs_n
            raw, logp, mean, value = learner.act(obs_n)
            obs, reward, terminated, truncated, infos = envs.step(learner.to_env(raw))
            cut_off = truncated & ~terminated  # gymnasium's truncated may coincide with terminated
            if cut_off.any():  # bootstrap the cut-off episode from its last observation
                cut = np.flatnonzero(cut_off)
                reward = reward.copy()
                reward[cut] += c.gamma * learner.value(learner.normalize(infos["final_obs"][cut]))
            self.act_buf[t], self.mean_buf[t], self.logp_buf[t], self.val_buf[t] = raw, mean, logp, value
            self.rew_buf[t] = reward
            self.done_buf[t] = terminated | truncated
            if "episode" in infos:
                recent.extend(infos["episode"]["r"][infos["_episode"]].tolist())
        self.obs = obs
        last_value = learner.value(learner.normalize(obs))
        adv, ret = gae(self.rew_buf, self.val_buf, self.done_buf, last_value, c.gamma, c.gae_lambda)
        batch = {
            "obs": self.obs_buf.reshape(per_iter, -1), "actions": self.act_buf.reshape(per_iter, -1), "mean": self.mean_buf.reshape(per_iter, -1),
            "logp": self.logp_buf.reshape(-1), "advantages": adv.reshape(-1), "returns": ret.reshape(-1), "log_std": learner.log_std.astype(np.float64).copy(),
        }
        learner.update(batch)
        self.diverged = _non_finite(learner)
        if self.diverged:  # the step the update failed at; never checkpointed (the driver stops)
            self.step += per_iter
            return run.Chunk()
        if c.obs_norm:
            learner.obs_rms.update(self.raw_obs.reshape(per_iter, -1))
        done = min(per_iter, c.steps - self.step)
        self.step += per_iter
        self.iteration += 1
        st = learner.stats
        figures = {"lr": learner.lr, "kl": st["kl"]}
        episodes = []
        if recent:
            figures["return"] = float(np.mean(recent))
            episodes = [(self.step, figures["return"])]  # progress.csv: one row an iteration, its episodes' mean return
        scalars = {"charts/learning_rate_actor": learner.lr, "charts/learning_rate_critic": learner.critic_rate, "losses/policy": st["pg_loss"], "losses/value": st["v_loss"],
                   "losses/entropy": st["entropy"], "losses/approx_kl": st["kl"], "losses/clipfrac": st["clipfrac"]}
        return run.Chunk(episodes, figures, scalars, done=done)

    def evaluate(self, episodes, seed):
        policy = self.policy()
        if self.compiled is not None:  # the task's own evaluation starts and success test
            from ..envs.task import evaluate_policy as evaluate_task_policy
            from .offpolicy import evaluation_perturbations

            rows = evaluate_task_policy(self.compiled, policy, episodes, seed, evaluation_perturbations(self.compiled))
            if self.compiled.has_success:
                self.summary = tasks.summary(self.compiled.module, rows)
            return float(rows[:, 0].mean()), float(rows[:, 0].std())
        mean_r, std_r, _ = evaluate_policy(policy, self.source, episodes, seed=seed)
        return mean_r, std_r

    def non_finite(self):
        return self.diverged

    def policy(self, snapshot=None):
        policy = self.trainer.to_policy(snapshot)
        if self.compiled is not None and self.compiled.pending:
            policy.pending = self.compiled.pending  # its input: the task's observation, then the pending actions
        return policy

    def snapshot(self):
        return np.array(self.trainer.actor.params, np.float32)

    def observations(self):
        # observations spread over the last rollout
        return self.raw_obs.reshape(-1, self.envs.obs_dim)

    def settings(self):
        return self.config.as_dict()

    def checkpoint(self):
        arrays = dict(task=np.array(self.task), step=np.array(self.step), iteration=np.array(self.iteration), **self.trainer.state())
        return {}, arrays, True

    def restore(self, meta, arrays):
        self.trainer.load_state(arrays)
        self.step, self.iteration = int(arrays["step"]), int(arrays["iteration"])
        if "evals" in meta:
            return {"evals": meta["evals"], "elapsed": meta.get("elapsed", 0.0)}
        # a checkpoint written before the one driver: its evaluations and time among its arrays
        return {"evals": arrays["evals"].tolist(), "elapsed": float(arrays["elapsed"])}

    def close(self):
        self.trainer.close()  # the critic's thread (it restarts on use)
        if not self.closed:
            self.closed = True
            self.envs.close()
