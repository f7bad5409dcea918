"""Patterns beyond OpenCL: what only the CUDA backend can compile (issue 12, item 4).

Each has the meaning of a high-level composition (so the interpreter is their oracle and rewrite
rules may introduce them) and a code generator that uses an NVIDIA instruction OpenCL C cannot
reach; on OpenCL the compiler refuses them with `refusal`, in the pattern's own words.

- `reduceWarp(⊕, z)`: [T]_{32m} → [T]_m, each run of 32 elements reduced by one warp with
  register shuffles (a butterfly, `__shfl_xor_sync`: every lane ends with the total, so the
  result is broadcast for free) instead of a tree through local memory and barriers. It means
  `join ∘ map(reduce(⊕, z)) ∘ split 32`; the interpreter folds in the butterfly's order.
- `reduceMmaTF32 w (f, z)`, `reduceMmaBF16 w (f, z)`, `reduceMmaF64 w (f, z)`: the K loop of a
  work-group's matrix tile on the tensor cores (`mma.sync`), run by w warps. Over tile pairs
  `[(a: [[T]_k]_m, b: [[T]_k]_n)]_KT` it means `reduceSeq(λ(acc, t). acc + a'·b'ᵀ, z)` with
  `(a', b') = f(t)` (f stages the operands, e.g. into local memory, or is the identity), the
  accumulator `z: [[C]_n]_m` living in the warps' registers across the whole loop. The
  precision is in the name, never implied: TF32 and BF16 round their float operands (to nearest,
  ties away for TF32 as `cvt.rna.tf32.f32`, ties to even for BF16) and accumulate in float; F64
  is IEEE double throughout (DMMA). Programs say where they round with `toTF32`/`toBF16` (user
  functions with the same rounding, so the same program runs, in FP32 arithmetic, on OpenCL),
  and the rules introduce a TF32/BF16 product only where the operands were rounded that way.
  `reduceMmaF64K8 w (f, z)` means reduceMmaF64 and issues the m16n8k8 DMMA throughout.
  `reduceMmaF64K8Ahead w (f, z)` too, each k-step's fragments read one step ahead (across tiles).
  `reduceMmaF64K8AheadSpread w (f, z)` too, the next copies issued among the last products.
  `reduceMmaF64K16AheadSpread w (f, z)` is that loop on the m16n8k16 DMMA (tiles' k a multiple
  of 16).
- `reduceWgmmaTF32 w s (f, z)`, `reduceWgmmaTF32Z w s (f, z)`: the same meaning as reduceMmaTF32
  on Hopper's warpgroup MMA (`wgmma`, sm_90a; w a multiple of 4, the warpgroups), the pattern
  staging its operands itself s tiles deep into the swizzled shared-memory layout the tensor
  cores read. TF32 rounds as toTF32; TF32Z truncates as `truncTF32` (the low 13 mantissa bits
  cleared: cheaper staging, 2.7× the error of rounding at 4096³), which a program must also say
  in its own words.
- `reduceWgmmaAsyncTF32 w s (f, z)`, `reduceWgmmaAsyncTF32Z w s (f, z)`: the same meaning again,
  the tiles copied raw by cp.async (no staging through registers): A into the swizzled layout,
  B as it lies, then B from shared memory into registers and the register form of wgmma on
  Cᵀ = B·Aᵀ; A rounded (TF32) or truncated (TF32Z) in shared memory, B in registers.
- `reduceWgmmaPairTF32 w s (f, z)`, `reduceWgmmaPairTF32Z w s (f, z)`: reduceWgmmaAsync run by
  the two blocks of a 2-block cluster that share their B tiles: each copies half of B, both read
  all of it (distributed shared memory), so B crosses from L2 once per pair.
- `reduceWgmmaTmaTF32Z w s (f, z)`: the same meaning once more, the tiles copied raw by the bulk
  tensor copy engine (TMA) on mbarriers, `s` stages, by a producer warpgroup beside w/4 consumer
  warpgroups; truncation only (the tensor cores read the copied float32 bits truncated).
- `reduceWgmmaTmaPairTF32Z w s (f, z)`: reduceWgmmaTma run by the two blocks of a 2-block
  cluster along the row tiles, each copying half of their common B tile to both (TMA multicast).
- `toLocalAsync s (copy)`: toLocal for a copy (nested mapSeqUnroll/mapSeq/mapLcl of id) that
  is pipelined `s` deep over the tile loop of the reduceMma whose staging function holds it, or
  of the reduceSeq whose function starts with it (`λ(acc, t). (λ(x, y). …)(… toLocalAsync s
  (copy) … $ get 0 t, … $ get 1 t)`): the copies become `cp.async` into s local buffers, the
  copy of tile k+s-1 in flight while the group computes on tile k (one `cp.async.commit_group`
  per tile). It means the identity of its copy, as toLocal does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Sequence

import numpy as np

from liftkit.arith import ArithExpr, cst, divides
from liftkit.ir.nodes import FunDecl, UserFun, unwrap_eta, user_fun
from liftkit.ir.patterns.base import Kind, Pattern, PatternError, expect_args, param
from liftkit.ir.patterns.maps import MapGlb, MapLcl, MapSeq, MapSeqUnroll, MapWrg
from liftkit.ir.patterns.reductions import AbstractReduce, ReduceSeq
from liftkit.semantics.values import axis_len, expand, take
from liftkit.types import (ArrayType, ScalarType, TupleType, Type, VectorType, complex64, complex128, float32, float64,
                           same_type)

if TYPE_CHECKING:  # pragma: no cover
    from liftkit.ir.typecheck import Typing
    from liftkit.semantics.interpreter import Env, Evaluator
    from liftkit.semantics.values import Value

WARP = 32  # threads of an NVIDIA warp
# the scalar types __shfl_xor_sync moves (32- and 64-bit integers and floats)
SHUFFLE_TYPES = ("int", "long", "float", "double")


class CudaPattern(Pattern):
    """A pattern only the CUDA dialect compiles: `feature` names what it needs of the dialect
    (`Dialect.features`), `refusal` is the compiler's one-line answer elsewhere."""

    feature: ClassVar[str] = ""
    refusal: ClassVar[str] = ""
    # its kernel runs one block per work-group (no grid-stride loop around it)
    whole_grid: ClassVar[bool] = False

    def threads(self, arg_types: Sequence[Type]) -> "ArithExpr | None":
        """Threads along dimension 0 the pattern runs on (the launch geometry counts them as a
        mapLcl(0) of that length); None when it needs no particular number."""
        return None


def _in_work_group(p: Pattern, t: "Typing") -> None:
    """A collective of the work-group's threads: inside a mapWrg, outside every per-thread map."""
    if not any(isinstance(e, MapWrg) for e in t.enclosing):
        raise PatternError(f"{p.name} runs on the warps of a work-group: use it inside a mapWrg")
    for e in t.enclosing:
        if isinstance(e, (MapLcl, MapGlb, MapSeq, MapSeqUnroll, AbstractReduce)):
            raise PatternError(f"{p.name} needs every thread of the work-group, so it cannot be "
                               f"nested inside {e.name}")


@dataclass(frozen=True, repr=False)
class ReduceWarp(AbstractReduce, CudaPattern):
    """reduceWarp(⊕, z): [T]_{32m} → [T]_m, one warp per run of 32 (see the module docstring)."""

    name = "reduceWarp"
    high_level = False
    feature = "warp-shuffle"
    refusal = ("reduceWarp needs the CUDA backend (warp shuffles, __shfl_xor_sync); OpenCL C has "
               "no warp-level operations: compile with --backend cuda, or reduce with "
               "join ∘ mapLcl(reduceSeq(⊕, z)) ∘ split 32")

    def infer(self, t: "Typing", args: Sequence[Type]) -> Type:
        expect_args(self, args)
        init, xs = args
        if not isinstance(xs, ArrayType):
            raise PatternError(f"reduceWarp: expects an array to reduce, got {xs}")
        f = unwrap_eta(self.f)
        if not (isinstance(f, UserFun) and f.associative and f.commutative):
            raise PatternError("reduceWarp: the operator must be a user function declared "
                               "associative and commutative (the lanes combine in a butterfly)")
        if not (isinstance(xs.elem, ScalarType) and xs.elem.name in SHUFFLE_TYPES):
            raise PatternError(f"reduceWarp: shuffles move int, long, float or double values, "
                               f"not {xs.elem}")
        if not same_type(init, xs.elem):
            raise PatternError(f"reduceWarp: the initial value has type {init} but the elements "
                               f"are {xs.elem}")
        if divides(cst(WARP), xs.length) is False:
            raise PatternError(f"reduceWarp: a warp reduces {WARP} elements, which does not "
                               f"divide the length {xs.length}")
        _in_work_group(self, t)
        out = t.apply(self.f, [init, xs.elem], enter=self)
        if not same_type(out, init):
            raise PatternError(f"reduceWarp: the operator returns {out} but the initial value "
                               f"has type {init}")
        return ArrayType(init, xs.length // cst(WARP))

    def threads(self, arg_types: Sequence[Type]) -> "ArithExpr | None":
        xs = arg_types[1] if len(arg_types) == 2 else None
        return xs.length if isinstance(xs, ArrayType) else None

    def evaluate(self, ev: "Evaluator", args: Sequence["Value"], env: "Env") -> "Value":
        init, xs = args
        b = ev.brank
        n = axis_len(xs, b)
        if n % WARP:
            raise PatternError(f"reduceWarp: the length {n} is not a multiple of {WARP}")
        m = n // WARP
        lanes = np.asarray(xs).reshape(xs.shape[:b] + (m, WARP))  # type: ignore[union-attr]
        per_lane = ev.nested(m).nested(WARP)
        for offset in (16, 8, 4, 2, 1):  # lane i combines its value with lane i ^ offset's
            partner = np.take(lanes, np.arange(WARP) ^ offset, axis=b + 1)
            lanes = per_lane.call(self.f, [lanes, partner], env)  # type: ignore[assignment]
        per_warp = ev.nested(m)
        return per_warp.call(self.f, [per_warp.lift(init, b), lanes[..., 0]], env)


# ---------------------------------------------------------------------------------------------
# tensor cores


def _bits(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float32).view(np.int32).astype(np.int64)


def _float(bits: np.ndarray, like: np.ndarray) -> np.ndarray:
    out = (bits & 0xFFFFFFFF).astype(np.uint32).view(np.float32)
    return np.where(np.isfinite(like), out, like).astype(np.float32)


def round_tf32(x: np.ndarray) -> np.ndarray:
    """float32 rounded to TF32 (10 mantissa bits), to nearest with ties away from zero, as
    `cvt.rna.tf32.f32`; infinities and NaNs unchanged."""
    x = np.asarray(x, dtype=np.float32)
    return _float((_bits(x) + 0x1000) & ~0x1FFF, x)


def round_bf16(x: np.ndarray) -> np.ndarray:
    """float32 rounded to bfloat16 (7 mantissa bits), to nearest with ties to even, as
    `cvt.rn.bf16.f32`; infinities and NaNs unchanged."""
    x = np.asarray(x, dtype=np.float32)
    b = _bits(x)
    return _float((b + 0x7FFF + ((b >> 16) & 1)) & ~0xFFFF, x)


def trunc_tf32(x: np.ndarray) -> np.ndarray:
    """float32 with its 13 low mantissa bits cleared (TF32 by truncation, toward zero): every bit
    pattern, infinities and NaNs included (a NaN whose payload lies only in those bits becomes
    an infinity)."""
    x = np.asarray(x, dtype=np.float32)
    return (x.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)


# the casts a program writes where it gives up precision (the same bit arithmetic in OpenCL C and
# CUDA C: as_int/as_float are OpenCL built-ins the CUDA prelude provides)
toTF32 = user_fun("toTF32", [("x", float32)], float32,
                  "int b = as_int(x);\n  if ((b & 0x7f800000) != 0x7f800000) b = (b + 0x1000) & -8192;\n"
                  "  return as_float(b);", round_tf32)
toBF16 = user_fun("toBF16", [("x", float32)], float32,
                  "int b = as_int(x);\n  if ((b & 0x7f800000) != 0x7f800000) "
                  "b = (b + 0x7fff + ((b >> 16) & 1)) & -65536;\n  return as_float(b);", round_bf16)
truncTF32 = user_fun("truncTF32", [("x", float32)], float32, "return as_float(as_int(x) & -8192);", trunc_tf32)


@dataclass(frozen=True, repr=False)
class ReduceMma(CudaPattern):
    """reduceMma<P> w (f, z) over tile pairs (see the module docstring); `shape` is the mma
    instruction's m×n×k, `operand`/`acc` the element types, `rounding` the operands' cast."""

    warps: ArithExpr = param(Kind.SIZE, default=cst(4))
    f: FunDecl = param(Kind.FUN, default=None)  # type: ignore[assignment]
    arity = 2
    inline_init = True
    high_level = False
    feature = "mma"
    shape: ClassVar[tuple[int, int, int]] = (16, 8, 8)
    operand: ClassVar[ScalarType] = float32
    acc: ClassVar[ScalarType] = float32
    rounding: ClassVar[str] = ""  # the cast user function the operands are rounded with

    @classmethod
    def signature(cls) -> list[tuple[str, Kind]]:
        return [("warps", Kind.SIZE), ("f", Kind.FUN)]

    @property
    def refusal(self) -> str:  # type: ignore[override]
        return (f"{self.name} needs the CUDA backend (tensor cores, mma.sync); OpenCL C has no "
                "matrix instructions: compile with --backend cuda, or multiply the tiles with "
                "reduceSeq(add) ∘ mapSeq(mult)")

    def warp_count(self) -> int:
        if not self.warps.is_constant or not 1 <= self.warps.value <= 32:
            raise PatternError(f"{self.name} {self.warps}: the number of warps must be a "
                               "constant from 1 to 32")
        return self.warps.value

    def threads(self, arg_types: Sequence[Type]) -> "ArithExpr | None":
        return cst(WARP * self.warp_count())

    def tile_shape(self, t: "Typing", tiles: Type) -> tuple[int, int, int, Type]:
        """(m, n, k, the tile pair type) after checking the staged operands' shapes."""
        if not isinstance(tiles, ArrayType):
            raise PatternError(f"{self.name}: expects an array of tile pairs, got {tiles}")
        return self.check_tiles(t.apply(self.f, [tiles.elem], enter=self))

    def check_tiles(self, ops: Type) -> tuple[int, int, int, Type]:
        """(m, n, k, ops) for the staged operands' type `ops`, or a PatternError in words."""
        im, in_, ik = self.shape
        ok = isinstance(ops, TupleType) and len(ops.elems) == 2
        dims = []
        for k, (rows, step) in enumerate(((im, ik), (in_, ik))):
            o = ops.elems[k] if ok else None  # type: ignore[union-attr]
            if not (isinstance(o, ArrayType) and isinstance(o.elem, ArrayType) and o.elem.elem == self.operand
                    and o.length.is_constant and o.elem.length.is_constant):
                raise PatternError(
                    f"{self.name}: the function must give a pair of constant-size tiles "
                    f"([[{self.operand}]_k]_m, [[{self.operand}]_k]_n), got {ops}")
            dims.append((o.length.value, o.elem.length.value))
        (m, ka), (n, kb) = dims
        if ka != kb or m % im or n % in_ or ka % ik:
            raise PatternError(f"{self.name}: tiles {m}×{ka} and {n}×{kb} do not fit the "
                               f"{im}×{in_}×{ik} instruction (m a multiple of {im}, n of {in_}, "
                               f"the same k, a multiple of {ik})")
        return m, n, ka, ops

    def infer(self, t: "Typing", args: Sequence[Type]) -> Type:
        expect_args(self, args)
        init, tiles = args
        self.warp_count()
        _in_work_group(self, t)
        m, n, _, _ = self.tile_shape(t, tiles)
        want = ArrayType(ArrayType(self.acc, cst(n)), cst(m))
        if not (same_type(init, want) or same_type(init, self.acc)):
            raise PatternError(f"{self.name}: the initial value has type {init}; the products are "
                               f"{want} (or give one {self.acc} for every element)")
        return ArrayType(want, cst(1))

    def round(self, x: np.ndarray) -> np.ndarray:
        return {"toTF32": round_tf32, "toBF16": round_bf16,
                "truncTF32": trunc_tf32}.get(self.rounding, np.asarray)(x)

    def evaluate(self, ev: "Evaluator", args: Sequence["Value"], env: "Env") -> "Value":
        init, tiles = args
        b = ev.brank
        acc = np.asarray(init).astype(np.float64)
        for i in range(axis_len(tiles, b)):
            a, bt = ev.call(self.f, [take(tiles, i, b)], env)  # type: ignore[misc]
            prod = np.einsum("...ik,...jk->...ij", self.round(a).astype(np.float64),
                             self.round(bt).astype(np.float64))
            if acc.ndim < prod.ndim:  # one initial value for every element
                acc = np.broadcast_to(acc.reshape(acc.shape + (1, 1)), prod.shape)
            acc = (acc + prod).astype(self.acc.dtype).astype(np.float64)
        return expand(acc.astype(self.acc.dtype), b)


@dataclass(frozen=True, repr=False)
class ReduceMmaTF32(ReduceMma):
    name = "reduceMmaTF32"
    shape = (16, 8, 8)
    rounding = "toTF32"


@dataclass(frozen=True, repr=False)
class ReduceMmaBF16(ReduceMma):
    name = "reduceMmaBF16"
    shape = (16, 8, 16)
    rounding = "toBF16"


@dataclass(frozen=True, repr=False)
class ReduceMmaF64(ReduceMma):
    name = "reduceMmaF64"
    shape = (8, 8, 4)
    operand = float64
    acc = float64


@dataclass(frozen=True, repr=False)
class ReduceMmaF64K8(ReduceMmaF64):
    """reduceMmaF64 on Hopper's m16n8k8 DMMA (cuBLAS's FP64 shape) for every 8 of a tile's k,
    where reduceMmaF64 takes the largest of m16n8k{16,8,4} that divides it: the same meaning,
    two or four independent k-steps per 16/32-deep tile instead of one (tiles' k a multiple
    of 8)."""

    name = "reduceMmaF64K8"
    shape = (8, 8, 8)


@dataclass(frozen=True, repr=False)
class ReduceMmaF64K8Ahead(ReduceMmaF64K8):
    """reduceMmaF64K8 whose lanes read each k-step's fragments one step ahead, across the tile
    boundary too (the next tile's first fragments read right after the pipeline's barrier, before
    the current tile's last products issue, as CUTLASS's multistage loop does): the same meaning;
    its function must pipeline the copies with toLocalAsync s ≥ 2."""

    name = "reduceMmaF64K8Ahead"


@dataclass(frozen=True, repr=False)
class ReduceMmaF64K8AheadSpread(ReduceMmaF64K8Ahead):
    """reduceMmaF64K8Ahead with the copies of tile i+s issued between the rows of tile i's last
    products (A's after the first row, B's after the second) instead of all before them: the
    same meaning, the copy instructions in the issue slots between the DMMAs."""

    name = "reduceMmaF64K8AheadSpread"


@dataclass(frozen=True, repr=False)
class ReduceMmaF64K16AheadSpread(ReduceMmaF64K8AheadSpread):
    """reduceMmaF64K8AheadSpread's loop (fragments read a k-step ahead across tiles, the next
    copies among the last products) on the m16n8k16 DMMA: the same meaning, half as many DMMAs
    each reading twice the fragment registers (tiles' k a multiple of 16). The instruction's k
    is the class's `shape[2]` (`codegen.cuda_mma.plan`)."""

    name = "reduceMmaF64K16AheadSpread"
    shape = (8, 8, 16)


MMA_PATTERNS: tuple[type[ReduceMma], ...] = (ReduceMmaTF32, ReduceMmaBF16, ReduceMmaF64,
                                             ReduceMmaF64K8, ReduceMmaF64K8Ahead,
                                             ReduceMmaF64K8AheadSpread, ReduceMmaF64K16AheadSpread)

WGMMA_ROW = 32  # TF32 elements of one 128-byte row of the swizzled layout: tiles' k is a multiple
WGMMA_MAX_N = 256  # the widest wgmma


@dataclass(frozen=True, repr=False)
class ReduceWgmma(ReduceMma):
    """reduceWgmma<P> w s (f, z): the meaning of reduceMma<P> w (f, z) (see the module docstring),
    run by w/4 warpgroups on Hopper's warpgroup MMA (`wgmma.mma_async`, sm_90a). The pattern
    stages the operands itself, `s` tiles deep, into the 128-byte-swizzled shared-memory layout
    the tensor cores read through matrix descriptors (rounding them on the way as its name
    says), so f only lays out the pair (the identity, or a view such as a transpose); each
    warpgroup owns m/(w/4) rows of the m×n tile and its accumulators live in registers."""

    stages: ArithExpr = param(Kind.SIZE, default=cst(3))
    feature = "wgmma"
    shape = (64, 8, 8)
    stage_limits = (2, 4, "")  # the staged tiles: fewest, most, and why (for the error line)
    # for the refusal: what the kernel needs of a Hopper GPU, and what OpenCL C has of it
    hopper_needs: ClassVar[str] = "warpgroup MMA, wgmma, sm_90a"
    opencl_has: ClassVar[str] = "no matrix instructions"

    @classmethod
    def signature(cls) -> list[tuple[str, Kind]]:
        return [("warps", Kind.SIZE), ("stages", Kind.SIZE), ("f", Kind.FUN)]

    @property
    def refusal(self) -> str:  # type: ignore[override]
        return (f"{self.name} needs the CUDA backend on a Hopper GPU ({self.hopper_needs}); "
                f"OpenCL C has {self.opencl_has}: compile with --backend cuda, or multiply the "
                "tiles with reduceMmaTF32 (mma.sync) or reduceSeq(add) ∘ mapSeq(mult)")

    def warp_count(self) -> int:
        w = super().warp_count()
        if w % 4:
            raise PatternError(f"{self.name} {self.warps}: warpgroups are 4 warps, so the number "
                               "of warps must be a multiple of 4")
        return w

    def stage_count(self) -> int:
        lo, hi, why = self.stage_limits
        if not self.stages.is_constant or not lo <= self.stages.value <= hi:
            raise PatternError(f"{self.name} {self.warps} {self.stages}: the number of staged "
                               f"tiles must be a constant from {lo} to {hi}{why}")
        return self.stages.value

    def check_tiles(self, ops: Type) -> tuple[int, int, int, Type]:
        m, n, k, ops = super().check_tiles(ops)
        groups = self.warp_count() // 4
        if m % (64 * groups) or n % 32 or n > WGMMA_MAX_N or k % WGMMA_ROW:
            raise PatternError(
                f"{self.name}: tiles {m}×{k} and {n}×{k} do not fit {groups} warpgroup(s) of "
                f"wgmma (m a multiple of {64 * groups}, 64 rows per warpgroup; n a multiple of 32 "
                f"up to {WGMMA_MAX_N}; k a multiple of {WGMMA_ROW}, one 128-byte swizzled row)")
        return m, n, k, ops

    def infer(self, t: "Typing", args: Sequence[Type]) -> Type:
        self.stage_count()
        return super().infer(t, args)


@dataclass(frozen=True, repr=False)
class ReduceWgmmaTF32(ReduceWgmma):
    """Operands rounded to TF32 to nearest, ties away (as toTF32)."""

    name = "reduceWgmmaTF32"
    rounding = "toTF32"


@dataclass(frozen=True, repr=False)
class ReduceWgmmaTF32Z(ReduceWgmma):
    """Operands truncated to TF32 (as truncTF32, the low 13 mantissa bits cleared)."""

    name = "reduceWgmmaTF32Z"
    rounding = "truncTF32"


WGMMA_ASYNC_MAX_M = 256  # the A tile's rows are the instruction's n (at most 256)


def _b_in_registers_tiles(p: ReduceWgmma, ops: Type, groups_word: str) -> tuple[int, int, int, Type]:
    """(m, n, k, ops) of the tiles of a wgmma with B in registers (reduceWgmmaAsync and
    reduceWgmmaTma: Cᵀ = B·Aᵀ, B's rows the instruction's m in one or two 64-row blocks per
    warpgroup, A's rows its n), or a PatternError in words (`groups_word` names the warpgroups
    that compute)."""
    m, n, k, ops = ReduceMma.check_tiles(p, ops)  # (m a multiple of 8: the shape's)
    groups = p.warp_count() // 4
    if m > WGMMA_ASYNC_MAX_M or n % (64 * groups) or n // (64 * groups) not in (1, 2) or k % WGMMA_ROW:
        raise PatternError(
            f"{p.name}: tiles {m}×{k} and {n}×{k} do not fit {groups} {groups_word} of "
            f"wgmma with B in registers (m a multiple of 8 up to {WGMMA_ASYNC_MAX_M}, the "
            f"instruction's n; n {64 * groups} or {128 * groups}, one or two 64-row blocks "
            f"per warpgroup; k a multiple of {WGMMA_ROW}, one 128-byte swizzled row)")
    return m, n, k, ops


@dataclass(frozen=True, repr=False)
class ReduceWgmmaAsync(ReduceWgmma):
    """reduceWgmmaAsync<P> w s (f, z): the meaning of reduceWgmma<P> w s (f, z), its tiles copied
    with cp.async, raw, `s` deep: the A tile (contiguous along k) straight into the swizzled
    layout the tensor cores read, the B tile (contiguous along its rows) as it lies; each
    warpgroup loads its rows of B from shared memory into registers (rounding them there) and
    computes Cᵀ = B·Aᵀ with the register form of wgmma (m64 rows of B per warpgroup block, A's
    rows the instruction's n). A is rounded (TF32) or truncated (TF32Z) in shared memory once
    it has landed (each thread its own pieces), B in registers."""

    feature = "wgmma"
    shape = (8, 64, 8)
    stage_limits = (3, 6, " (two tiles in the products, the rest in flight)")
    hopper_needs = "warpgroup MMA, wgmma, and cp.async, sm_90a"
    opencl_has = "neither"

    def check_tiles(self, ops: Type) -> tuple[int, int, int, Type]:
        return _b_in_registers_tiles(self, ops, "warpgroup(s)")


@dataclass(frozen=True, repr=False)
class ReduceWgmmaAsyncTF32(ReduceWgmmaAsync):
    """Operands rounded to TF32 to nearest, ties away (as toTF32)."""

    name = "reduceWgmmaAsyncTF32"
    rounding = "toTF32"


@dataclass(frozen=True, repr=False)
class ReduceWgmmaAsyncTF32Z(ReduceWgmmaAsync):
    """Operands truncated to TF32 (as truncTF32)."""

    name = "reduceWgmmaAsyncTF32Z"
    rounding = "truncTF32"


@dataclass(frozen=True, repr=False)
class ReduceWgmmaPair(ReduceWgmmaAsync):
    """reduceWgmmaPair<P> w s (f, z): the meaning of reduceWgmmaAsync<P> w s (f, z), run by the
    two work-groups of a 2-block cluster along dimension 1 (consecutive row tiles of C, the same
    column tile, so the same B tiles): each copies half of B's tile (its k-rows) and both read
    their fragments from either block's shared memory (distributed shared memory), so B crosses
    from L2 once per pair. The number of work-groups along dimension 1 must be even."""

    feature = "wgmma"
    hopper_needs = "warpgroup MMA, cp.async and 2-block clusters, sm_90a"
    opencl_has = "none of them"


@dataclass(frozen=True, repr=False)
class ReduceWgmmaPairTF32(ReduceWgmmaPair):
    """Operands rounded to TF32 to nearest, ties away (as toTF32)."""

    name = "reduceWgmmaPairTF32"
    rounding = "toTF32"


@dataclass(frozen=True, repr=False)
class ReduceWgmmaPairTF32Z(ReduceWgmmaPair):
    """Operands truncated to TF32 (as truncTF32)."""

    name = "reduceWgmmaPairTF32Z"
    rounding = "truncTF32"


@dataclass(frozen=True, repr=False)
class ReduceWgmmaTma(ReduceWgmma):
    """reduceWgmmaTma<P> w s (f, z): the meaning of reduceWgmma<P> w s (f, z), its tiles copied
    raw by the bulk tensor copy engine (TMA, `cp.async.bulk.tensor` on an mbarrier per stage,
    `s` stages) into the layouts the warpgroup MMA reads, by one producer warpgroup beside the
    w/4 consumer warpgroups (w + 4 warps in all); the consumers compute Cᵀ = B·Aᵀ as
    reduceWgmmaAsync does (A through matrix descriptors, B from shared memory into registers).
    Only truncation (TF32Z): the copies carry raw float32 bits, which the tensor cores read
    truncated."""

    feature = "wgmma"
    shape = (8, 64, 8)
    stage_limits = (2, 8, "")
    whole_grid = True  # setmaxnreg: ptxas keeps the consumers' registers only outside loops
    hopper_needs = "warpgroup MMA, wgmma, and the bulk tensor copy, TMA, sm_90a"
    opencl_has = "neither"

    def threads(self, arg_types: Sequence[Type]) -> "ArithExpr | None":
        return cst(WARP * (self.warp_count() + 4))  # the consumers and one producer warpgroup

    def check_tiles(self, ops: Type) -> tuple[int, int, int, Type]:
        return _b_in_registers_tiles(self, ops, "consumer warpgroup(s)")


@dataclass(frozen=True, repr=False)
class ReduceWgmmaTmaTF32Z(ReduceWgmmaTma):
    """Operands truncated to TF32 (as truncTF32)."""

    name = "reduceWgmmaTmaTF32Z"
    rounding = "truncTF32"


@dataclass(frozen=True, repr=False)
class ReduceWgmmaTmaPair(ReduceWgmmaTma):
    """reduceWgmmaTmaPair<P> w s (f, z): the meaning of reduceWgmmaTma<P> w s (f, z), run by the
    two work-groups of a 2-block cluster along dimension 1 (consecutive row tiles, the same
    column tile): each copies half of B's tile (its k-rows) to both blocks at once (TMA
    multicast), so B crosses from L2 once per pair. The number of work-groups along dimension
    1 must be even."""

    hopper_needs = "warpgroup MMA, the bulk tensor copy with multicast and 2-block clusters, sm_90a"
    opencl_has = "none of them"


@dataclass(frozen=True, repr=False)
class ReduceWgmmaTmaPairTF32Z(ReduceWgmmaTmaPair):
    """Operands truncated to TF32 (as truncTF32)."""

    name = "reduceWgmmaTmaPairTF32Z"
    rounding = "truncTF32"


WGMMA_PATTERNS: tuple[type[ReduceWgmma], ...] = (ReduceWgmmaTF32, ReduceWgmmaTF32Z, ReduceWgmmaAsyncTF32,
                                                 ReduceWgmmaAsyncTF32Z, ReduceWgmmaPairTF32,
                                                 ReduceWgmmaPairTF32Z, ReduceWgmmaTmaTF32Z,
                                                 ReduceWgmmaTmaPairTF32Z)


# ---------------------------------------------------------------------------------------------
# asynchronous copies


def copy_levels(f: FunDecl) -> "list[Pattern] | None":
    """The maps of a copy (outermost first) when f is nested mapSeqUnroll/mapSeq/mapLcl of a
    copying identity user function; None otherwise."""
    levels: list[Pattern] = []
    g = unwrap_eta(f)
    while True:
        if isinstance(g, (MapSeqUnroll, MapSeq, MapLcl)):
            levels.append(g)
            g = unwrap_eta(g.f)
            if not isinstance(g, Pattern) and not isinstance(g, UserFun):
                inner = getattr(g, "body", None)  # λx. h(x)
                params = getattr(g, "params", ())
                if inner is None or len(params) != 1 or getattr(inner, "args", None) != params:
                    return None
                g = inner.f
            continue
        ok = (isinstance(g, UserFun) and g.arity == 1 and g.param_types[0] == g.out_type
              and g.body.replace(" ", "") == f"return{g.param_names[0]};")
        return levels if ok and levels else None


@dataclass(frozen=True, repr=False)
class ToLocalAsync(CudaPattern):
    """toLocalAsync s (copy): see the module docstring."""

    name = "toLocalAsync"
    stages: ArithExpr = param(Kind.SIZE, default=cst(2))
    f: FunDecl = param(Kind.FUN, default=None)  # type: ignore[assignment]
    high_level = False
    feature = "cp.async"
    refusal = ("toLocalAsync needs the CUDA backend (cp.async); OpenCL C has no asynchronous copy "
               "into local memory: compile with --backend cuda, or copy with toLocal")

    @classmethod
    def signature(cls) -> list[tuple[str, Kind]]:
        return [("stages", Kind.SIZE), ("f", Kind.FUN)]

    def stage_count(self) -> int:
        if not self.stages.is_constant or not 2 <= self.stages.value <= 8:
            raise PatternError(f"toLocalAsync {self.stages}: the pipeline depth must be a constant "
                               "from 2 to 8")
        return self.stages.value

    def infer(self, t: "Typing", args: Sequence[Type]) -> Type:
        expect_args(self, args)
        self.stage_count()
        if not any(isinstance(e, (ReduceMma, ReduceSeq)) for e in t.enclosing):
            raise PatternError("toLocalAsync pipelines the copies of a loop over tiles: use it in "
                               "the staging function of a reduceMma or at the start of a reduceSeq's")
        if copy_levels(self.f) is None:
            raise PatternError("toLocalAsync: the function must be a copy (mapSeqUnroll, mapSeq or "
                               "mapLcl of id)")
        out = t.apply(self.f, list(args), enter=self)
        elem = out
        while isinstance(elem, ArrayType):
            elem = elem.elem
        scalar = elem.elem if isinstance(elem, VectorType) else elem
        if scalar not in (float32, float64, complex64, complex128):  # cp.async of 4-16 bytes
            raise PatternError(f"toLocalAsync copies float, double or complex elements (or "
                               f"their vectors), not {elem}")
        return out

    def evaluate(self, ev: "Evaluator", args: Sequence["Value"], env: "Env") -> "Value":
        return ev.call(self.f, list(args), env)


# the schedule of a cp.async tile loop (reduceSplitTail) builds on the classes above
from liftkit.ir.patterns.cuda_schedule import ReduceMmaSplit, ReduceSplitTail  # noqa: E402
# the complex128 tile loop on the FP64 tensor cores (reduceMmaZ64) builds on reduceMma
from liftkit.ir.patterns.cuda_complex import ZMMA_PATTERNS  # noqa: E402

CUDA_PATTERNS: tuple[type[Pattern], ...] = ((ReduceWarp,) + MMA_PATTERNS + WGMMA_PATTERNS
                                            + (ToLocalAsync, ReduceSplitTail, ReduceMmaSplit)
                                            + ZMMA_PATTERNS)

