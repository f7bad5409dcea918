"""What liftkit.blas derives kernels for, and how a derivation is named.

A `Kind` is what a kernel computes (operation, element type, layout); a `Variant` is one point
of a codelet's space (codelet name + parameters); a `Codelet` is a family of derivations (a
rewrite strategy with numeric parameters, the sizes its kernels need to be multiples of, the
points a tuner tries). The codelets themselves and their registry are in `liftkit.blas.codelets`
(the GEMM codelets in `liftkit.blas.mm_codelets`); kernels that need padded sizes get them from
`padded_sizes`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional

from liftkit.blas import programs as bp
from liftkit.ir.nodes import Lambda
from liftkit.rewrite.strategies import Strategy

# the operations (kernel families) and the high-level program each derives from
OPS = ("mm", "gemv", "transpose", "axpby2d", "scal", "axpy", "dot", "dotc", "asum", "sumsq")


class CodeletError(ValueError):
    """A codelet that does not exist, does not fit an operation, or failed to derive."""


@dataclass(frozen=True)
class Variant:
    """One derivation choice: a codelet and its parameters (hashable, JSON-able)."""

    codelet: str
    params: tuple[tuple[str, int], ...] = ()

    @staticmethod
    def of(codelet: str, **params: int) -> "Variant":
        return Variant(codelet, tuple(sorted((k, int(v)) for k, v in params.items())))

    @property
    def kw(self) -> dict[str, int]:
        return dict(self.params)

    def __str__(self) -> str:
        ps = ",".join(f"{k}={v}" for k, v in self.params)
        return f"{self.codelet}({ps})"

    def to_json(self) -> dict[str, Any]:
        return {"codelet": self.codelet, "params": self.kw}

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> "Variant":
        return Variant.of(str(d["codelet"]), **{k: int(v) for k, v in d.get("params", {}).items()})


@dataclass(frozen=True)
class Kind:
    """What a kernel computes: an operation, its element type and its layout
    (mm: NN/NT/TN, for complex types also with R/C letters, `programs.COMPLEX_LAYOUTS`;
    gemv: N/T, complex also R/C; axpby2d: N/T; others: '-')."""

    op: str
    dtype: str
    layout: str = "-"

    def __str__(self) -> str:
        return f"{self.op}/{self.dtype}/{self.layout}"

    def program(self) -> Lambda:
        t, lay = self.dtype, self.layout
        builders: dict[str, Callable[[], Lambda]] = {
            "mm": lambda: bp.mm(t, lay), "gemv": lambda: bp.gemv(t, lay in "TC", lay in "RC"),
            "transpose": lambda: bp.transpose_prog(t), "axpby2d": lambda: bp.axpby2d(t, lay == "T"),
            "cembed": lambda: bp.cembed(t, lay), "cprep": lambda: bp.cprep(t, lay),
            "pad2d": lambda: bp.pad2d(t), "crop2d": lambda: bp.crop2d(t),
            "window2d": lambda: bp.window2d(t), "tailcols": lambda: bp.tailcols(t),
            "hcat": lambda: bp.hcat(t),
            "scal": lambda: bp.scal(t), "axpy": lambda: bp.axpy(t), "dot": lambda: bp.dot(t),
            "dotc": lambda: bp.dotc(t), "asum": lambda: bp.asum(t), "sumsq": lambda: bp.sumsq(t)}
        if self.op not in builders:
            raise CodeletError(f"unknown operation {self.op!r} (known: {', '.join(OPS)})")
        return builders[self.op]()


@dataclass(frozen=True)
class Codelet:
    """A strategy family: `strategy(kind, **params)` rewrites the program's body;
    `multiples(kind, **params)` gives the size multiples its kernels need."""

    name: str
    ops: tuple[str, ...]
    summary: str
    strategy: Callable[..., Strategy]
    space: Callable[[str], list[dict[str, int]]]  # device kind ("cpu"/"gpu") -> params tried
    multiples: Callable[..., dict[str, int]] = field(default=lambda kind, **p: {})
    backends: tuple[str, ...] = ("opencl", "cuda")  # where its kernels run
    dtypes: Optional[tuple[str, ...]] = None  # element types it derives (None: all)
    layouts: Optional[tuple[str, ...]] = None  # layouts it derives (None: all)
    rules: Callable[[], Mapping[str, Any]] = field(default=lambda: {})  # beyond the rules package


def on_gpus(names: tuple[str, ...], points: tuple[tuple[int, ...], ...]
            ) -> Callable[[str], list[dict[str, int]]]:
    """A codelet's space that tries `points` (values of the parameters `names`) on GPUs only."""
    return lambda dev: [dict(zip(names, p)) for p in points] if dev == "gpu" else []


def variant_key(kind: Kind, variant: Variant) -> str:
    return json.dumps([str(kind), variant.to_json()], sort_keys=True)


def pad_to(n: int, m: int) -> int:
    return -(-n // m) * m if m > 1 else n


def padded_sizes(sizes: Mapping[str, int], mult: Mapping[str, int]) -> dict[str, int]:
    return {k: pad_to(v, mult.get(k, 1)) for k, v in sizes.items()}


def padding_ratio(sizes: Mapping[str, int], mult: Mapping[str, int]) -> float:
    """Padded volume over actual volume (1.0: no padding)."""
    real = math.prod(sizes.values()) or 1
    return math.prod(padded_sizes(sizes, mult).values()) / real
