"""Rodinia benchmarks of seed 000 Table 1: K-Means and NN (nearest neighbour distances).

Each comes as a portable high-level program and as a low-level program mimicking Rodinia's
OpenCL kernel (one work-item per point/record, coalesced global reads), as in the Lift
benchmark suite.

Paper input sizes (Table 1): K-Means 0.2M and 0.8M points (Rodinia's kdd_cup data has 34
features; Rodinia clusters into 5 by default); NN 8M and 34M records. The default sizes here are
small so that the interpreter and the CPU tests stay fast.

`XP_REFERENCES` holds what a NumPy/CuPy user would write for each high-level program (the
benchmark harness times it with CuPy on a GPU and NumPy on a CPU).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

# ruff: noqa: F405
from liftkit.dsl import *  # noqa: F403  (program files read like the papers)
from liftkit.programs.registry import ProgramSpec

P, F, C, N = size("P"), size("F"), size("C"), size("N")

# -- K-Means ------------------------------------------------------------------------------------
# The argmin over clusters is a sequential reduction with a (min distance, counter, index)
# accumulator, as in Lift's K-Means: the counter numbers the clusters, no index array is needed.
KM_ACC = tuple_of(float32, int32, int32)
KM_INIT = lit((3.4028234663852886e38, 0, 0), KM_ACC)  # FLT_MAX, cluster 0, index 0


def _km_test(dist: Any, t: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    m, i, idx = (np.asarray(v) for v in t)
    better = np.asarray(dist) < m
    return (np.where(better, dist, m).astype(np.float32), (i + 1).astype(np.int32),
            np.where(better, i, idx).astype(np.int32))


km_test = user_fun("test", [("dist", float32), ("t", KM_ACC)], KM_ACC, """
  if (dist < t._0) { Tuple r = {dist, t._1 + 1, t._1}; return r; }
  Tuple r = {t._0, t._1 + 1, t._2};
  return r;""", _km_test)
km_select = user_fun("select_", [("t", KM_ACC)], int32, "return t._2;",
                     lambda t: np.asarray(t[2], dtype=np.int32))
sq_diff = user_fun("sqDiff", [("a", float32), ("b", float32)], float32,
                   "return (a - b) * (a - b);", lambda a, b: (a - b) * (a - b))
sq_diff_acc = user_fun("sqDiffAcc", [("acc", float32), ("a", float32), ("b", float32)], float32,
                       "return acc + (a - b) * (a - b);", lambda acc, a, b: acc + (a - b) * (a - b))


def kmeans() -> Any:
    """features: [[float]_P]_F (feature-major, as Rodinia), clusters: [[float]_F]_C; for each
    point the index of its nearest cluster (squared Euclidean distance, first on ties)."""
    return fun([float32[P][F], float32[F][C]], lambda features, clusters:
               join << map(lambda point: map(km_select) << reduceSeq(
                   lambda t, cluster: km_test(at(reduce(add, 0.0) << map(sq_diff)
                                                 << zip(point, cluster), 0), t), KM_INIT)
                   << clusters) << transpose << features)


def kmeans_low() -> Any:
    """Rodinia's kmeans_kernel_c: one work-item per point (mapGlb); it loops over the clusters and
    the features; point p reads features[f][p], so adjacent work-items read adjacent addresses;
    the cluster coordinates are the same for all work-items (broadcast, cached)."""
    return fun([float32[P][F], float32[F][C]], lambda features, clusters:
               join << mapGlb(0)(lambda point: toGlobal(mapSeq(km_select)) << reduceSeq(
                   lambda t, cluster: km_test(at(reduceSeq(lambda acc, ab: sq_diff_acc(acc, ab[0], ab[1]), 0.0)
                                                 << zip(point, cluster), 0), t), KM_INIT)
                   << clusters) << transpose << features)


def _kmeans_inputs(s: Mapping[str, int], rng: np.random.Generator) -> list[Any]:
    """Points scattered around the cluster centres (as k-means data is), so that the nearest
    centre is clear and float32 rounding cannot change it."""
    p, f, c = s["P"], s["F"], s["C"]
    centres = rng.uniform(0.0, 1.0, (c, f)).astype(np.float32)
    owner = rng.integers(0, c, p)
    points = centres[owner] + rng.normal(0.0, 0.05, (p, f))
    return [np.ascontiguousarray(points.T, dtype=np.float32), centres]


def _kmeans_ref(features: np.ndarray, clusters: np.ndarray) -> np.ndarray:
    pts = features.astype(np.float64).T  # (P, F)
    d = ((pts[:, None, :] - clusters.astype(np.float64)[None, :, :]) ** 2).sum(-1)
    return np.argmin(d, axis=1).astype(np.int32)


def _kmeans_xp(xp: Any, features: Any, clusters: Any) -> Any:
    d = ((features.T[:, None, :] - clusters[None, :, :]) ** 2).sum(axis=-1)
    return xp.argmin(d, axis=1).astype(xp.int32)


# -- NN -----------------------------------------------------------------------------------------
# Rodinia's records are structs {float lat, lng}: here float2 elements (the same memory layout).
def _distance_impl(loc: np.ndarray, lat: Any, lng: Any) -> np.ndarray:
    loc = np.asarray(loc)
    return np.sqrt((lat - loc[..., 0]) * (lat - loc[..., 0])
                   + (lng - loc[..., 1]) * (lng - loc[..., 1])).astype(np.float32)


distance = user_fun("distance_", [("loc", float2), ("lat", float32), ("lng", float32)], float32,
                    "return sqrt((lat - loc.x) * (lat - loc.x) + (lng - loc.y) * (lng - loc.y));",
                    _distance_impl)


def nn() -> Any:
    """locations: [float2]_N (lat, lng); the distance of each to the query point (lat, lng)."""
    return fun([float2[N], float32, float32], lambda locations, lat, lng:
               map(lambda loc: distance(loc, lat, lng)) << locations)


def nn_low() -> Any:
    """Rodinia's NearestNeighbor kernel: one work-item per record, a coalesced 8-byte read and a
    coalesced 4-byte write each."""
    return fun([float2[N], float32, float32], lambda locations, lat, lng:
               mapGlb(0)(lambda loc: distance(loc, lat, lng)) << locations)


def _nn_inputs(s: Mapping[str, int], rng: np.random.Generator) -> list[Any]:
    n = s["N"]
    locs = np.stack([rng.uniform(-90, 90, n), rng.uniform(-180, 180, n)], axis=1)
    return [locs.astype(np.float32), np.float32(rng.uniform(-90, 90)),
            np.float32(rng.uniform(-180, 180))]


def _nn_ref(locs: np.ndarray, lat: Any, lng: Any) -> np.ndarray:
    l64 = locs.astype(np.float64)
    return np.hypot(l64[:, 0] - float(lat), l64[:, 1] - float(lng)).astype(np.float32)


def _nn_xp(xp: Any, locs: Any, lat: Any, lng: Any) -> Any:
    return xp.sqrt((locs[:, 0] - lat) ** 2 + (locs[:, 1] - lng) ** 2)


XP_REFERENCES: dict[str, Callable[..., Any]] = {"kmeans": _kmeans_xp, "nn": _nn_xp}

_KM_SIZES = {"P": 1024, "F": 34, "C": 5}
_KM_RULE = "P, F, C any (≥ 1); Rodinia: F = 34, C = 5"
_NN_SIZES = {"N": 4096}

SPECS = [
    ProgramSpec("kmeans", "K-Means: index of the nearest cluster for each point (Rodinia)",
                "seed 000 Table 1 (Rodinia)", kmeans, _kmeans_inputs, _kmeans_ref, _KM_SIZES,
                rtol=0, atol=0, size_rule=_KM_RULE, tags=("table1",)),
    ProgramSpec("kmeans_low", "K-Means, one work-item per point, coalesced feature-major reads",
                "seed 000 Table 1 (Rodinia)", kmeans_low, _kmeans_inputs, _kmeans_ref, _KM_SIZES,
                level="low", rtol=0, atol=0, size_rule=_KM_RULE, tags=("table1", "gpu")),
    ProgramSpec("nn", "NN: Euclidean distance of each record to a query point (Rodinia)",
                "seed 000 Table 1 (Rodinia)", nn, _nn_inputs, _nn_ref, _NN_SIZES, rtol=1e-5,
                atol=1e-4, size_rule="N any (≥ 1)", tags=("table1",)),
    ProgramSpec("nn_low", "NN, one work-item per record", "seed 000 Table 1 (Rodinia)", nn_low,
                _nn_inputs, _nn_ref, _NN_SIZES, level="low", rtol=1e-5, atol=1e-4,
                size_rule="N any (≥ 1)", tags=("table1", "gpu")),
]
