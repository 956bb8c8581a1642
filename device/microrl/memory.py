# The RAM a TD3 run takes, from its sizes alone: every buffer td3.TD3 allocates, following its
# sharing rules, and the objects around them. The host checks a run against a board's heap with
# this before it starts; a board that trains does not import it.
from .layout import actor_critic_sizes, param_count
from .replay import row_values
from .td3 import TD3Config


def buffer_sizes(obs_dim, act_dim, config=None, fixed_replay=None, task=None):
    """Bytes of every buffer TD3(env, config) allocates, as a list, following the constructor's
    sharing rules (one definition of what is held, for estimate_bytes and the docs); with the
    task module, the arrays of its environment (microrl.task.Env) too."""
    c = config or TD3Config()
    if fixed_replay is None:
        fixed_replay = c.replay_fixed_point
    n = c.batch
    hidden = list(c.hidden)
    od, ad = obs_dim, act_dim
    gelu = c.activation == "gelu"
    actor_sizes, critic_sizes = actor_critic_sizes(od, ad, hidden)
    p_actor, p_critic = param_count(actor_sizes), param_count(critic_sizes)
    rows = c.replay_capacity
    sizes = [rows * row_values(od, ad) * (2 if fixed_replay else 4), rows]  # replay values, flags
    hidden_set = [n * w for w in hidden] * (2 if gelu else 1)  # outputs (GELU keeps z too)
    critic_scratch = n * max(hidden + [1])
    # critic 1: params, grads, Adam m and v; the shared hidden set; output, input; backward scratch
    sizes += [p_critic] * 4 + hidden_set + [n, n * (od + ad)] + [critic_scratch] * 2
    # actor: params, m, v (gradients in critic 1's buffer when it is as large); its own hidden set
    sizes += [p_actor] * (3 if p_actor <= p_critic else 4) + hidden_set + [n * ad, n * od]
    if n * max(hidden + [ad]) > critic_scratch:
        sizes += [n * max(hidden + [ad])] * 2
    sizes += [p_actor, n * ad, n * od]  # actor target: params, output, input
    sizes += [p_critic] * 3 + [n]  # critic 2: params, m, v, output
    sizes += [p_critic, n, n * (od + ad)] + [p_critic, n]  # critic targets
    sizes += [n] * 4 + [n * ad, ad, ad, od, ad, ad]  # reward, done, q target, dq; da; action, env action, obs; action scale, offset
    if critic_scratch < n * (od + ad):
        sizes.append(n * (od + ad))  # dL/d(critic input) when the scratch is too small for it
    sizes.append(od)  # the environment's observation
    if task is not None:  # its float64 parameters, state, uniforms and action
        sizes += [2 * len(task.PARAMETERS), 2 * task.STATE_DIM, 2 * max(task.RESET_DRAWS, task.STEP_DRAWS, 1), 2 * ad]
    return [4 * k for k in sizes[2:]] + sizes[:2]


# Objects besides the buffers (networks, views, tuples, the agent), measured on the 64-bit unix
# port: 11.3-14.5 KB for 2-4 layers (tests/device/test_td3.py checks the total); a 32-bit port, about half.
OBJECT_BYTES = 8448
OBJECT_BYTES_PER_LAYER = 1664  # the six networks together
OBJECT_SLACK = 256  # on the 32-bit Cortex-M3 port the scaled figure fell up to 112 bytes short


def estimate_bytes(obs_dim, act_dim, config=None, gc_block=32, fixed_replay=None, task=None):
    """RAM that TD3(env, config) takes on a MicroPython heap with gc_block-byte allocation blocks
    (32 on 64-bit ports, 16 on 32-bit): every buffer rounded up to whole blocks plus its array
    object, and the objects around them. fixed_replay: whether the environment's bounds make the
    replay rows 16-bit (default: the config's replay_fixed_point); task: the task module, whose
    environment's arrays count too."""
    c = config or TD3Config()
    total = 0
    for b in buffer_sizes(obs_dim, act_dim, c, fixed_replay, task):
        total += (b + gc_block - 1) // gc_block * gc_block + gc_block
    scale = gc_block / 32.0
    layers = len(c.hidden) + 1
    return total + int(scale * (OBJECT_BYTES + layers * OBJECT_BYTES_PER_LAYER)) + OBJECT_SLACK
