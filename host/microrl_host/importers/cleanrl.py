"""PyTorch actor state_dicts in the layouts of CleanRL's continuous-action actors (docs/import.md):

- td3 (td3_continuous_action.py's Actor): fc1, fc2, ... (ReLU), fc_mu (tanh), and the buffers
  action_scale, action_bias: a = tanh(fc_mu(h)) * action_scale + action_bias.
- sac (sac_continuous_action.py's Actor): fc1, fc2, ... (ReLU), fc_mean, fc_logstd, the same
  buffers; the deterministic action is tanh(fc_mean(h)) * action_scale + action_bias (its
  get_action's third value); fc_logstd is left out.
- ppo (ppo_continuous_action.py's Agent): actor_mean.0, .2, .4 (Linear, Tanh between), with
  actor_logstd and critic.* left out; the deterministic action is actor_mean(x), clipped to the
  action Box by its ClipAction wrapper (the Box comes from --env or --action-low/--action-high),
  and x is the observation after its NormalizeObservation wrapper, whose statistics CleanRL does
  not save: give them with --obs-stats.

A file may hold the state_dict itself, or a tuple/list whose first item is the actor's (CleanRL's
TD3 saves (actor, qf1, qf2))."""
import re

import numpy as np

from microrl.refusals import count

from .chain import Chain
from .errors import ImportRefused, brief, need
from .imported import Imported, normalised, stats_note
from .limits import check_source, check_tensor
from .torch_modules import as_numpy

LAYOUTS = ("td3", "sac", "ppo")
HIDDEN = {"td3": "relu", "sac": "relu", "ppo": "tanh"}


def read_state_dict(path):
    (torch,) = need("reading a PyTorch .pt file", "torch")
    check_source(path)
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:
        raise ImportRefused("%s: not a PyTorch state_dict that torch.load(weights_only=True) reads (%s); save the actor's "
                            "state_dict(), not the module" % (path, brief(e))) from None
    if isinstance(obj, (tuple, list)) and obj and isinstance(obj[0], dict):
        obj = obj[0]  # CleanRL's TD3: (actor, qf1, qf2)
    if not isinstance(obj, dict) or not all(hasattr(v, "shape") for v in obj.values()):
        raise ImportRefused("%s: holds a %s, not a state_dict of tensors" % (path, type(obj).__name__))
    for key, t in obj.items():
        if isinstance(t, torch.Tensor):
            check_tensor(t, "%s: its %s" % (path, key))
    return obj


def detect_layout(sd, path):
    keys = set(sd)
    if any(k.startswith("actor_mean.") for k in keys):
        return "ppo"
    if "fc_mu.weight" in keys:
        return "td3"
    if "fc_mean.weight" in keys:
        return "sac"
    raise ImportRefused("%s: a state_dict with the keys %s, none of the layouts microrl knows (CleanRL's td3: fc1, fc2, fc_mu, action_scale, "
                        "action_bias; sac: ..., fc_mean; ppo: actor_mean.0, .2, .4): see docs/import.md, or export the actor to ONNX"
                        % (path, _keys(sd)))


def _keys(sd):
    keys = sorted(sd)
    return ", ".join(keys[:8]) + (", ..." if len(keys) > 8 else "")


def layer_names(sd, layout, path):
    """The Linear layers' names, in order; ImportRefused when the state_dict lacks the layout's."""
    if layout == "ppo":
        idx = sorted({int(m.group(1)) for m in (re.match(r"actor_mean\.(\d+)\.weight$", k) for k in sd) if m})
        names = ["actor_mean.%d" % i for i in idx]
    else:
        hidden = sorted({int(m.group(1)) for m in (re.match(r"fc(\d+)\.weight$", k) for k in sd) if m})
        last = "fc_mu" if layout == "td3" else "fc_mean"
        names = ["fc%d" % i for i in hidden] + ([last] if last + ".weight" in sd or last + ".bias" in sd else [])
        if not names or names[-1] != last:
            names = []
    if not names:
        raise ImportRefused("%s: no %s weights in its state_dict (keys %s): not the %s layout (docs/import.md)"
                            % (path, "actor_mean.N" if layout == "ppo" else "fc_mu" if layout == "td3" else "fc_mean", _keys(sd), layout))
    for n in names:
        if n + ".weight" not in sd:
            raise ImportRefused("%s: %s.bias without %s.weight: not the %s layout (docs/import.md)" % (path, n, n, layout))
        if n + ".bias" not in sd:
            raise ImportRefused("%s: %s.weight without %s.bias: not the %s layout (docs/import.md)" % (path, n, n, layout))
    return names


def load(path, layout=None, activation=None, action_box=None, obs_stats=None):
    """An Imported for a CleanRL-style actor state_dict. action_box: (low, high) arrays or None
    (the ppo layout's clip; the td3/sac layouts' scaling when the actor has no buffers);
    obs_stats: (mean, std, clip or None) of the observation normalisation the actor expects."""
    (torch,) = need("reading a PyTorch .pt file", "torch")
    torch.set_num_threads(1)
    sd = read_state_dict(path)
    layout = layout or detect_layout(sd, path)
    hidden_act = activation or HIDDEN[layout]
    names = layer_names(sd, layout, path)
    weights = [as_numpy(sd[n + ".weight"]) for n in names]
    biases = [as_numpy(sd[n + ".bias"]) for n in names]
    n_in, n_out = weights[0].shape[1], weights[-1].shape[0]
    chain = Chain(n_in)
    notes = []
    if obs_stats is not None:
        chain.normalise(*obs_stats)
        notes.append(stats_note(obs_stats))
    for k, (W, b) in enumerate(zip(weights, biases)):
        chain.dense(W, b)
        if k < len(names) - 1:
            chain.activation(hidden_act)
    scale = bias = None
    if layout in ("td3", "sac"):
        chain.activation("tanh")
        if "action_scale" in sd and "action_bias" in sd:
            scale, bias = as_numpy(sd["action_scale"]).reshape(-1), as_numpy(sd["action_bias"]).reshape(-1)
            if scale.size != n_out or bias.size != n_out:
                raise ImportRefused("%s: action_scale/action_bias of %d/%d values for %s" % (path, scale.size, bias.size, count(n_out, "action")))
            chain.affine(scale, bias, "the action scaling")
            notes.append("%s layout: tanh(%s) * action_scale + action_bias" % (layout, names[-1]))
        elif action_box is not None:  # CleanRL's buffers are (high - low) / 2 and (high + low) / 2 of the env's Box
            scale, bias = (action_box[1] - action_box[0]) / 2.0, (action_box[1] + action_box[0]) / 2.0
            chain.affine(scale, bias, "the action scaling")
            notes.append("%s layout without action_scale/action_bias buffers: tanh(%s) scaled to the action Box given" % (layout, names[-1]))
        else:
            notes.append("%s layout without action_scale/action_bias buffers: the action is the tanh output in [-1, 1]" % layout)
    else:
        notes.append("ppo layout: the Gaussian mean (actor_mean)%s" % (", clipped to the action Box (CleanRL's ClipAction)" if action_box is not None else
                                                                     "; no action Box given (--env or --action-low/--action-high), so not clipped"))
        if action_box is not None:
            chain.clip(*action_box)
    acts = {"relu": torch.relu, "tanh": torch.tanh, "sigmoid": torch.sigmoid, "gelu": torch.nn.functional.gelu, "identity": lambda x: x}

    def actions(obs):
        # the layout's forward in torch, float32 as CleanRL runs it
        h = torch.as_tensor(normalised(obs, obs_stats), dtype=torch.float32)
        with torch.no_grad():
            for k, n in enumerate(names):
                h = torch.nn.functional.linear(h, sd[n + ".weight"].float(), sd[n + ".bias"].float())
                if k < len(names) - 1:
                    h = acts[hidden_act](h)
            if layout != "ppo":
                h = torch.tanh(h)
                if scale is not None:  # the buffers, or the Box given, as CleanRL's actor holds them (float32)
                    h = h * torch.as_tensor(scale, dtype=torch.float32) + torch.as_tensor(bias, dtype=torch.float32)
        a = h.double().numpy().reshape(len(obs), -1)
        if layout == "ppo" and action_box is not None:
            a = np.clip(a, action_box[0], action_box[1])
        return a

    desc = "PyTorch state_dict, CleanRL's %s actor layout (%s hidden layers)" % (layout, hidden_act)
    return Imported("torch", desc, chain, actions, notes, obs_stats=obs_stats)
