"""TD3 from the device core solves Pendulum: -300 or better after 10,000 steps (slow)."""
import pytest

from microrl.train import train_pendulum


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_td3_solves_pendulum(seed):
    agent, evals = train_pendulum(steps=10000, seed=seed, eval_every=5000, eval_episodes=10)
    step, mean, std = evals[-1]
    assert step == 10000
    assert mean >= -300, evals
