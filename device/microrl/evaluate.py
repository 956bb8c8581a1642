# Deterministic rollouts: mean and standard deviation of the return over N episodes.
from math import sqrt

from .rng import Rng


def evaluate(policy, env, episodes=10, seed=12345, max_steps=None):
    """policy: obs -> action (environment units), e.g. a Policy or TD3.policy(). Episodes start
    from resets drawn from Rng(seed), so two policies can be compared on the same starts."""
    rng = Rng(seed)
    returns = []
    limit = max_steps or getattr(env, "max_steps", 1000)
    for _ in range(episodes):
        obs = env.reset(rng)
        total = 0.0
        for _ in range(limit):
            obs, reward, terminated, truncated = env.step(policy(obs))
            total += reward
            if terminated or truncated:
                break
        returns.append(total)
    mean = sum(returns) / len(returns)
    var = sum((r - mean) * (r - mean) for r in returns) / len(returns)
    return mean, sqrt(var), returns
