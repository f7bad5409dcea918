"""liftkit: data-parallel array programs as compositions of functional patterns (Lift)."""

__version__ = "0.1.0"


# ``@liftkit.jit``: the NumPy-style Python JIT (seed 003). Bound after the subpackage import so
# the name is the decorator, not the package (``liftkit.jit.prange`` etc. resolve via the package).
from .jit import jit  # noqa: E402
