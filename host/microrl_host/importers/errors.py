"""The errors of microrl import: one line each for the user (the command exits 2)."""

EXTRA = "pip install torch==2.13.0 (the CPU wheel; an unpinned torch pulls a CUDA build of several GB), then pip install 'microrl[import]'"


class ImportRefused(Exception):
    """A source that cannot be imported as it is; the message says why and what to do."""


def need(what, *modules):
    """Import modules for `what` (e.g. "reading an SB3 .zip"), or ImportRefused naming the
    optional extra that brings them."""
    loaded = []
    for name in modules:  # top-level names: torch, stable_baselines3, onnx, onnxruntime
        try:
            loaded.append(__import__(name))
        except ImportError:
            raise ImportRefused("%s needs %s, which is not installed: %s" % (what, name, EXTRA)) from None
    return loaded
