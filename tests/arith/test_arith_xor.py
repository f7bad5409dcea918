"""Bitwise xor in the arithmetic (`Xor`, `xor`): the simplified form means a ^ b on every
non-negative valuation, its value ranges hold it, it prints (str and C) and parses back, the
numpy evaluation agrees, and the swizzle identities the layouts use simplify exactly."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from liftkit.arith import Xor, index_var, parse_arith, raw, simplify, size_var, xor

X, Y, Z = index_var("x", 16), index_var("y", 64), index_var("z", 5)
N = size_var("N")
VARS = {"x": X, "y": Y, "z": Z, "N": N}

# non-negative operands: sums of non-negative multiples of variables, their quotients and
# remainders by small constants, and constants (the domain xor is simplified on)
_atom = st.one_of(
    st.sampled_from((X, Y, Z, N)),
    st.tuples(st.sampled_from((X, Y, N)), st.sampled_from((2, 4, 16))).map(lambda t: t[0] % t[1]),
    st.tuples(st.sampled_from((Y, N)), st.sampled_from((4, 16))).map(lambda t: t[0] // t[1]),
)
_term = st.tuples(st.integers(0, 300), _atom).map(lambda t: t[0] * t[1])
_operand = st.tuples(st.lists(_term, min_size=0, max_size=3), st.integers(0, 40)).map(
    lambda t: sum(t[0], simplify(t[1])))
_env = st.fixed_dictionaries({"x": st.integers(0, 15), "y": st.integers(0, 63),
                              "z": st.integers(0, 4), "N": st.integers(1, 5000)})


@settings(max_examples=300, deadline=None)
@given(_operand, _operand, _operand, _env)
def test_xor_means_bitwise_xor_on_non_negative_values(a, b, c, env) -> None:  # type: ignore[no-untyped-def]
    """The simplified xor evaluates to a ^ b (and chains, in any grouping), is the same for b ^ a,
    lies within its numeric and symbolic bounds, prints and parses back in both forms, and raw
    trees simplify to it."""
    want = a.eval(env) ^ b.eval(env)
    e = xor(a, b)
    assert e.eval(env) == want, (str(a), str(b), str(e))
    assert xor(b, a) == e
    for chain in (xor(xor(a, b), c), xor(a, xor(b, c)), xor(c, xor(b, a))):
        assert chain.eval(env) == want ^ c.eval(env), str(chain)
    lo, hi = e.int_bounds()
    assert (lo is None or lo <= want) and (hi is None or want <= hi), (str(e), lo, hi, want)
    for bound, ok in ((e.lower_bound(), lambda v: v <= want), (e.upper_bound(), lambda v: v >= want)):
        if bound is not None and not (bound.free_vars() - {N}):
            assert ok(bound.eval(env)), (str(e), str(bound))
    assert parse_arith(str(e), VARS) == e, str(e)
    assert parse_arith(e.to_c(), VARS) == e, e.to_c()
    assert simplify(raw.xor(a, b)) == e
    got = e.eval_numpy({k: np.array([v, v]) for k, v in env.items()})
    assert np.broadcast_to(got, (2,)).tolist() == [want, want]


@settings(max_examples=200, deadline=None)
@given(_operand, _operand, st.integers(0, 70), _env)
def test_xor_is_its_own_inverse(a, b, k, env) -> None:  # type: ignore[no-untyped-def]
    """(a ^ b) ^ b means a; with b a constant (an unrolled K step) it is a again structurally,
    and so is a ^ a = 0, a ^ 0 = a."""
    assert xor(xor(a, b), b).eval(env) == a.eval(env)
    assert xor(xor(a, k), k) == a
    assert xor(a, a) == 0 and xor(a, 0) == a


def test_high_bits_move_out_of_the_xor() -> None:
    """Multiples of 2^m beside a part below 2^m leave an xor whose other operands are below
    2^m: the unrolled part of an address is added outside the swizzle."""
    assert str(xor(17 * X + 256 * Z, 5)) == "256*z + (17*x ^ 5)"
    assert xor(16 * Y + 3, 5) == 16 * Y + 6
    assert xor(16 * Y, X) == 16 * Y + X
    p = 16 * Y + xor(X, Y % 16)  # a row's chunk x kept at x ^ (row % 16)
    assert p // 16 == Y and p % 16 == xor(X, Y % 16) and xor(p % 16, Y % 16) == X
    assert isinstance(xor(N, X), Xor) and xor(N, X).upper_bound() == N + 15
    assert xor(X, 3).int_bounds() == (0, 15) and xor(Y, X).int_bounds() == (0, 63)
