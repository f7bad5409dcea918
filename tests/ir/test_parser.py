"""The parser is the printer's inverse: `show(parse(show(p))) == show(p)`, also for `pretty` text,
and what it reads back means the same (same type, same interpreter result)."""

from __future__ import annotations

import builtins
import importlib.util
import inspect
from typing import Any, Callable

import numpy as np
import pytest

from liftkit.dsl import *  # noqa: F401,F403 - the papers' names
from liftkit.arith import cst
from liftkit.dsl import INT
from liftkit.ir.nodes import FunCall, alpha_equal, FunDecl, Lambda, Literal, Node, Param, UserFun, walk
from liftkit.ir.parser import ParseError, parse, parse_program, parse_type
from liftkit.ir.patterns import PATTERNS_BY_NAME, Kind, PartRed, Pattern
from liftkit.ir.patterns.cuda import MMA_PATTERNS, WGMMA_PATTERNS
from liftkit.ir.patterns.cuda_complex import ZMMA_PATTERNS
from liftkit.ir.printer import pretty, show
from liftkit.ir.typecheck import check_program
from liftkit.ir.userfuns import standard_user_funs
from liftkit.semantics import interpret
from liftkit.types import LiftTypeError, same_type

N, M = sizes("N M")


def program(types: list, body: Callable[..., Any]) -> Lambda:
    """Like dsl.fun, kept local so these tests depend only on the IR."""
    names = list(inspect.signature(body).parameters)
    params = tuple(Param(n, t) for n, t in builtins.zip(names, types))
    return Lambda(params, body(*params))


def _swap(t: Any) -> Any:
    return tuple_(t[1], t[0])


def _count(acc: Any, v: Any) -> Any:
    return tuple_(add(acc[0], v), INT.add(acc[1], 1))


# name -> builder (fresh parameters on each call)
PROGRAMS_UNDER_TEST: dict[str, Callable[[], Lambda]] = {
    "dot": lambda: program([float32[N], float32[N]],
                           lambda x, y: reduce(add, 0.0) << map(mult) << zip(x, y)),
    "reduction_kernel": lambda: program(
        [float32[N], float32[N]],
        lambda x, y: join << mapWrg(0)(
            join << toGlobal(mapLcl(0)(mapSeq(id))) << split(1)
            << iterate(6, join << mapLcl(0)(toLocal(mapSeq(id)) << reduceSeq(add, 0.0)) << split(2))
            << join << mapLcl(0)(toLocal(mapSeq(id)) << reduceSeq(multAndSumUp, 0.0)) << split(2)
        ) << split(128) << zip(x, y)),
    "glb_2d": lambda: program([float32[M][N]], lambda x: mapGlb(0)(mapGlb(1)(abs)) << x),
    "unroll_private": lambda: program(
        [float32[N]],
        lambda x: join << mapGlb(0)(toPrivate(mapSeqUnroll(id)) << reduceSeqUnroll(add, 0.0))
        << split(4) << x),
    "vectors": lambda: program(
        [float32[N]],
        lambda x: asScalar << mapGlb(0)(mapVec(neg)) << map(lambda v: add4(v, v))
        << asVector(4) << x),
    "part_red": lambda: program([float32[N]],
                                lambda x: join << map(partRed(add, 0.0, 2)) << split(8) << x),
    "part_red_call": lambda: program(
        [float32[N], float32],
        lambda x, z: join << map(lambda c: PartRed(add, cst(2))(z, c)) << split(8) << x),
    "reorders": lambda: program([float32[N]],
                                lambda x: reorderStride(4) << reorder << Id << map(id) << x),
    "gather_scatter": lambda: program(
        [float32[N]],
        lambda x: scatter(lambda i, n: n - 1 - i)
        << gather(lambda i, n: (i % 4) * (n // 4) + i // 4) << x),
    "stencil_pads": lambda: program(
        [float32[N]],
        lambda x: map(reduceSeq(add, 0.0)) << slide(3, 1) << pad(1, 1, 0.5) << pad(2, 0, "wrap")
        << pad(0, 2, "mirror") << pad(1, 1, "clamp") << x),
    "streamed": lambda: program([float32[M][N]], lambda x: map(map(abs)) << streamed << x),
    "transpose_2d": lambda: program(
        [float32[M][N]],
        lambda x: map(join) << transpose << map(split(1)) << x),
    "pad_2d_inf": lambda: program(
        [float32[M][N]], lambda x: pad2D(1, 1, float("-inf")) << x),
    "crop_pad": lambda: program(
        [float32[N]], lambda x: map(id) << crop(1, N + 2) << pad(1, N + 2, "clamp") << x),
    "zip3_get": lambda: program(
        [float32[N], float32[N], float32[N]],
        lambda x, y, z: map(lambda t: add(t[0], mult(t[1], t[2]))) << zip(x, y, z)),
    "tuple_unzip": lambda: program(
        [float32[N], int32[N]], lambda x, y: unzip << map(_swap) << zip(x, y)),
    "at_index": lambda: program(
        [float32[N], int32[M]], lambda xs, idx: map(lambda i: at(xs, i)) << idx),
    "nested_shadowing": lambda: program(
        [float32[M][N]],
        lambda x: map(lambda x: map(lambda x: add(x, x)) << x) << x),
    "applied_lambda": lambda: program(
        [float32[N]],
        lambda x: map(lambda v: fn(lambda a: mult(a, a))(v)) << map(fn(lambda a: add(a, a)) << abs)
        << x),
    "composition_applied": lambda: program(
        [float32[N]], lambda x: (join << split(2)) << map(id) << x),
    "tuple_init": lambda: program(
        [float32[N]],
        lambda x: reduceSeq(_count, lit((0.0, 0), tuple_of(float32, int32))) << x),
    "explicit_init": lambda: program(
        [float32[N], float32], lambda x, z: reduceSeq(add)(z, x)),
    "literals": lambda: program(
        [float32[N]],
        lambda x: map(lambda a: tuple_(
            add(a, -1.5), lit(2.25, float64), 3, lit(-4, int64), True, False,
            float("inf"), lit(float("nan"), float64), lit((1.0, 2.0, 3.0, 4.0), float4),
            lit((1, 2), int2), lit(np.array([1.0, 2.0], dtype=np.float32), float32[2]),
            lit((0.5, 7), tuple_of(float32, int32)))) << x),
    "symbolic_sizes": lambda: program(
        [float32[N // 4][4 * M]],
        lambda x: map(join << map(split(N // 4)) << split(N)) << map(join) << map(split(2)) << x),
    "slide_sizes": lambda: program(
        [float32[N]], lambda x: map(reduceSeq(max, float("-inf"))) << slide(M, 2) << x),
    "warp_reduction": lambda: program(  # a pattern beyond OpenCL (ir/patterns/cuda.py)
        [float32[N]], lambda x: join << mapWrg(0)(reduceWarp(add, 0.0) << toLocal(mapLcl(0)(id)))
        << split(64) << x),
    "split_tail": lambda: program(  # a cp.async loop's schedule (ir/patterns/cuda_schedule.py)
        [float32[N][M]], lambda x: mapWrg(0)(lambda row: join << reduceSplitTail(
            2, 4, 0, lambda acc, t: (lambda l: mapLcl(0)(lambda p: add(p[0], p[1])) << zip(acc, l))(
                toLocalAsync(2, mapLcl(0)(id)) << t), lit(np.zeros(64, np.float32), float32[64]))
            << split(64) << row) << x),
    "last_work_group": lambda: program(  # work-groups meeting in global memory (patterns/wrg.py)
        [float32[4][N][M], float32[M]], lambda x, z: join << lastWrg(
            toGlobal(mapLcl(0)(mapSeq(id))) << toLocal(mapLcl(0)(reduceSeq(add, 0.0))) << split(2),
            lambda ps, zi: mapLcl(0)(lambda p: add(p, zi)) << reduceSeq(add, 0.0) << join << join
            << ps)(x, z)),
    "work_items": lambda: program(  # work-groups beyond the generator's cap (patterns/wrg.py)
        [float32[N]], lambda x: join << wrgItems(512, mapWrg(0)(toGlobal(mapLcl(0)(id))))
        << split(512) << x),
    **{f"tensor_cores_{cls.name}": (lambda cls=cls: _tensor_cores(cls)) for cls in MMA_PATTERNS},
    **{f"warpgroup_mma_{cls.name}": (lambda cls=cls: _wgmma(cls)) for cls in WGMMA_PATTERNS},
    "dmma_split_tail": lambda: _dmma_split(),
    **{f"complex_tensor_cores_{cls.name}": (lambda cls=cls: _complex_tensor_cores(cls))
       for cls in ZMMA_PATTERNS},
}


def _complex_tensor_cores(cls: Any) -> Lambda:
    """complex128 C = A·B on the FP64 tensor cores over complex tiles (rewrite/rules/
    cuda_complex.py builds it), staged raw by cp.async two deep."""
    from liftkit.rewrite.rules.cuda_complex import mm_complex_tensor_cores
    from liftkit.types import complex128

    A, B = Param("A", complex128[N][M]), Param("B", complex128[M][N])
    return Lambda((A, B), mm_complex_tensor_cores(A, B, 0, 32, 16, 8, 1, 2, cls.ahead))


def _dmma_split() -> Lambda:
    """The DMMA tile loop read ahead with its tail split along K (rules/mm_schedule.py), as read
    back from its text (the derived tree and the read one print alike but group their
    compositions differently: see test_ambiguities)."""
    from liftkit.rewrite import enumerate_choices
    from liftkit.rewrite.core import apply_choice
    from liftkit.rewrite.rules import normal_form
    from liftkit.rewrite.rules.cuda import tensor_core_mm
    from liftkit.rewrite.rules.mm_schedule import MMA_SPLIT_TAIL

    ahead = normal_form(tensor_core_mm("f64", 128, 64, 16, 4, 4, lines=True, ik=8, ahead=2).final)
    first = enumerate_choices(ahead, [MMA_SPLIT_TAIL])[0]
    split = apply_choice(ahead, first, {MMA_SPLIT_TAIL.name: MMA_SPLIT_TAIL})
    return parse_program(show(split), user_funs_of(split))


def _wgmma(cls: Any) -> Lambda:
    """C = A·B on Hopper's warpgroup MMA (rewrite/rules/cuda.py builds it)."""
    from liftkit.rewrite.rules.cuda import mm_wgmma

    A, B = Param("A", float32[N][M]), Param("B", float32[M][N])
    return Lambda((A, B), mm_wgmma(A, B, cls, 64, 64, 32, 4, 3))


def _tensor_cores(cls: Any) -> Lambda:
    """C = A·B on the tensor cores (rewrite/rules/cuda.py builds it), staged through local memory
    (by cp.async, two deep, for double)."""
    from liftkit.rewrite.rules.cuda import mm_tensor_cores

    T = cls.operand
    A, B = Param("A", T[N][M]), Param("B", T[M][N])
    return Lambda((A, B), mm_tensor_cores(A, B, cls, 32, 16, 16, 2, 2 if cls.name.endswith("F64") else 1))


# what to run each program on (size bindings and input makers); the rest are only checked as text
RUNS: dict[str, Callable[[np.random.Generator], list]] = {
    "dot": lambda r: [r.random(16, dtype=np.float32), r.random(16, dtype=np.float32)],
    "reduction_kernel": lambda r: [r.random(256, dtype=np.float32)] * 2,
    "glb_2d": lambda r: [r.standard_normal((3, 5)).astype(np.float32)],
    "unroll_private": lambda r: [r.random(16, dtype=np.float32)],
    "vectors": lambda r: [r.standard_normal(16).astype(np.float32)],
    "part_red": lambda r: [r.random(16, dtype=np.float32)],
    "gather_scatter": lambda r: [r.random(16, dtype=np.float32)],
    "stencil_pads": lambda r: [r.random(7, dtype=np.float32)],
    "zip3_get": lambda r: [r.random(5, dtype=np.float32) for _ in range(3)],
    "tuple_unzip": lambda r: [r.random(5, dtype=np.float32), r.integers(0, 9, 5).astype(np.int32)],
    "at_index": lambda r: [r.random(6, dtype=np.float32), r.integers(0, 6, 4).astype(np.int32)],
    "nested_shadowing": lambda r: [r.random((2, 3), dtype=np.float32)],
    "applied_lambda": lambda r: [r.standard_normal(6).astype(np.float32)],
    "tuple_init": lambda r: [r.random(9, dtype=np.float32)],
    "explicit_init": lambda r: [r.random(9, dtype=np.float32), np.float32(2.5)],
    "warp_reduction": lambda r: [r.random(128, dtype=np.float32)],
}


def user_funs_of(node: Node) -> dict[str, UserFun]:
    """The standard namespace plus every user function the program uses."""
    out = dict(standard_user_funs())
    out.update({n.name: n for n in walk(node) if isinstance(n, UserFun)})
    return out


def assert_round_trip(p: Node, **kw: Any) -> Node:
    text = show(p)
    q = parse(text, user_funs_of(p), **kw)
    assert show(q) == text
    return q


@pytest.mark.parametrize("name", sorted(PROGRAMS_UNDER_TEST))
def test_round_trip_show(name: str) -> None:
    p = PROGRAMS_UNDER_TEST[name]()
    q = assert_round_trip(p)
    assert isinstance(q, Lambda) and all(x.type is not None for x in q.params)
    assert show(parse_program(show(p))) == show(p)


@pytest.mark.parametrize("width", [100, 60, 30, 1])
@pytest.mark.parametrize("name", sorted(PROGRAMS_UNDER_TEST))
def test_round_trip_pretty(name: str, width: int) -> None:
    p = PROGRAMS_UNDER_TEST[name]()
    assert show(parse(pretty(p, width=width))) == show(p)


# text cannot tell these from other trees that print the same (see test_ambiguities)
NOT_ALPHA_EQUAL = {
    "pad_2d_inf": "dsl.compose nests to the right, the parser (like `<<`) to the left",
    "nested_shadowing": "λx. map(f)(x) prints eta-reduced as map(f)",
    "literals": "nan != nan",
}


@pytest.mark.parametrize("name", sorted(set(PROGRAMS_UNDER_TEST) - set(NOT_ALPHA_EQUAL)))
def test_dsl_programs_read_back_alpha_equal(name: str) -> None:
    p = PROGRAMS_UNDER_TEST[name]()
    assert alpha_equal(parse_program(show(p), user_funs_of(p)), p)


def test_ambiguities() -> None:
    """Different trees that print alike read back as one of them (same meaning, same text)."""
    x = Param("x")
    assert show((join << split(2)) << x) == show(FunCall(join, (FunCall(split(2), (x,)),)))
    a, b, c = Param("a"), Param("b"), Param("c")
    zip3 = Lambda((a, b, c), zip(a, b, c))  # eta-reduced to `zip`: the arity is lost
    assert show(map(zip3)) == "map(zip)"
    assert parse("map(zip)").f.arity == 2  # type: ignore[union-attr]


def test_parser_ignores_whitespace_entirely() -> None:
    p = PROGRAMS_UNDER_TEST["reduction_kernel"]()
    text = show(p)
    spaced = text.replace("(", " (\n ").replace(")", "\n) ").replace(",", " ,\n\t")
    assert show(parse(spaced)) == text


def test_every_pattern_and_kind_is_covered() -> None:
    seen: set[str] = set()
    kinds: set[Kind] = set()
    for build in PROGRAMS_UNDER_TEST.values():
        for n in walk(parse(show(build()))):
            if isinstance(n, Pattern):
                seen.add(n.name)
                kinds.update(k for _, k in n.signature())
    assert seen == set(PATTERNS_BY_NAME)
    assert kinds == set(Kind)


@pytest.mark.parametrize("name", sorted(PROGRAMS_UNDER_TEST))
def test_parsed_program_has_the_same_type(name: str) -> None:
    p = PROGRAMS_UNDER_TEST[name]()
    try:
        t = check_program(p)
    except LiftTypeError:
        pytest.skip("only a text fixture (ill-typed on purpose or by a rule elsewhere)")
    assert same_type(check_program(parse_program(show(p))), t)


def _same_value(a: Any, b: Any) -> None:
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in builtins.zip(a, b):
            _same_value(x, y)
    elif getattr(np.asarray(a), "dtype", np.dtype(float)).names:  # an array of tuples
        for field in np.asarray(a).dtype.names:
            _same_value(np.asarray(a)[field], np.asarray(b)[field])
    else:
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-6, equal_nan=True)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_parsed_program_computes_the_same(name: str) -> None:
    p = PROGRAMS_UNDER_TEST[name]()
    q = parse_program(show(p))
    for seed in range(3):
        inputs = RUNS[name](np.random.default_rng(seed))
        _same_value(interpret(p, *inputs), interpret(q, *inputs))


def test_shadowing_binds_to_the_innermost_lambda() -> None:
    text = "λ(x: [[float]_M]_N). map(λx. map(λx. add(x, x))(x))(x)"
    q = parse_program(text)
    # the outer λx. map(...)(x) is eta-reduced on printing
    assert show(q) == "λ(x: [[float]_M]_N). map(map(λx_2. add(x_2, x_2)))(x)"
    xs = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(interpret(q, xs), 2 * xs)


def test_sizes_are_shared_variables() -> None:
    q = parse_program("λ(x: [float]_N, y: [float]_(N/4)). zip(split 4(x), map(λv. split 1(v))(split N(y)))")
    assert isinstance(q, Lambda)
    n_in_type = q.params[0].type.length  # type: ignore[union-attr]
    split_n = next(n.n for n in walk(q) if isinstance(n, Pattern) and n.name == "split"
                   and not n.n.is_constant)
    assert split_n == n_in_type and split_n.name == "N"


def test_composition_forms_build_the_dsl_structures() -> None:
    f = parse("mapSeq(id) ∘ reduceSeq(add, 0.0f)")
    assert isinstance(f, Lambda) and len(f.params) == 1
    inner = f.body.args[0]  # type: ignore[attr-defined]
    # the composition is beta-reduced as nodes.compose does: mapSeq(id)(reduceSeq(add)(0.0f, p))
    assert isinstance(inner, FunCall) and isinstance(inner.f, Pattern) and inner.f.name == "reduceSeq"
    assert isinstance(inner.args[0], Literal) and inner.args[1] is f.params[0]
    # applied directly, an inline init becomes the two-argument call
    e = parse("reduceSeq(add, 0.0f)(x)", free=True)
    assert isinstance(e, FunCall) and len(e.args) == 2 and isinstance(e.f, Pattern)
    # the printer's two spellings of applying a composition read the same
    assert show(parse("(join ∘ split 2)(x)", free=True)) == show(parse("join ∘ split 2(x)", free=True))


@pytest.mark.parametrize("text", [
    "mapSeq(id) ∘ reduceSeq(add, 0.0f)", "map(join ∘ split 2)", "zip(a, b, c)", "get 1(t)",
    "(split 128)(x)", "partRed 2 (add)(z, xs)", "(λa. add(a, a)) ∘ abs", "λa. add(a, a)",
    "gather(λ(i, n). (i < n ? i : 0))", "scatter(λ(i, n). min(i, n - 1))",
    "pad 1 (N + 1) constant((0.0f, 1))", "add4(float4(0.0f, 1.0f, 2.0f, 3.0f), v)",
    "[[1, 2], [3, 4]]", "(1L, 2.0, true, -inff, nan)", "[float4(0.0f, 0.0f, 0.0f, 0.0f)]",
])
def test_fragments_round_trip(text: str) -> None:
    node = parse(text, free=True)
    assert show(parse(show(node), free=True)) == show(node)


def test_zip_arity_comes_from_the_arguments() -> None:
    e = parse("zip(a, b, c)", free=True)
    assert isinstance(e, FunCall) and e.f.arity == 3  # type: ignore[union-attr]


def test_literal_types() -> None:
    def lit_of(text: str) -> Literal:
        node = parse(text)
        assert isinstance(node, Literal)
        return node

    assert lit_of("0.5f").type == float32 and lit_of("0.5").type == float64
    assert lit_of("3").type == int32 and lit_of("3L").type == int64 and lit_of("-3L").value == -3
    assert lit_of("true").value is True and lit_of("-inf").value == float("-inf")
    assert lit_of("1e-05f").type == float32
    assert lit_of("float4(0.0f, 1.0f, 2.0f, 3.0f)").type == float4
    assert lit_of("(0.0f, 1)").type == tuple_of(float32, int32)
    assert lit_of("[1.0f, 2.0f]").type == float32[2]


def test_repeated_array_literals_print_short_and_read_back() -> None:
    """A tile's zero accumulators print as `[v; n]` (n copies), not thousands of zeros."""
    zeros = parse("[[float4(0.0f, 0.0f, 0.0f, 0.0f); 2]; 8]")
    assert isinstance(zeros, Literal) and zeros.type == float4[2][8]
    assert np.asarray(zeros.value).shape == (8, 2, 4) and not np.asarray(zeros.value).any()
    assert show(zeros) == "[[float4(0.0f, 0.0f, 0.0f, 0.0f); 2]; 8]"
    assert show(parse("[1.0f, 1.0f, 1.0f]")) == "[1.0f; 3]"
    assert show(parse("[1.0f, 2.0f, 1.0f]")) == "[1.0f, 2.0f, 1.0f]"
    assert show(parse("[(1, 2.0f); 2]")) == "[(1, 2.0f); 2]"
    with pytest.raises(ParseError, match=r"n must be a positive integer, not '0'"):
        parse("[1.0f; 0]")


def test_identities_made_by_the_rules_read_back() -> None:
    """`id_float4` (userfuns.id_of) is named in derived programs; the parser knows it unasked."""
    f = parse("mapSeq(id_float4)")
    assert show(f) == "mapSeq(id_float4)"
    with pytest.raises(ParseError, match="unknown function 'id_floaty'"):
        parse("mapSeq(id_floaty)")


@pytest.mark.parametrize("text", [
    "float", "float4", "int2", "(float, int)", "[float]_N", "[[float]_M]_N", "[float]_(N/4)",
    "[(float, [int]_4)]_(2*N + 1)", "((float, double), bool)", "[long8]_16",
])
def test_types_round_trip(text: str) -> None:
    assert str(parse_type(text)) == text


def test_user_supplied_namespace() -> None:
    sq = user_fun("square", [("x", float32)], float32, "return x * x;", lambda x: x * x)
    p = program([float32[N]], lambda x: map(sq) << x)
    with pytest.raises(ParseError, match="unknown function 'square'"):
        parse(show(p))
    assert show(parse(show(p), {**standard_user_funs(), "square": sq})) == show(p)


def test_top_level_functions_and_expressions() -> None:
    for f in [map(join << split(2)), reduceSeq(add, 0.0), mapLcl(1)(toLocal(mapSeq(id))),
              pad(1, 2, "clamp"), gather(lambda i, n: n - 1 - i)]:
        assert show(parse(show(f))) == show(f)
    x, y = Param("x"), Param("y")
    e = map(add) << zip(x, y)
    assert show(parse(show(e), free=True)) == show(e)


# ---------------------------------------------------------------------------------------------
# errors


def _error(text: str, **kw: Any) -> ParseError:
    with pytest.raises(ParseError) as info:
        parse(text, **kw)
    err = info.value
    assert str(err).startswith(f"line {err.line}, col {err.col}: ")
    assert isinstance(err, LiftTypeError)
    return err


def test_unknown_function_names_a_suggestion() -> None:
    err = _error("λ(x: [float]_N). mapp(id)(x)")
    assert str(err) == "line 1, col 18: unknown function 'mapp' (did you mean map?)"
    assert err.caret().splitlines()[1] == " " * 17 + "^"


def test_unknown_pattern_in_function_position() -> None:
    err = _error("λ(x: [float]_N). (join ∘ splt 2)(x)")
    assert "unknown function 'splt'" in str(err) and "split" in str(err) and err.col == 26
    err = _error("λ(x: [float]_N). map(ad)(x)")
    assert "unknown function 'ad'" in str(err) and err.col == 22


def test_unknown_value_name() -> None:
    err = _error("λ(x: [float]_N). map(abs)(xx)")
    assert "unknown name 'xx'" in str(err) and "did you mean x" in str(err) and err.col == 27


def test_position_on_a_later_line() -> None:
    err = _error("λ(x: [float]_N).\n  join ∘\n  mapz(id) ∘ split 2(x)")
    assert (err.line, err.col) == (3, 3)
    assert err.caret() == "  mapz(id) ∘ split 2(x)\n  ^"


@pytest.mark.parametrize("text,col", [
    ("λ(x: [float]_N). map(abs(x)", 21),  # '(' never closed
    ("λ(x: [float]_N). map(abs))(x)", 26),  # ')' closes nothing
    ("λ(x: [float]_N). map(abs](x)", 25),  # mismatched
])
def test_unbalanced_parenthesis(text: str, col: int) -> None:
    err = _error(text)
    assert "unbalanced parenthesis" in str(err) and err.col == col


@pytest.mark.parametrize("text,col", [
    ("λ(x: [float]_N). reduceSeq(add, 0.0x)(x)", 33),
    ("λ(x: [float]_N). reduceSeq(add, 3l)(x)", 33),
    ("λ(x: [float]_N). reduceSeq(add, 1.5ff)(x)", 33),
    ("λ(x: [float]_N). reduceSeq(add, truth)(x)", 33),
    ("λ(x: [float]_N). reduceSeq(add, float4(1.0f))(x)", 33),
    ("λ(x: [float]_N). reduceSeq(add, (1.0f))(x)", 33),
    ("λ(x: [float]_N). reduceSeq(add, [])(x)", 33),
])
def test_bad_literal(text: str, col: int) -> None:
    err = _error(text)
    assert "literal" in str(err) and err.col == col


def test_missing_type_on_a_program_parameter() -> None:
    with pytest.raises(ParseError) as info:
        parse_program("λ(x: [float]_N, y). zip(x, y)")
    assert "program parameter 'y' needs a type" in str(info.value) and info.value.col == 17
    with pytest.raises(ParseError, match="col 2: program parameter 'x' needs a type"):
        parse_program("λx. map(abs)(x)")
    with pytest.raises(ParseError, match="col 1: a program starts with"):
        parse_program("map(abs)")


@pytest.mark.parametrize("text,fragment", [
    ("λ(x: [flot]_N). x", "unknown type 'flot' (did you mean float?)"),
    ("λ(x: [float]_N). (split ∘ join)(x)", "a size for split"),
    ("λ(x: [float]_N). pad 1 1 reflect(x)", "pad boundary"),
    ("λ(x: [float]_N). mapLcl(a)(id)(x)", "dimension"),
    ("λ(x: [float]_N). mapLcl(7)(id)(x)", "dimensions 0, 1 and 2"),
    ("λ(x: [float]_N). split (N +)(x)", "bad arithmetic expression"),
    ("λ(x: [float]_N). gather(λ(i, n). i +)(x)", "bad arithmetic expression"),
    ("λ(x: [float]_N). map(abs)", "needs its arguments"),
    ("λ(x: [float]_N). map(abs)(x) x", "after the end"),
    ("λ(x: [float]_N). map(λv. x(v))(x)", "'x' is a parameter, not a function"),
    ("λ(x: [float]_N). join ∘ λv. v", "must be parenthesised"),
    ("λ(x: [float]_N, x: [float]_N). x", "declared twice"),
    ("λ(x: [float]_N). map(abs)(y)", "unknown name 'y'"),
])
def test_other_errors(text: str, fragment: str) -> None:
    assert fragment in str(_error(text))


# ---------------------------------------------------------------------------------------------
# the bundled programs

_HAS_REGISTRY = importlib.util.find_spec("liftkit.programs") is not None


def _registry() -> list:
    if not _HAS_REGISTRY:
        return []
    from liftkit.programs import PROGRAMS

    return list(PROGRAMS)


@pytest.mark.skipif(not _HAS_REGISTRY, reason="liftkit.programs is not written yet")
@pytest.mark.parametrize("spec", _registry(), ids=lambda s: s.name)
def test_bundled_programs_round_trip(spec: Any) -> None:
    p = spec.program
    text = show(p)
    q = parse_program(text, user_funs_of(p))
    assert show(q) == text
    assert show(parse_program(pretty(p, width=40), user_funs_of(p))) == text
    try:
        t = check_program(p)
    except LiftTypeError:
        return
    assert same_type(check_program(q), t)
