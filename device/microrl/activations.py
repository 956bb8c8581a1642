# Activation codes shared by the networks, the backends, the native kernels and the policy file.
from .compat import const

IDENTITY = const(0)
RELU = const(1)
TANH = const(2)
SIGMOID = const(3)
GELU = const(4)

NAMES = ("identity", "relu", "tanh", "sigmoid", "gelu")


def code(name_or_code):
    """Activation code from a name ('relu') or a code (1); ValueError names the choices."""
    if isinstance(name_or_code, int):
        if 0 <= name_or_code < len(NAMES):
            return name_or_code
    elif name_or_code in NAMES:
        return NAMES.index(name_or_code)
    raise ValueError("unknown activation %r; choose one of %s" % (name_or_code, ", ".join(NAMES)))
