"""The off-policy algorithms' default configurations, apart from their compiled code (td3.py,
sac.py), so that `microrl train --help` and the other commands list options without loading numba."""
from microrl.td3 import TD3Config

# the paper keeps 10,000 transitions for 10,000 steps, i.e. all of them; the host keeps up to
# a million (memory is only used as the buffer fills, and checkpoints hold the filled part)
REPLAY_CAPACITY = 1000000
# settings of the device core's TD3Config that only TD3 on a board has (train-on-board): its
# replay's 16-bit rows and random overwrite (what a small heap needs; the host's replay holds
# float32 rows in a ring) and the critics' reward scale. The host refuses them at any value but
# the default (td3.config(reward_scale=0.1) was accepted and did nothing) and lists them nowhere.
BOARD_ONLY = ("replay_fixed_point", "replay_overwrite", "reward_scale")


def td3_config():
    """The device core's TD3Config (the TD3 paper's Pendulum settings) with the host's replay."""
    c = TD3Config()
    c.replay_capacity = REPLAY_CAPACITY
    # the model-gradient actor (algos/model_gradient.py), off at horizon 0
    c.model_horizon = 0  # steps of the task's own step the actor's gradient rolls through
    c.model_batch = 16  # replayed observations the rollouts start from
    c.model_every = 50  # environment steps per model-gradient actor step
    c.model_start = 0  # the step from which it takes the actor's steps (TD3's own until then)
    c.model_value = 0.0  # weight of gamma^H Q1 at the rollouts' end (0: the rewards alone)
    c.model_lr = 3e-4  # the actor's learning rate (Adam) under the model gradient
    return c


class SACConfig:
    """Defaults: the TD3 paper's Pendulum settings (64-64 ReLU, batch 100, learning rates 1e-3,
    gamma .99, tau .005, 100 warm-up steps) with SAC's automatic entropy tuning (alpha starts at
    1, target entropy -action_dim)."""

    def __init__(self, **overrides):
        paper = TD3Config()  # the settings SAC shares with TD3, defined once
        for k in ("hidden", "activation", "batch", "gamma", "tau", "actor_lr", "critic_lr"):
            setattr(self, k, getattr(paper, k))
        self.alpha_lr = 1e-3
        self.initial_alpha = 1.0
        self.target_entropy = None  # None: -action_dim
        self.warmup = 100
        self.replay_capacity = REPLAY_CAPACITY
        self.steps = 10000
        for k in overrides:
            if not hasattr(self, k):
                raise ValueError("unknown SAC setting %r" % k)
            setattr(self, k, overrides[k])


def settings(config):
    """{name: value} of a configuration object (the host's: without BOARD_ONLY)."""
    return {k: getattr(config, k) for k in dir(config) if not k.startswith("_") and k not in BOARD_ONLY and not callable(getattr(config, k))}


def threads_from_environment():
    """MICRORL_THREADS as TD3/SAC's thread count (1 or 2), or None when unset; ValueError for any
    other value (0 and negative numbers were taken as 1, without a word)."""
    import os

    given = os.environ.get("MICRORL_THREADS")
    if not given:
        return None
    try:
        threads = int(given)
    except ValueError:
        threads = None
    if threads not in (1, 2):
        raise ValueError("MICRORL_THREADS=%s: give 1 or 2 (TD3/SAC's threads: 2 runs the second critic's half of each update on a second thread), or unset it" % given[:40])
    return threads
