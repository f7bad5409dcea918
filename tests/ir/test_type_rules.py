"""Each pattern's type rule, including every error the foundation issue names."""

from __future__ import annotations

import pytest

from liftkit.arith import cst, size_var
from liftkit.dsl import *  # noqa: F403
from liftkit.ir.typecheck import LocatedTypeError, check_program, infer_type
from liftkit.types import ArrayType, LiftTypeError, TupleType, VectorType, same_type

# ruff: noqa: F405
N, M = size_var("N"), size_var("M")


def ty(types, body):
    return check_program(fun(types, body))


def err(types, body) -> str:
    with pytest.raises(LiftTypeError) as e:
        ty(types, body)
    return str(e.value)


# -- maps -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("m", [map, mapSeq, mapSeqUnroll])
def test_map_family(m):
    assert ty([float32[N]], lambda x: m(abs) << x) == float32[N]
    assert ty([float32[M][N]], lambda x: m(m(abs)) << x) == float32[M][N]


def test_map_needs_array():
    assert "map: expects an array, got float" in err([float32], lambda x: map(abs) << x)


def test_parallel_maps_and_nesting():
    assert ty([float32[M][N]], lambda x: mapWrg(0)(mapLcl(0)(id)) << x) == float32[M][N]
    assert ty([float32[M][N]], lambda x: mapGlb(1)(mapGlb(0)(id)) << x) == float32[M][N]
    assert ty([float32[2][M][N]], lambda x: mapWrg(1)(mapWrg(0)(mapLcl(0)(id))) << x) == float32[2][M][N]
    assert ty([float32[M][N]], lambda x: mapWrg(0)(mapLcl(1)(mapLcl(0)(id)) << split(1)) << x)


@pytest.mark.parametrize("body,msg", [
    (lambda x: mapLcl(0)(mapSeq(id)) << x, "mapLcl(0) must be nested inside a mapWrg"),
    (lambda x: mapWrg(0)(mapLcl(0)(mapLcl(0)(id)) << split(1)) << x, "mapLcl(0) is nested inside another mapLcl(0)"),
    (lambda x: mapWrg(0)(mapWrg(0)(id) << split(1)) << x, "mapWrg(0) is nested inside another mapWrg(0)"),
    (lambda x: mapGlb(0)(mapGlb(0)(id) << split(1)) << x, "mapGlb(0) is nested inside another mapGlb(0)"),
    (lambda x: mapWrg(0)(mapGlb(1)(id)) << x, "mapGlb(1) cannot be nested inside mapWrg(0)"),
    (lambda x: mapGlb(0)(mapWrg(1)(id)) << x, "mapWrg(1) cannot be nested inside mapGlb(0)"),
    (lambda x: mapGlb(0)(toLocal(mapSeq(id))) << x, "toLocal: local memory exists only inside a work-group"),
])
def test_structural_legality(body, msg):
    assert msg in err([float32[M][N]], body)


def test_dimension_range():
    with pytest.raises(LiftTypeError, match="dimensions 0, 1 and 2"):
        mapGlb(3)(id)


def test_map_vec():
    assert ty([float4[N]], lambda x: map(mapVec(abs)) << x) == float4[N]
    assert "mapVec: expects a vector, got float" in err([float32[N]], lambda x: map(mapVec(abs)) << x)


# -- reductions -------------------------------------------------------------------------------------
def test_reduce_types():
    assert ty([float32[N]], lambda x: reduce(add, 0.0) << x) == float32[1]
    assert ty([int32[N]], lambda x: reduceSeq(lambda a, b: add(a, b), 0.0) << map(lambda v: 1.0) << x) == float32[1]
    # reduceSeq's accumulator may differ from the element type
    assert ty([float32[N], float32[N]], lambda x, y: reduceSeq(multAndSumUp, 0.0) << zip(x, y)) == float32[1]


def test_reduce_wrong_init_type():
    assert "the initial value has type int but the elements are float" in err(
        [float32[N]], lambda x: reduce(add, lit(0, int32)) << x)
    # a bare number takes the type the reduction asks for (issue 11)
    assert ty([float32[N]], lambda x: reduce(add, 0) << x) == float32[1]


def test_reduce_wrong_operator_type():
    msg = err([float32[N]], lambda x: reduceSeq(INT.add, 0) << x)
    assert "user function add_int: parameter y has type int, got float" in msg
    msg = err([float32[N]], lambda x: reduceSeq(lambda a, b: lit(1), 0.0) << x)
    assert "reduceSeq: the operator returns int but the initial value has type float" in msg


def test_reduce_needs_declared_facts():
    assert "operator sub is not declared associative and commutative" in err(
        [float32[N]], lambda x: reduce(sub, 0.0) << x)
    assert "must be a user function declared associative" in err(
        [float32[N]], lambda x: reduce(lambda a, b: add(b, a), 0.0) << x)
    # an eta-expanded user function is that user function
    assert ty([float32[N]], lambda x: reduce(lambda a, b: add(a, b), 0.0) << x) == float32[1]


def test_part_red():
    assert ty([float32[N * 4]], lambda x: partRed(add, 0.0, 4) << x) == float32[4]
    assert "partRed 3: 3 does not divide the length 8" in err([float32[8]], lambda x: partRed(add, 0.0, 3) << x)


def test_iterate():
    body = lambda x: iterate(3, join << map(reduce(add, 0.0)) << split(2)) << x  # noqa: E731
    assert ty([float32[8 * N]], body) == float32[N]
    assert "iterate 2: the function must map arrays to arrays" in err(
        [float32[N]], lambda x: iterate(2, lambda a: lit(1.0)) << x)


# -- layout -----------------------------------------------------------------------------------------
def test_split_join():
    assert ty([float32[N * 4]], lambda x: split(4) << x) == float32[4][N]
    assert ty([float32[M][N]], lambda x: join << x) == float32[M * N]
    assert "split 8: 8 does not divide the length 4*N + 2" in err(
        [float32[4 * N + 2]], lambda x: split(8) << x)
    assert "split 3: 3 does not divide the length 8" in err([float32[8]], lambda x: split(3) << x)
    # unknown divisibility is allowed (checked at run time)
    assert ty([float32[N]], lambda x: split(4) << x) == float32[4][N // 4]
    assert "join: expects an array of arrays" in err([float32[N]], lambda x: join << x)


def test_zip_unzip_get_tuple():
    t = ty([float32[N], int32[N], float32[N]], lambda a, b, c: zip(a, b, c))
    assert t == ArrayType(TupleType((float32, int32, float32)), N)
    msg = err([float32[N], float32[2 * N]], lambda a, b: zip(a, b))
    assert "zip: lengths N and 2*N differ" in msg and "in: zip(a, b)" in msg
    assert ty([float32[N], int32[N]], lambda a, b: unzip << zip(a, b)) == TupleType((float32[N], int32[N]))
    assert ty([float32[N], int32[N]], lambda a, b: map(get(1)) << zip(a, b)) == int32[N]
    assert "get 2: index out of range for a 2-tuple" in err(
        [float32[N], int32[N]], lambda a, b: map(get(2)) << zip(a, b))
    assert "get 0: expects a tuple, got float" in err([float32[N]], lambda a: map(get(0)) << a)
    assert ty([float32, int32], lambda a, b: tuple_(a, b)) == TupleType((float32, int32))


def test_layout_preserving():
    for body in (lambda x: reorder << x, lambda x: gather(lambda i, n: n - 1 - i) << x,
                 lambda x: scatter(lambda i, n: n - 1 - i) << x, lambda x: Id << x):
        assert ty([float32[N]], body) == float32[N]
    assert ty([float32[128 * N]], lambda x: reorderStride(128) << x) == float32[128 * N]


def test_transpose_slide_pad():
    assert ty([float32[M][N]], lambda x: transpose << x) == float32[N][M]
    assert ty([float32[N]], lambda x: slide(3, 1) << x) == float32[3][N - 2]
    assert ty([float32[10]], lambda x: slide(4, 2) << x) == float32[4][4]
    assert "slide 5 1: the window is longer than the array (3)" in err([float32[3]], lambda x: slide(5, 1) << x)
    assert ty([float32[N]], lambda x: pad(1, 2, "clamp") << x) == float32[N + 3]
    assert ty([float32[N]], lambda x: pad(1, 1, 0.0) << x) == float32[N + 2]
    assert "pad: constant 0 has type int but the elements are float" in err(
        [float32[N]], lambda x: pad(1, 1, lit(0, int32)) << x)
    assert ty([float32[N]], lambda x: pad(1, 1, 0) << x) == float32[N + 2]  # a bare 0 is a float
    with pytest.raises(LiftTypeError, match="unknown boundary"):
        pad(1, 1, "reflect")


def test_as_vector_as_scalar():
    assert ty([float32[4 * N]], lambda x: asVector(4) << x) == ArrayType(VectorType(float32, 4), N)
    assert ty([float4[N]], lambda x: asScalar << x) == float32[4 * N]
    assert "asVector 4: the length 10 is not divisible by 4" in err([float32[10]], lambda x: asVector(4) << x)
    assert "asVector 4: the elements must be scalars" in err([float4[N]], lambda x: asVector(4) << x)
    assert "asScalar: the elements must be vectors" in err([float32[N]], lambda x: asScalar << x)


def test_at():
    assert ty([float32[N], int32], lambda x, i: at(x, i)) == float32
    assert "at: the index must be an int" in err([float32[N], float32], lambda x, i: at(x, i))


def test_memory_wrappers():
    t = ty([float32[M][N]], lambda x: mapWrg(0)(toGlobal(mapLcl(0)(id)) << toLocal(mapLcl(0)(id))) << x)
    assert t == float32[M][N]
    assert ty([float32[N]], lambda x: mapGlb(0)(toPrivate(id)) << x) == float32[N]


# -- user functions and lambdas -----------------------------------------------------------------
def test_user_fun_arity_and_types():
    assert "user function add takes 2 argument(s), got 1" in err([float32[N]], lambda x: map(add) << x)
    assert "user function add: parameter y has type float, got int" in err(
        [float32, int32], lambda a, b: add(a, b))
    # a tuple argument is spread over the parameters, as in the papers' map(mult) ∘ zip
    assert ty([float32[N], float32[N]], lambda x, y: map(mult) << zip(x, y)) == float32[N]


def test_vector_user_fun():
    assert ty([float4[N]], lambda x: map(abs4) << x) == float4[N]
    assert "parameter x has type float4, got float" in err([float32[N]], lambda x: map(abs4) << x)


def test_error_names_the_innermost_call():
    with pytest.raises(LocatedTypeError) as e:
        ty([float32[N], float32[M]], lambda x, y: reduce(add, 0.0) << map(mult) << zip(x, y))
    assert e.value.where == "zip(x, y)"
    assert e.value.message == "zip: lengths N and M differ"


def test_types_equal_up_to_arithmetic():
    assert same_type(float32[N * 2], float32[2 * N])
    assert same_type(float32[(N + 1) * 2], float32[2 * N + 2])
    assert not same_type(float32[N], float32[M])
    assert infer_type(lit(1.0)) == float32
