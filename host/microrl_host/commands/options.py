"""Argument types and checks the commands share. argparse reports a type's error as one line;
the checks raise CommandError (one line, exit 2). Everything here runs before a command does any
work: a bad value never ends in a traceback, a run that cannot finish never starts."""
import argparse
import math
import os

# The largest values the commands take. Not limits of the code alone: a run of more steps would
# take weeks at the fastest rates measured here (docs/training.md), and more episodes hours.
MAX_STEPS = 10**10
MAX_EPISODES = 100_000
MAX_SEED = 2**32 - 1  # every generator here takes 32 bits of seed (gymnasium's take 64, the device core's Rng 32)


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose errors are one line (the problem, then where the options are
    listed) rather than the usage text and the problem: the house rule for bad input."""

    def error(self, message):
        self.exit(2, "%s: error: %s (see '%s --help')\n" % (self.prog, message, self.prog))


def parse_hidden(text):
    """Hidden layer sizes from the command line's one syntax: widths separated by commas, '64,64'.
    The policy file format bounds them (at most 254 hidden layers of at most 65535 units)."""
    from microrl.filewrite import MAX_LAYERS, MAX_WIDTH

    try:
        sizes = tuple(int(s) for s in text.split(","))
    except ValueError:
        sizes = ()
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError("expected hidden layer sizes like 64,64 (positive widths separated by commas); got %r" % text)
    if max(sizes) > MAX_WIDTH or len(sizes) > MAX_LAYERS - 1:
        raise argparse.ArgumentTypeError("%s: a policy file holds at most %d hidden layers of at most %d units each" % (_short(text), MAX_LAYERS - 1, MAX_WIDTH))
    return sizes


def _short(text):
    return text if len(text) <= 40 else text[:37] + "..."


def whole(minimum, maximum=None, why=None):
    """An argparse type: a whole number in [minimum, maximum] (maximum None: no bound; why: what
    the bound is for, said when a value exceeds it)."""

    def parse(text):
        try:
            v = int(text)
        except ValueError:
            v = None
        if v is None or v < minimum:
            raise argparse.ArgumentTypeError("expected a whole number >= %d, got %r" % (minimum, _short(text)))
        if maximum is not None and v > maximum:
            raise argparse.ArgumentTypeError("expected a whole number from %d to %s, got %s%s" % (minimum, _big(maximum), _short(text), " (%s)" % why if why else ""))
        return v

    return parse


def integer(limit=2**62):
    """An argparse type: a whole number of at most limit in size, either sign (its range is
    checked where the setting is, e.g. the algorithm's configuration; the limit keeps it a
    64-bit integer for the compiled code)."""

    def parse(text):
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError("expected a whole number, got %r" % _short(text)) from None
        if abs(v) > limit:
            raise argparse.ArgumentTypeError("%s is too large (at most %s)" % (_short(text), _big(limit)))
        return v

    return parse


def _big(n):
    return "2**32-1" if n == 2**32 - 1 else "{:,}".format(n)


def number(minimum=None, maximum=None, above=None, below=None):
    """An argparse type: a finite number (never NaN or an infinity), >= minimum, <= maximum,
    > above, < below (those given)."""
    bounds = []
    if minimum is not None:
        bounds.append(">= %g" % minimum)
    if above is not None:
        bounds.append("above %g" % above)
    if maximum is not None:
        bounds.append("<= %g" % maximum)
    if below is not None:
        bounds.append("below %g" % below)
    wanted = "a finite number" + (" " + " and ".join(bounds) if bounds else "")

    def parse(text):
        try:
            v = float(text)
        except ValueError:
            v = math.nan
        if not math.isfinite(v) or (minimum is not None and v < minimum) or (maximum is not None and v > maximum) or \
                (above is not None and not v > above) or (below is not None and not v < below):
            raise argparse.ArgumentTypeError("expected %s, got %r" % (wanted, _short(text)))
        return v

    return parse


# the types most commands share
STEPS = whole(1, MAX_STEPS, "longer runs would take weeks")
SEED = whole(0, MAX_SEED, "seeds are 32 bits")
EPISODES = whole(1, MAX_EPISODES, "more would take hours")
EPISODES_OR_NONE = whole(0, MAX_EPISODES, "more would take hours")


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


def check_input(path, what="policy file", hint=""):
    """CommandError unless path is a regular file this process can read: missing, a folder, a
    named pipe (whose read would block for ever), a device, a link loop, a file without read
    permission are named in one line."""
    from ..atomic import kind
    from . import CommandError

    if not path:
        raise CommandError("give a %s" % what)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise CommandError("no %s at %s%s" % (what, path, hint)) from None
    except (OSError, ValueError) as e:
        raise CommandError("%s cannot be read: %s" % (path, getattr(e, "strerror", None) or e)) from None
    import stat

    if stat.S_ISDIR(st.st_mode):
        raise CommandError("%s is a folder; give a %s" % (path, what))
    if not stat.S_ISREG(st.st_mode):
        raise CommandError("%s is %s, not a %s" % (path, kind(st.st_mode), what))
    try:
        with open(path, "rb") as f:
            f.read(1)
    except OSError as e:
        raise CommandError("%s cannot be read: %s (check its permissions)" % (path, e.strerror or e)) from None


def load_policy(path, hint=""):
    """The policy (float or int16) at path, or CommandError naming what is wrong with the file."""
    import microrl

    from . import CommandError

    from ..references import load_checked

    check_input(path, "policy file", hint)
    try:
        return load_checked(path)  # its reference vectors too
    except microrl.PolicyFileError as e:
        raise CommandError(str(e)) from None
    except OSError as e:  # changed since check_input
        raise CommandError("%s cannot be read: %s" % (path, e.strerror or e)) from None


def check_port(port):
    """CommandError unless port can be a serial port: a device file that exists (or a pyserial
    URL, socket:// or rfc2217://, or a name that is no path, such as COM3). For commands that do
    other work before they open it."""
    from ..atomic import kind
    from . import CommandError

    if not port:
        raise CommandError("--port: give the board's serial port, e.g. /dev/ttyUSB0")
    if port.startswith(("socket://", "rfc2217://")) or os.sep not in port:
        return
    try:
        st = os.stat(port)
    except FileNotFoundError:
        raise CommandError("--port %s: no such port (is the board plugged in? list ports with `mpremote connect list`)" % port) from None
    except OSError as e:
        raise CommandError("--port %s: %s" % (port, e.strerror or e)) from None
    import stat

    if not stat.S_ISCHR(st.st_mode):
        raise CommandError("--port %s is %s, not a serial port (a character device such as /dev/ttyUSB0)" % (port, kind(st.st_mode)))


def available_memory():
    """(bytes a process can use now, bytes a single allocation can reserve at most), from
    /proc/meminfo: MemAvailable + SwapFree, and MemTotal + SwapTotal (what Linux's overcommit
    heuristic allows). (None, None) where the system does not say."""
    try:
        info = {}
        with open("/proc/meminfo") as f:
            for line in f:
                name, _, rest = line.partition(":")
                info[name] = int(rest.split()[0]) * 1024
        return info["MemAvailable"] + info.get("SwapFree", 0), info["MemTotal"] + info.get("SwapTotal", 0)
    except (OSError, KeyError, ValueError, IndexError):
        return None, None


def check_memory(touched, reserved, what, advice):
    """CommandError when a run would use more memory than there is: touched bytes (written
    during the run) against the memory available now, reserved bytes (allocated, partly
    untouched: a replay buffer fills as the run goes) against what one process can reserve."""
    from . import CommandError

    now, most = available_memory()
    if now is None:
        return
    if reserved > most or touched > now:
        need, have = (reserved, most) if reserved > most else (touched, now)
        raise CommandError("%s needs about %s of memory, %s %s; %s" % (what, _bytes(need), "this machine can reserve" if reserved > most else "available:", _bytes(have), advice))


def _bytes(n):
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if n >= size:
            return "%.1f %s" % (n / size, unit)
    return "%d bytes" % n


def check_environment():
    """CommandError for a MICRORL_* environment variable no command can use, before any work:
    MICRORL_BACKEND naming no backend (or one this Python cannot load: native and ulab are
    MicroPython's), MICRORL_THREADS other than 1 or 2."""
    from . import CommandError

    forced = os.environ.get("MICRORL_BACKEND")
    if forced:
        from microrl import backend

        try:
            backend.load(forced)
        except ValueError as e:
            raise CommandError("MICRORL_BACKEND=%s: %s, or unset it" % (_short(forced), e)) from None
        except ImportError as e:
            raise CommandError("MICRORL_BACKEND=%s: that backend does not load in this Python (%s); here numpy or plain do, "
                               "or unset it (native and ulab run on MicroPython boards)" % (forced, e)) from None
    from ..algos.config import threads_from_environment

    try:
        threads_from_environment()
    except ValueError as e:
        raise CommandError(str(e)) from None
