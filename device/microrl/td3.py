# TD3 (Fujimoto et al. 2018): twin critics, target networks with Polyak averaging, target policy
# smoothing, delayed actor updates. Defaults are the paper's Pendulum benchmark. The caller drives
# training one environment step at a time (agent.step()), so a board can interleave other work.
from .compat import zeros
from .layout import actor_critic_sizes
from .nn import MLP
from .replay import ReplayBuffer
from .replay import bounds as replay_bounds
from .rng import Rng


class TD3Config:
    def __init__(self, **overrides):
        self.hidden = (64, 64)
        self.activation = "relu"
        self.batch = 100
        self.gamma = 0.99
        self.tau = 0.005
        self.actor_lr = 1e-3
        self.critic_lr = 1e-3
        self.policy_delay = 2
        # rewards are multiplied by this in the critics' targets: the scale of the values the
        # critics fit (train-on-board: 0.1, docs/on-board-training.md)
        self.reward_scale = 1.0
        self.exploration_noise = 0.1  # std, in units of the [-1, 1] action range
        self.target_noise = 0.2
        self.target_noise_clip = 0.5
        # uniform random actions before the actor acts and training starts: with 1,000 (five
        # episodes) 8 of 8 seeds solved Pendulum in 10,000 steps here, with 100 only 6 of 8
        self.warmup = 1000
        self.replay_capacity = 10000
        self.steps = 10000
        # learning rates fall linearly to this share of their value at `steps` (1.0: constant):
        # small networks with a small replay oscillate late in training, and a falling rate
        # settles them (docs/on-board-training.md)
        self.lr_end = 1.0
        # which rows a full replay overwrites: "oldest" (a ring), or "random" (each new episode
        # starts at a random row: a small buffer keeps some early episodes)
        self.replay_overwrite = "oldest"
        # 16-bit replay rows when the environment gives bounds (obs_high, reward_bound); False:
        # float32 rows (measured against each other in docs/on-board-training.md)
        self.replay_fixed_point = True
        for k in overrides:
            if not hasattr(self, k):
                raise ValueError("unknown TD3 setting %r" % k)
            setattr(self, k, overrides[k])

    def as_dict(self):
        return {k: getattr(self, k) for k in dir(self) if not k.startswith("_") and k != "as_dict"}


def action_map(low, high, act_dim):
    """(scale, offset) arrays: action = scale * a + offset maps a in [-1, 1] onto [low, high]
    (per action, or one bound for all), float32 as the policy file holds them."""
    scale = zeros(act_dim)
    offset = zeros(act_dim)
    for i in range(act_dim):
        lo = low if isinstance(low, (float, int)) else low[i]
        hi = high if isinstance(high, (float, int)) else high[i]
        scale[i] = (hi - lo) / 2.0
        offset[i] = (hi + lo) / 2.0
    return scale, offset


class TD3:
    """TD3 for an environment with reset()/step() as microrl.task.Env, and actions in
    [action_low, action_high] (a bound per action, or one for all; the networks work in [-1, 1])."""

    def __init__(self, env, config=None, seed=0):
        c = config or TD3Config()
        self.config = c
        self.env = env
        self.rng = Rng(seed)
        od, ad, n = env.obs_dim, env.act_dim, c.batch
        self.obs_dim, self.act_dim = od, ad
        hidden = list(c.hidden)
        actor_sizes, critic_sizes = actor_critic_sizes(od, ad, hidden)
        # the replay buffer is the largest block: take it while a board's heap is still whole
        self.replay = ReplayBuffer(c.replay_capacity, od, ad, replay_bounds(env) if c.replay_fixed_point else None, self.rng if c.replay_overwrite == "random" else None)
        # RAM, nothing held twice: one set of hidden activations for the actor, one for every other
        # network (the targets run forward only and before the critics; the critics train one after
        # the other); one gradient buffer and one backward scratch pair for all three trained
        # networks (each gradient is used by its Adam step before the next backward pass); the
        # second critic and target read the first's input rows. Critic 1 is built first: it is the
        # largest, and owns what the others share.
        act = c.activation
        critic1 = MLP(critic_sizes, (act, "identity"), n)
        self.actor = MLP(actor_sizes, (act, "tanh"), n, scratch_from=critic1)
        self.actor_target = MLP(actor_sizes, (act, "tanh"), n, trainable=False, share=critic1)
        critic2 = MLP(critic_sizes, (act, "identity"), n, share=critic1, scratch_from=critic1, input_from=critic1)
        self.critics = [critic1, critic2]
        target1 = MLP(critic_sizes, (act, "identity"), n, trainable=False, share=critic1)
        target2 = MLP(critic_sizes, (act, "identity"), n, trainable=False, share=critic1, input_from=target1)
        self.critic_targets = [target1, target2]
        # batch buffers, allocated once
        self.reward = zeros(n)
        self.done = zeros(n)
        self.q_target = zeros(n)
        self.dq = zeros(n)
        self.dq_view = self.actor.B.matrix(self.dq, 0, n, 1)
        # dL/d(critic input) in the backward scratch that critic 1's first layer leaves free
        self.dx_buf = critic1._scratch[0] if len(critic1._scratch[0]) >= n * (od + ad) else zeros(n * (od + ad))
        self.dx = self.actor.B.matrix(self.dx_buf, 0, n, od + ad)
        self.da = zeros(n * ad)
        self.da_view = self.actor.B.matrix(self.da, 0, n, ad)
        self.action = zeros(ad)
        self.scale, self.offset = action_map(env.action_low, env.action_high, ad)
        self.env_action = zeros(ad)
        # weights last: initialising makes garbage (a float object per draw on MicroPython), which
        # would leave holes between buffers allocated after it
        self.actor.init(self.rng)
        critic1.init(self.rng)
        critic2.init(self.rng)
        self.actor_target.copy_from(self.actor)
        for k in range(2):
            self.critic_targets[k].copy_from(self.critics[k])
        # training state
        self.steps = 0
        self.updates = 0
        self.episode_return = 0.0
        self.episodes = 0
        self.obs = zeros(od)
        self._copy_obs(env.reset(self.rng))

    def _copy_obs(self, src):
        for i in range(self.obs_dim):
            self.obs[i] = src[i]

    def act(self, obs, noise=0.0):
        """Action in [-1, 1] for one observation (written into self.action)."""
        x = self.actor.input_buf
        for i in range(self.obs_dim):
            x[i] = obs[i]
        self.actor.forward(1)
        y = self.actor.output_buf
        a = self.action
        for i in range(self.act_dim):
            v = y[i]
            if noise:
                v += self.rng.normal(0.0, noise)
            a[i] = -1.0 if v < -1.0 else (1.0 if v > 1.0 else v)
        return a

    def step(self):
        """One environment step and, after warm-up, one training update.
        Returns the episode return when an episode ended on this step, else None."""
        c = self.config
        if self.steps < c.warmup:
            a = self.action
            for i in range(self.act_dim):
                a[i] = self.rng.uniform(-1.0, 1.0)
        else:
            a = self.act(self.obs, c.exploration_noise)
        ea = self.env_action
        for i in range(self.act_dim):
            ea[i] = self.scale[i] * a[i] + self.offset[i]
        next_obs, reward, terminated, truncated = self.env.step(ea)
        self.replay.add(self.obs, a, reward, next_obs, terminated, terminated or truncated)
        self.episode_return += reward
        self.steps += 1
        finished = None
        if terminated or truncated:
            finished = self.episode_return
            self.episode_return = 0.0
            self.episodes += 1
            self._copy_obs(self.env.reset(self.rng))
        else:
            self._copy_obs(next_obs)
        if self.steps >= c.warmup and self.replay.size >= c.batch:
            self.train_step()
        return finished

    def train_step(self):
        c = self.config
        n = c.batch
        od, ad = self.obs_dim, self.act_dim
        critic1, critic2 = self.critics
        actor_target = self.actor_target
        rng = self.rng
        # batch: (obs, action) straight into critic 1's input rows, next obs into the target actor
        self.replay.sample_into(rng, n, critic1.input_buf, od + ad, self.reward, actor_target.input_buf, self.done)
        # target action with clipped smoothing noise, written beside next obs for the target critics
        actor_target.forward(n)
        a_next = actor_target.output_buf
        next_in = self.critic_targets[0].input_buf
        nobs = actor_target.input_buf
        clip = c.target_noise_clip
        for s in range(n):
            base = s * (od + ad)
            for i in range(od):
                next_in[base + i] = nobs[s * od + i]
            for i in range(ad):
                e = rng.normal(0.0, c.target_noise)
                e = -clip if e < -clip else (clip if e > clip else e)
                v = a_next[s * ad + i] + e
                next_in[base + od + i] = -1.0 if v < -1.0 else (1.0 if v > 1.0 else v)
        t1 = self.critic_targets[0]
        t2 = self.critic_targets[1]
        t1.forward(n)
        t2.forward(n)
        q1t = t1.output_buf
        q2t = t2.output_buf
        y = self.q_target
        gamma = c.gamma
        rs = c.reward_scale
        for s in range(n):
            q = q1t[s] if q1t[s] < q2t[s] else q2t[s]
            y[s] = rs * self.reward[s] + gamma * (1.0 - self.done[s]) * q
        # critics: mean squared error to the shared target
        dq = self.dq
        scale = 2.0 / n
        for k in range(2):
            critic = self.critics[k]
            critic.forward(n)
            q = critic.output_buf
            for s in range(n):
                dq[s] = scale * (q[s] - y[s])
            critic.backward(self.dq_view, n)
            critic.adam_step(c.critic_lr * self.lr_scale())
        self.updates += 1
        if self.updates % c.policy_delay:
            return
        # actor: maximise Q1(s, pi(s)); dL/dQ = -1/n, back through critic 1 to the action inputs
        actor = self.actor
        obs_act = critic1.input_buf
        x = actor.input_buf
        for s in range(n):
            for i in range(od):
                x[s * od + i] = obs_act[s * (od + ad) + i]
        actor.forward(n)
        a = actor.output_buf
        for s in range(n):
            for i in range(ad):
                obs_act[s * (od + ad) + od + i] = a[s * ad + i]
        critic1.forward(n)
        inv = -1.0 / n
        for s in range(n):
            dq[s] = inv
        critic1.backward(self.dq_view, n, param_grads=False, dx=self.dx)
        dx = self.dx_buf
        da = self.da
        for s in range(n):
            for i in range(ad):
                da[s * ad + i] = dx[s * (od + ad) + od + i]
        actor.backward(self.da_view, n)
        actor.adam_step(c.actor_lr * self.lr_scale())
        # targets follow slowly
        tau = c.tau
        self.actor_target.polyak_from(actor, tau)
        for k in range(2):
            self.critic_targets[k].polyak_from(self.critics[k], tau)

    def lr_scale(self):
        c = self.config
        if c.lr_end == 1.0:
            return 1.0
        done = self.steps / c.steps
        return c.lr_end + (1.0 - c.lr_end) * (1.0 - done) if done < 1.0 else c.lr_end

    def policy(self):
        """The current actor as a Policy in environment units (sharing the actor's weights)."""
        from .policy import Policy  # imported when asked: a board training TD3 need not hold it

        return Policy(self.actor.sizes, self.actor.acts, params=self.actor.params, act_scale=self.scale, act_offset=self.offset)

