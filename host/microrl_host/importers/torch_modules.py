"""torch modules into a Chain: nn.Linear, the activations microrl has, nn.Flatten (of flat
observations), nn.Hardtanh (a clip), nn.Identity and nn.Dropout (nothing at inference), through
nested nn.Sequential."""
import numpy as np

from .errors import ImportRefused


def _activation(nn, m):
    if isinstance(m, nn.ReLU):
        return "relu"
    if isinstance(m, nn.Tanh):
        return "tanh"
    if isinstance(m, nn.Sigmoid):
        return "sigmoid"
    if isinstance(m, nn.GELU):
        if getattr(m, "approximate", "none") != "none":
            raise ImportRefused("nn.GELU(approximate=%r): microrl's gelu is the exact one (erf)" % m.approximate)
        return "gelu"
    return None


def linear(chain, m):
    chain.dense(m.weight.detach().double().cpu().numpy(), None if m.bias is None else m.bias.detach().double().cpu().numpy())


def walk(chain, module, where="the network"):
    """Add module (a layer, or an nn.Sequential of them) to chain."""
    import torch.nn as nn

    if isinstance(module, nn.Sequential):
        for m in module:
            walk(chain, m, where)
        return
    if isinstance(module, nn.Linear):
        linear(chain, module)
        return
    act = _activation(nn, module)
    if act is not None:
        chain.activation(act)
        return
    if isinstance(module, (nn.Identity, nn.Dropout, nn.Flatten)):
        return  # observations arrive flat; dropout does nothing at inference
    if isinstance(module, nn.Hardtanh):
        chain.clip(module.min_val, module.max_val)
        return
    raise ImportRefused("%s has a %s layer, which microrl's policies do not have (they have nn.Linear with ReLU, Tanh, Sigmoid, exact GELU "
                        "or none; nn.Hardtanh as the last step)" % (where, type(module).__name__))


def as_numpy(t):
    return np.asarray(t.detach().double().cpu().numpy())
