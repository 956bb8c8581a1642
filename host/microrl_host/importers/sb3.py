"""Stable-Baselines3 .zip files (TD3, DDPG, SAC, PPO, A2C with an MlpPolicy over Box
observations and actions), with the VecNormalize statistics the policy was trained behind.

What SB3's own deterministic action is (model.predict(obs, deterministic=True), after
VecNormalize.normalize_obs(obs) when the model was trained behind one):
- VecNormalize: clip((obs - mean) / sqrt(var + epsilon), -clip_obs, clip_obs): the file's
  normalisation with std = sqrt(var + epsilon), and its input clipping.
- TD3, DDPG: the actor's tanh output scaled to the action Box: low + (a + 1) (high - low) / 2.
- SAC: tanh of the Gaussian mean (with gSDE, of the mean clipped to +-clip_mean first: the same
  as clipping the tanh to +-tanh(clip_mean)), scaled to the Box.
- PPO, A2C: the Gaussian mean, clipped to the Box (predict clips; it does not squash), unless
  the policy squashes (gSDE with squash_output=True): then as SAC."""
import base64
import json
import pickle
import zipfile

import numpy as np

from microrl.refusals import count

from . import safe_pickle
from .chain import Chain
from .errors import ImportRefused, brief, need
from .imported import Imported
from .limits import MAX_DATA_BYTES, check_shape, check_size, check_values, read_member
from .torch_modules import linear, walk

ALGOS = ("td3", "ddpg", "sac", "ppo", "a2c")


def is_sb3_zip(path):
    try:
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
    except (zipfile.BadZipFile, OSError):
        return False
    return "data" in names and "policy.pth" in names


def read_data(path):
    """SB3's 'data' as a dict (the JSON as it is: serialized entries still base64 pickles)."""
    try:
        with zipfile.ZipFile(path) as z:
            data = json.loads(read_member(z, "data", MAX_DATA_BYTES, path))
    except (zipfile.BadZipFile, EOFError) as e:
        raise ImportRefused("%s: not a Stable-Baselines3 .zip (%s)" % (path, brief(e))) from None
    except (KeyError, ValueError, RecursionError, zipfile.error):  # no 'data', or not JSON (UnicodeDecodeError is a ValueError; nested thousands deep: RecursionError)
        raise ImportRefused("%s: an SB3 zip without readable 'data': saved by another tool?" % path) from None
    if not isinstance(data, dict):
        raise ImportRefused("%s: an SB3 zip without readable 'data': saved by another tool?" % path)
    return data


def detect_algo(path, data=None):
    """td3, sac or ppo/a2c from the policy class the zip names (DDPG's is TD3's: loaded as TD3)."""
    data = read_data(path) if data is None else data
    policy_class = data.get("policy_class")
    module = str(policy_class.get("__module__", "")) if isinstance(policy_class, dict) else ""
    for algo in ("td3", "sac"):
        if ".%s." % algo in module:
            return algo
    if module.endswith("common.policies"):
        return "ppo" if "clip_range" in data else "a2c"
    other = module.split(".")[1].upper() if module.startswith(("stable_baselines3.", "sb3_contrib.")) and module.count(".") >= 2 else None
    raise ImportRefused("%s: its policy class comes from %r%s, not TD3, DDPG, SAC, PPO or A2C, the algorithms microrl imports%s"
                        % (path, module or "?", " (%s)" % other if other else "", "" if other else ": give --algo if it is one of them"))


TRUST = "give --trust-pickle to load it with pickle if you trust the file"


def _unsafe(path, what, name):
    return ImportRefused("%s: %s would call %s, which microrl import does not run (it rebuilds only numpy arrays, gymnasium spaces and "
                         "plain values, and names torch's activations and optimisers and SB3's MLP policies): %s" % (path, what, name, TRUST))


def _finite(value, what, path, positive=False):
    try:
        a = np.asarray(value, np.float64).reshape(-1)
    except (TypeError, ValueError):
        a = np.array([np.nan])
    if a.size == 0 or not np.all(np.isfinite(a)) or positive and not np.all(a > 0):
        raise ImportRefused("%s: its %s is not %s" % (path, what, "a number above 0" if positive else "finite numbers"))
    return a


def read_vecnormalize(path, trust=False):
    """(mean, var, epsilon, clip_obs) of a VecNormalize .pkl (VecNormalize.save), or None when it
    does not normalise observations. Read with the allow-list unpickler (safe_pickle) unless the
    user trusts the file."""
    check_size(path, "the VecNormalize file")
    with open(path, "rb") as f:
        if f.read(4) == b"PK\x03\x04":  # a zip (an SB3 model, say): not a pickle at all
            raise ImportRefused("%s: not a VecNormalize file saved by VecNormalize.save (a zip archive; the VecNormalize statistics are a .pkl)" % path)
    try:
        if trust:
            need("reading a VecNormalize .pkl", "stable_baselines3")
            with open(path, "rb") as f:
                vn = pickle.load(f)
        else:
            vn = safe_pickle.load(path)
    except safe_pickle.UnsafePickle as e:
        raise _unsafe(path, "its pickle", e) from None
    except ImportRefused:
        raise
    except Exception as e:  # a pickle raises whatever its classes raise
        raise ImportRefused("%s: not a VecNormalize file saved by VecNormalize.save (%s)" % (path, brief(e))) from None
    if not hasattr(vn, "obs_rms") or not hasattr(vn, "clip_obs"):
        raise ImportRefused("%s: holds a %s, not a VecNormalize (VecNormalize.save writes one)" % (path, type(vn).__name__))
    if not getattr(vn, "norm_obs", True):
        return None
    if isinstance(vn.obs_rms, dict):
        raise ImportRefused("%s: normalises a Dict observation space; microrl's policies take one flat Box" % path)
    mean = _finite(getattr(vn.obs_rms, "mean", None), "obs_rms.mean", path)
    var = _finite(getattr(vn.obs_rms, "var", None), "obs_rms.var", path)
    eps = float(_finite(getattr(vn, "epsilon", None), "epsilon", path)[0])
    clip = float(_finite(vn.clip_obs, "clip_obs", path, positive=True)[0])
    if mean.shape != var.shape or not np.all(var + eps > 0):
        raise ImportRefused("%s: its obs_rms holds a mean of %d values and a variance of %d, not all var + epsilon above 0" % (path, mean.size, var.size))
    return mean, var, eps, clip


# entries of 'data' SB3 needs to build the policy: rebuilt by the allow-list unpickler
NEEDED = ("observation_space", "action_space", "policy_class", "policy_kwargs")
# what the other serialized entries become (schedules, buffers, the last observations: nothing
# predict uses), and sizes of what predict does not use, so that a file cannot make SB3 allocate
STAND_INS = {"learning_rate": 0.0, "clip_range": 0.2, "train_freq": 1}
SMALL = {"buffer_size": 1, "n_steps": 1, "n_envs": 1, "batch_size": 1}


def safe_objects(data, path):
    """custom_objects for SB3's load: every serialized entry of 'data' rebuilt by the allow-list
    unpickler (NEEDED) or replaced without being read; the names of those skipped."""
    custom, skipped = dict(SMALL), []
    for key, item in sorted(data.items(), key=lambda kv: NEEDED.index(kv[0]) if kv[0] in NEEDED else len(NEEDED)):
        if key == "policy_class" and "observation_space" in custom and "action_space" in custom:
            _spaces(path, custom["observation_space"], custom["action_space"])  # say so first when they are not Boxes
        if not (isinstance(item, dict) and ":serialized:" in item):
            continue
        if key not in NEEDED:
            custom[key] = STAND_INS.get(key)
            skipped.append(key)
            continue
        try:
            custom[key] = safe_pickle.loads(base64.b64decode(str(item[":serialized:"]).encode()), classes=key in ("policy_class", "policy_kwargs"))
        except safe_pickle.UnsafePickle as e:
            raise _unsafe(path, "its 'data' entry %r" % key, e) from None
        except Exception as e:
            raise ImportRefused("%s: its 'data' entry %r does not unpickle (%s)" % (path, key, brief(e))) from None
    for key in ("observation_space", "action_space", "policy_class"):
        if key not in custom:
            raise ImportRefused("%s: its 'data' has no %s: not saved by Stable-Baselines3?" % (path, key))
    return custom, skipped


def _spaces(path, obs_space, act_space):
    from gymnasium import spaces

    if not isinstance(obs_space, spaces.Box) or not isinstance(act_space, spaces.Box):
        raise ImportRefused("%s: %s observations and %s actions; microrl's policies take Box observations and give Box actions"
                            % (path, type(obs_space).__name__, type(act_space).__name__))
    if len(obs_space.shape) == 3 and obs_space.dtype == np.uint8:  # what SB3's CnnPolicy takes
        raise ImportRefused("%s: image observations (a CnnPolicy's); microrl imports MlpPolicy networks" % path)
    n_in, n_out = int(np.prod(obs_space.shape)), int(np.prod(act_space.shape))
    check_shape([n_in, n_out], "%s: the policy" % path)
    return n_in, n_out


def check_arch(path, policy_kwargs, n_in, n_out):
    """ImportRefused for a net_arch a policy file cannot hold (before SB3 builds it)."""
    if not isinstance(policy_kwargs, dict):
        return
    arch = policy_kwargs.get("net_arch")
    lists = list(arch.values()) if isinstance(arch, dict) else [arch] if arch is not None else []
    critics = policy_kwargs.get("n_critics", 2)
    critics = critics if isinstance(critics, int) and critics > 0 else 2
    total = 0
    for widths in lists:
        if not isinstance(widths, (list, tuple)) or not all(isinstance(w, int) for w in widths):
            continue  # SB3 refuses what it cannot build
        check_shape([n_in + n_out] + list(widths) + [n_out], "%s: its net_arch" % path)
        sizes = [n_in + n_out] + list(widths) + [n_out]
        total += sum(a * b for a, b in zip(sizes, sizes[1:]))
    check_values(total * 2 * (critics + 1), "%s: its net_arch (actor, critics and their targets)" % path)


def load(path, vecnormalize=None, algo=None, trust=False):
    """An Imported for an SB3 zip (and its VecNormalize .pkl). Unless trust, nothing in the files
    is unpickled but by the allow-list unpickler; serialized callables are not read at all."""
    data = read_data(path)  # 'data' and the .pkl need no torch: a file that is none is named as such with or without the extra
    algo = algo or detect_algo(path, data)
    stats = read_vecnormalize(vecnormalize, trust) if vecnormalize else None
    torch, sb3 = need("reading a Stable-Baselines3 .zip", "torch", "stable_baselines3")
    torch.set_num_threads(1)  # two threads on two shared cores made SB3 several times slower
    cls = getattr(sb3, algo.upper())
    notes = []
    custom = None
    if not trust:
        custom, skipped = safe_objects(data, path)
        n_in, n_out = _spaces(path, custom["observation_space"], custom["action_space"])
        check_arch(path, custom.get("policy_kwargs", data.get("policy_kwargs")), n_in, n_out)
        if skipped:
            notes.append("left unread in the zip's 'data' (pickled Python objects predict does not use): %s" % ", ".join(skipped))
    try:
        model = cls.load(path, device="cpu", custom_objects=custom)
    except ImportRefused:
        raise
    except Exception as e:
        raise ImportRefused("%s: Stable-Baselines3 could not load it as %s (%s)" % (path, algo.upper(), brief(e))) from None
    policy = model.policy
    from stable_baselines3.common.torch_layers import FlattenExtractor

    obs_space, act_space = policy.observation_space, policy.action_space
    n_in, _ = _spaces(path, obs_space, act_space)
    low = np.asarray(act_space.low, np.float64).reshape(-1)
    high = np.asarray(act_space.high, np.float64).reshape(-1)
    chain = Chain(n_in)
    if vecnormalize:
        if stats is None:
            notes.append("VecNormalize with norm_obs=False: observations go in as they are")
        else:
            mean, var, eps, clip = stats
            if mean.size != n_in:
                raise ImportRefused("%s normalises %s, the model takes %d: not the model's VecNormalize" % (vecnormalize, count(mean.size, "observation"), n_in))
            chain.normalise(mean, np.sqrt(var + eps), clip)
            notes.append("VecNormalize: (obs - mean) / sqrt(var + %g), clipped to +-%g (clip_obs)" % (eps, clip))
    squash = policy.squash_output
    if algo in ("td3", "ddpg", "sac"):
        actor = policy.actor
        if not isinstance(actor.features_extractor, FlattenExtractor):
            raise ImportRefused("%s: its features extractor is a %s; microrl imports MlpPolicy's (FlattenExtractor)" % (path, type(actor.features_extractor).__name__))
        if algo == "sac":
            walk(chain, actor.latent_pi, "the actor")
            mu = actor.mu
            clip_mean = None
            if isinstance(mu, torch.nn.Sequential):  # gSDE: Linear, then Hardtanh(+-clip_mean)
                clip_mean = float(mu[1].max_val)
                mu = mu[0]
            linear(chain, mu)
            chain.activation("tanh")
            if clip_mean is not None:
                chain.clip(-np.tanh(clip_mean), np.tanh(clip_mean))
                notes.append("SAC with gSDE: tanh(clip(mean, +-%g)) = clip(tanh(mean), +-tanh(%g))" % (clip_mean, clip_mean))
            notes.append("SAC: deterministic action tanh(mean), scaled to the Box")
        else:
            walk(chain, actor.mu, "the actor")
            notes.append("%s: the actor's tanh output, scaled to the Box" % algo.upper())
    else:
        extractor = getattr(policy, "pi_features_extractor", policy.features_extractor)
        if not isinstance(extractor, FlattenExtractor):
            raise ImportRefused("%s: its features extractor is a %s; microrl imports MlpPolicy's (FlattenExtractor)" % (path, type(extractor).__name__))
        walk(chain, policy.mlp_extractor.policy_net, "the policy network")
        linear(chain, policy.action_net)
        if squash:
            chain.activation("tanh")
            notes.append("%s with squash_output: tanh of the mean, scaled to the Box" % algo.upper())
        else:
            notes.append("%s: the Gaussian mean, clipped to the Box as SB3's predict does (not squashed)" % algo.upper())
    if squash:
        if not np.all(np.isfinite(low) & np.isfinite(high)):
            raise ImportRefused("%s: the action Box has infinite bounds %s to %s, which SB3's tanh scaling cannot use either" % (path, low.tolist(), high.tolist()))
        chain.affine((high - low) / 2.0, low + (high - low) / 2.0, "the action scaling")
    else:
        chain.clip(low, high)

    def actions(obs):
        x = obs.reshape((-1,) + tuple(obs_space.shape)).astype(np.float32)
        if stats is not None:  # VecNormalize.normalize_obs: in float64, then float32
            x = np.clip((x - stats[0].reshape(x.shape[1:])) / np.sqrt(stats[1].reshape(x.shape[1:]) + stats[2]), -stats[3], stats[3]).astype(np.float32)
        with torch.no_grad():
            a, _ = model.predict(x, deterministic=True)
        return np.asarray(a, np.float64).reshape(len(obs), -1)

    desc = "Stable-Baselines3 %s %s" % (algo.upper(), type(policy).__name__)
    return Imported("sb3", desc, chain, actions, notes, obs_space=obs_space, obs_stats=None if stats is None else (stats[0], np.sqrt(stats[1] + stats[2]), stats[3]))
