"""Reference vectors for the policy files the host writes (docs/policy-format.md, flag 16): a
handful of observations spread over those the policy met, with the actions computed for them on
the host, so that a board (microrl deploy) or any runtime (microrl.load(path, check=True)) can
check that it computes the same actions."""
import numpy as np

from microrl.references import TOLERANCE, References

COUNT = 8  # 8 vectors: 136 bytes for Pendulum's 3-1 policy, 1.1 KB for a 27-8 one
MAX_REFERENCES = 1000  # the most a command writes: a handful checks a runtime as well


def load_checked(path):
    """microrl.load(path), and the file's reference vectors checked on this host when it has
    some (as a board checks them): a PolicyFileError naming the reference section for one that
    holds NaN, an observation the policy refuses, or actions this host does not compute. What a
    command loads before it uses or copies a policy (deploy: before the board's file is touched)."""
    import microrl
    from microrl.references import check

    policy = microrl.load(path)
    if policy.reference_count:
        with open(path, "rb") as f:
            check(policy, f, path)
    return policy


def spread(observations, count=COUNT):
    """count rows of observations, evenly spaced over them (all of them when there are fewer),
    as float32-exact lists (what the file stores)."""
    rows = np.asarray(observations, dtype=np.float32).reshape(len(observations), -1)
    rows = rows[np.all(np.isfinite(rows), axis=1)]
    if len(rows) == 0:
        raise ValueError("no finite observations to take reference vectors from")
    index = np.unique(np.linspace(0, len(rows) - 1, min(count, len(rows))).round().astype(int))
    return rows[index].astype(np.float64).tolist()


def attach(policy, observations, actions=None, count=COUNT, tolerance=TOLERANCE):
    """Give policy (a Policy or QuantisedPolicy) reference vectors: count of observations (spread
    over them; all when actions are given, one row each) with actions (default: the policy's own
    on this host). Returns policy; save() then writes them."""
    if actions is None:
        observations = spread(observations, count)
        actions = [list(policy(o)) for o in observations]
    else:
        observations = np.asarray(observations, dtype=np.float32).astype(np.float64).tolist()
    policy.references = References(observations, actions, tolerance)
    return policy


def centred_for_int16(quantised, observations):
    """The observations moved to the middle of their int16 input step (the value whose scaled
    input is a whole number, inside the input clipping), so that a runtime whose float rounding
    of (obs - mean) / std differs from this host's still feeds the integer network the same int16
    input; observations that cannot be centred to float32 precision are left out."""
    q = quantised
    n_in = q.sizes[0]
    step = 2.0 ** q.fx[0]
    mean = np.zeros(n_in) if q.obs_mean is None else np.array(q.obs_mean, np.float64)
    std = np.ones(n_in) if q.obs_std is None else np.array(q.obs_std, np.float64)
    out = []
    for obs in np.asarray(observations, np.float64).reshape(-1, n_in):
        x = (obs - mean) / std
        if q.in_low is not None:
            x = np.clip(x, np.array(q.in_low, np.float64), np.array(q.in_high, np.float64))
        k = np.clip(np.round(x * step), -32767, 32767)
        if q.in_low is not None:  # a step centre just outside the clipping range: one step inside
            k = np.where(k / step > np.array(q.in_high), k - 1, k)
            k = np.where(k / step < np.array(q.in_low), k + 1, k)
        centred = (mean + std * (k / step)).astype(np.float32)
        again = (centred.astype(np.float64) - mean) / std * step
        if np.all(np.abs(again - k) < 0.05):
            out.append(centred.astype(np.float64).tolist())
    return out
