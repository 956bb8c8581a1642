"""microrl: deep RL for continuous control, from a laptop down to a microcontroller."""
# The policy names are imported on first use (module __getattr__, as on CPython): a board that
# trains imports microrl.td3 without holding the policy-file code (13 kB of a 64-bit heap).
_POLICY_NAMES = (
    "ChecksumError",
    "CorruptPolicyError",
    "InvalidValueError",
    "NotAPolicyError",
    "Policy",
    "PolicyFileError",
    "TruncatedPolicyError",
    "UnsupportedVersionError",
    "load",
    "save",
)

__version__ = "0.1.0"


def backend_name():
    """Which array backend is in use: 'native', 'ulab', 'numpy' or 'plain'."""
    from . import backend

    return backend.name()


def serve(*args, **kwargs):
    """Answer framed requests on the serial line until asked to return to the REPL
    (microrl.server.serve; imported only when called, to keep `import microrl` small)."""
    from .server import serve as run

    return run(*args, **kwargs)


def __getattr__(name):
    if name in _POLICY_NAMES:
        return getattr(__import__("microrl.policy", None, None, ("policy",)), name)
    if name.startswith("__"):
        raise AttributeError("module 'microrl' has no attribute %r" % name)
    # MicroPython asks a package's __getattr__ before it imports a submodule (from . import nn):
    # import it here (an ImportError stays one: the backend seam falls back on it)
    return __import__("microrl." + name, None, None, (name,))
