"""Argument types the commands share (argparse reports their errors as one line)."""
import argparse


def parse_hidden(text):
    """Hidden layer sizes from the command line's one syntax: widths separated by commas, '64,64'."""
    try:
        sizes = tuple(int(s) for s in text.split(","))
    except ValueError:
        sizes = ()
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError("expected hidden layer sizes like 64,64 (positive widths separated by commas); got %r" % text)
    return sizes


def whole(minimum):
    """An argparse type: a whole number >= minimum."""

    def parse(text):
        try:
            v = int(text)
        except ValueError:
            v = minimum - 1
        if v < minimum:
            raise argparse.ArgumentTypeError("expected a whole number >= %d, got %r" % (minimum, text))
        return v

    return parse


def seconds(text):
    """An argparse type: a positive, finite number of seconds (a timeout)."""
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    if not 0.0 < v < float("inf"):  # nan fails both
        raise argparse.ArgumentTypeError("expected a positive number of seconds, got %r" % text)
    return v


def check_output(path, option, folder=False):
    """CommandError unless a file (folder=True: a folder) can be written at path: checked before
    a command does any work, so that no run ends unable to save what it made."""
    from ..atomic import unwritable
    from . import CommandError

    why = unwritable(path, folder)
    if why:
        raise CommandError("%s %s: %s" % (option, path, why))
