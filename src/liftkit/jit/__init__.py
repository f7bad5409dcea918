"""liftkit.jit: a JIT compiler for NumPy-style Python (seed 003: Velociraptor's VRIR, analyses
and CPU code generation through LLVM, with PyRaptor's front end and language extensions).

    from liftkit import jit

    @jit
    def axpy(a, x, y):
        for i in range(x.shape[0]):
            y[i] += a * x[i]

Importing this package is cheap: NumPy, llvmlite and the compiler load on first use.
"""

from __future__ import annotations

from typing import Any

from .lang import PAR, Domain, gpu, gpu_begin, gpu_end, prange

_LAZY = {"JitFunction": "dispatch", "JitError": "errors", "JitTypeError": "errors",
         "Array": "types", "bool_": "types", "int32": "types", "int64": "types",
         "float32": "types", "float64": "types", "complex64": "types", "complex128": "types"}


def jit(fn: Any = None, **options: Any) -> Any:
    """Compile a NumPy-style function per argument signature on first call (see
    :func:`liftkit.jit.dispatch.jit` for the options)."""
    from .dispatch import jit as _jit
    return _jit(fn, **options)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'liftkit.jit' has no attribute {name!r}")


__all__ = ["jit", "prange", "PAR", "Domain", "gpu", "gpu_begin", "gpu_end", *_LAZY]
