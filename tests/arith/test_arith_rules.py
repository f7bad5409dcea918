"""Unit tests of liftkit.arith: canonical form, the seed's six rules and the
other simplifications, ranges and proofs, printing, evaluation, errors."""

from __future__ import annotations

import time

import numpy as np
import pytest

from liftkit.arith import (
    ArithError,
    ArithExpr,
    Cst,
    IntDiv,
    Mod,
    Var,
    cst,
    divides,
    eq,
    ge,
    gt,
    if_then_else,
    index_var,
    intdiv,
    le,
    log,
    lt,
    max_,
    min_,
    mod,
    ne,
    parse_arith,
    pow_,
    prove_eq,
    prove_ge,
    prove_gt,
    prove_le,
    prove_lt,
    raw,
    simplify,
    size_var,
)

N, M, X = size_var("N"), size_var("M"), size_var("x")
I = index_var("i", N)  # noqa: E741
J = index_var("j", M)
K = index_var("k", 8)


def _transpose_index() -> tuple[ArithExpr, Var, Var]:
    """Seed 000, Fig. 6 line 1."""
    wg_id, l_id = index_var("wg_id", N), index_var("l_id", M)
    idx = ((wg_id * M + l_id) // M + ((wg_id * M + l_id) % M) * N) // N * N + (
        (wg_id * M + l_id) // M + ((wg_id * M + l_id) % M) * N
    ) % N
    return idx, wg_id, l_id


def test_transpose_index_of_fig6() -> None:
    idx, wg_id, l_id = _transpose_index()
    assert idx == l_id * N + wg_id
    assert idx == wg_id + N * l_id
    assert str(idx) == "l_id*N + wg_id"
    assert idx.to_c() == "l_id*N + wg_id"
    # the intermediate line 2 of Fig. 6 simplifies to the same index
    line2 = (wg_id + l_id * N) // N * N + (wg_id + l_id * N) % N
    assert line2 == idx


def test_transpose_index_is_fast() -> None:
    _transpose_index()
    t0 = time.perf_counter()
    for _ in range(100):
        _transpose_index()
    per_call = (time.perf_counter() - t0) / 100
    assert per_call < 5e-3, per_call  # typically ~0.15 ms


# -- canonical form ----------------------------------------------------------


def test_canonical_polynomials() -> None:
    assert N * 2 == 2 * N
    assert N + M == M + N
    assert 2 * N + 3 * N == 5 * N
    assert N * 1 == N and N + 0 == N and N * 0 == 0 and 0 * N == Cst(0)
    assert cst(2) + 3 == 5 and (cst(7) - 10).value == -3
    assert 2 * (N + 1) == 2 * N + 2
    assert str(2 * (N + 1)) == "2*N + 2"
    assert (N + 1) * (M - 1) == N * M - N + M - 1
    assert N - N == 0 and (N + M) - M == N
    assert -(-N) == N
    assert hash(N * 2 + M) == hash(M + 2 * N)


def test_constants_and_values() -> None:
    assert cst(5).is_constant and cst(5).value == 5 and int(cst(5)) == 5
    assert not N.is_constant
    with pytest.raises(ArithError):
        _ = N.value
    assert (cst(7) // 2).value == 3 and (cst(7) % 4).value == 3
    assert (cst(2) ** 10).value == 1024
    assert 3 + N == N + 3 and 3 * N == N * 3 and 12 // cst(5) == 2 and 2**K == pow_(2, K)


def test_var_identity_is_by_name() -> None:
    assert Var("i", 0, 10) == Var("i", 0, N)
    assert hash(Var("i", 0, 10)) == hash(Var("i"))
    assert Var("i") != Var("j")
    assert size_var("N").lo == 1 and size_var("N").hi is None
    v = index_var("t", N, lo=2)
    assert v.lo == 2 and v.hi == N


# -- the six rules of the seed -----------------------------------------------


def test_rule1_div_small_numerator_is_zero() -> None:
    assert I // N == 0
    assert (2 * I + 1) // (2 * N) == 0
    assert K // 8 == 0 and K // 9 == 0
    assert K // 4 != 0


def test_rule2_div_of_multiple_plus_rest() -> None:
    assert (I * M + J) // M == I
    assert (X * M + J) // M == X
    assert (4 * X + 3) // 4 == X
    assert (X * M + N) // M == X + N // M
    # a negative rest is only moved when provably -y <= z < 0
    assert (4 * N - 1) // 4 == N - 1
    assert (N * M - 1) // M == N - 1
    # not valid: i - 1 may be negative, the division must stay
    assert isinstance((4 * N + I - 1) // 4, (IntDiv,)) or (4 * N + I - 1) // 4 != N + (I - 1) // 4


def test_rule3_mod_small_numerator_is_itself() -> None:
    assert J % M == J
    assert K % 8 == K
    assert (N - 1 - I) % N == N - 1 - I
    assert K % 4 != K


def test_rule4_div_times_divisor_plus_mod() -> None:
    assert (X // M) * M + X % M == X
    assert (X // 4) * 4 + X % 4 == X
    # buried in a larger sum, with a common factor
    assert 3 + N + (X // M) * M * 2 + 2 * (X % M) == N + 2 * X + 3
    assert K * ((X // N) * N) + K * (X % N) + M == K * X + M
    assert -((X // 4) * 4) - X % 4 == -X


def test_rule5_mod_of_multiple_is_zero() -> None:
    assert (X * M) % M == 0
    assert (8 * X) % 4 == 0
    assert (N * M * X) % (N * M) == 0


def test_rule6_mod_drops_multiples_of_divisor() -> None:
    assert (X * M + J) % M == J
    assert (X + 4 * N) % 4 == X % 4
    assert (I * M + J) % M == J
    assert (X % 4 + 4 * J) % 4 == X % 4
    assert (4 * N - 1) % 4 == 3


def test_gcd_cancellation() -> None:
    assert (4 * N) // (2 * M) == (2 * N) // M
    assert (6 * X + 4) // 2 == 3 * X + 2
    assert (N * M) // N == M
    assert (N * M * X) // (N * X) == M
    assert (2 * X) // (4 * M) == X // (2 * M)


def test_nested_division_and_mod_of_mod() -> None:
    assert (X // 4) // N == X // (4 * N)
    assert (X // N) // M == X // (N * M)
    assert (X % (4 * N)) % N == X % N
    assert (X % (N * M)) % M == X % M
    assert (X % 8) % 4 == X % 4
    assert (X % 4) % 8 == X % 4
    y = size_var("y")
    assert (X % 8 + y) % 4 == (X + y) % 4
    assert (X % (4 * N) + y) % N == (X + y) % N


def test_small_addend_below_the_common_factor_is_dropped() -> None:
    """(g·x + b)/(g·c) = x/c and (g·x + b) % (g·c) = g·(x % c) + b for 0 <= b < g: the lanes of
    a vector read through nested splits are then seen to be consecutive."""
    lid, j = index_var("l", 8), index_var("j", 4)
    assert (16 * lid + j) // 64 == lid // 4
    assert (16 * lid + j) % 64 == 16 * (lid % 4) + j
    assert (4 * X + j) // 8 == X // 2 and (4 * X + j) % 8 == 4 * (X % 2) + j
    f = 16 * lid + j  # flattened [r][y][x] = [·][8][8] of a vector lane: the identity
    assert prove_eq((f // 64) * 64 + ((f % 64) // 8) * 8 + f % 8, f)
    # b not provably below g: kept
    assert isinstance(4 * X + j + 1, ArithExpr) and (4 * X + j + 1) // 8 != X // 2
    assert (4 * X + 5) // 8 != X // 2


def test_remainder_and_common_factors_in_mod() -> None:
    lid = index_var("l", 64)
    assert X - (X // 4) * 4 == X % 4
    assert X - (X // M) * M + 1 == X % M + 1
    assert 2 * X - 2 * ((X // 4) * 4) == 2 * (X % 4)
    assert (2 * I) % (2 * N) == 2 * I
    assert (4 * X) % 8 == 4 * (X % 2)
    assert (2 * lid) % 4 == 2 * (lid % 2)
    # lets the proof see N - 128*(N/128) = N % 128 >= 0
    w, s = index_var("w", N // 128), index_var("s", 2)
    assert prove_lt(w * 128 + lid * 2 + s, N)
    assert (w * 128 + lid * 2 + s) // N == 0


def test_min_max_and_conditionals_folded_by_ranges() -> None:
    assert min_(I, N) == I and max_(I, N) == N
    assert min_(N, N) == N and max_(3, 5) == 5
    assert min_(N, M) == min_(M, N) and str(min_(N, M)) == "min(M, N)"
    assert if_then_else(lt(I, N), I, 0) == I
    assert if_then_else(ge(I, N), 1, 2) == 2
    assert if_then_else(eq(N + 1, N + 1), 7, 8) == 7
    assert if_then_else(ne(N + 1, N), 7, 8) == 7
    assert if_then_else(gt(N, 0), N, 0) == N
    assert if_then_else(le(I, N - 1), I, 0) == I
    c = if_then_else(lt(I, M), I, M)
    assert str(c) == "(i < M ? i : M)" and c.to_c() == "((i < M) ? i : M)"
    assert if_then_else(lt(I, M), N, N) == N
    assert lt(I, M).decide() is None and lt(I, N).decide() is True


def test_pow_and_log() -> None:
    assert pow_(N, 2) == N * N and pow_(N, 0) == 1 and pow_(N, 1) == N
    assert pow_(N + 1, 2) == N * N + 2 * N + 1
    assert str(pow_(2, K)) == "pow(2, K)".replace("K", "k")
    assert pow_(2, K).to_c() == "lift_pow(2, k)"
    assert log(2, pow_(2, K)) == K and log(2, 1024) == 10 and log(3, 80) == 3
    assert str(log(2, N)) == "log(2, N)" and log(2, N).to_c() == "lift_log(2, N)"
    assert pow_(pow_(2, K), M) == pow_(2, K * M)
    assert pow_(pow_(2, K), 2) == pow_(2, K) * pow_(2, K)  # small constant powers multiply out
    with pytest.raises(ArithError):
        pow_(N, -1)
    with pytest.raises(ArithError):
        log(1, N)


# -- ranges, proofs, divisibility --------------------------------------------


def test_prove() -> None:
    wg_id, l_id = index_var("wg_id", N), index_var("l_id", M)
    assert prove_lt(l_id, M)
    assert prove_lt(2 * l_id + 1, 2 * M)
    assert prove_lt(wg_id * M + l_id, N * M)
    assert not prove_lt(wg_id * M + l_id, N * M - 1)
    assert prove_le(I, N) and not prove_lt(I, N - 1)
    assert prove_eq(I + I, 2 * I) and not prove_eq(I, J)
    assert prove_ge(N, 1) and prove_gt(N, 0) and not prove_lt(N, M)
    assert prove_lt(N * N - N, N * N + 1) and prove_le(N, N * M)
    assert not prove_le(I * J, N)
    t = index_var("t", I + 1)  # t in [0, i], i in [0, N)
    assert prove_lt(t, N) and not prove_lt(t, I)


def test_bounds() -> None:
    assert I.lower_bound() == 0 and I.upper_bound() == N - 1
    assert (N - I).lower_bound() == 1 and (N - I).upper_bound() == N
    assert (I * M + J).upper_bound() == N * M - 1
    assert N.lower_bound() == N and N.upper_bound() == N
    assert (J % 4).upper_bound() == min_(3, M - 1)
    assert (I // 4).upper_bound() == (N - 1) // 4
    assert K.int_bounds() == (0, 7) and N.int_bounds() == (1, None)


def test_divides() -> None:
    assert divides(4, N * 8) is True
    assert divides(N, N * M) is True
    assert divides(8, 12) is False
    assert divides(8, 4 * N + 2) is False
    assert divides(4, N) is None
    assert divides(N, N + 1) is None
    assert divides(2 * N, 4 * N + 1) is False
    assert divides(N + 1, (N + 1) * M) is True
    assert divides(3, 0) is True and divides(5, 10) is True


# -- printing ----------------------------------------------------------------


def test_printing_canonical() -> None:
    wg, lid = index_var("wg_id", N), index_var("l_id", M)
    assert str(N // 128) == "N/128"
    assert str(2 * lid + 128 * wg) == "2*l_id + 128*wg_id"
    assert str(N % 4) == "N % 4"
    assert str(N - 1 - I) == "N - i - 1"
    assert str(-N) == "-N" and str(-(N // 4)) == "-(N/4)"
    assert str(2 * (X // 4)) == "2*(X/4)".replace("X", "x")
    assert str((4 * N) // (2 * M)) == "2*N/M"
    assert str(X // (4 * N)) == "x/(4*N)"
    assert (N * M - 3).to_c() == "M*N - 3"


def test_raw_prints_as_built() -> None:
    r = raw.add(raw.mul(raw.div(raw.add(I, 1), 2), 2), raw.mod(N, 4))
    assert r.to_c() == "(i + 1)/2*2 + N % 4"
    assert str(raw.sub(N, raw.add(I, 3))) == "N - (i + 3)"
    assert str(raw.mul(N, raw.mul(2, I))) == "N*(2*i)"
    assert str(raw.div(N, raw.mul(2, I))) == "N/(2*i)"
    assert str(raw.neg(raw.neg(3))) == "-(-3)"
    assert raw.mul(N, 1).to_c() == "N*1"
    assert simplify(raw.mul(N, 1)) == N
    assert simplify(r) == 2 * ((I + 1) // 2) + N % 4


def test_parse() -> None:
    assert parse_arith("2*N + 3") == 2 * N + 3
    assert parse_arith("N/128") == N // 128
    assert parse_arith("-x*y") == -(size_var("x") * size_var("y"))
    assert parse_arith("(a < b ? x : y)") == parse_arith("((a < b) ? x : y)")
    assert parse_arith("lift_pow(2, k) + log(2, N)") == parse_arith("pow(2, k) + log(2, N)")
    assert parse_arith("i % N", {"i": I}) == I
    assert parse_arith("min(M, N) - max(N, 3)") == min_(M, N) - max_(N, 3)
    for bad in ("N + * 3", "", "(N", "foo(1, 2)", "N ? 1 : 2", "a < b", "3 $ 4"):
        with pytest.raises(ArithError):
            parse_arith(bad)


# -- evaluation and substitution ---------------------------------------------


def test_eval_and_errors() -> None:
    e = (I * M + J) // 3
    assert e.eval({"i": 2, "M": 5, "j": 1}) == 3
    with pytest.raises(ArithError, match="unbound size variable N"):
        (N + I).eval({"i": 1})
    with pytest.raises(ArithError, match="unbound index variable i"):
        I.eval({})
    with pytest.raises(ArithError, match="division by zero"):
        raw.div(N, raw.sub(M, M)).eval({"N": 3, "M": 2})
    with pytest.raises(ArithError, match=r"division by zero in N/0"):
        N // (M - M)
    with pytest.raises(ArithError, match="division by zero"):
        N % 0
    assert if_then_else(lt(I, M), I, M).eval({"i": 3, "M": 2}) == 2
    assert log(2, N).eval({"N": 1000}) == 9


def test_eval_numpy() -> None:
    idx = I * M + J
    ar = np.arange(12)
    got = (idx // 3 + idx % 5 + min_(J, 2) + pow_(2, K) + log(2, N)).eval_numpy(
        {"i": ar, "M": 4, "j": ar % 4, "k": 3, "N": 100}
    )
    want = [
        (i * 4 + j) // 3 + (i * 4 + j) % 5 + min(j, 2) + 8 + 6 for i, j in zip(range(12), [x % 4 for x in range(12)])
    ]
    assert list(got) == want
    assert isinstance((N // 2).eval_numpy({"N": 9}), int)
    c = if_then_else(lt(I, M), I, M).eval_numpy({"i": np.arange(5), "M": 2})
    assert list(c) == [0, 1, 2, 2, 2]
    assert list(log(2, N).eval_numpy({"N": np.arange(1, 9)})) == [0, 1, 1, 2, 2, 2, 2, 3]
    with pytest.raises(ArithError):
        (N // M).eval_numpy({"N": np.arange(3), "M": np.array([1, 0, 2])})


def test_substitute_and_free_vars() -> None:
    e = (I * M + J) // 3
    assert e.substitute({"M": 6}) == 2 * I + J // 3
    assert e.substitute({J: 0, "M": 3}) == I
    assert (J % N).substitute({"N": M}) == J
    assert (I % N).substitute({"N": M}) == I  # i's range [0, N) became [0, M)
    # ranges follow the substitution: i in [0, 64) after N := 64
    assert (I % 64 + N).substitute({"N": 64}) == I + 64
    assert e.free_vars() == frozenset({I, M, J})
    assert lt(I, N).free_vars() == frozenset({I, N})
    assert str(lt(I, N).substitute({"N": 4})) == "i < 4"


def test_immutability_and_hashing() -> None:
    e = 2 * N + M
    d = {e: 1}
    assert d[M + N * 2] == 1
    with pytest.raises(AttributeError):
        e.foo = 1  # type: ignore[attr-defined]
    assert isinstance(intdiv(X, M), IntDiv) and isinstance(mod(X, M), Mod)


def test_pickle_round_trip() -> None:
    import pickle

    e = if_then_else(lt(I, M), (I * M + 3) // N + min_(N, M) + pow_(2, I), log(2, N))
    back = pickle.loads(pickle.dumps(e))
    assert back == e and str(back) == str(e) and back.to_c() == e.to_c()
    assert pickle.loads(pickle.dumps(I)).hi == N


def test_self_referencing_range_is_rejected() -> None:
    with pytest.raises(ArithError, match="mentions q itself"):
        index_var("q", index_var("q", 3) + 1)
