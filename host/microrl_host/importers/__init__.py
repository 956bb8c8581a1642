"""microrl import: policies trained elsewhere as microrl policy files (docs/import.md), each checked
against the framework's own deterministic actions on a few hundred observations.

Sources: a Stable-Baselines3 .zip (sb3.py), a CleanRL-style PyTorch actor state_dict
(cleanrl.py), an ONNX MLP (onnx_graph.py). Each gives an Imported: a Chain (the network with its
observation normalisation, input clipping, action scaling and clipping) and actions(obs), the
framework computing its actions. convert() builds the policy, draws observations, compares the
framework's actions with the policy file's (loaded back with microrl.load), and writes the file
with reference vectors (the framework's actions on 8 of those observations) only if they agree."""
import os
import tempfile

import numpy as np

from .errors import EXTRA, ImportRefused, brief, need  # noqa: F401
from .imported import Imported  # noqa: F401

CHECK_COUNT = 256
KINDS = ("sb3", "torch", "onnx")


def detect(path):
    """Which kind of source path is: sb3, torch or onnx (from its contents, then its name)."""
    from .limits import check_source
    from .sb3 import is_sb3_zip

    check_source(path)  # a zip bomb or a file too big is refused before anything reads it
    if is_sb3_zip(path):
        return "sb3"
    with open(path, "rb") as f:
        head = f.read(64)
    ext = os.path.splitext(path)[1].lower()
    if ext == ".onnx":
        return "onnx"
    if head[:4] == b"PK\x03\x04" and head[30 : 30 + int.from_bytes(head[26:28], "little")] == b"data":
        # SB3 writes its 'data' first; this zip does not open as one (its end lost: what is found
        # may be the torch archive stored inside it)
        raise ImportRefused("%s: a damaged Stable-Baselines3 .zip (it starts as one, but its 'data' and 'policy.pth' cannot be read): cut short "
                            "or changed since it was saved; save or copy it again" % path)
    if head[:2] == b"PK" or ext == ".zip":  # SB3's .zip and torch's .pt are zip archives: a damaged one is named as such
        import zipfile

        try:
            with zipfile.ZipFile(path) as z:
                bad = z.testzip()  # the first member whose CRC fails, else None
            damaged = bad and "its member %r fails its CRC check" % bad
        except (zipfile.BadZipFile, OSError, EOFError) as e:
            damaged = brief(e)
        if damaged:
            raise ImportRefused("%s: a damaged zip archive (%s): an SB3 .zip or a PyTorch .pt file cut short or changed since it was saved; "
                                "save or copy it again" % (path, damaged))
    if head[:2] == b"PK" or ext in (".pt", ".pth", ".cleanrl_model") or head[:1] == b"\x80":  # torch's zip, or an old-style pickle
        return "torch"
    raise ImportRefused("%s: neither a Stable-Baselines3 .zip, a PyTorch .pt state_dict nor an ONNX .onnx file (give --kind if it is one)" % path)


def sample_observations(n, seed, imported, space=None, stats=None):
    """n observations to check on, and how they were drawn. From the normalisation statistics
    when there are some (mean + std z, z ~ N(0, 1); every 8th row z ~ N(0, (0.75 clip)^2) or
    N(0, 16), so that the clipping is exercised), else uniform in the observation Box (its
    bounded dimensions; N(0, 1) in the others), else N(0, 1)."""
    rng = np.random.default_rng(seed)
    n_in = imported.chain.n_in
    stats = stats or imported.obs_stats
    space = space or imported.obs_space
    if stats is not None:
        mean, std, clip = stats
        z = rng.standard_normal((n, n_in))
        tail = np.arange(n) % 8 == 7
        z[tail] *= 0.75 * clip if clip is not None else 4.0
        return mean + std * z, "%d from the normalisation statistics (mean + std N(0, 1); every 8th %s)" % (
            n, "at +-0.75 clip_obs std, past the clipping" if clip is not None else "at 4 std")
    if space is not None:
        low = np.asarray(space.low, np.float64).reshape(-1)
        high = np.asarray(space.high, np.float64).reshape(-1)
        bounded = np.isfinite(low) & np.isfinite(high)
        obs = rng.standard_normal((n, n_in))
        u = rng.uniform(0.0, 1.0, size=(n, n_in))
        obs[:, bounded] = (low + u * (high - low))[:, bounded]
        what = "uniform in the observation Box" if bounded.all() else "uniform in the Box's bounded dimensions, N(0, 1) in the %d unbounded" % (~bounded).sum()
        return obs, "%d %s" % (n, what)
    return rng.standard_normal((n, n_in)), "%d from N(0, 1) (no observation space known: give --env for the task's own)" % n


def difference(a, r):
    """|a - r| / max(1, |r|), elementwise: the measure of the reference check."""
    return np.abs(a - r) / np.maximum(1.0, np.abs(r))


def convert(imported, out, count=CHECK_COUNT, seed=0, tolerance=1e-4, references=8, space=None):
    """Build the policy, check it against the framework on `count` observations, write it to out
    (with `references` reference vectors) if the largest difference is within tolerance; the
    report as a dict. ImportRefused (nothing written) when they disagree."""
    import microrl
    from microrl.refusals import count as counted  # `count` is this function's number of observations

    from ..references import attach, spread

    policy = imported.policy()
    obs, drawn = sample_observations(count, seed, imported, space)
    obs = obs.astype(np.float32).astype(np.float64)  # what the file and the framework both see
    theirs = imported.actions(obs)
    if theirs.shape != (count, policy.act_dim):
        raise ImportRefused("the framework gave actions of shape %s for %s, the network has %s" % (list(theirs.shape), counted(count, "observation"), counted(policy.act_dim, "output")))
    if not np.all(np.isfinite(theirs)):
        raise ImportRefused("the framework's own actions are not all finite on the check observations: a diverged model?")
    if references:
        rows = spread(np.arange(count)[:, None], references)  # evenly spaced rows of the check
        index = [int(r[0]) for r in rows]
        attach(policy, obs[index], theirs[index].tolist(), tolerance=tolerance)
    with tempfile.TemporaryDirectory(prefix="microrl-import-") as tmp:
        path = os.path.join(tmp, "policy.mrlp")
        microrl.save(path, policy)  # InvalidValueError for numbers a policy file cannot hold
        loaded = microrl.load(path)  # through the file, as a board gets it
        ours = np.array([list(loaded(list(o))) for o in obs], np.float64)
        with open(path, "rb") as f:
            data = f.read()
    d = difference(ours, theirs)
    k, i = np.unravel_index(int(np.argmax(d)), d.shape)
    worst = float(d[k, i])
    report = {
        "source_kind": imported.kind,
        "source": imported.description,
        "framework": imported.framework,
        "network": policy.describe(),
        "blocks": [name for name in ("obs_mean", "in_low", "act_scale", "act_low") if getattr(policy, name) is not None],
        "notes": imported.notes,
        "observations": drawn,
        "check_count": count,
        "max_difference": worst,
        "max_abs_difference": float(np.max(np.abs(ours - theirs))),
        "tolerance": tolerance,
        "references": references,
        "output": out,
        "bytes": len(data),
        "actions_at_clip": _at_clip(policy, ours),
    }
    if not worst <= tolerance:
        # float32 arithmetic in another order differs by a few 1e-7: below 1e-5 a tolerance may be too tight
        why = "a mapping microrl got wrong: please report it with the source file" if worst > 1e-5 else \
            "float32 rounding alone differs by up to about 1e-6: give a larger --tolerance"
        raise ImportRefused("the policy file's actions differ from the framework's by %.3g (observation %d, action[%d]: %.7g against %.7g), "
                            "more than the tolerance %.3g: %s not written (%s)" % (worst, k, i, ours[k, i], theirs[k, i], tolerance, out, why))
    from ..atomic import write_bytes

    write_bytes(out, data)
    return report


def _at_clip(policy, actions):
    """Share of action values at the action clipping's bounds (0 without clipping)."""
    if policy.act_low is None:
        return 0.0
    low, high = np.array(policy.act_low), np.array(policy.act_high)
    return float(np.mean((actions <= low) | (actions >= high)))
