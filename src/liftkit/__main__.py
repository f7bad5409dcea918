"""`python -m liftkit` is the `liftkit` command (useful where the console script is not on PATH)."""

from liftkit.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
