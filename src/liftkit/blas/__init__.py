"""liftkit.blas: an auto-tuned matrix library (seed 003 ch. 8, RaijinCL) whose kernels are Lift
derivations.

    import numpy as np, liftkit.blas as lb
    C = lb.gemm(A, B, alpha=2.0).result()          # a Future: calls enqueue and return
    s = lb.Session("gpu")                          # or one session per device, explicitly
    y = s.gemv(A, x, trans=True).result()

Operations: gemm, gemv, transpose, scal, axpy, dot, dotc, asum, nrm2 (float32, float64,
complex64, complex128; row- and column-major; op flags False/"N", True/"T" and "C", the
conjugate transpose; NumPy arrays, or device arrays used in place: pyopencl arrays on OpenCL,
CuPy/PyTorch/`__cuda_array_interface__` arrays on CUDA, where "gpu" runs when a CUDA GPU is
present). For complex vectors asum
and nrm2 follow BLAS (scasum: Σ|re|+|im|; scnrm2) and return reals; dot is dotu, dotc
conjugates x. `plan_gemm` is the low-level
form with caller-owned workspace; `hybrid_gemm` splits C's rows between a GPU and the CPU. Kernels come from codelets (`liftkit.blas.codelets`),
derivations of high-level programs chosen per device by a tuned profile (`liftkit blas tune`).

The module-level functions run on `default_session()`: one session per device spec or OpenCL
context for the process (pyopencl arguments select the session of their context).
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Optional

from liftkit.blas.calls import array_library
from liftkit.blas.codelets import CodeletError, Kind, Variant
from liftkit.blas.gemm import GemmPlan, Packed, Trans
from liftkit.blas.gemm import gemm as _gemm
from liftkit.blas.gemm import plan_gemm as _plan_gemm
from liftkit.blas.hybrid import HybridResult, hybrid_gemm, tune_hybrid
from liftkit.blas.kernels import BlasError
from liftkit.blas import level12 as _l12
from liftkit.blas.profile import Profile, ProfileError
from liftkit.blas.session import Future, NoProfileWarning, Session, Workspace


class _SessionMethods:
    """The operations as methods of a Session."""

    def gemm(self, A: Any, B: Any, C: Any = None, *, alpha: Any = 1.0, beta: Any = 0.0,
             trans_a: Trans = False, trans_b: Trans = False) -> Future:
        return _gemm(self, A, B, C, alpha=alpha, beta=beta, trans_a=trans_a,  # type: ignore[arg-type]
                     trans_b=trans_b)

    def plan_gemm(self, a_shape: tuple[int, int], b_shape: tuple[int, int], dtype: Any,
                  **kw: Any) -> GemmPlan:
        return _plan_gemm(self, a_shape, b_shape, dtype, **kw)  # type: ignore[arg-type]

    def gemv(self, A: Any, x: Any, y: Any = None, *, alpha: Any = 1.0, beta: Any = 0.0,
             trans: Trans = False) -> Future:
        return _l12.gemv(self, A, x, y, alpha=alpha, beta=beta, trans=trans)  # type: ignore[arg-type]

    def transpose(self, A: Any, out: Any = None) -> Future:
        return _l12.transpose(self, A, out)  # type: ignore[arg-type]

    def scal(self, alpha: Any, x: Any, out: Any = None) -> Future:
        return _l12.scal(self, alpha, x, out)  # type: ignore[arg-type]

    def axpy(self, alpha: Any, x: Any, y: Any, out: Any = None) -> Future:
        return _l12.axpy(self, alpha, x, y, out)  # type: ignore[arg-type]

    def dot(self, x: Any, y: Any) -> Future:
        return _l12.dot(self, x, y)  # type: ignore[arg-type]

    def dotc(self, x: Any, y: Any) -> Future:
        return _l12.dotc(self, x, y)  # type: ignore[arg-type]

    def asum(self, x: Any) -> Future:
        return _l12.asum(self, x)  # type: ignore[arg-type]

    def nrm2(self, x: Any) -> Future:
        return _l12.nrm2(self, x)  # type: ignore[arg-type]


def _one_call(f: Any) -> Any:
    """An operation as one call of the queue's (`begin_call`/`end_call`: the operands' library
    streams are waited for once per call)."""

    @functools.wraps(f)
    def call(self: Session, *args: Any, **kw: Any) -> Any:
        q = self.q
        q.begin_call()
        try:
            return f(self, *args, **kw)
        finally:
            q.end_call()

    return call


for _name, _f in vars(_SessionMethods).items():
    if not _name.startswith("_"):
        setattr(Session, _name, _f if _name == "plan_gemm" else _one_call(_f))


class DefaultSessions:
    """The module-level functions' sessions, one per device spec or pyopencl context, made on
    first use and kept for the process: an explicit registry (`clear` drops them), whose lock
    makes one session per key where threads race to their first call."""

    def __init__(self) -> None:
        self._by_key: dict[tuple[Optional[str], Any], Session] = {}
        self._lock = threading.Lock()

    def get(self, spec: Optional[str], context: Any = None) -> Session:
        s = self._by_key.get((spec, context))
        if s is None:
            with self._lock:
                s = self._by_key.get((spec, context))
                if s is None:
                    s = Session(spec) if context is None else Session(context=context)
                    self._by_key[(spec, context)] = s
        return s

    def clear(self) -> None:
        with self._lock:
            self._by_key.clear()


SESSIONS = DefaultSessions()


def default_session(device: Optional[str] = None) -> Session:
    """The process's session for a device spec ("cpu", "gpu", a name; None: the default
    device), created on first use (`SESSIONS`)."""
    return SESSIONS.get(device)


def _session(args: tuple[Any, ...], device: Optional[str]) -> Session:
    """The session of the arrays' device: a pyopencl array's context, or the CUDA GPU a
    CuPy/PyTorch array lives on; else `device`'s."""
    if device is None and array_library(type(args[0])) == "cupy":  # the planned calls' case
        return SESSIONS.get("cuda")
    from liftkit.blas.queues import is_cuda_array
    from liftkit.blas.session import _pyopencl_array

    cla = _pyopencl_array()
    for a in args:
        if cla is not None and isinstance(a, cla.Array):
            return SESSIONS.get(None, a.context)
        if device is None and is_cuda_array(a):
            return SESSIONS.get("cuda")
    return default_session(device)


def gemm(A: Any, B: Any, C: Any = None, *, alpha: Any = 1.0, beta: Any = 0.0,
         trans_a: Trans = False, trans_b: Trans = False, device: Optional[str] = None) -> Future:
    """C = α·op(A)·op(B) + β·C (op: False/"N", True/"T", "C" = conjugate transpose); returns
    a Future (C updated in place when given)."""
    return _session((A, B, C), device).gemm(A, B, C, alpha=alpha, beta=beta, trans_a=trans_a,
                                             trans_b=trans_b)


def gemv(A: Any, x: Any, y: Any = None, *, alpha: Any = 1.0, beta: Any = 0.0,
         trans: Trans = False, device: Optional[str] = None) -> Future:
    """y = α·op(A)·x + β·y; returns a Future."""
    return _session((A, x, y), device).gemv(A, x, y, alpha=alpha, beta=beta, trans=trans)


def transpose(A: Any, out: Any = None, *, device: Optional[str] = None) -> Future:
    """Aᵀ, out of place; returns a Future."""
    return _session((A, out), device).transpose(A, out)


def scal(alpha: Any, x: Any, out: Any = None, *, device: Optional[str] = None) -> Future:
    return _session((x, out), device).scal(alpha, x, out)


def axpy(alpha: Any, x: Any, y: Any, out: Any = None, *, device: Optional[str] = None) -> Future:
    return _session((x, y, out), device).axpy(alpha, x, y, out)


def dot(x: Any, y: Any, *, device: Optional[str] = None) -> Future:
    return _session((x, y), device).dot(x, y)


def dotc(x: Any, y: Any, *, device: Optional[str] = None) -> Future:
    return _session((x, y), device).dotc(x, y)


def asum(x: Any, *, device: Optional[str] = None) -> Future:
    return _session((x,), device).asum(x)


def nrm2(x: Any, *, device: Optional[str] = None) -> Future:
    return _session((x,), device).nrm2(x)


__all__ = ["BlasError", "CodeletError", "Future", "GemmPlan", "HybridResult", "Kind",
           "NoProfileWarning", "hybrid_gemm", "tune_hybrid",
           "Packed", "Profile", "ProfileError", "Session", "Variant", "Workspace", "asum", "axpy",
           "DefaultSessions", "SESSIONS", "default_session", "dot", "dotc", "gemm", "gemv", "nrm2",
           "scal", "transpose"]
