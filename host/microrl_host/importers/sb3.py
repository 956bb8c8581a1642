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
import json
import pickle
import zipfile

import numpy as np

from microrl.refusals import count

from .chain import Chain
from .errors import ImportRefused, brief, need
from .imported import Imported
from .torch_modules import linear, walk

ALGOS = ("td3", "ddpg", "sac", "ppo", "a2c")


def is_sb3_zip(path):
    try:
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
    except (zipfile.BadZipFile, OSError):
        return False
    return "data" in names and "policy.pth" in names


def detect_algo(path):
    """td3, sac or ppo/a2c from the policy class the zip names (DDPG's is TD3's: loaded as TD3)."""
    try:
        with zipfile.ZipFile(path) as z:
            data = json.loads(z.read("data"))
    except (zipfile.BadZipFile, EOFError) as e:
        raise ImportRefused("%s: not a Stable-Baselines3 .zip (%s)" % (path, brief(e))) from None
    except (KeyError, ValueError, RecursionError, zipfile.error):  # no 'data', or not JSON (UnicodeDecodeError is a ValueError; nested thousands deep: RecursionError)
        raise ImportRefused("%s: an SB3 zip without readable 'data': saved by another tool?" % path) from None
    policy_class = data.get("policy_class") if isinstance(data, dict) else None
    module = str(policy_class.get("__module__", "")) if isinstance(policy_class, dict) else ""
    for algo in ("td3", "sac"):
        if ".%s." % algo in module:
            return algo
    if module.endswith("common.policies"):
        return "ppo" if "clip_range" in data else "a2c"
    other = module.split(".")[1].upper() if module.startswith(("stable_baselines3.", "sb3_contrib.")) and module.count(".") >= 2 else None
    raise ImportRefused("%s: its policy class comes from %r%s, not TD3, DDPG, SAC, PPO or A2C, the algorithms microrl imports%s"
                        % (path, module or "?", " (%s)" % other if other else "", "" if other else ": give --algo if it is one of them"))


def read_vecnormalize(path):
    """(mean, var, epsilon, clip_obs) of a VecNormalize .pkl (VecNormalize.save), or None when it
    does not normalise observations."""
    need("reading a VecNormalize .pkl", "stable_baselines3")
    try:
        with open(path, "rb") as f:
            vn = pickle.load(f)
    except Exception as e:  # a pickle raises whatever its classes raise
        raise ImportRefused("%s: not a VecNormalize file saved by VecNormalize.save (%s)" % (path, brief(e))) from None
    if not hasattr(vn, "obs_rms") or not hasattr(vn, "clip_obs"):
        raise ImportRefused("%s: holds a %s, not a VecNormalize (VecNormalize.save writes one)" % (path, type(vn).__name__))
    if not getattr(vn, "norm_obs", True):
        return vn, None
    if isinstance(vn.obs_rms, dict):
        raise ImportRefused("%s: normalises a Dict observation space; microrl's policies take one flat Box" % path)
    return vn, (np.asarray(vn.obs_rms.mean, np.float64).reshape(-1), np.asarray(vn.obs_rms.var, np.float64).reshape(-1), float(vn.epsilon), float(vn.clip_obs))


def load(path, vecnormalize=None, algo=None):
    """An Imported for an SB3 zip (and its VecNormalize .pkl)."""
    torch, sb3 = need("reading a Stable-Baselines3 .zip", "torch", "stable_baselines3")
    torch.set_num_threads(1)  # two threads on two shared cores made SB3 several times slower
    algo = algo or detect_algo(path)
    cls = getattr(sb3, algo.upper())
    try:
        model = cls.load(path, device="cpu")
    except Exception as e:
        try:
            with zipfile.ZipFile(path) as z:
                bad = z.testzip()  # the first member whose CRC fails
        except Exception:  # (SB3's own message says enough)
            bad = None
        if bad:
            raise ImportRefused("%s: a damaged Stable-Baselines3 .zip (its %r fails its CRC check): changed since it was saved; save or copy it again"
                                % (path, bad)) from None
        raise ImportRefused("%s: Stable-Baselines3 could not load it as %s (%s)" % (path, algo.upper(), brief(e))) from None
    policy = model.policy
    from gymnasium import spaces
    from stable_baselines3.common.preprocessing import is_image_space
    from stable_baselines3.common.torch_layers import FlattenExtractor

    obs_space, act_space = policy.observation_space, policy.action_space
    if not isinstance(obs_space, spaces.Box) or not isinstance(act_space, spaces.Box):
        raise ImportRefused("%s: %s observations and %s actions; microrl's policies take Box observations and give Box actions"
                            % (path, type(obs_space).__name__, type(act_space).__name__))
    if is_image_space(obs_space):
        raise ImportRefused("%s: image observations (a CnnPolicy's); microrl imports MlpPolicy networks" % path)
    n_in = int(np.prod(obs_space.shape))
    low = np.asarray(act_space.low, np.float64).reshape(-1)
    high = np.asarray(act_space.high, np.float64).reshape(-1)
    chain = Chain(n_in)
    notes = []
    vn = stats = None
    if vecnormalize:
        vn, stats = read_vecnormalize(vecnormalize)
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
        if stats is not None:
            x = vn.normalize_obs(x)
        with torch.no_grad():
            a, _ = model.predict(x, deterministic=True)
        return np.asarray(a, np.float64).reshape(len(obs), -1)

    desc = "Stable-Baselines3 %s %s" % (algo.upper(), type(policy).__name__)
    return Imported("sb3", desc, chain, actions, notes, obs_space=obs_space, obs_stats=None if stats is None else (stats[0], np.sqrt(stats[1] + stats[2]), stats[3]))
