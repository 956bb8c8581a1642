"""microrl: deep RL for continuous control, from a laptop down to a microcontroller."""
from .policy import (  # noqa: F401
    ChecksumError,
    CorruptPolicyError,
    InvalidValueError,
    NotAPolicyError,
    Policy,
    PolicyFileError,
    TruncatedPolicyError,
    UnsupportedVersionError,
    load,
    save,
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
