# The network layout, defined once, for training (nn.py) and inference (policy.py) alike; its own
# small module so that a board loading a policy does not import the training code.
# For each layer l: W_l as [out, in] row-major, then b_l [out]; layers in order, one flat buffer.
from .activations import code


def layout(sizes):
    """[(weight_offset, bias_offset), ...] per layer, and the total parameter count."""
    offsets = []
    k = 0
    for l in range(len(sizes) - 1):
        n_in, n_out = sizes[l], sizes[l + 1]
        offsets.append((k, k + n_in * n_out))
        k += n_in * n_out + n_out
    return offsets, k


def param_count(sizes):
    return layout(sizes)[1]


def shape(sizes, activations):
    """(sizes as ints, one activation code per layer), checked. activations: one name or code for
    all layers, one per layer, or a (hidden, output) pair of names."""
    sizes = [int(s) for s in sizes]
    if len(sizes) < 2 or min(sizes) < 1:
        raise ValueError("sizes must be at least [n_in, n_out], all positive; got %r" % (sizes,))
    n_layers = len(sizes) - 1
    if isinstance(activations, str):
        activations = [activations] * n_layers
    elif len(activations) == 2 and n_layers != 2:
        activations = [activations[0]] * (n_layers - 1) + [activations[1]]
    if len(activations) != n_layers:
        raise ValueError("need %d activations, one per layer; got %d" % (n_layers, len(activations)))
    return sizes, [code(a) for a in activations]


def actor_critic_sizes(obs_dim, act_dim, hidden, actor_outputs=0):
    """The actor-critic shape rule: actor obs -> hidden -> actions (or actor_outputs, e.g. SAC's
    mean and log-std per action), critic (obs, action) -> hidden -> one value."""
    hidden = [int(h) for h in hidden]
    return [obs_dim] + hidden + [actor_outputs or act_dim], [obs_dim + act_dim] + hidden + [1]
