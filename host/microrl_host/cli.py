"""The `microrl` command. Each subcommand lives in microrl_host/commands/<name>.py with
`register(subparsers)`, which adds its parser and sets `func(args) -> exit code`."""
import argparse
import importlib
import pkgutil
import sys

from . import commands


class CommandError(Exception):
    """An error to show the user as one line (no traceback), exit code 2."""


def build_parser():
    parser = argparse.ArgumentParser(
        prog="microrl",
        description="Deep RL for continuous control: train on the host in seconds, deploy to a MicroPython board, run it at kHz rates.",
        epilog="Run 'microrl COMMAND --help' for the options of a command.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module("%s.%s" % (commands.__name__, info.name))
        module.register(sub)
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
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    # run as `python -m microrl_host.cli`: use the package's module, so that commands' CommandError
    # (imported from microrl_host.cli) is the class main() catches, not a copy in __main__
    from microrl_host.cli import main as package_main

    sys.exit(package_main())
