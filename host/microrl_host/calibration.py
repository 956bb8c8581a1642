"""Host side of the fixed-point path: calibration observations for quantising a policy, and the
closed-loop comparison of an int16 policy against its float original on its task (returns, not
only action differences). Used by `microrl export --int16`, the tests and bench/."""
from microrl.evaluate import evaluate
from microrl.rng import Rng
from microrl.task import policy_env, task_obs_dim

from .envs.gym import rollout_returns


def fits(policy, task):
    """Whether policy runs on the task module (its observation, less any pending actions, and
    its action sizes)."""
    return task is not None and task_obs_dim(policy) == task.OBS_DIM and policy.act_dim == task.ACT_DIM


def calibration_observations(policy, episodes=5, seed=1, obs_range=None, samples=2000, task=None, gym_env=None):
    """Observations to set the activation scales from. A policy that fits task (a task module)
    is rolled out on it in closed loop (the states it will meet), or on gym_env (a gymnasium id,
    `module:Id` or Env, episode e from reset(seed=seed + e)); otherwise, or when obs_range is
    given, uniform samples in +-obs_range per observation (in the units the policy receives)."""
    rng = Rng(seed)
    if obs_range is None and gym_env is not None:
        seen = []

        def recording(obs):
            seen.append([float(x) for x in obs])
            return policy(obs)

        _on_gym(gym_env, lambda env: rollout_returns(recording, env, episodes, seed, clip=True))
        return seen
    if obs_range is None and fits(policy, task):
        env = policy_env(task, policy)  # under its own action delay when it observes pending actions
        seen = []
        for _ in range(episodes):
            obs = env.reset(rng)
            for _ in range(env.max_steps):
                seen.append(list(obs))
                obs, _, terminated, truncated = env.step(policy(obs))
                if terminated or truncated:
                    break
        return seen
    r = 10.0 if obs_range is None else float(obs_range)
    return [[rng.uniform(-r, r) for _ in range(policy.obs_dim)] for _ in range(samples)]


def check_range(policy, obs_range, headroom=1.25):
    """ValueError (one line) when uniform calibration observations in +-obs_range would give the
    network inputs that int16 fixed point cannot hold (more than 32767 / headroom after the
    policy's normalisation): said before any work, with the largest range that fits."""
    from microrl.fixedpoint import _INT16_MAX

    limit = _INT16_MAX / headroom
    mean = policy.obs_mean
    std = policy.obs_std
    worst, fits, spread = 0.0, float("inf"), 0.0
    for i in range(policy.obs_dim):
        m = 0.0 if mean is None else mean[i]
        s = 1.0 if std is None else std[i]
        worst = max(worst, (abs(m) + obs_range) / s)
        fits = min(fits, limit * s - abs(m))
        spread = max(spread, obs_range / s)
    finest = 2.0 ** -15  # int16 inputs have at most 15 fractional bits
    if spread < finest:
        raise ValueError("--obs-range %g is below what int16 inputs resolve (2**-15 = %.2g after the policy's normalisation): every calibration "
                         "observation would be the same number; give the range the observations really span" % (obs_range, finest))
    if worst > limit:
        raise ValueError("--obs-range %g gives the network inputs up to +-%.6g; int16 fixed point holds +-%d (+-%.6g with the %.2f headroom "
                         "calibration keeps, whole numbers only), so for this policy give --obs-range %.6g or less (a range as large as "
                         "the observations really get), or train with observation normalisation" % (obs_range, worst, _INT16_MAX, limit, headroom, max(0.0, fits)))


def action_error(policy, quantised, observations):
    """Largest and mean absolute difference of the actions over observations."""
    worst = 0.0
    total = 0.0
    count = 0
    for obs in observations:
        a = policy(obs)
        b = quantised(obs)
        for i in range(policy.act_dim):
            d = abs(a[i] - b[i])
            worst = max(worst, d)
            total += d
            count += 1
    return worst, total / max(1, count)


def _on_gym(gym_env, run):
    """run(env) on the gymnasium env gym_env names (made, then closed), or on the Env given."""
    from .envs.gym import make_gym_env

    env = make_gym_env(gym_env)
    try:
        return run(env)
    finally:
        if env is not gym_env:
            env.close()


def closed_loop(policy, quantised, episodes=10, seed=12345, task=None, gym_env=None):
    """Returns of both policies on the task module (or the gymnasium env gym_env, actions clipped
    to its bounds) from the same initial states: a dict with the means, standard deviations,
    per-episode returns and the largest per-episode difference."""
    if gym_env is not None:
        (f_mean, f_std, f_returns), (q_mean, q_std, q_returns) = _on_gym(
            gym_env, lambda env: [rollout_returns(p, env, episodes, seed, clip=True) for p in (policy, quantised)])
    else:
        env = policy_env(task, policy)
        f_mean, f_std, f_returns = evaluate(policy, env, episodes, seed)
        q_mean, q_std, q_returns = evaluate(quantised, env, episodes, seed)
    return {
        "episodes": episodes,
        "seed": seed,
        "float_mean": f_mean,
        "float_std": f_std,
        "int16_mean": q_mean,
        "int16_std": q_std,
        "mean_difference": q_mean - f_mean,
        "worst_episode_difference": max(abs(a - b) for a, b in zip(f_returns, q_returns)),
        "float_returns": f_returns,
        "int16_returns": q_returns,
    }
