"""The errors of microrl import: one line each for the user (the command exits 2)."""
import re

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


def brief(e, limit=160):
    """A library's exception as a short clause for our one-line message: its text on one line
    (torch's and pickle's run over several, with terminal colour codes), its first sentence, at
    most `limit` characters; the exception's type when it says nothing."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(e))
    text = " ".join(text.split())
    first = re.split(r"(?<=[a-z0-9)])\. ", text, maxsplit=1)[0]
    if len(first) > limit:
        first = first[: limit - 3].rstrip() + "..."
    return first or type(e).__name__
