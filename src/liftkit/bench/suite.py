"""The benchmark suite: the seeds' 18 programs (seed 002 §7–§9: scal, asum, dot, gemv,
BlackScholes, MD; seed 000 Table 1: the 12 "CGO programs"), each with the program(s) to run,
the papers' input sizes, and the bytes moved and floating-point operations as functions of the
sizes (for GB/s, GFLOP/s and the roofline).

Program names are looked up in the bundled registry when the suite runs; an entry whose
programs are not bundled (yet) is reported as "not bundled", not as an error. Where a name is
uncertain an entry lists candidates, the first bundled one wins.

Size sets: `large` and `small` are the papers' sizes for the GPU (seed 000 Table 1 large/small,
seed 002 §8.2), `cpu` smaller ones for the CPU (PoCL), `tiny` for tests. Square matrices give
both M and N so the entry fits programs written with either name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional

Sizes = Mapping[str, int]
SIZE_SETS = ("tiny", "cpu", "small", "large")


@dataclass(frozen=True)
class Entry:
    """One benchmark: what to run, at which sizes, and how much work that is."""

    key: str  # the name used by `--programs` and in reports
    title: str  # e.g. "N-Body (NVIDIA SDK)"
    seed: str  # "002" (seed 002 Fig. 13) or "000" (seed 000 Table 1)
    low: tuple[str, ...]  # low-level program candidates for the GPU (first bundled one wins)
    high: Optional[str]  # the high-level program (its derivation: the report's "derived" column)
    sizes: Mapping[str, Sizes]  # size set -> sizes
    bytes_moved: Callable[[Sizes], float]  # compulsory global-memory traffic in bytes
    flops: Callable[[Sizes], float]  # floating-point operations
    reference: str  # key of the xp-style reference (bench.references)
    cgo: bool = False  # one of the 12 programs of seed 000 Table 1
    cpu_low: tuple[str, ...] = ()  # low-level candidates on the CPU (default: `low`)
    check_at: Optional[Sizes] = None  # smaller sizes for the NumPy check when the timed ones exceed them
    notes: str = ""
    library: str = "CuPy"  # what the reference is on the GPU: "cuBLAS" for the BLAS-like programs
    tags: tuple[str, ...] = field(default=())

    def candidates(self, device_kind: str) -> tuple[str, ...]:
        return self.cpu_low or self.low if device_kind == "cpu" else self.low

    def sizes_for(self, size_set: str) -> Optional[dict[str, int]]:
        s = self.sizes.get(size_set)
        return dict(s) if s is not None else None


def _sq(n: int, *extra: tuple[str, int]) -> dict[str, int]:
    """A square n×n problem under both names M and N."""
    return {"M": n, "N": n, **dict(extra)}


def _sets(tiny: Optional[Sizes], cpu: Sizes, small: Sizes, large: Sizes) -> dict[str, Sizes]:
    out = {"cpu": cpu, "small": small, "large": large}
    if tiny is not None:
        out["tiny"] = tiny
    return out


def _n(s: Sizes) -> int:
    return int(s["N"])


def _mm_flops(s: Sizes) -> float:
    return 2.0 * s["M"] * s["N"] * s.get("K", s["N"])


def _mm_bytes(s: Sizes) -> float:
    m, n, k = s["M"], s["N"], s.get("K", s["N"])
    return 4.0 * (m * k + k * n + m * n)


def _gemv_bytes(s: Sizes) -> float:  # A: N rows × M columns, x: M, y: N in and out
    return 4.0 * (s["N"] * s["M"] + s["M"] + 2 * s["N"])


MM_SIZES = _sets({"M": 64, "N": 64, "K": 64}, {"M": 512, "N": 512, "K": 512},
                 {"M": 1024, "N": 1024, "K": 1024}, {"M": 4096, "N": 4096, "K": 4096})
NBODY_SIZES = _sets({"N": 256}, {"N": 4096}, {"N": 16384}, {"N": 131072})
SQUARE = _sets(_sq(512), _sq(2048), _sq(4096), _sq(8192))

ENTRIES: tuple[Entry, ...] = (
    # -- seed 002 (§8.2 sizes: 16M / 128M vectors; gemv 4096² / 8192×16384; BS 4M; MD 12288) --
    Entry("scal", "scal", "002", ("scal_gpu",), "scal",
          _sets({"N": 4096}, {"N": 1 << 22}, {"N": 1 << 24}, {"N": 1 << 27}),
          lambda s: 8.0 * _n(s), lambda s: 1.0 * _n(s), "scal", library="cuBLAS"),
    Entry("asum", "asum", "002", ("asum_gpu",), "asum",
          _sets({"N": 32768}, {"N": 1 << 22}, {"N": 1 << 24}, {"N": 1 << 27}),
          lambda s: 4.0 * _n(s), lambda s: 2.0 * _n(s), "asum", cpu_low=("asum_intel",), library="cuBLAS"),
    Entry("dot", "dot", "002", ("dot_gpu",), "dot",
          _sets(None, {"N": 1 << 24}, {"N": 1 << 24}, {"N": 1 << 27}),
          lambda s: 8.0 * _n(s), lambda s: 2.0 * _n(s), "dot", library="cuBLAS",
          notes="dot_gpu needs N a multiple of 16M, hence no tiny size"),
    Entry("gemv", "gemv", "002", ("gemv_gpu",), "gemv",
          _sets({"N": 64, "M": 1024}, {"N": 2048, "M": 4096}, {"N": 4096, "M": 4096},
                {"N": 8192, "M": 16384}),
          _gemv_bytes, lambda s: 2.0 * s["N"] * s["M"] + 3.0 * s["N"], "gemv",
          library="cuBLAS"),
    Entry("blackscholes", "BlackScholes", "002", ("blackscholes_low", "blackscholes_gpu"),
          "blackscholes",
          _sets({"N": 4096}, {"N": 1 << 20}, {"N": 1 << 22}, {"N": 1 << 22}),
          lambda s: 12.0 * _n(s), lambda s: 72.0 * _n(s), "blackscholes",
          notes="flops ≈ 72 per option, counting each exp/log/sqrt as one"),
    Entry("md", "MD", "002", ("md_low",), "md",
          _sets({"N": 512, "M": 16}, {"N": 4096, "M": 64}, {"N": 12288, "M": 128},
                {"N": 12288, "M": 128}),
          lambda s: 32.0 * _n(s) + 4.0 * s["N"] * s["M"], lambda s: 20.0 * s["N"] * s["M"], "md"),
    # -- seed 000 Table 1: the 12 CGO programs (small / large sizes of the table) ----------------
    Entry("nbody_nvidia", "N-Body (NVIDIA SDK)", "000", ("nbody_nvidia",), "nbody", NBODY_SIZES,
          lambda s: 64.0 * _n(s), lambda s: 20.0 * _n(s) ** 2, "nbody", cgo=True,
          check_at={"N": 2048}),
    Entry("nbody_amd", "N-Body (AMD SDK)", "000", ("nbody_private", "nbody_amd"), "nbody",
          NBODY_SIZES, lambda s: 64.0 * _n(s), lambda s: 20.0 * _n(s) ** 2, "nbody", cgo=True,
          check_at={"N": 2048}),
    Entry("md_shoc", "MD (SHOC)", "000", ("md_low",), "md",
          _sets({"N": 512, "M": 16}, {"N": 4096, "M": 64}, {"N": 12288, "M": 128},
                {"N": 73728, "M": 128}),
          lambda s: 32.0 * _n(s) + 4.0 * s["N"] * s["M"], lambda s: 20.0 * s["N"] * s["M"], "md",
          cgo=True),
    Entry("kmeans", "K-Means (Rodinia)", "000", ("kmeans_low",), "kmeans",
          _sets({"P": 1024, "F": 34, "C": 5}, {"P": 65536, "F": 34, "C": 5},
                {"P": 204800, "F": 34, "C": 5}, {"P": 819200, "F": 34, "C": 5}),
          lambda s: 4.0 * (s["P"] * s["F"] + s["C"] * s["F"] + s["P"]),
          lambda s: 3.0 * s["P"] * s["C"] * s["F"], "kmeans", cgo=True,
          notes="P points, F = 34 features, C = 5 clusters (Rodinia's kdd_cup shape)"),
    Entry("nn", "NN (Rodinia)", "000", ("nn_low",), "nn",
          _sets({"N": 4096}, {"N": 1 << 22}, {"N": 1 << 23}, {"N": 1 << 25}),
          lambda s: 12.0 * _n(s), lambda s: 6.0 * _n(s), "nn", cgo=True),
    Entry("mriq", "MRI-Q (Parboil)", "000", ("mriq_low",), "mriq",
          _sets({"X": 256, "K": 64}, {"X": 16384, "K": 1024}, {"X": 32768, "K": 3072},
                {"X": 262144, "K": 2048}),
          lambda s: 20.0 * s["X"] + 16.0 * s["K"], lambda s: 12.0 * s["X"] * s["K"], "mriq",
          cgo=True, check_at={"X": 16384, "K": 1024},
          notes="X pixels, K samples; flops: 12 per pixel-sample pair, sin and cos one each"),
    Entry("convolution", "Convolution (NVIDIA SDK)", "000", ("conv2d",), "convolution",
          _sets({"M": 64, "N": 64}, _sq(2048), _sq(4096), _sq(8192)),
          lambda s: 8.0 * s["M"] * s["N"] + 36.0, lambda s: 18.0 * s["M"] * s["N"], "conv2d",
          cgo=True, notes="3×3 weights, clamped borders"),
    Entry("atax", "ATAX (CLBlast)", "000", ("atax_low",), "atax", SQUARE,
          lambda s: 8.0 * s["M"] * s["N"], lambda s: 4.0 * s["M"] * s["N"], "atax", cgo=True,
          notes="bytes: A read twice (two matrix-vector products)"),
    Entry("gemv_clblast", "GEMV (CLBlast)", "000", ("gemv_fused",), "gemv",
          _sets({"N": 64, "M": 256}, _sq(2048), _sq(4096), _sq(8192)),
          _gemv_bytes, lambda s: 2.0 * s["N"] * s["M"] + 3.0 * s["N"], "gemv", cgo=True,
          library="cuBLAS"),
    Entry("gesummv", "GESUMMV (CLBlast)", "000", ("gesummv_low",), "gesummv", SQUARE,
          lambda s: 8.0 * s["M"] * s["N"], lambda s: 4.0 * s["M"] * s["N"], "gesummv", cgo=True,
          library="cuBLAS"),
    Entry("mm_amd", "MM (CLBlast, AMD style)", "000", ("mm_amd",), "mm", MM_SIZES,
          _mm_bytes, _mm_flops, "mm", cgo=True, library="cuBLAS"),
    Entry("mm_nvidia", "MM (CLBlast, NVIDIA style)", "000", ("mm_nvidia", "mm_tiled"), "mm",
          MM_SIZES, _mm_bytes, _mm_flops, "mm", cgo=True, library="cuBLAS"),
)

SUITE: dict[str, Entry] = {e.key: e for e in ENTRIES}


def select(keys: Optional[list[str]] = None) -> list[Entry]:
    """The entries named (in suite order), or all; unknown names raise a ValueError."""
    if not keys:
        return list(ENTRIES)
    unknown = [k for k in keys if k not in SUITE]
    if unknown:
        raise ValueError(f"unknown benchmark program(s): {', '.join(unknown)} "
                         f"(known: {', '.join(SUITE)})")
    wanted = set(keys)
    return [e for e in ENTRIES if e.key in wanted]


def cgo_entries() -> list[Entry]:
    return [e for e in ENTRIES if e.cgo]
