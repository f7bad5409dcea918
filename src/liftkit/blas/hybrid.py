"""Hybrid CPU+GPU GEMM (seed 003 §8.8): the rows of C split between two devices in parts of
M/P, both computing at once.

The GPU's share is enqueued and its queue flushed first (the thesis found drivers otherwise wait,
§8.9.3), then the CPU's share runs (a second liftkit session, or NumPy's BLAS on the host), then
the GPU's result is awaited. No callbacks are registered (§8.9.3). `tune_hybrid` measures every
split p_g = 0…P at a representative size and keeps the fastest; without one, the split follows
the two sessions' measured GEMM rates.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from liftkit.blas.codelets import Kind
from liftkit.blas.gemm import Trans, op_flag
from liftkit.blas.kernels import BlasError
from liftkit.blas.profile import size_class
from liftkit.blas.session import DTYPES, Session

PARTS = 8  # P: the granularity of the split (the thesis's choice)


@dataclass(frozen=True)
class HybridResult:
    """C, the split used (GPU parts of P) and the wall time."""

    C: np.ndarray
    gpu_parts: int
    seconds: float


def gpu_parts_from_rates(gpu: Session, cpu: Optional[Session], kind: Kind,
                         sizes: dict[str, int]) -> Optional[int]:
    """p_g from the profiles' best measured rates (None when either is unknown)."""
    cls = size_class("mm", sizes)

    def rate(s: Optional[Session]) -> Optional[float]:
        if s is None or s.profile is None:
            return None
        ranked = s.profile.ranked(kind, cls)
        return ranked[0].rate if ranked else None

    rg, rc = rate(gpu), rate(cpu)
    if rg is None or rc is None:
        return None
    return int(round(PARTS * rg / (rg + rc)))


def hybrid_gemm(gpu: Session, A: Any, B: Any, C: Any = None, *, cpu: Optional[Session] = None,
                alpha: Any = 1.0, beta: Any = 0.0, trans_a: Trans = False,
                trans_b: Trans = False, gpu_parts: Optional[int] = None) -> HybridResult:
    """C = α·op(A)·op(B) + β·C for NumPy operands, rows split between `gpu` (a session) and
    `cpu` (a session; None: NumPy's BLAS on the host). gpu_parts: p_g of P = 8 parts (None:
    from the devices' profiles, else the split `tune_hybrid` stored, else half)."""
    A, B = np.asarray(A), np.asarray(B)
    if A.ndim != 2 or B.ndim != 2:
        raise BlasError(f"hybrid gemm: A and B must be matrices, got shapes {A.shape} and {B.shape}")
    if A.dtype != B.dtype or A.dtype not in DTYPES:
        raise BlasError(f"hybrid gemm: A and B must have one dtype of float32, float64, "
                        f"complex64 and complex128, got {A.dtype} and {B.dtype}")
    ta, ca = op_flag("hybrid gemm", "trans_a", trans_a, A.dtype)
    tb, cb = op_flag("hybrid gemm", "trans_b", trans_b, B.dtype)
    opA = (A.conj() if ca else A).T if ta else A
    opB = (B.conj() if cb else B).T if tb else B
    m, k = opA.shape
    if opB.shape[0] != k:
        raise BlasError(f"hybrid gemm: op(A) is {m}×{k} and op(B) is {opB.shape[0]}×{opB.shape[1]}:"
                        f" the inner dimensions {k} and {opB.shape[0]} differ")
    n = opB.shape[1]
    if C is not None:
        C = np.asarray(C)
        if C.shape != (m, n) or C.dtype != A.dtype:
            raise BlasError(f"hybrid gemm: C must be {m}×{n} {A.dtype}, got {C.shape} {C.dtype}")
    kind = Kind("mm", DTYPES[A.dtype], "NN")
    if gpu_parts is None:
        gpu_parts = _stored_split(gpu, kind) or gpu_parts_from_rates(
            gpu, cpu, kind, {"M": m, "N": n, "K": k}) or PARTS // 2
    if not 0 <= gpu_parts <= PARTS:
        raise BlasError(f"hybrid gemm: gpu_parts must be 0…{PARTS}, got {gpu_parts}")
    mg = m * gpu_parts // PARTS
    out = np.empty((m, n), A.dtype) if C is None else C
    c_in = None if C is None or beta == 0 else C.copy()
    t0 = time.perf_counter()
    fut = None
    if mg:
        fut = gpu.gemm(opA[:mg], opB, None if c_in is None else c_in[:mg], alpha=alpha,
                       beta=beta if c_in is not None else 0.0)
        gpu.q.flush()  # start the GPU now, before the CPU's share
    if mg < m:
        if cpu is None:
            part = alpha * (opA[mg:] @ opB)
            if c_in is not None:
                part += beta * c_in[mg:]
            out[mg:] = part
        else:
            out[mg:] = cpu.gemm(opA[mg:], opB, None if c_in is None else c_in[mg:], alpha=alpha,
                                beta=beta if c_in is not None else 0.0).result()
    if fut is not None:
        out[:mg] = fut.result()
    return HybridResult(out, gpu_parts, time.perf_counter() - t0)


def _stored_split(gpu: Session, kind: Kind) -> Optional[int]:
    if gpu.profile is None:
        return None
    v = gpu.profile.notes.get("hybrid", {}).get(kind.dtype)
    return int(v) if v is not None else None


def tune_hybrid(gpu: Session, cpu: Optional[Session] = None, dtype: str = "float32",
                n: int = 2048, repeat: int = 3) -> dict[int, float]:
    """Seconds per split p_g = 0…P at n×n×n (median of `repeat`); the fastest split is stored
    in the GPU session's profile notes (save the profile to keep it). Checked against NumPy."""
    rng = np.random.default_rng(0)
    A = rng.uniform(-1, 1, (n, n)).astype(dtype)
    B = rng.uniform(-1, 1, (n, n)).astype(dtype)
    want = A.astype(np.float64) @ B
    times: dict[int, float] = {}
    for pg in range(PARTS + 1):
        runs = []
        for _ in range(repeat):
            r = hybrid_gemm(gpu, A, B, cpu=cpu, gpu_parts=pg)
            runs.append(r.seconds)
        err = float(np.max(np.abs(r.C - want))) / max(float(np.max(np.abs(want))), 1e-30)
        if err > (1e-3 if dtype == "float32" else 1e-9):
            raise BlasError(f"hybrid gemm with {pg}/{PARTS} parts on the GPU is wrong "
                            f"(relative error {err:.1e})")
        times[pg] = sorted(runs)[len(runs) // 2]
    if gpu.profile is not None:
        gpu.profile.notes.setdefault("hybrid", {})[dtype] = min(times, key=times.__getitem__)
    return times
