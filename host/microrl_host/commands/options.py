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


def check_output(path, option, folder=False):
    """CommandError unless a file (folder=True: a folder) can be written at path: checked before
    a command does any work, so that no run ends unable to save what it made. The one check of
    every command that writes (atomic.unwritable): only a regular file is ever replaced (never a
    device, a named pipe, a socket, a folder), and one missing folder level at most is made."""
    from ..atomic import unwritable
    from . import CommandError

    why = unwritable(path, folder)
    if why:
        raise CommandError("%s %s: %s" % (option, path, why))


# what --help says of an output path (atomic.unwritable's rule), after the option's own text
OUTPUT_HELP = "; only a regular file there is replaced (a device, a pipe or a folder is refused), and its folder is made if missing, one level at most"
FOLDER_HELP = "; made if missing (with its parent folder, one level at most); a file there is refused"
