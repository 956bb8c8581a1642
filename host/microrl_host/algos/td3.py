"""TD3 (Fujimoto et al. 2018) on the host, compiled with numba: environment step, replay,
sampling, forward, backward, Adam and target updates all run in compiled code. The same
algorithm as the device core's microrl.td3 (same defaults, TD3Config), at host speed.

    from microrl_host.algos import td3
    run = td3.train(td3.config(steps=10000))    # the default task (microrl_host.tasks.DEFAULT)
    run.policy, run.evals, run.stats            # a microrl.policy.Policy, [(step, mean, std)], ...
    run = td3.train(td3.config(steps=20000), "Pendulum-v1")  # any gymnasium Box env, stepped in Python
    run = td3.ALGO.run("./cartpole.py", seed=1)  # a task file (docs/tasks.md): its suggested settings
"""
from collections import namedtuple

import numpy as np

from microrl.layout import actor_critic_sizes

from ..nn import mlp
from ..nn.jit import inline
from ..nn.mlp import backward, forward, polyak
from ..nn.rng import normal
from . import loop, offpolicy, twin
from .config import TD3Settings
from .loop import UPDATES
from .replay import replay_sample, replay_sample_numpy

NAME = "td3"
SQUASH = False  # the actor ends in tanh already

# hyperparameters travel into compiled code as one float64 array, in this order (the warm-up
# first, where loop.py reads it)
HP = ("warmup", "gamma", "tau", "actor_lr", "critic_lr", "exploration_noise", "target_noise", "target_noise_clip", "policy_delay")
WARMUP, GAMMA, TAU, ACTOR_LR, CRITIC_LR, EXPLORATION_NOISE, TARGET_NOISE, TARGET_NOISE_CLIP, POLICY_DELAY = range(len(HP))
MODEL_ACTOR = len(HP)  # after HP: 1 while the model's gradient takes the actor's steps (model_gradient.py; the driver sets it)
CRITIC_LOSS_SCALE = 2.0  # mean squared error; last in the array (twin.py's convention)
assert (TAU, CRITIC_LR) == (twin.TAU, twin.CRITIC_LR)

State = namedtuple(
    "State",
    "actor actor_target critic1 critic2 critic1_target critic2_target replay rng counters env "
    "obs next_obs action critic_in next_in actor_in reward done y dq dx actor_x q1 q2 dq2 dx2 sync half",
)


def hyperparameters(config):
    return np.array([float(getattr(config, k)) for k in HP] + [0.0, CRITIC_LOSS_SCALE], np.float64)


def new_state(config, obs_dim, act_dim, seed):
    """Fresh networks (PyTorch init from the seed), empty replay, counters at zero."""
    c = config
    n = c.batch
    actor_sizes, critic_sizes = actor_critic_sizes(obs_dim, act_dim, c.hidden)
    actor_acts = (c.activation, "tanh")
    critic_acts = (c.activation, "identity")
    actor = mlp.new_net(actor_sizes, actor_acts, n, seed=seed * 4 + 1)
    critic1 = mlp.new_net(critic_sizes, critic_acts, n, seed=seed * 4 + 2)
    critic2 = mlp.new_net(critic_sizes, critic_acts, n, seed=seed * 4 + 3)
    targets = [mlp.target_of(net) for net in (actor, critic1, critic2)]
    f32 = np.float32
    return State(
        actor=actor,
        actor_target=targets[0],
        critic1=critic1,
        critic2=critic2,
        critic1_target=targets[1],
        critic2_target=targets[2],
        **loop.loop_arrays(c, obs_dim, act_dim, seed),
        actor_x=np.zeros((n, obs_dim), f32),  # the actor's input rows, copied out of critic_in's
        half=twin.new_half(actor, critic1, n, obs_dim, act_dim),
    )


def actor_export(state):
    """(sizes, activation codes, params) of the deterministic actor, in the policy file's layout."""
    a = mlp.view(state.actor)
    return list(a.sizes), list(a.acts), a.params.copy()


def losses(state, config, rng):
    """{losses/critic, losses/actor} of the networks as they are now, on offpolicy.LOSS_ROWS
    replay transitions drawn with rng (numpy, outside the compiled loop): the critics' target as
    the update's (smoothing noise included), the actor's loss -mean Q1(s, pi(s))."""
    obs, act, rew, next_obs, done = replay_sample_numpy(state.replay, rng, offpolicy.LOSS_ROWS)
    n = rew.shape[0]
    a_next = np.array(mlp.numpy_net(state.actor_target, n).forward(n, next_obs))
    noise = np.clip(rng.normal(0.0, config.target_noise, a_next.shape), -config.target_noise_clip, config.target_noise_clip)
    next_in = offpolicy.critic_input(next_obs, np.clip(a_next + noise, -1.0, 1.0))
    q1, q2 = offpolicy.q_values(state.critic1_target, next_in), offpolicy.q_values(state.critic2_target, next_in)
    y = rew + config.gamma * (1.0 - done) * np.minimum(q1, q2)
    a_pi = mlp.numpy_net(state.actor, n).forward(n, obs)
    return {"losses/critic": offpolicy.critic_loss(state, CRITIC_LOSS_SCALE, obs, act, y),
            "losses/actor": -float(offpolicy.q_values(state.critic1, offpolicy.critic_input(obs, a_pi)).mean())}


def update(S, hp):
    """One TD3 update from a sampled batch: both critics, and every policy_delay updates the
    actor and the three targets."""
    n = S.reward.shape[0]
    od = S.obs.shape[0]
    ad = S.action.shape[0]
    replay_sample(S.replay, S.rng, n, S.critic_in, S.reward, S.actor_in, S.done)
    # target actions with clipped smoothing noise, beside the next observations
    mlp.copy_columns(S.actor_in, S.actor_x, 0)
    a_next = forward(S.actor_target, S.actor_x, n)
    clip = hp[TARGET_NOISE_CLIP]
    for s in range(n):
        for i in range(od):
            S.next_in[s, i] = S.actor_in[s, i]
        for i in range(ad):
            e = normal(S.rng, 0.0, hp[TARGET_NOISE])
            e = -clip if e < -clip else (clip if e > clip else e)
            v = a_next[s, i] + e
            S.next_in[s, od + i] = -1.0 if v < -1.0 else (1.0 if v > 1.0 else v)
    # the clipped double-Q target
    twin.both_sides(S, hp, twin.TARGETS)
    for s in range(n):
        q = S.q2[s] if S.q2[s] < S.y[s] else S.y[s]
        S.y[s] = S.reward[s] + hp[GAMMA] * (1.0 - S.done[s]) * q
    S.counters[UPDATES] += 1
    step = S.counters[UPDATES]
    twin.both_sides(S, hp, twin.CRITICS)
    delay = np.int64(hp[POLICY_DELAY])
    if step % delay:
        return
    # actor: maximise Q1(s, pi(s)), half the batch on each thread (unless the model's gradient
    # takes the actor's steps, between chunks: model_gradient.py)
    own = hp[MODEL_ACTOR] == 0.0
    if own:
        twin.split_rows(S)
        twin.both_sides(S, hp, twin.ACTOR_ROWS)
        twin.add_half_gradient(S)
    # the critic targets follow on the worker while the actor takes its step
    handed = twin.begin(S, twin.CRITIC_TARGETS)
    if own:
        mlp.adam(S.actor, hp[ACTOR_LR], step // delay)
    polyak(S.actor_target, S.actor, hp[TAU])
    twin.finish(S, hp, twin.CRITIC_TARGETS, handed)


def explore(S, hp, obs, out):
    """Training-time action after the warm-up: the actor's plus Gaussian noise, in [-1, 1]."""
    mlp.greedy_action(S.actor, obs, False, out)
    for i in range(out.shape[0]):
        v = out[i] + normal(S.rng, 0.0, hp[EXPLORATION_NOISE])
        out[i] = -1.0 if v < -1.0 else (1.0 if v > 1.0 else v)


# update(), explore() and the worker thread's twin.serve() are compiled inside the one
# off-policy loop, for this State
loop.bind(State, explore, update, twin.serve)
ALGO = offpolicy.Algorithm(
    name=NAME, squash=SQUASH, settings=TD3Settings, hyperparameters=hyperparameters, new_state=new_state,
    actor_export=actor_export, losses=losses, model_actor_index=MODEL_ACTOR,
)
config = ALGO.config  # config(**overrides): the defaults with overrides, checked (a TD3Settings)
default_config = ALGO.default_config
train = ALGO.train  # train(config, env=None, callbacks=None, seed=0, **options) -> results.Run
train_task = ALGO.run  # train_task(task, steps=None, seed=None, ..., **settings) -> results.Run: what `microrl train` calls
