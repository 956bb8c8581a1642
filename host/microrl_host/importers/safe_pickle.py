"""Reading the pickles of SB3 (a VecNormalize .pkl, the Python objects in a zip's 'data') without
running code from them. A pickle names the functions and classes it calls to rebuild its objects;
this unpickler looks up only the names on an explicit list, each of which rebuilds data and
nothing else whatever the file passes it: numpy's arrays, dtypes, scalars and random generators,
gymnasium's Box, plain containers, and (as values, for policy_kwargs) torch's activation and
optimiser classes and SB3's policy classes. Every other name is refused (UnsafePickle) before
anything of it runs. SB3's own classes in a VecNormalize .pkl (VecNormalize, RunningMeanStd)
become plain records of their attributes: none of their code runs."""
import io
import pickle

# (module, name): what a genuine SB3 2.x file names (numpy 1.x spells numpy._core numpy.core)
_NUMPY = [
    ("numpy%s.multiarray" % core, name) for core in ("._core", ".core") for name in ("_reconstruct", "scalar")
] + [("numpy%s.numeric" % core, "_frombuffer") for core in ("._core", ".core")] + [
    ("numpy", "ndarray"), ("numpy", "dtype"),
    ("numpy.random._pickle", "__generator_ctor"), ("numpy.random._pickle", "__bit_generator_ctor"),
    ("numpy.random._pickle", "__randomstate_ctor"),
    ("numpy.random._pcg64", "PCG64"), ("numpy.random._pcg64", "PCG64DXSM"), ("numpy.random._mt19937", "MT19937"),
    ("numpy.random._philox", "Philox"), ("numpy.random._sfc64", "SFC64"),
    ("numpy.random.bit_generator", "SeedSequence"), ("numpy.random.bit_generator", "__pyx_unpickle_SeedSequence"),
]
_PLAIN = [("collections", "OrderedDict"), ("collections", "deque"), ("builtins", "set"), ("builtins", "frozenset")]
# the spaces (other than Box, so that import can say it takes Box observations and actions)
_SPACES = [("gymnasium.spaces.%s" % m, n) for m, n in (("box", "Box"), ("discrete", "Discrete"), ("multi_discrete", "MultiDiscrete"),
                                                      ("multi_binary", "MultiBinary"), ("dict", "Dict"), ("tuple", "Tuple"))]
ALLOWED = set(_NUMPY + _PLAIN + _SPACES)

# classes a policy_kwargs or policy_class names (returned as classes; building one runs only torch's or SB3's code)
_ACTIVATIONS = ("ReLU", "Tanh", "Sigmoid", "GELU", "ELU", "LeakyReLU", "SiLU", "Softplus", "Hardtanh", "Identity", "SELU", "Mish")
CLASSES = {("torch.nn.modules.activation", n) for n in _ACTIVATIONS} | {("torch.nn.modules.linear", "Identity")} | {
    ("torch.optim.%s" % m.lower(), m) for m in ("Adam", "AdamW", "SGD", "RMSprop")} | {
    ("stable_baselines3.td3.policies", n) for n in ("TD3Policy", "MlpPolicy", "Actor")} | {
    ("stable_baselines3.sac.policies", n) for n in ("SACPolicy", "MlpPolicy", "Actor")} | {
    ("stable_baselines3.common.policies", n) for n in ("ActorCriticPolicy", "MultiInputActorCriticPolicy", "ContinuousCritic")} | {
    ("stable_baselines3.common.torch_layers", n) for n in ("FlattenExtractor",)}

# SB3's classes in a VecNormalize .pkl: their state as a plain record
RECORDS = {("stable_baselines3.common.vec_env.vec_normalize", "VecNormalize"), ("stable_baselines3.common.running_mean_std", "RunningMeanStd")}


class UnsafePickle(Exception):
    """The pickle names something off the list: the dotted name."""


class Record:
    """The attributes of an SB3 object as its pickle gives them, without its class's code."""

    def __init__(self, *args, **kwargs):
        pass

    def __setstate__(self, state):
        if isinstance(state, tuple) and len(state) == 2:  # (dict, slots)
            state = {**(state[0] or {}), **(state[1] or {})}
        if isinstance(state, dict):
            self.__dict__.update(state)


def _record_class(name):
    return type(name, (Record,), {})


class SafeUnpickler(pickle.Unpickler):
    def __init__(self, file, classes=False):
        super().__init__(file)
        self.classes = classes

    def find_class(self, module, name):
        key = (module, name)
        if key in ALLOWED or self.classes and key in CLASSES:
            return super().find_class(module, name)
        if key in RECORDS:
            return _record_class(name)
        raise UnsafePickle("%s.%s" % (module, name))

    def persistent_load(self, pid):
        raise UnsafePickle("a persistent reference")


def loads(data, classes=False):
    """The object in the pickle `data`; UnsafePickle naming what it would have run."""
    return SafeUnpickler(io.BytesIO(data), classes).load()


def load(path, classes=False):
    with open(path, "rb") as f:
        return SafeUnpickler(f, classes).load()
