"""The `liftkit` command line: list, check, show and run the bundled (or your own) programs."""

from liftkit.cli.main import main

__all__ = ["main"]
