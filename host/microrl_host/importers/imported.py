"""What an importer gives: the network as a Chain, and the framework computing its own actions."""


class Imported:
    def __init__(self, kind, description, chain, actions, notes=(), obs_space=None, obs_stats=None, framework=None):
        self.kind = kind
        self.framework = framework or {"sb3": "SB3's predict", "torch": "torch's", "onnx": "onnxruntime's"}[kind]
        self.description = description
        self.chain = chain
        self.actions = actions  # obs [n, n_in] -> the framework's actions [n, n_out]
        self.notes = list(notes)
        self.obs_space = obs_space  # a gymnasium Box, or None
        self.obs_stats = obs_stats  # (mean, std, clip or None) of the normalisation, or None

    def policy(self):
        from microrl.policy import Policy

        sizes, acts, params, blocks = self.chain.finish()
        return Policy(sizes, acts, params=params, **blocks)


def normalised(obs, stats):
    """obs as a normalisation outside the network gives it to the network: (obs - mean) / std,
    clipped to +-clip; stats (mean, std, clip or None), or None for obs as they are."""
    import numpy as np

    x = np.asarray(obs, np.float64)
    if stats is None:
        return x
    x = (x - stats[0]) / stats[1]
    return x if stats[2] is None else np.clip(x, -stats[2], stats[2])


def stats_note(stats):
    return "observations normalised with --obs-stats%s" % ("" if stats[2] is None else ", clipped to +-%g" % stats[2])
