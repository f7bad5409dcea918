"""Data-layout patterns: they only change how data is seen, never compute (seed 000 §3.2).

The code generator turns each into a *view* instead of a copy; the interpreter turns each into a
reshape, axis swap, stride trick or gather on the first non-batch axis.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np

from liftkit.arith import ArithExpr, cst, divides, prove_lt
from liftkit.ir.patterns.base import Boundary, IndexFun, Kind, Pattern, PatternError, expect_args, param
from liftkit.semantics.values import axis_len, tmap
from liftkit.types import (
    ArrayType,
    ScalarType,
    TupleType,
    Type,
    VectorType,
    int32,
    int64,
    same_type,
)

if TYPE_CHECKING:  # pragma: no cover
    from liftkit.ir.typecheck import Typing
    from liftkit.semantics.interpreter import Env, Evaluator
    from liftkit.semantics.values import Value


def _array(p: Pattern, t: Type) -> ArrayType:
    if not isinstance(t, ArrayType):
        raise PatternError(f"{p.name}: expects an array, got {t}")
    return t


def _on_axis(ev: "Evaluator", v: "Value", fn) -> "Value":  # type: ignore[no-untyped-def]
    b = ev.brank
    return tmap(lambda a: fn(a, b), v)


@dataclass(frozen=True, repr=False)
class Split(Pattern):
    """split n: [A]_(n*m) -> [[A]_n]_m."""

    name = "split"
    n: ArithExpr = param(Kind.SIZE)

    def infer(self, t: "Typing", args: Sequence[Type]) -> Type:
        expect_args(self, args)
        xs = _array(self, args[0])
        if divides(self.n, xs.length) is False:
            raise PatternError(f"split {self.n}: {self.n} does not divide the length {xs.length}")
        return ArrayType(ArrayType(xs.elem, self.n), xs.length // self.n)

    def evaluate(self, ev: "Evaluator", args: Sequence["Value"], env: "Env") -> "Value":
        n = ev.eval_size(self.n)
        length = axis_len(args[0], ev.brank)
        if n <= 0 or length % n:
            raise PatternError(f"split {self.n}: {n} does not divide the length {length}")
        return _on_axis(ev, args[0], lambda a, b: a.reshape(a.shape[:b] + (length // n, n) + a.shape[b + 1:]))


@dataclass(frozen=True, repr=False)
class Join(Pattern):
    """join: [[A]_n]_m -> [A]_(n*m)."""

    name = "join"

    def infer(self, t: "Typing", args: Sequence[Type]) -> Type:
        expect_args(self, args)
        xs = _array(self, args[0])
        if not isinstance(xs.elem, ArrayType):
            raise PatternError(f"join: expects an array of arrays, got {xs}")
        return ArrayType(xs.elem.elem, xs.length * xs.elem.length)

    def evaluate(self, ev: "Evaluator", args: Sequence["Value"], env: "Env") -> "Value":
        return _on_axis(ev, args[0], lambda a, b: a.reshape(a.shape[:b] + (-1,) + a.shape[b + 2:])
                        if a.shape[b] * a.shape[b + 1] else a.reshape(a.shape[:b] + (0,) + a.shape[b + 2:]))


@dataclass(frozen=True, repr=False)
class Zip(Pattern):
    """zip(xs1, ..., xsk): arrays of equal length to one array of k-tuples."""

    name = "zip"
    n: int = param(Kind.COUNT, default=2)

    def num_args(self) -> int:
        return self.n

    @property
    def arity(self) -> int:  # type: ignore[override]
        return self.n

    def infer(self, t: "Typing", args: Sequence[Type]) -> Type:
        if self.n < 2:
            raise PatternError("zip: needs at least two arrays")
        expect_args(self, args)
        arrays = [_array(self, a) for a in args]
        n0 = arrays[0].length
        for a in arrays[1:]:
            if not same_type(ArrayType(int32, a.length), ArrayType(int32, n0)):
                raise PatternError(f"zip: lengths {n0} and {a.length} differ")
        return ArrayType(TupleType(tuple(a.elem for a in arrays)), n0)

    def evaluate(self, ev: "Evaluator", args: Sequence["Value"], env: "Env") -> "Value":
        lens = {axis_len(a, ev.brank) for a in args}
        if len(lens) > 1:
            raise PatternError(f"zip: lengths {sorted(lens)} differ")
        return tuple(args)


@dataclass(frozen=True, repr=False)
class Unzip(Pattern):
    """unzip: [(A1, ..., Ak)]_n -> ([A1]_n, ..., [Ak]_n)."""

    name = "unzip"

    def infer(self, t: "Typing", args: Sequence[Type]) -> Type:
        expect_args(self, args)
        xs = _array(self, args[0])
        if not isinstance(xs.elem, TupleType):
            raise PatternError(f"unzip: expects an array of tuples, got {xs}")
        return TupleType(tuple(ArrayType(e, xs.length) for e in xs.elem.elems))

    def evaluate(self, ev: "Evaluator", args: Sequence["Value"], env: "Env") -> "Value":
        return args[0]


@dataclass(frozen=True, repr=False)
class Get(Pattern):
    """get i: the i-th component of a tuple (0-based)."""

    name = "get"
    i: ArithExpr = param(Kind.SIZE)

    def index(self) -> int:
        if not self.i.is_constant:
            raise PatternError(f"get {self.i}: the index must be a constant")
        return self.i.value

    def infer(self, t: "Typing", args: Sequence[Type]) -> Type:
        expect_args(self, args)
        tup = args[0]
        if not isinstance(tup, TupleType):
            raise PatternError(f"get {self.i}: expects a tuple, got {tup}")
        i = self.index()
        if not 0 <= i < len(tup.elems):
            raise PatternError(f"get {i}: index out of range for a {len(tup.elems)}-tuple {tup}")
        return tup.elems[i]

    def evaluate(self, ev: "Evaluator", args: Sequence["Value"], env: "Env") -> "Value":
        return args[0][self.index()]  # type: ignore[index]


@dataclass(frozen=True, repr=False)
class Tuple(Pattern):
    """tuple(a, b, ...): build a tuple from values."""

    name = "tuple"
    n: int = param(Kind.COUNT, default=2)

    def num_args(self) -> int:
        return self.n

    @property
    def arity(self) -> int:  # type: ignore[override]
        return self.n

    def infer(self, t: "Typing", args: Sequence[Type]) -> Type:
        if self.n < 2:
            raise PatternError("tuple: needs at least two components")
        expect_args(self, args)
        return TupleType(tuple(args))

    def evaluate(self, ev: "Evaluator", args: Sequence["Value"], env: "Env") -> "Value":
        return tuple(args)


@dataclass(frozen=True, repr=False)
class Id(Pattern):
    """Id: the identity (no copy; the user function `id` copies)."""

    name = "Id"

    def infer(self, t: "Typing", args: Sequence[Type]) -> Type:
        expect_args(self, args)
        return args[0]

    def evaluate(self, ev: "Evaluator", args: Sequence["Value"], env: "Env") -> "Value":
        return args[0]


@dataclass(frozen=True, repr=False)
class Streamed(Pattern):
    """streamed: the identity on values; a hint that its argument (an input in global memory)
    is read once, so the code generator may read it past the caches (CUDA's evict-first
    `__ldcs`: a streamed matrix then no longer evicts the vectors every work-group re-reads).
    OpenCL C has no such load: there it is `Id`."""

    name = "streamed"

    def infer(self, t: "Typing", args: Sequence[Type]) -> Type:
        expect_args(self, args)
        return args[0]

    def evaluate(self, ev: "Evaluator", args: Sequence["Value"], env: "Env") -> "Value":
        return args[0]


@dataclass(frozen=True, repr=False)
class Reorder(Pattern):
    """reorder: any permutation (the order does not matter); the interpreter keeps the order."""

    name = "reorder"

    def infer(self, t: "Typing", args: Sequence[Type]) -> Type:
        expect_args(self, args)
        return _array(self, args[0])

    def evaluate(self, ev: "Evaluator", args: Sequence["Value"], env: "Env") -> "Value":
        return args[0]


def _gather(ev: "Evaluator", v: "Value", idx: np.ndarray) -> "Value":
    return _on_axis(ev, v, lambda a, b: np.take(a, idx, axis=b))


@dataclass(frozen=True, repr=False)
class ReorderStride(Pattern):
    """reorderStride s: element i of the result is x[i/m + s*(i mod m)], m = n/s (seed 002 §3.2)."""

    name = "reorderStride"
    high_level = False
    s: ArithExpr = param(Kind.SIZE)

    def infer(self, t: "Typing", args: Sequence[Type]) -> Type:
        expect_args(self, args)
        xs = _array(self, args[0])
        if divides(self.s, xs.length) is False:
            raise PatternError(f"reorderStride {self.s}: {self.s} does not divide the length {xs.length}")
        return xs

    def index(self, i: ArithExpr, n: ArithExpr) -> ArithExpr:
        m = n // self.s
        return i // m + self.s * (i % m)

    def evaluate(self, ev: "Evaluator", args: Sequence["Value"], env: "Env") -> "Value":
        n = axis_len(args[0], ev.brank)
        s = ev.eval_size(self.s)
        if s <= 0 or n % s:
            raise PatternError(f"reorderStride {self.s}: {s} does not divide the length {n}")
        i = np.arange(n)
        m = n // s
        return _gather(ev, args[0], i // m + s * (i % m))


def _index_array(ev: "Evaluator", p: Pattern, fn: IndexFun, n: int) -> np.ndarray:
    env = dict(ev.sizes)
    env[fn.i.name] = np.arange(n)
    env[fn.n.name] = n
    idx = np.broadcast_to(np.asarray(fn.body.eval_numpy(env), dtype=np.int64), (n,))
    bad = (idx < 0) | (idx >= n)
    if bad.any():
        k = int(np.argmax(bad))
        raise PatternError(f"{p.name}({fn}): index {int(idx[k])} for i={k} is outside 0..{n - 1}")
    return idx


@dataclass(frozen=True, repr=False)
class Gather(Pattern):
    """gather(f): element i of the result is x[f(i)]."""

    name = "gather"
    f: IndexFun = param(Kind.INDEX)

    def infer(self, t: "Typing", args: Sequence[Type]) -> Type:
        expect_args(self, args)
        return _array(self, args[0])

    def evaluate(self, ev: "Evaluator", args: Sequence["Value"], env: "Env") -> "Value":
        n = axis_len(args[0], ev.brank)
        return _gather(ev, args[0], _index_array(ev, self, self.f, n))


@dataclass(frozen=True, repr=False)
class Scatter(Pattern):
    """scatter(f): element i of the input goes to position f(i); f must be a permutation."""

    name = "scatter"
    f: IndexFun = param(Kind.INDEX)

    def infer(self, t: "Typing", args: Sequence[Type]) -> Type:
        expect_args(self, args)
        return _array(self, args[0])

    def evaluate(self, ev: "Evaluator", args: Sequence["Value"], env: "Env") -> "Value":
        n = axis_len(args[0], ev.brank)
        idx = _index_array(ev, self, self.f, n)
        inverse = np.full(n, -1, dtype=np.int64)
        inverse[idx] = np.arange(n)
        if (inverse < 0).any():
            raise PatternError(f"scatter({self.f}): the index function is not a permutation of 0..{n - 1}")
        return _gather(ev, args[0], inverse)


@dataclass(frozen=True, repr=False)
class Transpose(Pattern):
    """transpose: [[A]_m]_n -> [[A]_n]_m."""

    name = "transpose"

    def infer(self, t: "Typing", args: Sequence[Type]) -> Type:
        expect_args(self, args)
        xs = _array(self, args[0])
        if not isinstance(xs.elem, ArrayType):
            raise PatternError(f"transpose: expects an array of arrays, got {xs}")
        return ArrayType(ArrayType(xs.elem.elem, xs.length), xs.elem.length)

    def evaluate(self, ev: "Evaluator", args: Sequence["Value"], env: "Env") -> "Value":
        return _on_axis(ev, args[0], lambda a, b: np.swapaxes(a, b, b + 1))


@dataclass(frozen=True, repr=False)
class Slide(Pattern):
    """slide size step: overlapping windows, [A]_n -> [[A]_size]_((n - size)/step + 1)."""

    name = "slide"
    size: ArithExpr = param(Kind.SIZE)
    step: ArithExpr = param(Kind.SIZE)

    def infer(self, t: "Typing", args: Sequence[Type]) -> Type:
        expect_args(self, args)
        xs = _array(self, args[0])
        if prove_lt(self.size, cst(1)) or prove_lt(self.step, cst(1)):
            raise PatternError(f"slide {self.size} {self.step}: size and step must be at least 1")
        if prove_lt(xs.length, self.size):
            raise PatternError(f"slide {self.size} {self.step}: the window is longer than the array ({xs.length})")
        return ArrayType(ArrayType(xs.elem, self.size), (xs.length - self.size) // self.step + 1)

    def evaluate(self, ev: "Evaluator", args: Sequence["Value"], env: "Env") -> "Value":
        size, step = ev.eval_size(self.size), ev.eval_size(self.step)
        n = axis_len(args[0], ev.brank)
        if size < 1 or step < 1 or size > n:
            raise PatternError(f"slide {size} {step}: invalid for an array of length {n}")

        def f(a: np.ndarray, b: int) -> np.ndarray:
            w = np.lib.stride_tricks.sliding_window_view(a, size, axis=b)
            return np.moveaxis(w, -1, b + 1)[(slice(None),) * b + (slice(None, None, step),)]

        return _on_axis(ev, args[0], f)


_NP_PAD_MODE = {"clamp": "edge", "wrap": "wrap", "mirror": "symmetric", "constant": "constant"}


@dataclass(frozen=True, repr=False)
class Pad(Pattern):
    """pad l r boundary: [A]_n -> [A]_(l + n + r), outside cells from the boundary rule."""

    name = "pad"
    left: ArithExpr = param(Kind.SIZE)
    right: ArithExpr = param(Kind.SIZE)
    boundary: Boundary = param(Kind.BOUNDARY)

    def infer(self, t: "Typing", args: Sequence[Type]) -> Type:
        expect_args(self, args)
        xs = _array(self, args[0])
        if prove_lt(self.left, cst(0)) or prove_lt(self.right, cst(0)):
            raise PatternError(f"pad {self.left} {self.right}: negative padding")
        if self.boundary.value is not None and not same_type(self.boundary.value.type, xs.elem):
            raise PatternError(f"pad: constant {self.boundary.value.value} has type "
                               f"{self.boundary.value.type} but the elements are {xs.elem}")
        return ArrayType(xs.elem, xs.length + self.left + self.right)

    def evaluate(self, ev: "Evaluator", args: Sequence["Value"], env: "Env") -> "Value":
        l, r = ev.eval_size(self.left), ev.eval_size(self.right)
        mode = _NP_PAD_MODE[self.boundary.kind]

        def f(a: np.ndarray, b: int, value: object = None) -> np.ndarray:
            widths = [(0, 0)] * a.ndim
            widths[b] = (l, r)
            if mode == "constant" and np.ndim(value) > 0:  # a vector: its lanes are the last axes
                shape = list(a.shape)
                fill = [np.broadcast_to(np.asarray(value, a.dtype), shape[:b] + [c] + shape[b + 1:])
                        for c in (l, r)]
                return np.concatenate([fill[0], a, fill[1]], axis=b)
            if mode == "constant":
                return np.pad(a, widths, mode="constant", constant_values=value)  # type: ignore[arg-type]
            return np.pad(a, widths, mode=mode)

        v = args[0]
        if self.boundary.value is not None:
            cv = self.boundary.value.value
            if isinstance(v, tuple):
                return tuple(_on_axis(ev, x, lambda a, b, c=c: f(a, b, c)) for x, c in zip(v, cv))
            return _on_axis(ev, v, lambda a, b: f(a, b, cv))
        return _on_axis(ev, v, f)


@dataclass(frozen=True, repr=False)
class Crop(Pattern):
    """crop l r: [A]_n -> [A]_(n - l - r), the cells a `pad l r` added dropped again. A
    computation written through it writes only the kept cells (the code generator guards the
    others' stores), so a tiled kernel over padded sizes writes a result of the real size."""

    name = "crop"
    left: ArithExpr = param(Kind.SIZE)
    right: ArithExpr = param(Kind.SIZE)

    def infer(self, t: "Typing", args: Sequence[Type]) -> Type:
        expect_args(self, args)
        xs = _array(self, args[0])
        if prove_lt(self.left, cst(0)) or prove_lt(self.right, cst(0)):
            raise PatternError(f"crop {self.left} {self.right}: negative cropping")
        if prove_lt(xs.length, self.left + self.right):
            raise PatternError(f"crop {self.left} {self.right}: more cells than the array has "
                               f"({xs.length})")
        return ArrayType(xs.elem, xs.length - self.left - self.right)

    def evaluate(self, ev: "Evaluator", args: Sequence["Value"], env: "Env") -> "Value":
        l, r = ev.eval_size(self.left), ev.eval_size(self.right)
        n = axis_len(args[0], ev.brank)
        if l < 0 or r < 0 or l + r > n:
            raise PatternError(f"crop {l} {r}: invalid for an array of length {n}")
        return _on_axis(ev, args[0], lambda a, b: a[(slice(None),) * b + (slice(l, n - r),)])


@dataclass(frozen=True, repr=False)
class AsVector(Pattern):
    """asVector n: [S]_(n*m) -> [S<n>]_m for a scalar type S."""

    name = "asVector"
    n: ArithExpr = param(Kind.SIZE)

    def width(self) -> int:
        if not self.n.is_constant:
            raise PatternError(f"asVector {self.n}: the width must be a constant")
        return self.n.value

    def infer(self, t: "Typing", args: Sequence[Type]) -> Type:
        expect_args(self, args)
        xs = _array(self, args[0])
        if not isinstance(xs.elem, ScalarType):
            raise PatternError(f"asVector {self.n}: the elements must be scalars, got {xs.elem}")
        if divides(self.n, xs.length) is False:
            raise PatternError(f"asVector {self.n}: the length {xs.length} is not divisible by {self.n}")
        return ArrayType(VectorType(xs.elem, self.width()), xs.length // self.n)

    def evaluate(self, ev: "Evaluator", args: Sequence["Value"], env: "Env") -> "Value":
        w = self.width()
        n = axis_len(args[0], ev.brank)
        if n % w:
            raise PatternError(f"asVector {w}: the length {n} is not divisible by {w}")
        return _on_axis(ev, args[0], lambda a, b: a.reshape(a.shape[:b] + (n // w, w)))


@dataclass(frozen=True, repr=False)
class AsScalar(Pattern):
    """asScalar: [S<n>]_m -> [S]_(n*m)."""

    name = "asScalar"

    def infer(self, t: "Typing", args: Sequence[Type]) -> Type:
        expect_args(self, args)
        xs = _array(self, args[0])
        if not isinstance(xs.elem, VectorType):
            raise PatternError(f"asScalar: the elements must be vectors, got {xs.elem}")
        return ArrayType(xs.elem.elem, xs.length * xs.elem.width)

    def evaluate(self, ev: "Evaluator", args: Sequence["Value"], env: "Env") -> "Value":
        return _on_axis(ev, args[0], lambda a, b: a.reshape(a.shape[:b] + (-1,)))


@dataclass(frozen=True, repr=False)
class At(Pattern):
    """at(xs, i): element i of xs for a run-time index i (e.g. MD's neighbour lists)."""

    name = "at"
    arity = 2

    def infer(self, t: "Typing", args: Sequence[Type]) -> Type:
        expect_args(self, args)
        xs, i = args
        xs = _array(self, xs)
        if i not in (int32, int64):
            raise PatternError(f"at: the index must be an int, got {i}")
        return xs.elem

    def evaluate(self, ev: "Evaluator", args: Sequence["Value"], env: "Env") -> "Value":
        xs, i = args
        b = ev.brank
        idx = np.asarray(i).astype(np.int64)
        n = axis_len(xs, b)
        if ((idx < 0) | (idx >= n)).any():
            bad = int(idx[(idx < 0) | (idx >= n)].flat[0])
            raise PatternError(f"at: index {bad} is outside 0..{n - 1}")

        def f(a: np.ndarray) -> np.ndarray:
            ix = idx.reshape(idx.shape + (1,) * (a.ndim - b))
            return np.take_along_axis(a, ix, axis=b).squeeze(axis=b)

        return tmap(f, xs)


LAYOUT_PATTERNS = (Split, Join, Zip, Unzip, Get, Tuple, Id, Reorder, ReorderStride, Gather, Scatter,
                   Transpose, Slide, Pad, Crop, AsVector, AsScalar, At, Streamed)
