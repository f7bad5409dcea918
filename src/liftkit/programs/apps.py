"""Application programs of the seeds: BlackScholes and MD (seed 002 Fig. 13), N-Body, matrix
multiplication, a 3-point stencil with slide and pad, 2D convolution, and matrix transposition
via gather (seed 000 §5.3)."""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from liftkit.dsl import *  # noqa: F403  (program files read like the papers)
from liftkit.programs.registry import ProgramSpec

# ruff: noqa: F405
N, M, K = size("N"), size("M"), size("K")
F4_ZERO = lit((0.0, 0.0, 0.0, 0.0), float4)
PAIR = tuple_of(float32, float32)
F4_PAIR = tuple_of(float4, float4)


# -- BlackScholes -----------------------------------------------------------------------------
# Option parameters are drawn from one uniform number per option, as in the Lift benchmark; the
# cumulative normal uses the Abramowitz-Stegun polynomial of the NVIDIA SDK.
_BS_C = """
  const float S = 10.0f * r + 100.0f * (1.0f - r);
  const float K = 10.0f * r + 100.0f * (1.0f - r) * 0.9f;
  const float T = 1.0f * r + 10.0f * (1.0f - r);
  const float R = 0.01f * r + 0.05f * (1.0f - r);
  const float V = 0.01f * r + 0.10f * (1.0f - r);
  const float sqrtT = sqrt(T);
  const float d1 = (log(S / K) + (R + 0.5f * V * V) * T) / (V * sqrtT);
  const float d2 = d1 - V * sqrtT;
  float c1, c2;
  {
    const float k = 1.0f / (1.0f + 0.2316419f * fabs(d1));
    c1 = 0.3989422804f * exp(-0.5f * d1 * d1) * (k * (0.31938153f + k * (-0.356563782f
         + k * (1.781477937f + k * (-1.821255978f + k * 1.330274429f)))));
    if (d1 > 0.0f) c1 = 1.0f - c1;
  }
  {
    const float k = 1.0f / (1.0f + 0.2316419f * fabs(d2));
    c2 = 0.3989422804f * exp(-0.5f * d2 * d2) * (k * (0.31938153f + k * (-0.356563782f
         + k * (1.781477937f + k * (-1.821255978f + k * 1.330274429f)))));
    if (d2 > 0.0f) c2 = 1.0f - c2;
  }
  const float expRT = exp(-R * T);
  Tuple res = {S * c1 - K * expRT * c2, K * expRT * (1.0f - c2) - S * (1.0f - c1)};
  return res;
"""


def _bs_params(r: np.ndarray, dtype: Any) -> tuple[np.ndarray, ...]:
    one = dtype(1.0)
    S = dtype(10.0) * r + dtype(100.0) * (one - r)
    Kx = dtype(10.0) * r + dtype(100.0) * (one - r) * dtype(0.9)
    T = dtype(1.0) * r + dtype(10.0) * (one - r)
    R = dtype(0.01) * r + dtype(0.05) * (one - r)
    V = dtype(0.01) * r + dtype(0.10) * (one - r)
    return S, Kx, T, R, V


def _cnd_poly(d: np.ndarray) -> np.ndarray:
    k = np.float32(1.0) / (np.float32(1.0) + np.float32(0.2316419) * np.abs(d))
    poly = k * (np.float32(0.31938153) + k * (np.float32(-0.356563782) + k * (
        np.float32(1.781477937) + k * (np.float32(-1.821255978) + k * np.float32(1.330274429)))))
    c = np.float32(0.3989422804) * np.exp(np.float32(-0.5) * d * d) * poly
    return np.where(d > 0, np.float32(1.0) - c, c)


def _bs_impl(r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r = np.asarray(r, dtype=np.float32)
    S, Kx, T, R, V = _bs_params(r, np.float32)
    sqrtT = np.sqrt(T)
    d1 = (np.log(S / Kx) + (R + np.float32(0.5) * V * V) * T) / (V * sqrtT)
    d2 = d1 - V * sqrtT
    c1, c2 = _cnd_poly(d1), _cnd_poly(d2)
    e = np.exp(-R * T)
    return S * c1 - Kx * e * c2, Kx * e * (np.float32(1.0) - c2) - S * (np.float32(1.0) - c1)


BSComputation = user_fun("BSComputation", [("r", float32)], PAIR, _BS_C, _bs_impl)


def black_scholes() -> Any:
    return fun([float32[N]], lambda s: map(BSComputation) << s)


def _bs_ref(r: np.ndarray) -> np.ndarray:
    """Exact cumulative normal (erfc) in float64: independent of the polynomial above."""
    S, Kx, T, R, V = _bs_params(r.astype(np.float64), np.float64)
    sqrtT = np.sqrt(T)
    d1 = (np.log(S / Kx) + (R + 0.5 * V * V) * T) / (V * sqrtT)
    d2 = d1 - V * sqrtT
    cnd = np.vectorize(lambda d: 0.5 * math.erfc(-d / math.sqrt(2.0)))
    c1, c2 = cnd(d1), cnd(d2)
    e = np.exp(-R * T)
    out = np.empty(r.shape, dtype=[("f0", np.float32), ("f1", np.float32)])
    out["f0"] = S * c1 - Kx * e * c2
    out["f1"] = Kx * e * (1.0 - c2) - S * (1.0 - c1)
    return out


# -- MD (SHOC): Lennard-Jones forces from a neighbour list ----------------------------------------
_MD_C = """
  const float dx = p.x - q.x, dy = p.y - q.y, dz = p.z - q.z;
  const float r2 = dx * dx + dy * dy + dz * dz;
  if (r2 < cutsq) {
    const float r2inv = 1.0f / r2;
    const float r6inv = r2inv * r2inv * r2inv;
    const float force = r2inv * r6inv * (lj1 * r6inv - lj2);
    f.x += dx * force; f.y += dy * force; f.z += dz * force;
  }
  return f;
"""


def _md_impl(f: np.ndarray, p: np.ndarray, q: np.ndarray, cutsq: Any, lj1: Any, lj2: Any) -> np.ndarray:
    d = (p - q)[..., :3]
    r2 = (d * d).sum(axis=-1, dtype=np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        r2inv = np.float32(1.0) / r2
        r6inv = r2inv * r2inv * r2inv
        force = r2inv * r6inv * (lj1 * r6inv - lj2)
    inside = (r2 < cutsq)[..., None]
    out = np.array(f, dtype=np.float32, copy=True)
    out[..., :3] = np.where(inside, f[..., :3] + d * force[..., None], f[..., :3])
    return out


updateF = user_fun("updateF", [("f", float4), ("p", float4), ("q", float4), ("cutsq", float32),
                               ("lj1", float32), ("lj2", float32)], float4, _MD_C, _md_impl)


def md() -> Any:
    return fun([float4[N], int32[M][N], float32, float32, float32],
               lambda ps, nbhs, cutsq, lj1, lj2:
               join << map(lambda p_ns: reduceSeq(
                   lambda f, nid: updateF(f, p_ns[0], at(ps, nid), cutsq, lj1, lj2), F4_ZERO)
                   << p_ns[1]) << zip(ps, nbhs))


def _lattice(n: int, rng: np.random.Generator) -> np.ndarray:
    """Points on a jittered cubic lattice: no two closer than 0.6, so forces stay moderate."""
    side = math.ceil(n ** (1 / 3))
    g = np.stack(np.meshgrid(*[np.arange(side)] * 3, indexing="ij"), axis=-1).reshape(-1, 3)[:n]
    pts = g + rng.uniform(-0.2, 0.2, (n, 3))
    return np.concatenate([pts, np.zeros((n, 1))], axis=1).astype(np.float32)


def _md_inputs(s: Mapping[str, int], rng: np.random.Generator) -> list[Any]:
    n, m = s["N"], s["M"]
    pos = _lattice(n, rng)
    nb = (np.arange(n)[:, None] + rng.integers(1, n, (n, m))) % n  # never the particle itself
    return [pos, nb.astype(np.int32), np.float32(4.0), np.float32(1.5), np.float32(2.0)]


def _md_ref(pos: np.ndarray, nb: np.ndarray, cutsq: float, lj1: float, lj2: float) -> np.ndarray:
    p = pos.astype(np.float64)
    d = p[:, None, :3] - p[nb][:, :, :3]
    r2 = (d * d).sum(-1)
    r2inv = 1.0 / r2
    r6inv = r2inv ** 3
    force = np.where(r2 < cutsq, r2inv * r6inv * (lj1 * r6inv - lj2), 0.0)
    out = np.zeros_like(p)
    out[:, :3] = (d * force[..., None]).sum(axis=1)
    return out.astype(np.float32)


# -- N-Body ------------------------------------------------------------------------------------
_ACC_C = """
  const float rx = q.x - p.x, ry = q.y - p.y, rz = q.z - p.z;
  const float distSqr = rx * rx + ry * ry + rz * rz + espSqr;
  const float invDist = rsqrt(distSqr);
  const float s = q.w * invDist * invDist * invDist;
  acc.x += s * rx; acc.y += s * ry; acc.z += s * rz;
  return acc;
"""


def _acc_impl(acc: np.ndarray, p: np.ndarray, q: np.ndarray, esp: Any) -> np.ndarray:
    r = (q - p)[..., :3]
    dist = (r * r).sum(-1, dtype=np.float32) + esp
    inv = np.float32(1.0) / np.sqrt(dist)
    s = q[..., 3] * inv * inv * inv
    out = np.array(acc, dtype=np.float32, copy=True)
    out[..., :3] += s[..., None] * r
    return out


calcAcc = user_fun("calcAcc", [("acc", float4), ("p", float4), ("q", float4), ("espSqr", float32)],
                   float4, _ACC_C, _acc_impl)

_UPDATE_C = """
  float4 np = p + v * dt + acc * (0.5f * dt * dt);
  np.w = p.w;
  float4 nv = v + acc * dt;
  nv.w = v.w;
  Tuple res = {np, nv};
  return res;
"""


def _update_impl(p: np.ndarray, v: np.ndarray, dt: Any, acc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    dt = np.float32(dt) if np.ndim(dt) == 0 else np.asarray(dt)[..., None]
    newp = p + v * dt + acc * (np.float32(0.5) * dt * dt)
    newv = v + acc * dt
    newp[..., 3] = p[..., 3]
    newv[..., 3] = v[..., 3]
    return newp, newv


update = user_fun("update", [("p", float4), ("v", float4), ("dt", float32), ("acc", float4)],
                  F4_PAIR, _UPDATE_C, _update_impl)


def nbody() -> Any:
    return fun([float4[N], float4[N], float32, float32], lambda pos, vel, espSqr, dt:
               join << map(lambda pv: map(lambda acc: update(pv[0], pv[1], dt, acc))
                           << reduceSeq(lambda acc, q: calcAcc(acc, pv[0], q, espSqr), F4_ZERO)
                           << pos) << zip(pos, vel))


def _nbody_inputs(s: Mapping[str, int], rng: np.random.Generator) -> list[Any]:
    n = s["N"]
    pos = rng.uniform(-1, 1, (n, 4)).astype(np.float32)
    pos[:, 3] = rng.uniform(0.5, 1.5, n)
    vel = rng.uniform(-0.1, 0.1, (n, 4)).astype(np.float32)
    vel[:, 3] = 0
    return [pos, vel, np.float32(0.05), np.float32(0.01)]


def _nbody_ref(pos: np.ndarray, vel: np.ndarray, esp: float, dt: float) -> np.ndarray:
    p = pos.astype(np.float64)
    r = p[None, :, :3] - p[:, None, :3]
    inv = 1.0 / np.sqrt((r * r).sum(-1) + esp)
    acc = ((p[None, :, 3] * inv ** 3)[..., None] * r).sum(axis=1)
    newp, newv = p.copy(), vel.astype(np.float64).copy()
    newp[:, :3] += vel[:, :3] * dt + 0.5 * acc * dt * dt
    newv[:, :3] += acc * dt
    out = np.empty(len(p), dtype=[("f0", np.float32, (4,)), ("f1", np.float32, (4,))])
    out["f0"], out["f1"] = newp, newv
    return out


# -- matrix multiplication, stencil, transpose ---------------------------------------------------
def mm() -> Any:
    """C = A·B for A: M×K and B: K×N (row-major, [[float]_K]_M and [[float]_N]_K)."""
    return fun([float32[K][M], float32[N][K]], lambda A, B:
               map(lambda rowA: join << map(lambda colB: reduce(add, 0.0) << map(mult)
                                             << zip(rowA, colB)) << transpose << B) << A)


def stencil3() -> Any:
    """3-point sum stencil with clamped borders."""
    return fun([float32[N]], lambda x: join << map(reduce(add, 0.0)) << slide(3, 1)
               << pad(1, 1, "clamp") << x)


def transpose_gather() -> Any:
    """Seed 000 §5.3: x: [[float]_N]_M (M rows of N) transposed with split, gather and join."""
    return fun([float32[N][M]], lambda x:
               mapWrg(0)(mapLcl(0)(id)) << split(M) << gather(lambda i, n: i // M + (i % M) * N)
               << join << x)


def convolution() -> Any:
    """3×3 convolution with clamped borders (seed 000 Table 1, high level): 2D neighbourhoods
    by slide2D of the padded image, each combined with the weights by map and reduce."""
    return fun([float32[N][M], float32[3][3]], lambda img, w:
               map(join << map(lambda win: reduce(add, 0.0) << map(mult) << zip(join << win, join << w)))
               << slide2D(3, 1) << pad2D(1, 1, "clamp") << img)


def _conv_inputs(s: Mapping[str, int], rng: np.random.Generator) -> list[Any]:
    return [rng.uniform(-1, 1, (s["M"], s["N"])).astype(np.float32),
            rng.uniform(-1, 1, (3, 3)).astype(np.float32)]


def _conv_ref(img: np.ndarray, w: np.ndarray) -> np.ndarray:
    p = np.pad(img.astype(np.float64), 1, mode="edge")
    h, wd = img.shape
    return sum(w[i, j] * p[i:i + h, j:j + wd] for i in range(3) for j in range(3)).astype(np.float32)


def _mat(shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    return rng.uniform(-1, 1, shape).astype(np.float32)


SPECS = [
    ProgramSpec("blackscholes", "BlackScholes call and put prices", "seed 002 Fig. 13",
                black_scholes, lambda s, rng: [rng.uniform(0, 1, s["N"]).astype(np.float32)],
                _bs_ref, {"N": 4096}, rtol=1e-3, atol=2e-3),
    ProgramSpec("md", "molecular dynamics: Lennard-Jones forces over neighbour lists (SHOC)",
                "seed 002 Fig. 13", md, _md_inputs, _md_ref, {"N": 512, "M": 16}, rtol=1e-3,
                atol=1e-3),
    ProgramSpec("nbody", "N-Body: all-pairs accelerations, then a position/velocity update",
                "seed 000 Table 1", nbody, _nbody_inputs, _nbody_ref, {"N": 256}, rtol=1e-4,
                atol=1e-4),
    ProgramSpec("mm", "matrix multiplication A·B", "seed 000 Table 1", mm,
                lambda s, rng: [_mat((s["M"], s["K"]), rng), _mat((s["K"], s["N"]), rng)],
                lambda A, B: (A.astype(np.float64) @ B).astype(np.float32),
                {"M": 32, "K": 48, "N": 40}, atol=1e-3),  # float32 sums of K products
    ProgramSpec("stencil3", "3-point stencil with slide and clamp padding", "seed 000 §3.2",
                stencil3, lambda s, rng: [_mat((s["N"],), rng)],
                lambda x: np.lib.stride_tricks.sliding_window_view(
                    np.pad(x.astype(np.float64), 1, mode="edge"), 3).sum(-1).astype(np.float32),
                {"N": 4096}),
    ProgramSpec("transpose", "matrix transposition via split, gather and join", "seed 000 §5.3",
                transpose_gather, lambda s, rng: [_mat((s["M"], s["N"]), rng)],
                lambda x: np.ascontiguousarray(x.T), {"M": 48, "N": 32}, level="low"),
    ProgramSpec("convolution", "3×3 convolution with clamp padding (slide2D, pad2D)",
                "seed 000 Table 1", convolution, _conv_inputs, _conv_ref, {"M": 32, "N": 48}),
]
