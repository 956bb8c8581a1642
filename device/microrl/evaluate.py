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


def rollouts(policy, env, episodes=10, rng=None):
    """Deterministic episodes of policy on env (a microrl.task.Env): a list of (return,
    success 1/0, final error, steps) per episode, from env.reset(rng) (rng None: the env's own).
    success and final error are the task's hooks (0 and nan when it has none); success needs an
    episode that did not terminate."""
    task = env.task
    success = getattr(task, "success", None)
    error = getattr(task, "final_error", None)
    out = []
    for _ in range(episodes):
        obs = env.reset(rng)
        total = 0.0
        terminated = False
        for _ in range(env.max_steps):
            obs, reward, terminated, truncated = env.step(policy(obs))
            total += reward
            if terminated or truncated:
                break
        ok = 1 if success is not None and not terminated and success(env.P, env.s) else 0
        out.append((total, ok, error(env.P, env.s) if error is not None else float("nan"), env.t))
    return out
