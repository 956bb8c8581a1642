"""TD3's and SAC's settings (settings.Settings dataclasses), apart from their compiled code
(td3.py, sac.py) so that `microrl train --help` and the other commands list options without
loading numba. The defaults shared with the board are the device core's TD3Config (the TD3
paper's Pendulum settings), read from it: defined once."""
import dataclasses
from typing import ClassVar

from microrl.activations import NAMES
from microrl.td3 import TD3Config

from .settings import Settings, setting

PAPER = TD3Config()
# the paper keeps 10,000 transitions for 10,000 steps, i.e. all of them; the host keeps up to
# a million (memory is only used as the buffer fills, and checkpoints hold the filled part)
REPLAY_CAPACITY = 1000000
# settings of the device core's TD3Config that only TD3 on a board has (train-on-board): its
# replay's 16-bit rows and random overwrite (what a small heap needs; the host's replay holds
# float32 rows in a ring) and the critics' reward scale. The host refuses them at any value but
# the default (td3.config(reward_scale=0.1) was accepted and did nothing) and lists them nowhere.
BOARD_ONLY = ("replay_fixed_point", "replay_overwrite", "reward_scale")
OFFPOLICY_THREADS = "1 or 2 (2: the second critic's half of each update on a second thread)"


@dataclasses.dataclass(init=False)
class OffPolicySettings(Settings):
    """What TD3 and SAC share: the networks, the replay, the learning rates, the run's length."""

    RUN_DEFAULTS: ClassVar[dict] = {"eval_every": 1000, "checkpoint_every": 1000}
    THREADS: ClassVar[str] = OFFPOLICY_THREADS
    MAX_THREADS: ClassVar[int] = 2

    hidden: tuple = setting(PAPER.hidden, "hidden layer sizes, e.g. 64,64")
    activation: str = setting(PAPER.activation, "hidden activation", choices=NAMES[1:])
    gamma: float = setting(PAPER.gamma, "discount factor", above=0, high=1)
    batch: int = setting(PAPER.batch, "transitions per update", low=1, whole=True)
    tau: float = setting(PAPER.tau, "Polyak rate of the target networks", above=0, high=1)
    actor_lr: float = setting(PAPER.actor_lr, "actor learning rate (Adam)", above=0)
    critic_lr: float = setting(PAPER.critic_lr, "critic learning rate (Adam)", above=0)
    warmup: int = setting(PAPER.warmup, "random steps before the actor acts and training starts", low=0, whole=True)
    replay_capacity: int = setting(REPLAY_CAPACITY, "transitions the replay buffer keeps (then the oldest goes)", low=1, whole=True)
    steps: int = setting(PAPER.steps, "steps in all", low=1, whole=True, option=False)

    def relations(self):
        if self.replay_capacity < self.batch:
            return ["replay_capacity (%d) must be at least batch (%d): a batch is drawn from the replay buffer" % (self.replay_capacity, self.batch)]
        return []

    def memory(self):
        """What training keeps in memory, for the command line's check (commands/train.py)."""
        return dict(hidden=self.hidden, update_rows=self.batch, rows=self.replay_capacity, outputs=self.OUTPUTS, copies=5, advice="use a smaller --hidden, --batch or --replay-capacity")


MODEL = "with model_horizon: "


@dataclasses.dataclass(init=False)
class TD3Settings(OffPolicySettings):
    """The TD3 paper's Pendulum settings, the host's replay, and the experiments."""

    NAME: ClassVar[str] = "td3"
    OUTPUTS: ClassVar[int] = 1

    policy_delay: int = setting(PAPER.policy_delay, "critic updates per actor and target update", low=1, whole=True)
    exploration_noise: float = setting(PAPER.exploration_noise, "std of the action noise while training, actions in [-1, 1]", low=0)
    target_noise: float = setting(PAPER.target_noise, "std of the target policy smoothing noise", low=0)
    target_noise_clip: float = setting(PAPER.target_noise_clip, "clip of the target policy smoothing noise", low=0)
    lr_end: float = setting(PAPER.lr_end, "the learning rates fall linearly from their value at the first step to this share of it at the last "
                            "(1.0: constant; 0.1 ends at a tenth, which settles small networks late in a run)", low=0, high=1, experimental=True)
    # the model-gradient actor (algos/model_gradient.py), off at horizon 0
    model_horizon: int = setting(0, "0, or the steps of the task's own simulator the actor's gradient rolls through from replayed observations "
                                    "(the return's gradient in place of the critic's action gradient; a task with state_from_observation: docs/tasks.md)",
                                 low=0, whole=True, experimental=True)
    model_batch: int = setting(16, MODEL + "replayed observations the rollouts start from", low=1, whole=True, experimental=True)
    model_every: int = setting(50, MODEL + "environment steps per model-gradient actor step", low=1, whole=True, experimental=True)
    model_start: int = setting(0, MODEL + "the step from which the model gradient takes the actor's steps (TD3's own before)", low=0, whole=True, experimental=True)
    model_value: float = setting(0.0, MODEL + "weight of gamma^H Q1 at the rollouts' end (0: the rewards alone)", low=0, experimental=True)
    model_lr: float = setting(3e-4, MODEL + "the actor's learning rate (Adam) under the model gradient", above=0, experimental=True)


@dataclasses.dataclass(init=False)
class SACSettings(OffPolicySettings):
    """The TD3 paper's Pendulum settings (64-64 ReLU, batch 100, learning rates 1e-3, gamma .99,
    tau .005) with 100 warm-up steps and SAC's automatic entropy tuning (alpha starts at 1,
    target entropy -action_dim)."""

    NAME: ClassVar[str] = "sac"
    OUTPUTS: ClassVar[int] = 2  # the actor's: a mean and a log std per action

    warmup: int = setting(100, "random steps before the actor acts and training starts", low=0, whole=True)
    alpha_lr: float = setting(1e-3, "entropy temperature learning rate (Adam)", above=0)
    initial_alpha: float = setting(1.0, "starting entropy temperature", above=0)
    target_entropy: float = setting(None, "entropy the temperature is tuned towards", kind=float, shown="-action_dim")


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
