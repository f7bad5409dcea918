"""Parboil's MRI-Q of seed 000 Table 1: the Q matrix of a non-Cartesian MRI reconstruction.

For each pixel (x, y, z): Q = Σ_k phiMag_k · (cos(2π(kx·x + ky·y + kz·z)), sin(2π(...))).
The sample values come as float4 (kx, ky, kz, phiMag) — Parboil's `struct kValues` — and the
result as float2 (Qr, Qi) per pixel.

Paper input sizes (Table 1): 32K and 262K pixels (Parboil's small and large data sets, with 3072
and 2048 k-space samples). The default sizes here are small for the interpreter and CPU tests.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

# ruff: noqa: F405
from liftkit.dsl import *  # noqa: F403  (program files read like the papers)
from liftkit.programs.registry import ProgramSpec

X, K = size("X"), size("K")
F2_ZERO = lit((0.0, 0.0), float2)
PIX2 = "6.2831853071795864769252867665590058f"


def _phase(sx: Any, sy: Any, sz: Any, k: np.ndarray) -> np.ndarray:
    k = np.asarray(k, dtype=np.float32)
    return np.float32(2 * np.pi) * (k[..., 0] * sx + k[..., 1] * sy + k[..., 2] * sz)


def _qterm_impl(sx: Any, sy: Any, sz: Any, k: np.ndarray) -> np.ndarray:
    arg = _phase(sx, sy, sz, k)
    phi = np.asarray(k, dtype=np.float32)[..., 3]
    return np.stack([phi * np.cos(arg), phi * np.sin(arg)], axis=-1).astype(np.float32)


def _compute_q_impl(sx: Any, sy: Any, sz: Any, k: np.ndarray, acc: np.ndarray) -> np.ndarray:
    return (np.asarray(acc, dtype=np.float32) + _qterm_impl(sx, sy, sz, k)).astype(np.float32)


qterm = user_fun("qTerm", [("sX", float32), ("sY", float32), ("sZ", float32), ("k", float4)], float2,
                 f"""const float expArg = {PIX2} * (k.x * sX + k.y * sY + k.z * sZ);
  return (float2)(k.w * cos(expArg), k.w * sin(expArg));""", _qterm_impl)
compute_q = user_fun("computeQ", [("sX", float32), ("sY", float32), ("sZ", float32), ("k", float4),
                                  ("acc", float2)], float2,
                     f"""const float expArg = {PIX2} * (k.x * sX + k.y * sY + k.z * sZ);
  return (float2)(acc.x + k.w * cos(expArg), acc.y + k.w * sin(expArg));""", _compute_q_impl)


def mriq() -> Any:
    """x, y, z: [float]_X pixel coordinates; kvals: [float4]_K (kx, ky, kz, phiMag)."""
    return fun([float32[X], float32[X], float32[X], float4[K]], lambda x, y, z, kvals:
               join << map(lambda p: reduce(add2, F2_ZERO) << map(lambda k: qterm(p[0], p[1], p[2], k))
                           << kvals) << zip(x, y, z))


def mriq_low() -> Any:
    """Parboil's ComputeQ kernel: one work-item per pixel (mapGlb, coalesced coordinate reads),
    its coordinates copied to private memory once, the (Qr, Qi) accumulator private; all
    work-items read the same k-space sample at a time (a broadcast, served by the cache)."""
    return fun([float32[X], float32[X], float32[X], float4[K]], lambda x, y, z, kvals:
               join << mapGlb(0)(lambda p: let(
                   toPrivate(id) << p[0], toPrivate(id) << p[1], toPrivate(id) << p[2],
                   lambda sx, sy, sz: toGlobal(mapSeq(id2)) << reduceSeq(
                       lambda acc, k: compute_q(sx, sy, sz, k, acc), F2_ZERO) << kvals))
               << zip(x, y, z))


def _mriq_inputs(s: Mapping[str, int], rng: np.random.Generator) -> list[Any]:
    """Coordinates in [-0.5, 0.5) and k-space frequencies in [-8, 8), so the phase stays below
    ~80 and float32 cos/sin of it are accurate to ~1e-5."""
    x, k = s["X"], s["K"]
    coords = [rng.uniform(-0.5, 0.5, x).astype(np.float32) for _ in range(3)]
    kvals = np.concatenate([rng.uniform(-8, 8, (k, 3)), rng.uniform(0, 1, (k, 1))], axis=1)
    return [*coords, kvals.astype(np.float32)]


def _mriq_ref(x: np.ndarray, y: np.ndarray, z: np.ndarray, kvals: np.ndarray) -> np.ndarray:
    kv = kvals.astype(np.float64)
    xyz = np.stack([x, y, z], axis=1).astype(np.float64)
    arg = 2 * np.pi * (xyz @ kv[:, :3].T)  # (X, K)
    out = np.stack([np.cos(arg) @ kv[:, 3], np.sin(arg) @ kv[:, 3]], axis=1)
    return out.astype(np.float32)


def _mriq_xp(xp: Any, x: Any, y: Any, z: Any, kvals: Any) -> Any:
    arg = (2 * np.pi) * (xp.stack([x, y, z], axis=1) @ kvals[:, :3].T)
    return xp.stack([xp.cos(arg) @ kvals[:, 3], xp.sin(arg) @ kvals[:, 3]], axis=1)


XP_REFERENCES: dict[str, Callable[..., Any]] = {"mriq": _mriq_xp}

_SIZES = {"X": 1024, "K": 256}
_RULE = "X, K any (≥ 1); Parboil: K = 3072 (32K pixels) or 2048 (262K pixels)"

SPECS = [
    ProgramSpec("mriq", "MRI-Q: Σ_k phiMag·(cos, sin)(2π k·x) per pixel (Parboil)",
                "seed 000 Table 1 (Parboil)", mriq, _mriq_inputs, _mriq_ref, _SIZES, rtol=1e-3,
                atol=2e-3, size_rule=_RULE, tags=("table1",)),
    ProgramSpec("mriq_low", "MRI-Q, one work-item per pixel, coordinates in private memory",
                "seed 000 Table 1 (Parboil)", mriq_low, _mriq_inputs, _mriq_ref, _SIZES,
                level="low", rtol=1e-3, atol=2e-3, size_rule=_RULE, tags=("table1", "gpu")),
]
