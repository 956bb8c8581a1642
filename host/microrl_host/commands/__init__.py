"""Subcommands of `microrl`, one module each, found by cli.build_parser()."""
