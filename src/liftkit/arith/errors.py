"""Error type of liftkit.arith."""


class ArithError(Exception):
    """A user-facing arithmetic error: division by zero, unbound variable, bad parse, ..."""
