"""liftkit: data-parallel array programs as compositions of functional patterns (Lift)."""

__version__ = "0.1.0"

import logging as _logging  # noqa: E402

# a library's log reaches the terminal only where the application asks (`liftkit --verbose`),
# not through logging's last-resort handler
_logging.getLogger("liftkit").addHandler(_logging.NullHandler())


# ``@liftkit.jit``: the NumPy-style Python JIT (seed 003). Bound after the subpackage import so
# the name is the decorator, not the package (``liftkit.jit.prange`` etc. resolve via the package).
from .jit import jit  # noqa: E402
from .jit.lang import gpu, gpu_begin, gpu_end  # noqa: E402  (accelerated sections, seed 003 §4.5.4)
