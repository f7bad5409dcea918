"""The error every backend raises, in the program's terms (which size, which kernel, what would
work); each backend has a subclass (OpenCLError, CUDAError) so callers can tell them apart."""

from __future__ import annotations

from liftkit.semantics.interpreter import EvaluationError


class BackendError(EvaluationError):
    """A failure to run a compiled program: no such device, a launch the device cannot run, a
    size that gives no work, an input of the wrong shape. Subclasses the interpreter's run-time
    error so callers that report one report the other."""
