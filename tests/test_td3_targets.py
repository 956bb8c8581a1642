"""The host TD3's critic-target settings (docs/quadrotor.md, "What the critics say where the actor
rests"): target_min (the share of the twin critics' min in the target, the rest their mean;
above 1 it subtracts their spread) and reward_offset (rewards centred: values near 0, the same
optimal policy). Each must reach the compiled update (a stale compiled loop once ignored a new
setting: test_task_cache_key.py), and leave the default run as it was."""
import numpy as np
import pytest

from microrl_host.algos import td3

GAMMA = 0.99


def test_a_centred_episode_is_worth_its_return_less_the_offsets_value():
    rewards = [1.5, 2.0, 0.3, 1.1]  # the last step terminates
    centred = getattr(td3.centred_reward, "py_func", td3.centred_reward)
    for offset in (0.0, 2.0, -0.5):
        plain = sum(GAMMA ** t * r for t, r in enumerate(rewards))
        shifted = sum(GAMMA ** t * centred(r, 1.0 if t == len(rewards) - 1 else 0.0, offset, GAMMA) for t, r in enumerate(rewards))
        assert shifted == pytest.approx(plain - offset / (1.0 - GAMMA))


def test_the_settings_travel_to_the_update_and_are_checked():
    hp = td3.hyperparameters(td3.ALGO.config(target_min=0.25, reward_offset=2.0))
    assert hp[td3.TARGET_MIN] == 0.25 and hp[td3.REWARD_OFFSET] == 2.0
    defaults = td3.hyperparameters(td3.ALGO.config())
    assert defaults[td3.TARGET_MIN] == 1.0 and defaults[td3.REWARD_OFFSET] == 0.0
    for bad in ({"target_min": -0.1}, {"target_min": float("nan")}, {"reward_offset": float("inf")}):
        with pytest.raises(ValueError, match=list(bad)[0]):
            td3.ALGO.config(**bad)


def _critic(**settings):
    run = td3.ALGO.run("pendulum", steps=400, seed=3, eval_every=0, eval_episodes=0, threads=1, warmup=100, batch=32, **settings)
    return np.array(td3.mlp.view(run.state.critic1).params, np.float64)


def test_the_compiled_update_uses_them():
    plain = _critic()
    assert np.array_equal(plain, _critic(target_min=1.0, reward_offset=0.0))  # the defaults: the same run
    assert not np.array_equal(plain, _critic(target_min=0.0))
    assert not np.array_equal(plain, _critic(reward_offset=1.0))
