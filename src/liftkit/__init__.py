"""liftkit: data-parallel array programs as compositions of functional patterns (Lift)."""

__version__ = "0.1.0"
