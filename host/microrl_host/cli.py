"""The `microrl` command: the subcommands of microrl_host/commands/, in the order of COMMANDS."""
import gc
import os
import sys

# Every command runs its BLAS on one thread (training threads its own work: twin.py, PPO's critic
# thread). Said before numpy loads OpenBLAS, it starts no idle BLAS threads, each of which spun
# about 0.1 CPU-s at start-up here; a value set by the user wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from microrl.fileformat import PolicyFileError  # noqa: E402

from .atomic import ENVIRONMENT_ERRORS, WriteError  # noqa: E402
from .commands.options import Parser  # noqa: E402
from .commands import CommandError, bench, board, demo, deploy, eval, export, import_, info, mip, plot, render, sweep, train, train_on_board, web  # noqa: E402

COMMANDS = (bench, board, demo, deploy, eval, export, import_, info, mip, plot, render, sweep, train, train_on_board, web)


def build_parser():
    parser = Parser(
        prog="microrl",
        description="Deep RL for continuous control: train on the host in seconds, deploy to a MicroPython board, run it at kHz rates.",
        epilog="Run 'microrl COMMAND --help' for the options of a command.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for command in COMMANDS:
        command.register(sub)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 0
    try:
        return args.func(args) or 0
    except CommandError as e:
        print("microrl %s: error: %s" % (args.command, e), file=sys.stderr)
        return 2
    except PolicyFileError as e:  # a policy file refused where a command did not expect one (a save whose path became a device)
        print("microrl %s: error: %s" % (args.command, e), file=sys.stderr)
        return 2
    except OSError as e:
        # what the machine did, not a bug of ours: a full disk, a read-only or failing one, a
        # file's permissions (atomic.WriteError says which file was not written and that the old
        # one is intact): one line, like every refusal
        if e.errno not in ENVIRONMENT_ERRORS and not isinstance(e, WriteError):
            raise
        print("microrl %s: error: %s" % (args.command, e if isinstance(e, WriteError) else "%s: %s" % (e.filename, e.strerror) if e.filename else e.strerror), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


# Collect young objects every 10,000 allocations rather than every 700: a command's start-up
# (numba's import and its cache loads) makes some hundreds of thousands of objects that all
# live on, and the default ran about 160 collections over them, 25-30 ms of a warm `microrl
# train pendulum` here (exploratory, gc.callbacks); at 10,000, ten collections and 11-12 ms (larger thresholds made each
# collection dearer: 22 ms at 50,000).
YOUNG_COLLECTION_THRESHOLD = 10000


def entry():
    """The console script (and `python -m microrl_host.cli`): main(), then the interpreter's exit
    without its last garbage collections over every object left (numba's and LLVM's types and
    registries, some hundreds of thousands): they took 0.2-0.3 s of every command. Frozen objects
    that reference counting frees are still freed; cycles among them are left to the process's end."""
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, *gc.get_threshold()[1:])
    code = main()
    gc.freeze()
    return code


if __name__ == "__main__":
    sys.exit(entry())
