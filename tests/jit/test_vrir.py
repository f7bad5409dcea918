"""VRIR: the S-expression form prints and parses back to equal nodes; the verifier catches
malformed trees."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from liftkit.jit import sexpr, types as T, vrir as V
from liftkit.jit.verify import VerifyError, verify

from .helpers import compile_source

SCALARS = st.sampled_from([T.BOOL, T.INT32, T.INT64, T.FLOAT32, T.FLOAT64, T.COMPLEX128])
NAMES = st.text("abcxyz_", min_size=1, max_size=4)


def consts():
    return st.one_of(
        st.builds(V.Const, st.booleans(), st.just(T.BOOL)),
        st.builds(V.Const, st.integers(-2**63, 2**63 - 1), st.just(T.INT64)),
        st.builds(V.Const, st.floats(allow_nan=False), st.just(T.FLOAT64)),
        st.builds(V.Const, st.complex_numbers(allow_nan=False, allow_infinity=False),
                  st.just(T.COMPLEX128)))


def exprs():
    leaf = st.one_of(consts(), st.builds(V.Name, NAMES, SCALARS))
    return st.recursive(leaf, _exprs_over, max_leaves=12)


def _exprs_over(inner):
    return st.one_of(
        st.builds(V.BinOp, st.sampled_from(["add", "mul", "sub"]), inner, inner, SCALARS),
        st.builds(V.UnOp, st.just("neg"), inner, SCALARS),
        st.builds(V.Compare, st.sampled_from(["lt", "eq"]), inner, inner, st.just(T.BOOL)),
        st.builds(V.Index, st.builds(V.Name, NAMES, st.just(T.ArrayType(T.FLOAT64, 2, "A"))),
                  st.tuples(inner, st.builds(V.Slice, st.none() | inner, st.none(), st.none() | inner)),
                  st.just((V.FULL_CHECK, V.NO_CHECK)), SCALARS),
        st.builds(V.LibCall, st.sampled_from(["sqrt", "sum"]), st.tuples(inner), st.integers(-1, 2),
                  SCALARS))


def stmts():
    e = exprs()
    simple = st.one_of(
        st.builds(V.Assign, st.builds(V.Name, NAMES, SCALARS), e, st.integers(1, 999)),
        st.builds(V.Break, st.integers(1, 99)), st.builds(V.Return, st.none() | e, st.integers(1, 99)),
        st.builds(V.Raise, st.just("ValueError"), st.text(max_size=8), st.integers(1, 9)))
    return st.recursive(simple, _stmts_over(e), max_leaves=8)


def _stmts_over(e):
    def extend(inner):
        return st.one_of(
        st.builds(V.If, e, st.lists(inner, max_size=3).map(tuple), st.lists(inner, max_size=2).map(tuple),
                  st.integers(1, 99)),
        st.builds(V.For, NAMES, e, e, e, st.lists(inner, max_size=3).map(tuple), st.integers(1, 99)),
        st.builds(V.ParFor, st.tuples(NAMES, NAMES),
                  st.builds(V.DomainExpr, st.tuples(e, e), st.tuples(e, e), st.tuples(e, e),
                            st.just(T.DomainType(2))), st.tuples(NAMES),
                  st.lists(inner, max_size=2).map(tuple), st.integers(1, 99)))
    return extend


@settings(max_examples=60, deadline=None)
@given(st.lists(stmts(), max_size=4))
def test_sexpr_round_trip(body):
    f = V.Function("f", ("a",), (V.Sym("a", T.ArrayType(T.FLOAT32, 3, "F")),),
                   T.TupleType((T.INT64, T.VOID)), tuple(body), 3)
    m = V.Module("m", True, True, (f,))
    text = sexpr.dumps(m)
    assert sexpr.loads(text) == m


def test_nan_and_infinity_print():
    for v in (float("inf"), float("-inf")):
        assert sexpr.loads(sexpr.dumps(V.Const(v, T.FLOAT64))) == V.Const(v, T.FLOAT64)
    back = sexpr.loads(sexpr.dumps(V.Const(float("nan"), T.FLOAT64)))
    assert np.isnan(back.value)


@pytest.mark.parametrize("text,msg", [("(const 1", "missing"), ("(bogus 1)", "unknown node"),
                                      ("(name \"x\")", "takes 2 fields"), ("(const 1 2) 3", "trailing")])
def test_sexpr_errors(text, msg):
    with pytest.raises(sexpr.SexprError, match=msg):
        sexpr.loads(text)


def test_front_end_output_round_trips_and_verifies():
    f = compile_source("""
def f(A, n):
    s = 0.0
    for i in range(n):
        if A[i] > 0:
            s += A[-i]
        else:
            continue
    return s
""")
    f(np.ones(4), 3)
    text = f.inspect_vrir()
    m = sexpr.loads(text)
    verify(m)
    assert "(for" in text and "(index" in text
    assert "define" in f.inspect_llvm()


def test_verifier_rejects_bad_trees():
    x = V.Name("x", T.INT64)
    bad_use = V.Function("f", (), (V.Sym("x", T.FLOAT64),), T.VOID, (V.ExprStmt(x, 1),), 1)
    with pytest.raises(VerifyError, match="use of x"):
        verify(V.Module("m", True, True, (bad_use,)))
    brk = V.Function("f", (), (), T.VOID, (V.Break(2),), 1)
    with pytest.raises(VerifyError, match="break outside a loop"):
        verify(V.Module("m", True, True, (brk,)))
    ret = V.Function("f", (), (), T.INT64, (V.Return(V.Const(1.0, T.FLOAT64), 3),), 1)
    with pytest.raises(VerifyError, match="returning a float64"):
        verify(V.Module("m", True, True, (ret,)))
