"""The `microrl` subcommands, one module each with register(subparsers), which adds its parser
and sets func(args) -> exit code. They turn arguments into library calls and show the results;
the library below them (algos, envs, nn, board) knows no command line."""


class CommandError(Exception):
    """An error to show the user as one line (no traceback), exit code 2."""
