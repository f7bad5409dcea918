"""The standard library of user functions (seed 000 §3, seed 004 Fig. 5 and 9).

Float versions carry the papers' names (`add`, `mult`, `abs`, ...); other scalar types get a
suffix (`add_int`, `add_double`) from `scalar_funs(t)`, and the OpenCL vector forms come from
`UserFun.vectorize(width)` (`add4`). Algebraic facts are declared where they hold: rewrite rules
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
    for sf in (FLOAT, DOUBLE, INT, LONG):
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
