"""The Python DSL: write Lift programs as in the papers.

    N = size("N")
    dot = fun([float32[N], float32[N]],
              lambda x, y: reduce(add, 0.0) << map(mult) << zip(x, y))

`f << g` is composition (f ∘ g) and `f << expr` application, so programs read right to left as in
the papers. Functions may be given as Python lambdas; their parameter names become the printed
names. `xy[0]` is `get 0` of a tuple.
"""

from __future__ import annotations

import builtins
import inspect
from typing import Any, Callable, Sequence, Union

from liftkit.arith import ArithExpr, cst, size_var
from liftkit.ir.literals import settle_literals
from liftkit.ir.nodes import FunCall, FunDecl, Lambda, Literal, Param, as_expr, lit
from liftkit.ir import patterns as P
from liftkit.types import LiftTypeError, Type

FunLike = Union[FunDecl, Callable[..., Any]]
SizeLike = Union[ArithExpr, int]


def size(name: str) -> ArithExpr:
    """A size variable (≥ 1), e.g. `N = size("N")`."""
    return size_var(name)


def sizes(names: str) -> tuple[ArithExpr, ...]:
    """`N, M = sizes("N M")`."""
    return tuple(size_var(n) for n in names.split())


def _size(n: SizeLike) -> ArithExpr:
    if isinstance(n, ArithExpr):
        return n
    if isinstance(n, bool) or not isinstance(n, int):
        raise LiftTypeError(f"expected a size (int or size expression), got {n!r}")
    return cst(n)


def _names(fn: Callable[..., Any]) -> list[str]:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        raise LiftTypeError(f"cannot read the parameters of {fn!r}") from None
    ps = list(sig.parameters.values())
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in ps):
        raise LiftTypeError("a Lift lambda needs a fixed number of parameters")
    return [p.name for p in ps]


def fn(f: FunLike) -> FunDecl:
    """A FunDecl from a FunDecl or a Python function over Lift expressions."""
    if isinstance(f, FunDecl):
        return f
    if not callable(f):
        raise LiftTypeError(f"expected a function, got {f!r}")
    params = tuple(Param(n) for n in _names(f))
    body = f(*params)
    if isinstance(body, FunDecl):
        raise LiftTypeError("the lambda returns a function; apply it to its input (e.g. `f << x`)")
    return Lambda(params, as_expr(body))


def fun(types: Sequence[Type], body: Callable[..., Any]) -> Lambda:
    """A program: typed parameters and a body, `fun([float32[N]], lambda x: map(abs) << x)`.
    Bare numbers in it take the type their use asks for (`reduce(add_double, 0.0)`)."""
    names = _names(body)
    if len(names) != len(types):
        raise LiftTypeError(f"fun: {len(types)} type(s) for {len(names)} parameter(s)")
    params = tuple(Param(n, t) for n, t in builtins.zip(names, types))
    return settle_literals(Lambda(params, as_expr(body(*params))))


# -- maps ---------------------------------------------------------------------------------------
def map(f: FunLike) -> P.Map:  # noqa: A001 - the papers' name
    return P.Map(fn(f))


def mapSeq(f: FunLike) -> P.MapSeq:
    return P.MapSeq(fn(f))


def mapSeqUnroll(f: FunLike) -> P.MapSeqUnroll:
    return P.MapSeqUnroll(fn(f))


def _parallel(cls: type[P.ParallelMap]) -> Callable[..., Any]:
    def build(dim_or_f: Union[int, FunLike], f: FunLike | None = None) -> Any:
        if isinstance(dim_or_f, int) and not isinstance(dim_or_f, bool):
            if f is not None:
                return cls(fn(f), dim_or_f)
            return lambda g: cls(fn(g), dim_or_f)
        return cls(fn(dim_or_f), 0)

    build.__name__ = cls.name
    build.__doc__ = f"{cls.name}(f) in dimension 0, or {cls.name}(d)(f) / {cls.name}(d, f)."
    return build


mapGlb = _parallel(P.MapGlb)
mapWrg = _parallel(P.MapWrg)
mapLcl = _parallel(P.MapLcl)


def mapVec(f: FunLike) -> P.MapVec:
    return P.MapVec(fn(f))


def lastWrg(f: FunLike, g: FunLike, bound: SizeLike = 0, cluster: SizeLike = 0) -> P.LastWrg:
    """lastWrg b c (f, g) $ (blocks of parts, one value per block): f per part in a work-group of
    its own, g of a block's r partials (and its value) by the block's last work-group; b > 0
    builds the kernel for at least b resident work-groups per multiprocessor, c = 1 runs a
    block's parts as one thread-block cluster (CUDA)."""
    return P.LastWrg(fn(f), fn(g), _size(bound), _size(cluster))


def wrgItems(n: SizeLike, f: FunLike) -> P.WrgItems:
    """wrgItems n (f): f's work-groups of up to n work-items (the code generator's cap is 256),
    the kernel built for n (CUDA: `__launch_bounds__(n, 1)`)."""
    return P.WrgItems(_size(n), fn(f))


# -- reductions -----------------------------------------------------------------------------------
def _with_init(pattern: P.Pattern, init: Any) -> FunDecl:
    """reduce(f, z) as a unary function of the array: λxs. reduce(f)(z, xs)."""
    if init is None:
        return pattern
    z = as_expr(init)
    xs = Param("xs")
    return Lambda((xs,), FunCall(pattern, (z, xs)))


def reduce(f: FunLike, init: Any = None) -> FunDecl:  # noqa: A001
    """reduce(⊕, z): with z given, a function of the array; without, a function of (z, xs)."""
    return _with_init(P.Reduce(fn(f)), init)


def reduceSeq(f: FunLike, init: Any = None) -> FunDecl:
    return _with_init(P.ReduceSeq(fn(f)), init)


def reduceSeqUnroll(f: FunLike, init: Any = None) -> FunDecl:
    return _with_init(P.ReduceSeqUnroll(fn(f)), init)


def partRed(f: FunLike, init: Any, m: SizeLike) -> FunDecl:
    return _with_init(P.PartRed(fn(f), _size(m)), init)


def iterate(n: SizeLike, f: FunLike) -> P.Iterate:
    return P.Iterate(_size(n), fn(f))


# -- data layout ----------------------------------------------------------------------------------
def split(n: SizeLike) -> P.Split:
    return P.Split(_size(n))


join = P.Join()
transpose = P.Transpose()
unzip = P.Unzip()
reorder = P.Reorder()
asScalar = P.AsScalar()
Id = P.Id()
streamed = P.Streamed()  # a hint: read once (CUDA evict-first loads), the identity


def zip(*arrays: Any) -> FunCall:  # noqa: A001
    if len(arrays) < 2:
        raise LiftTypeError("zip: needs at least two arrays")
    return P.Zip(len(arrays))(*arrays)


def tuple_(*values: Any) -> FunCall:
    return P.Tuple(len(values))(*values)


def get(i: int) -> P.Get:
    return P.Get(cst(i))


def at(xs: Any, i: Any) -> FunCall:
    return P.At()(xs, i)


def reorderStride(s: SizeLike) -> P.ReorderStride:
    return P.ReorderStride(_size(s))


def gather(f: Union[P.IndexFun, Callable[[ArithExpr, ArithExpr], ArithExpr]]) -> P.Gather:
    """gather(lambda i, n: n - 1 - i) reverses."""
    return P.Gather(f if isinstance(f, P.IndexFun) else P.index_fun(f))


def scatter(f: Union[P.IndexFun, Callable[[ArithExpr, ArithExpr], ArithExpr]]) -> P.Scatter:
    return P.Scatter(f if isinstance(f, P.IndexFun) else P.index_fun(f))


def slide(size_: SizeLike, step: SizeLike) -> P.Slide:
    return P.Slide(_size(size_), _size(step))


def boundary(b: Any) -> P.Boundary:
    """'clamp', 'wrap', 'mirror', or a number / Literal for a constant boundary."""
    if isinstance(b, P.Boundary):
        return b
    if isinstance(b, str):
        return P.Boundary(b)
    return P.Boundary("constant", b if isinstance(b, Literal) else lit(b))


def pad(left: SizeLike, right: SizeLike, b: Any) -> P.Pad:
    return P.Pad(_size(left), _size(right), boundary(b))


def crop(left: SizeLike, right: SizeLike) -> P.Crop:
    """The inverse of `pad l r`: the first l and last r cells dropped."""
    return P.Crop(_size(left), _size(right))


def asVector(n: SizeLike) -> P.AsVector:
    return P.AsVector(_size(n))


# -- address spaces -------------------------------------------------------------------------------
def toGlobal(f: FunLike) -> P.ToGlobal:
    return P.ToGlobal(fn(f))


def toLocal(f: FunLike) -> P.ToLocal:
    return P.ToLocal(fn(f))


def toPrivate(f: FunLike) -> P.ToPrivate:
    return P.ToPrivate(fn(f))


# -- multi-dimensional helpers: compositions of the primitives, not new primitives ------------------
def let(*values_and_body: Any) -> FunCall:
    """let(v1, v2, ..., lambda a, b, ...: body): compute the values here, then the body.

    In OpenCL-level programs *where* a value is computed matters (a tile loaded into local
    memory before a mapLcl, not inside it); a let keeps it in place."""
    *values, body = values_and_body
    f = fn(body)
    if len(values) != f.arity:
        raise LiftTypeError(f"let: {len(values)} value(s) for a function of {f.arity} parameter(s)")
    return FunCall(f, tuple(as_expr(v) for v in values))


def compose(*fs: FunLike) -> FunDecl:
    """compose(f, g, h) = f ∘ g ∘ h."""
    out = fn(fs[-1])
    for f in reversed(fs[:-1]):
        out = fn(f) << out  # type: ignore[assignment]
    return out


def slide2D(size_: SizeLike, step: SizeLike) -> FunDecl:
    """2D neighbourhoods: [[A]_m]_n -> [[ [[A]_size]_size ]_m']_n'."""
    return compose(map(transpose), slide(size_, step), map(slide(size_, step)))


def pad2D(left: SizeLike, right: SizeLike, b: Any) -> FunDecl:
    """Pad both dimensions of a matrix."""
    return compose(transpose, map(pad(left, right, b)), transpose, map(pad(left, right, b)))


def transposeGather(rows: SizeLike, cols: SizeLike) -> FunDecl:
    """Transpose an [[A]_cols]_rows matrix with split, gather and join (seed 000 §5.3):
    out[r][c] = x[c][r], read through the index function j ↦ (j mod rows)·cols + j / rows."""
    n, m = _size(rows), _size(cols)
    return compose(split(n), gather(lambda j, _len: (j % n) * m + j // n), join)


def tile(rows: SizeLike, cols: SizeLike) -> FunDecl:
    """[[A]_m]_n -> [[ [[A]_cols]_rows ]_(m/cols)]_(n/rows): a matrix as a matrix of tiles."""
    return compose(map(compose(transpose, map(split(cols)))), split(rows))


def untile() -> FunDecl:
    """Inverse of `tile`."""
    return compose(join, map(compose(map(join), transpose)))


def mapAll(f: FunLike, depth: int) -> FunDecl:
    """map(map(...map(f))) `depth` times."""
    out: FunDecl = fn(f)
    for _ in range(depth):
        out = map(out)
    return out


__all__ = [
    "size", "sizes", "fn", "fun", "map", "mapSeq", "mapSeqUnroll", "mapGlb", "mapWrg", "mapLcl",
    "mapVec", "lastWrg", "wrgItems", "reduce", "reduceSeq", "reduceSeqUnroll", "partRed", "iterate", "split", "join",
    "transpose", "unzip", "reorder", "asScalar", "Id", "streamed", "zip", "tuple_", "get", "at",
    "reorderStride", "gather", "scatter", "slide", "boundary", "pad", "crop", "asVector", "toGlobal",
    "toLocal", "toPrivate", "let", "compose", "slide2D", "pad2D", "transposeGather", "tile", "untile",
    "mapAll",
]
