"""The standard library of user functions (seed 000 §3, seed 004 Fig. 5 and 9).

Float versions carry the papers' names (`add`, `mult`, `abs`, ...); other scalar types get a
suffix (`add_int`, `add_double`) from `scalar_funs(t)`, and the OpenCL vector forms come from
`UserFun.vectorize(width)` (`add4`). Complex numbers (`cfloat`, `cdouble`) have their own set,
`complex_funs(t)` (`mult_cfloat` is the complex product; `conj`, `abs` to a real, ...), whose
bodies call the C helpers every kernel using the type gets (`liftkit.codegen.complex`). Algebraic facts are declared where they hold: rewrite rules
rely on them (reduce needs an associative and commutative operator, partial reductions an
identity element).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from liftkit.ir.nodes import UserFun, user_fun
from liftkit.types import (
    ScalarType,
    TupleType,
    Type,
    VectorType,
    float32,
    float64,
    complex64,
    complex128,
    int32,
    int64,
    tuple_of,
)


def _suffix(t: ScalarType) -> str:
    return "" if t == float32 else f"_{t.name}"


def _identity_of(t: ScalarType, kind: str) -> object:
    if kind == "add":
        return 0.0 if t.is_float else 0
    if kind == "mult":
        return 1.0 if t.is_float else 1
    info_max = float("inf") if t.is_float else int(np.iinfo(t.dtype).max)
    info_min = float("-inf") if t.is_float else int(np.iinfo(t.dtype).min)
    return info_min if kind == "max" else info_max


@dataclass(frozen=True)
class ScalarFuns:
    """The standard user functions over one scalar type."""

    id: UserFun
    add: UserFun
    sub: UserFun
    mult: UserFun
    div: UserFun
    abs: UserFun
    max: UserFun
    min: UserFun
    neg: UserFun
    multAndSumUp: UserFun
    absAndSumUp: UserFun


@functools.cache
def scalar_funs(t: ScalarType) -> ScalarFuns:
    """Standard user functions for scalar type t (cached: they are immutable values)."""
    if t.is_complex:
        raise ValueError(f"{t} is complex: its user functions are complex_funs({t.dtype_name})")
    s = _suffix(t)
    xy = [("x", t), ("y", t)]
    fl = t.is_float
    return ScalarFuns(
        id=user_fun(f"id{s}", [("x", t)], t, "return x;", lambda x: x),
        add=user_fun(f"add{s}", xy, t, "return x + y;", lambda x, y: x + y,
                     associative=True, commutative=True, identity=_identity_of(t, "add"),
                     ufunc=np.add),
        sub=user_fun(f"sub{s}", xy, t, "return x - y;", lambda x, y: x - y),
        mult=user_fun(f"mult{s}", xy, t, "return x * y;", lambda x, y: x * y,
                      associative=True, commutative=True, identity=_identity_of(t, "mult"),
                      ufunc=np.multiply),
        div=user_fun(f"div{s}", xy, t, "return x / y;",
                     (lambda x, y: x / y) if fl else _c_int_div),
        # OpenCL's integer abs returns an unsigned type (uint4 for int4): scalars convert
        # implicitly, vectors need convert_intN
        abs=user_fun(f"abs{s}", [("x", t)], t, "return fabs(x);" if fl else "return abs(x);",
                     np.abs, vector_body=None if fl else "return convert_{T}(abs(x));"),
        max=user_fun(f"max{s}", xy, t, "return fmax(x, y);" if fl else "return max(x, y);",
                     np.maximum, associative=True, commutative=True,
                     identity=_identity_of(t, "max"), ufunc=np.maximum),
        min=user_fun(f"min{s}", xy, t, "return fmin(x, y);" if fl else "return min(x, y);",
                     np.minimum, associative=True, commutative=True,
                     identity=_identity_of(t, "min"), ufunc=np.minimum),
        neg=user_fun(f"neg{s}", [("x", t)], t, "return -x;", np.negative),
        multAndSumUp=user_fun(f"multAndSumUp{s}", [("acc", t), ("xy", tuple_of(t, t))], t,
                              "return acc + xy._0 * xy._1;",
                              lambda acc, xy: acc + xy[0] * xy[1]),
        absAndSumUp=user_fun(f"absAndSumUp{s}", [("acc", t), ("x", t)], t,
                             "return acc + fabs(x);" if fl else "return acc + abs(x);",
                             lambda acc, x: acc + np.abs(x),
                             vector_body=None if fl else "return acc + convert_{T}(abs(x));"),
    )


@dataclass(frozen=True)
class ComplexFuns:
    """The standard user functions over one complex type (`re`, `im`, `abs`, `abs1`, `absSq`
    return its real type; `make` builds one from two reals; `scale` is real × complex)."""

    id: UserFun
    add: UserFun
    sub: UserFun
    mult: UserFun
    div: UserFun
    neg: UserFun
    conj: UserFun
    multConj: UserFun  # conj(x)·y, the product under dotc
    multAndSumUp: UserFun
    re: UserFun
    im: UserFun
    abs: UserFun  # |z|, without overflow (hypot)
    abs1: UserFun  # |re| + |im|, BLAS's complex "absolute value" (scasum, icamax)
    absSq: UserFun  # re² + im²
    make: UserFun
    scale: UserFun


def _complex_of(re: np.ndarray, im: np.ndarray, dt: np.dtype) -> np.ndarray:
    """re + i·im without arithmetic (inf·i would give a NaN real part)."""
    re, im = np.broadcast_arrays(np.asarray(re), np.asarray(im))
    out = np.empty(re.shape, dt)
    out.real, out.imag = re, im
    return out


def _c_mult(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The textbook product (as the kernels compute it), not NumPy's, which differs for inf."""
    xr, xi, yr, yi = np.real(x), np.imag(x), np.real(y), np.imag(y)
    return _complex_of(xr * yr - xi * yi, xr * yi + xi * yr, np.result_type(x, y))


@functools.cache
def complex_funs(t: ScalarType) -> ComplexFuns:
    """Standard user functions for complex type t (`cfloat` or `cdouble`)."""
    if not t.is_complex:
        raise ValueError(f"{t} is not complex: its user functions are scalar_funs({t})")
    s, c, r, dt = f"_{t.name}", t.name, t.real, t.dtype
    xy, x1 = [("x", t), ("y", t)], [("x", t)]
    zero, one = complex(0.0), complex(1.0)
    return ComplexFuns(
        id=user_fun(f"id{s}", x1, t, "return x;", lambda x: x),
        add=user_fun(f"add{s}", xy, t, f"return {c}_add(x, y);", lambda x, y: x + y,
                     associative=True, commutative=True, identity=zero, ufunc=np.add),
        sub=user_fun(f"sub{s}", xy, t, f"return {c}_sub(x, y);", lambda x, y: x - y),
        mult=user_fun(f"mult{s}", xy, t, f"return {c}_mul(x, y);", _c_mult,
                      associative=True, commutative=True, identity=one),
        div=user_fun(f"div{s}", xy, t, f"return {c}_div(x, y);", lambda x, y: x / y),
        neg=user_fun(f"neg{s}", x1, t, f"return {c}_new(-x.x, -x.y);", np.negative),
        conj=user_fun(f"conj{s}", x1, t, f"return {c}_new(x.x, -x.y);", np.conjugate),
        multConj=user_fun(f"multConj{s}", xy, t, f"return {c}_mul({c}_new(x.x, -x.y), y);",
                          lambda x, y: _c_mult(np.conjugate(x), y)),
        multAndSumUp=user_fun(f"multAndSumUp{s}", [("acc", t), ("xy", tuple_of(t, t))], t,
                              f"return {c}_add(acc, {c}_mul(xy._0, xy._1));",
                              lambda acc, xy: acc + _c_mult(xy[0], xy[1])),
        re=user_fun(f"re{s}", x1, r, "return x.x;", np.real),
        im=user_fun(f"im{s}", x1, r, "return x.y;", np.imag),
        abs=user_fun(f"abs{s}", x1, r, "return hypot(x.x, x.y);", np.abs),
        abs1=user_fun(f"abs1{s}", x1, r, "return fabs(x.x) + fabs(x.y);",
                      lambda x: np.abs(np.real(x)) + np.abs(np.imag(x))),
        absSq=user_fun(f"absSq{s}", x1, r, "return x.x * x.x + x.y * x.y;",
                       lambda x: np.real(x) * np.real(x) + np.imag(x) * np.imag(x)),
        make=user_fun(f"make{s}", [("re", r), ("im", r)], t, f"return {c}_new(re, im);",
                      lambda re, im: _complex_of(re, im, dt)),
        scale=user_fun(f"scale{s}", [("a", r), ("x", t)], t, f"return {c}_new(a * x.x, a * x.y);",
                       lambda a, x: _complex_of(a * np.real(x), a * np.imag(x), dt)),
    )


def _c_int_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """C integer division truncates toward zero (NumPy's // floors)."""
    q = np.trunc(np.true_divide(x, y))
    return q.astype(np.result_type(x, y))


@functools.cache
def id_of(t: Type) -> UserFun:
    """A copying identity for any scalar, vector or tuple type (memory moves: toLocal(mapLcl(id)))."""
    if t == float32:
        return FLOAT.id
    return user_fun(f"id_{_type_tag(t)}", [("x", t)], t, "return x;", lambda x: x)


def _type_tag(t: Type) -> str:
    if isinstance(t, (ScalarType, VectorType)):
        return str(t)
    if isinstance(t, TupleType):
        return "T" + "_".join(_type_tag(e) for e in t.elems)
    raise ValueError(f"id_of: no copying identity for {t}")


FLOAT = scalar_funs(float32)
DOUBLE = scalar_funs(float64)
INT = scalar_funs(int32)
LONG = scalar_funs(int64)
CFLOAT = complex_funs(complex64)
CDOUBLE = complex_funs(complex128)

id = FLOAT.id  # noqa: A001 - the papers' name
add, sub, mult, div = FLOAT.add, FLOAT.sub, FLOAT.mult, FLOAT.div
abs = FLOAT.abs  # noqa: A001
max, min = FLOAT.max, FLOAT.min  # noqa: A001
neg = FLOAT.neg
multAndSumUp, absAndSumUp = FLOAT.multAndSumUp, FLOAT.absAndSumUp

# the vector forms used by the seed programs (seed 004 Fig. 2b and 9)
add4, mult4, abs4, absAndSumUp4, id4 = (f.vectorize(4) for f in (add, mult, abs, absAndSumUp, id))
add2, absAndSumUp2, id2 = (f.vectorize(2) for f in (add, absAndSumUp, id))


def standard_user_funs() -> dict[str, UserFun]:
    """Every predefined user function by name (the parser's default namespace)."""
    out: dict[str, UserFun] = {}
    for sf in (FLOAT, DOUBLE, INT, LONG, CFLOAT, CDOUBLE):
        for f in vars(sf).values():
            out[f.name] = f
    for f in (add4, mult4, abs4, absAndSumUp4, id4, add2, absAndSumUp2, id2):
        out[f.name] = f
    for w in (2, 4, 8, 16):
        for f in (FLOAT.id, FLOAT.add, FLOAT.mult, FLOAT.sub, FLOAT.abs, FLOAT.max, FLOAT.min,
                  FLOAT.absAndSumUp, FLOAT.multAndSumUp):
            v = f.vectorize(w)
            out.setdefault(v.name, v)
    return out
