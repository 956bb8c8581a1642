"""microrl: deep RL for continuous control, from a laptop down to a microcontroller."""
from .policy import (  # noqa: F401
    ChecksumError,
    CorruptPolicyError,
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
