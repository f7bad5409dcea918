"""What the matrix-multiplication rules match (rules/mm.py and its siblings): the element type
and product of a matrix product (`Elem`, with the multiply-add that replaces the product and its
sum) and the high-level nest itself (`mm_parts`: A, B, M, N, K and the element type at a site).

The nest is the one of `liftkit.programs.apps.mm`:

    map(λrowA. join ∘ map(λcolB. reduce(add, 0) ∘ map(mult) $ zip(rowA, colB)) ∘ transpose $ B) $ A

over float, double, cfloat or cdouble; for complex types any one-expression product (e.g. the
conjugating `multConj`). rules/mm.py re-exports these names.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, NamedTuple, Optional

import numpy as np

from liftkit import dsl as D
from liftkit.arith import ArithExpr
from liftkit.ir import patterns as P
from liftkit.ir.nodes import Expr, FunCall, Lambda, Literal, UserFun, walk
from liftkit.ir.userfuns import FLOAT, complex_funs, id4, id_of, scalar_funs
from liftkit.rewrite.core import Site
from liftkit.rewrite.rules.common import NOT_AROUND as _NOT_AROUND  # (never inside these)
from liftkit.types import ArrayType, ScalarType, complex64, complex128, float32, float64, vector


# acc + a·b with a scalar a broadcast over the lanes of b (one vector FMA): reduce(add) ∘ map(mult)
# over float4 lanes of B with A's scalar
MAD_S4 = D.user_fun("madS4", [("acc", D.float4), ("a", float32), ("b", D.float4)], D.float4,
                    "return fma((float4)(a), b, acc);",
                    lambda acc, a, b: acc + (np.asarray(a)[..., None] if np.ndim(a) else a) * b)
# the scalar form (vector width 1): acc + a·b
MAD = D.user_fun("madS", [("acc", float32), ("a", float32), ("b", float32)], float32,
                 "return fma(a, b, acc);", lambda acc, a, b: acc + a * b)

# the element types the rules tile, with the vector widths of their loads and register blocks
# (complex numbers have no OpenCL vectors: scalar accesses only)
ELEM_WIDTHS: dict[ScalarType, tuple[int, ...]] = {float32: (4, 1), float64: (2, 1),
                                                  complex64: (1,), complex128: (1,)}


@dataclass(frozen=True)
class Elem:
    """A matrix product's element type and its product function (for complex types `mult` or
    a conjugating product such as `multConj`; the sum is always the type's `add` from 0)."""

    t: ScalarType
    mult: UserFun

    @property
    def widths(self) -> tuple[int, ...]:
        return ELEM_WIDTHS[self.t] if self.mult == _funs(self.t).mult else (1,)

    @property
    def add(self) -> UserFun:
        return _funs(self.t).add

    def zero(self) -> Any:
        """The sum's start (float32: the papers' `0.0`, as the bundled kernels print it)."""
        return 0.0 if self.t == float32 else D.lit(0.0, self.t)

    def vec(self, w: int) -> Any:
        return self.t if w == 1 else vector(self.t, w)

    def id(self, w: int) -> UserFun:
        return FLOAT.id if (self.t, w) == (float32, 1) else id4 if (self.t, w) == (float32, 4) \
            else id_of(self.vec(w))

    def mad(self, w: int) -> UserFun:
        """acc + a·b, a broadcast over b's lanes (w > 1)."""
        return _mad(self, w)


def _funs(t: ScalarType) -> Any:
    return complex_funs(t) if t.is_complex else scalar_funs(t)


FLOAT32 = Elem(float32, FLOAT.mult)


@functools.cache
def _mad(e: Elem, w: int) -> UserFun:
    if e == FLOAT32:
        return MAD_S4 if w == 4 else MAD
    t, vt = e.t, e.vec(w)
    if not t.is_complex:
        body = f"return fma(({vt})(a), b, acc);" if w > 1 else "return fma(a, b, acc);"
        return D.user_fun(f"madS{w if w > 1 else ''}_{t}", [("acc", vt), ("a", t), ("b", vt)], vt,
                          body, MAD_S4.impl if w > 1 else MAD.impl)
    mult, add = e.mult.impl, e.add.impl
    signs = _conjugations(e.mult, t)
    if signs is not None:  # acc + x·y as 4 multiply-adds, 2 per part (an FFMA kernel's complex
        # product: the form "add(acc, mul(x, y))" compiles to 6 instructions)
        sx, sy = signs  # x·y with x.y and y.y of these signs (-: conjugated)
        x, y = e.mult.param_names
        tag = "" if signs == ("", "") else f"_{e.mult.name}"
        return D.user_fun(
            f"mad_fma{tag}_{t}", [("acc", t), (x, t), (y, t)], t,
            f"return {t}_new(fma({_neg(sx + sy)}{x}.y, {y}.y, fma({x}.x, {y}.x, acc.x)), "
            f"fma({sx}{x}.y, {y}.x, fma({x}.x, {sy}{y}.y, acc.y)));",
            lambda acc, a, b: add(acc, mult(a, b)))
    m = re.fullmatch(r"\s*return\s+(.*);\s*", e.mult.body, re.S)
    if m is None or "acc" in e.mult.param_names:  # checked by mm_parts
        raise ValueError(f"{e.mult.name} is not a one-expression product")
    x, y = e.mult.param_names
    return D.user_fun(f"mad_{e.mult.name}", [("acc", t), (x, t), (y, t)], t,
                      f"return {t}_add(acc, {m.group(1)});", lambda acc, a, b: add(acc, mult(a, b)))


def _conjugations(f: UserFun, t: ScalarType) -> Optional[tuple[str, str]]:
    """For a complex product `return t_mul(X, Y);` whose factors are its parameters, each maybe
    conjugated (`t_new(p.x, -p.y)`), the signs of their imaginary parts ("" or "-"); None for
    any other product."""
    if f == _funs(t).mult:
        return "", ""
    c = t.name
    x, y = f.param_names
    factor = lambda p: rf"(?:(?P<{p}>{p})|{c}_new\({p}\.x, -{p}\.y\))"  # noqa: E731
    m = re.fullmatch(rf"\s*return\s+{c}_mul\({factor(x)}, {factor(y)}\);\s*", f.body)
    if m is None:
        return None
    return ("" if m.group(x) else "-"), ("" if m.group(y) else "-")


def _neg(signs: str) -> str:
    """The sign of -(x.y·y.y) for the factors' signs: minus unless exactly one is conjugated."""
    return "" if signs == "-" else "-"



# ---------------------------------------------------------------------------------------------
# matching


def _user_of(f: Any) -> Optional[UserFun]:
    """The user function f is, or that λ(x1..xn). uf(x1..xn) calls (its rewrite normal form;
    for map(mult) over a zip, λp. mult(p) with one tuple parameter)."""
    if isinstance(f, Lambda):
        b = f.body
        if not (isinstance(b, FunCall) and b.args == f.params):
            return None
        f = b.f
    return f if isinstance(f, UserFun) else None


def _product(t: ScalarType, f: Any) -> Optional[UserFun]:
    """The product of a matrix product over t: the type's own `mult` (what the vector
    multiply-adds compute), or for complex types any one-expression product of two t into a t
    (`multConj`, ...: the rules only regroup the sum of the products, so any product is kept;
    its body goes into the multiply-add)."""
    uf = _user_of(f)
    if uf is None or t not in ELEM_WIDTHS:
        return None
    if uf == _funs(t).mult:
        return uf
    if (t.is_complex and uf.param_types == (t, t) and uf.out_type == t
            and "acc" not in uf.param_names and uf.body.strip().startswith("return ")
            and uf.body.count(";") == 1):
        return uf
    return None


class MMParts(NamedTuple):
    """A matrix product C = A·B found at a site: A [[t]_K]_M, B [[t]_N]_K, the element type and
    the product (`elem`)."""

    a: Expr
    b: Expr
    m: ArithExpr
    n: ArithExpr
    k: ArithExpr
    elem: Elem


def mm_parts(site: Site) -> Optional[MMParts]:
    """(A, B, M, N, K, elem) when the site is map(λrowA. join ∘ map(λcolB. reduce(add, 0) ∘
    map(mult) $ zip(rowA, colB)) ∘ transpose $ B) $ A with A: [[t]_K]_M and B: [[t]_N]_K, t a
    float, double or complex type with its `add` and a product of `_product`. Columns given as
    rows of their own (NT: map(λcolB. …) $ Bᵀ, no transpose) are B = transpose $ Bᵀ."""
    f = site.f
    if type(f) is not P.Map or not isinstance(f.f, Lambda) or len(f.f.params) != 1:
        return None
    if site.inside(*_NOT_AROUND):
        return None
    row = f.f.params[0]
    j = f.f.body
    if not (isinstance(j, FunCall) and type(j.f) is P.Join):
        return None
    cols = j.args[0]
    if not (isinstance(cols, FunCall) and type(cols.f) is P.Map and isinstance(cols.f.f, Lambda)):
        return None
    t = cols.args[0]
    if any(n is row for n in walk(t)):
        return None
    dot = cols.f.f
    if len(dot.params) != 1:
        return None
    col = dot.params[0]
    red = dot.body
    a_t, c_t = site.arg_types[0], site.type_of(t)
    if not (isinstance(a_t, ArrayType) and isinstance(a_t.elem, ArrayType)
            and isinstance(c_t, ArrayType) and isinstance(c_t.elem, ArrayType)
            and a_t.elem.elem in ELEM_WIDTHS and c_t.elem.elem == a_t.elem.elem):
        return None
    et = a_t.elem.elem
    assert isinstance(et, ScalarType)
    if not (isinstance(red, FunCall) and type(red.f) is P.Reduce and _user_of(red.f.f) == _funs(et).add):
        return None
    z, prods = red.args
    if not (isinstance(z, Literal) and z.type == et and np.asarray(z.value) == 0):
        return None
    if not (isinstance(prods, FunCall) and type(prods.f) is P.Map):
        return None
    mult = _product(et, prods.f.f)
    if mult is None:
        return None
    zp = prods.args[0]
    if not (isinstance(zp, FunCall) and type(zp.f) is P.Zip and zp.args == (row, col)):
        return None
    if isinstance(t, FunCall) and type(t.f) is P.Transpose:
        b = t.args[0]
        b_t = site.type_of(b)
    else:  # the columns as rows (a transposed B read as stored)
        b = FunCall(P.Transpose(), (t,))
        b_t = ArrayType(ArrayType(et, c_t.length), c_t.elem.length)
    if not (isinstance(b_t, ArrayType) and isinstance(b_t.elem, ArrayType)
            and a_t.elem.length == b_t.length):
        return None
    return MMParts(site.call.args[0], b, a_t.length, b_t.elem.length, a_t.elem.length,
                   Elem(et, mult))
