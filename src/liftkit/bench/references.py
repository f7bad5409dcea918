"""References: what a user would run instead of liftkit, timed in the same run.

An xp-style reference is `f(xp, *inputs) -> result` with xp = numpy (CPU) or cupy (GPU) and the
inputs of the program's spec (moved to the device for CuPy). The GPU adds cuBLAS through
`cupy.cublas` / `cupy.matmul` for the BLAS-like programs and PyTorch where it is natural (skipped
cleanly where torch is missing). CuPy and torch are imported lazily: they exist only on the GPU
machine and are no dependency of liftkit.

Program modules (rodinia, parboil, clblast, vendor) may export `XP_REFERENCES` for their own
programs; `xp_references()` merges them with the ones here.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable, Optional

from liftkit.programs.vendor import xp_convolution

XpFn = Callable[..., Any]
PROGRAM_MODULES = ("rodinia", "parboil", "clblast", "vendor")


@dataclass(frozen=True)
class Reference:
    """One reference implementation on one library.

    fn(*device_inputs) computes the result; `library` says how inputs are moved and how it is
    timed: "numpy" (host, perf_counter), "cupy" (CUDA events), "torch" (CUDA events).
    `mutates` marks in-place routines (cuBLAS scal/gemv): each call gets fresh device inputs for
    the check; timing reuses one set."""

    name: str  # e.g. "cuBLAS", "CuPy", "PyTorch", "NumPy"
    library: str
    fn: Callable[..., Any]
    mutates: bool = False


# ---------------------------------------------------------------------------------------------
# xp-style references for the programs of this package's registry


def _f32(xp: Any, v: Any) -> Any:
    return xp.float32(v)


def ref_scal(xp: Any, a: Any, x: Any) -> Any:
    return _f32(xp, a) * x


def ref_asum(xp: Any, x: Any) -> Any:
    return xp.abs(x).sum().reshape(1)


def ref_dot(xp: Any, x: Any, y: Any) -> Any:
    return xp.dot(x, y).reshape(1)


def ref_gemv(xp: Any, A: Any, x: Any, y: Any, alpha: Any, beta: Any) -> Any:
    return _f32(xp, alpha) * (A @ x) + _f32(xp, beta) * y


def _cnd(xp: Any, d: Any) -> Any:
    f = xp.float32
    k = f(1.0) / (f(1.0) + f(0.2316419) * xp.abs(d))
    poly = k * (f(0.31938153) + k * (f(-0.356563782) + k * (f(1.781477937) + k * (
        f(-1.821255978) + k * f(1.330274429)))))
    c = f(0.3989422804) * xp.exp(f(-0.5) * d * d) * poly
    return xp.where(d > 0, f(1.0) - c, c)


def ref_blackscholes(xp: Any, r: Any) -> tuple[Any, Any]:
    f = xp.float32
    S = f(10.0) * r + f(100.0) * (f(1.0) - r)
    K = f(10.0) * r + f(100.0) * (f(1.0) - r) * f(0.9)
    T = f(1.0) * r + f(10.0) * (f(1.0) - r)
    R = f(0.01) * r + f(0.05) * (f(1.0) - r)
    V = f(0.01) * r + f(0.10) * (f(1.0) - r)
    sqrtT = xp.sqrt(T)
    d1 = (xp.log(S / K) + (R + f(0.5) * V * V) * T) / (V * sqrtT)
    d2 = d1 - V * sqrtT
    c1, c2 = _cnd(xp, d1), _cnd(xp, d2)
    e = xp.exp(-R * T)
    return S * c1 - K * e * c2, K * e * (f(1.0) - c2) - S * (f(1.0) - c1)


def ref_md(xp: Any, pos: Any, nb: Any, cutsq: Any, lj1: Any, lj2: Any) -> Any:
    d = pos[:, None, :3] - pos[nb][:, :, :3]
    r2 = (d * d).sum(-1)
    r2inv = xp.float32(1.0) / r2
    r6inv = r2inv * r2inv * r2inv
    force = xp.where(r2 < cutsq, r2inv * r6inv * (xp.float32(lj1) * r6inv - xp.float32(lj2)), 0)
    out = xp.zeros_like(pos)
    out[:, :3] = (d * force[..., None].astype(xp.float32)).sum(axis=1)
    return out


def ref_nbody(xp: Any, pos: Any, vel: Any, esp: Any, dt: Any, block: int = 0) -> tuple[Any, Any]:
    """All pairs in row blocks (an N×N×3 array does not fit for large N)."""
    n = pos.shape[0]
    pairs = (1 << 22) if xp.__name__ == "numpy" else (1 << 24)
    block = block or max(1, min(n, pairs // max(n, 1)))
    acc = xp.empty((n, 3), dtype=xp.float32)
    q, m = pos[None, :, :3], pos[None, :, 3]
    for i in range(0, n, block):
        r = q - pos[i:i + block, None, :3]
        inv = xp.float32(1.0) / xp.sqrt((r * r).sum(-1) + xp.float32(esp))
        acc[i:i + block] = ((m * inv * inv * inv)[..., None] * r).sum(axis=1)
    dt = xp.float32(dt)
    newp, newv = pos.copy(), vel.copy()
    newp[:, :3] += vel[:, :3] * dt + xp.float32(0.5) * acc * dt * dt
    newv[:, :3] += acc * dt
    return newp, newv


def ref_mm(xp: Any, A: Any, B: Any) -> Any:
    return xp.matmul(A, B)


XP_REFERENCES: dict[str, XpFn] = {
    "scal": ref_scal, "asum": ref_asum, "dot": ref_dot, "gemv": ref_gemv,
    "blackscholes": ref_blackscholes, "md": ref_md, "nbody": ref_nbody, "mm": ref_mm,
    "conv2d": xp_convolution, "convolution": xp_convolution,
}


def xp_references() -> dict[str, XpFn]:
    """The references here plus every program module's XP_REFERENCES (absent modules skipped;
    the modules' own entries win for their programs)."""
    out = dict(XP_REFERENCES)
    for mod in PROGRAM_MODULES:
        try:
            m = importlib.import_module(f"liftkit.programs.{mod}")
        except ImportError:
            continue
        found = getattr(m, "XP_REFERENCES", None)
        if isinstance(found, dict):
            out.update({str(k): v for k, v in found.items() if callable(v)})
    return out


def find_xp(names: list[str], table: Optional[dict[str, XpFn]] = None) -> Optional[XpFn]:
    table = xp_references() if table is None else table
    return next((table[n] for n in names if n in table), None)


# ---------------------------------------------------------------------------------------------
# cuBLAS (through CuPy) and PyTorch on the GPU


def _cublas_fns(key: str) -> Optional[tuple[Callable[..., Any], bool]]:
    """(fn(*cupy inputs), mutates) calling cuBLAS for a BLAS-like reference key."""
    import cupy as cp
    from cupy import cublas

    if key == "scal":
        return _scal_inplace, True
    if key == "asum":
        return (lambda x: cublas.asum(x).reshape(1)), False
    if key == "dot":
        return (lambda x, y: cublas.dot(x, y).reshape(1)), False
    if key == "gemv":
        def gemv(A: Any, x: Any, y: Any, a: Any, b: Any) -> Any:
            cublas.gemv("N", float(a), A, x, float(b), y)  # updates y in place
            return y
        return gemv, True
    if key == "mm":
        return (lambda A, B: cp.matmul(A, B)), False
    if key == "gesummv":  # y = α·A·x + β·B·x: two cuBLAS gemv calls, as a user would
        def gesummv(*args: Any) -> Any:
            A, B, x, alpha, beta = _gesummv_args(args)
            y = cp.empty(A.shape[0], dtype=cp.float32)
            cublas.gemv("N", float(beta), B, x, 0.0, y)
            cublas.gemv("N", float(alpha), A, x, 1.0, y)
            return y
        return gesummv, False
    if key == "atax":  # y = Aᵀ·(A·x)
        def atax(A: Any, x: Any) -> Any:
            return A.T @ (A @ x)
        return atax, False
    return None


def _scal_inplace(a: Any, x: Any) -> Any:
    from cupy import cublas

    cublas.scal(float(a), x)
    return x


def _gesummv_args(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """(A, B, x, alpha, beta) from the CLBlast-style argument order, whichever way the program
    module orders its scalars (arrays first, then scalars)."""
    arrays = [a for a in args if getattr(a, "ndim", 0) >= 1]
    scalars = [a for a in args if getattr(a, "ndim", 0) == 0]
    A, B, x = arrays[:3]
    alpha, beta = (scalars + [1.0, 1.0])[:2]
    return A, B, x, alpha, beta


def _torch_fn(key: str) -> Optional[Callable[..., Any]]:
    import torch
    import torch.nn.functional as F

    torch.backends.cudnn.allow_tf32 = False  # full float32, as the checks expect
    torch.backends.cuda.matmul.allow_tf32 = False

    if key == "scal":
        return lambda a, x: x * float(a)
    if key == "asum":
        return lambda x: torch.abs(x).sum().reshape(1)
    if key == "dot":
        return lambda x, y: torch.dot(x, y).reshape(1)
    if key == "gemv":
        return lambda A, x, y, a, b: torch.addmv(y, A, x, beta=float(b), alpha=float(a))
    if key == "mm":
        return torch.matmul
    if key in ("conv2d", "convolution"):
        def conv(img: Any, w: Any) -> Any:
            p = F.pad(img[None, None], (1, 1, 1, 1), mode="replicate")
            return F.conv2d(p, w[None, None])[0, 0]
        return conv
    return None


def references_for(entry_ref: str, names: list[str], device_kind: str,
                   table: Optional[dict[str, XpFn]] = None,
                   errors: Optional[list[str]] = None) -> list[Reference]:
    """The references of one benchmark on a device kind ("gpu" or "cpu"): NumPy on the CPU;
    cuBLAS (where BLAS-like), CuPy and PyTorch (where natural and installed) on the GPU.
    Libraries that cannot be imported are noted in `errors` and skipped."""
    keys = [entry_ref] + [n for n in names if n != entry_ref]
    xp_fn = find_xp(keys, table)
    errors = errors if errors is not None else []
    if device_kind != "gpu":
        if xp_fn is None:
            return []
        import numpy as np

        return [Reference("NumPy", "numpy", lambda *a, _f=xp_fn: _f(np, *a))]
    out: list[Reference] = []
    try:
        import cupy as cp
    except Exception as err:  # noqa: BLE001 - CuPy missing: no GPU references
        errors.append(f"CuPy unavailable ({type(err).__name__}: {err})")
        cp = None
    if cp is not None:
        found = _cublas_fns(entry_ref)
        if found is not None:
            name = "cuBLAS" if entry_ref != "atax" else "CuPy (cuBLAS)"
            out.append(Reference(name, "cupy", found[0], mutates=found[1]))
        if xp_fn is not None:
            out.append(Reference("CuPy", "cupy", lambda *a, _f=xp_fn: _f(cp, *a)))
    try:
        fn = _torch_fn(entry_ref)
    except Exception as err:  # noqa: BLE001 - torch missing: skip it
        errors.append(f"PyTorch unavailable ({type(err).__name__})")
        fn = None
    if fn is not None:
        out.append(Reference("PyTorch", "torch", fn))
    return out
