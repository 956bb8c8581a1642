"""SAC (Haarnoja et al. 2018, with automatic entropy tuning, as Stable-Baselines3 implements it)
on the host, compiled with numba like td3.py: the whole training loop runs in compiled code.

The actor outputs a mean and a log-std per action; actions are tanh(mean + std * noise). The
saved policy is the deterministic tanh(mean) actor in the device core's policy file format.

    from microrl_host.algos import sac
    run = sac.train(sac.config(steps=10000))  # run.policy, run.evals, run.stats
"""
from collections import namedtuple
from math import exp, log, pi

import numpy as np

from microrl.activations import TANH
from microrl.nn import layout
from microrl.layout import actor_critic_sizes

from ..nn import mlp
from ..nn.jit import inline
from ..nn.mlp import backward, forward, polyak
from ..nn.rng import normal
from . import loop, offpolicy, twin
from .config import SACSettings
from .loop import UPDATES
from .replay import replay_sample, replay_sample_numpy

NAME = "sac"
SQUASH = True  # the deterministic action is tanh(mean)
LOG_STD_MIN = -20.0  # Stable-Baselines3's clamp of the log-std output
LOG_STD_MAX = 2.0


HP = ("warmup", "gamma", "tau", "actor_lr", "critic_lr", "alpha_lr", "target_entropy")  # the warm-up first, as loop.py reads it
WARMUP, GAMMA, TAU, ACTOR_LR, CRITIC_LR, ALPHA_LR, TARGET_ENTROPY = range(len(HP))
CRITIC_LOSS_SCALE = 1.0  # half the mean squared error (Stable-Baselines3's); after HP (twin.py)
assert (TAU, CRITIC_LR) == (twin.TAU, twin.CRITIC_LR)

State = namedtuple(
    "State",
    "actor critic1 critic2 critic1_target critic2_target replay rng counters env alpha "
    "obs next_obs action critic_in next_in actor_in reward done y q1 q2 dq dq2 dx dx2 dout eps a_pi logp sync half",
)


def hyperparameters(config):
    values = []
    for k in HP:
        v = getattr(config, k)
        values.append(float("nan") if v is None else float(v))
    return np.array(values + [CRITIC_LOSS_SCALE], np.float64)


def new_state(config, obs_dim, act_dim, seed):
    c = config
    n = c.batch
    actor_sizes, critic_sizes = actor_critic_sizes(obs_dim, act_dim, c.hidden, actor_outputs=2 * act_dim)
    actor = mlp.new_net(actor_sizes, (c.activation, "identity"), n, seed=seed * 4 + 1)
    critics = [mlp.new_net(critic_sizes, (c.activation, "identity"), n, seed=seed * 4 + k) for k in (2, 3)]
    targets = [mlp.target_of(critic) for critic in critics]
    f32 = np.float32
    alpha = np.zeros(3)  # log alpha, and its Adam moments
    alpha[0] = log(c.initial_alpha)
    return State(
        actor=actor,
        critic1=critics[0],
        critic2=critics[1],
        critic1_target=targets[0],
        critic2_target=targets[1],
        **loop.loop_arrays(c, obs_dim, act_dim, seed),
        alpha=alpha,
        dout=np.zeros((n, 2 * act_dim), f32),
        eps=np.zeros((n, act_dim), f32),
        a_pi=np.zeros((n, act_dim), f32),
        logp=np.zeros(n, f32),
        half=twin.new_half(actor, critics[0], n, obs_dim, act_dim),  # TD3's; a Twin needs it
    )


def actor_export(state):
    """The deterministic actor tanh(mean): the mean rows of the last layer, tanh output."""
    a = mlp.view(state.actor)
    sizes = [int(s) for s in a.sizes]
    acts = [int(x) for x in a.acts]
    ad = sizes[-1] // 2
    wo, bo = layout(sizes)[0][-1]
    h = sizes[-2]
    p = a.params
    params = np.concatenate([p[:wo], p[wo : wo + ad * h], p[bo : bo + ad]])
    return sizes[:-1] + [ad], acts[:-1] + [TANH], params


@inline
def _sample(S, x, n):
    """Squashed Gaussian actions for n rows of x into S.a_pi, log-probabilities into S.logp,
    the noise into S.eps (the actor keeps its activations for the backward pass)."""
    ad = S.a_pi.shape[1]
    out = forward(S.actor, x, n)
    half_log_2pi = 0.5 * log(2.0 * pi)
    for s in range(n):
        lp = 0.0
        for i in range(ad):
            ls = out[s, ad + i]
            ls = LOG_STD_MIN if ls < LOG_STD_MIN else (LOG_STD_MAX if ls > LOG_STD_MAX else ls)
            e = normal(S.rng, 0.0, 1.0)
            a = np.tanh(out[s, i] + exp(ls) * e)
            S.eps[s, i] = e
            S.a_pi[s, i] = a
            lp += -0.5 * e * e - ls - half_log_2pi - log(1.0 - a * a + 1e-6)
        S.logp[s] = lp
    return out


def losses(state, config, rng):
    """{losses/critic, losses/actor, losses/alpha, losses/alpha_loss} of the networks as they
    are now, on offpolicy.LOSS_ROWS replay transitions drawn with rng (numpy, outside the
    compiled loop), as the update defines them (_sample's squashed Gaussian, in numpy)."""
    obs, act, rew, next_obs, done = replay_sample_numpy(state.replay, rng, offpolicy.LOSS_ROWS)
    n = rew.shape[0]
    actor = mlp.numpy_net(state.actor, n)
    alpha = exp(state.alpha[0])

    def sample(x):
        out = actor.forward(n, x)
        ad = out.shape[1] // 2
        ls = np.clip(out[:, ad:], LOG_STD_MIN, LOG_STD_MAX)
        e = rng.standard_normal(ls.shape)
        a = np.tanh(out[:, :ad] + np.exp(ls) * e)
        logp = (-0.5 * e * e - ls - 0.5 * log(2.0 * pi) - np.log(1.0 - a * a + 1e-6)).sum(axis=1)
        return a, logp

    def min_q(nets, x, a):
        x = offpolicy.critic_input(x, a)
        return np.minimum(offpolicy.q_values(nets[0], x), offpolicy.q_values(nets[1], x))

    a_next, logp_next = sample(next_obs)
    y = rew + config.gamma * (1.0 - done) * (min_q((state.critic1_target, state.critic2_target), next_obs, a_next) - alpha * logp_next)
    a_pi, logp = sample(obs)
    target_entropy = -float(act.shape[1]) if config.target_entropy is None else config.target_entropy
    return {"losses/critic": offpolicy.critic_loss(state, CRITIC_LOSS_SCALE, obs, act, y),
            "losses/actor": float(np.mean(alpha * logp - min_q((state.critic1, state.critic2), obs, a_pi))),
            "losses/alpha": alpha, "losses/alpha_loss": -float(state.alpha[0]) * float(np.mean(logp + target_entropy))}


def update(S, hp):
    n = S.reward.shape[0]
    od = S.obs.shape[0]
    ad = S.action.shape[0]
    alpha = exp(S.alpha[0])
    target_entropy = hp[TARGET_ENTROPY]
    if np.isnan(target_entropy):
        target_entropy = -float(ad)
    replay_sample(S.replay, S.rng, n, S.critic_in, S.reward, S.actor_in, S.done)
    # soft target: r + gamma * (min target Q(s', a') - alpha log pi(a'|s')), a' from the actor
    _sample(S, S.actor_in, n)
    for s in range(n):
        for i in range(od):
            S.next_in[s, i] = S.actor_in[s, i]
        for i in range(ad):
            S.next_in[s, od + i] = S.a_pi[s, i]
    twin.both_sides(S, hp, twin.TARGETS)
    for s in range(n):
        q = S.q2[s] if S.q2[s] < S.y[s] else S.y[s]
        S.y[s] = S.reward[s] + hp[GAMMA] * (1.0 - S.done[s]) * (q - alpha * S.logp[s])
    S.counters[UPDATES] += 1
    step = S.counters[UPDATES]
    twin.both_sides(S, hp, twin.CRITICS)
    # actor: minimise mean(alpha log pi(a|s) - min Q(s, a)), a reparameterised
    mlp.copy_columns(S.critic_in, S.actor_in, 0)
    out = _sample(S, S.actor_in, n)
    for s in range(n):
        for i in range(ad):
            S.critic_in[s, od + i] = S.a_pi[s, i]
    twin.both_sides(S, hp, twin.ACTOR_Q)
    for s in range(n):  # the gradient of the min flows through the smaller critic
        first = S.q1[s] <= S.q2[s]
        S.dq[s, 0] = -1.0 / n if first else 0.0
        S.dq2[s, 0] = 0.0 if first else -1.0 / n
    twin.both_sides(S, hp, twin.ACTOR_DQ)
    # the critic targets follow on the worker while the actor and the temperature learn
    handed = twin.begin(S, twin.CRITIC_TARGETS)
    c = alpha / n
    alpha_grad = 0.0
    for s in range(n):
        alpha_grad -= (S.logp[s] + target_entropy) / n
        for i in range(ad):
            a = S.a_pi[s, i]
            one_minus = 1.0 - a * a
            dlogp_du = 2.0 * a * one_minus / (one_minus + 1e-6)
            du = (S.dx[s, od + i] + S.dx2[s, od + i]) * one_minus + c * dlogp_du
            S.dout[s, i] = du
            ls = out[s, ad + i]
            if ls < LOG_STD_MIN or ls > LOG_STD_MAX:
                S.dout[s, ad + i] = 0.0
            else:
                S.dout[s, ad + i] = du * exp(ls) * S.eps[s, i] - c
    backward(S.actor, S.actor_in, n, S.dout, mlp.grads(S.actor), S.dx[:0])
    mlp.adam(S.actor, hp[ACTOR_LR], step)
    # temperature: Adam on log alpha for the loss -log_alpha * mean(log pi + target entropy)
    b1, b2 = 0.9, 0.999
    S.alpha[1] = b1 * S.alpha[1] + (1.0 - b1) * alpha_grad
    S.alpha[2] = b2 * S.alpha[2] + (1.0 - b2) * alpha_grad * alpha_grad
    S.alpha[0] -= hp[ALPHA_LR] / (1.0 - b1**step) * S.alpha[1] / (np.sqrt(S.alpha[2]) / np.sqrt(1.0 - b2**step) + 1e-8)
    twin.finish(S, hp, twin.CRITIC_TARGETS, handed)


def explore(S, hp, obs, out):
    """Training-time action after the warm-up: a sample of the policy, in [-1, 1]."""
    ad = out.shape[0]
    x = mlp.scratch_a(S.actor)[: obs.shape[0]].reshape((1, obs.shape[0]))
    for i in range(obs.shape[0]):
        x[0, i] = obs[i]
    y = forward(S.actor, x, x.shape[0])  # not the constant 1: that would compile forward once more
    for i in range(ad):
        ls = y[0, ad + i]
        ls = LOG_STD_MIN if ls < LOG_STD_MIN else (LOG_STD_MAX if ls > LOG_STD_MAX else ls)
        out[i] = np.tanh(y[0, i] + exp(ls) * normal(S.rng, 0.0, 1.0))


# update(), explore() and the worker thread's twin.serve() are compiled inside the one
# off-policy loop, for this State
loop.bind(State, explore, update, twin.serve)
ALGO = offpolicy.Algorithm(
    name=NAME, squash=SQUASH, settings=SACSettings, hyperparameters=hyperparameters, new_state=new_state,
    actor_export=actor_export, losses=losses,
)
config = ALGO.config  # config(**overrides): the defaults with overrides, checked (a SACSettings)
default_config = ALGO.default_config
train = ALGO.train  # train(config, env=None, callbacks=None, seed=0, **options) -> results.Run
train_task = ALGO.run  # train_task(task, steps=None, seed=None, ..., **settings) -> results.Run: what `microrl train` calls
