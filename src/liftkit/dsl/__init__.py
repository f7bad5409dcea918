"""The liftkit DSL: `from liftkit.dsl import *` gives the patterns, user functions and types
under the papers' names (note: `map`, `zip`, `abs`, `max`, `min`, `id` and `reduce` shadow Python
built-ins in a module that star-imports them — intended in program files)."""

from liftkit.dsl.core import *  # noqa: F401,F403
from liftkit.dsl.core import __all__ as _core_all
from liftkit.dsl.cuda import *  # noqa: F401,F403
from liftkit.dsl.cuda import __all__ as _cuda_all
from liftkit.ir.userfuns import (  # noqa: F401
    FLOAT, DOUBLE, INT, LONG, abs, absAndSumUp, absAndSumUp2, absAndSumUp4, add, add2, add4, div,
    id, id2, id4, id_of, max, min, mult, mult4, multAndSumUp, neg, scalar_funs, sub, abs4,
)
from liftkit.ir.nodes import lit, user_fun  # noqa: F401
from liftkit.types import (  # noqa: F401
    ArrayType, TupleType, VectorType, bool_, float32, float64, int32, int64, tuple_of, vector,
)

float2, float4, float8, float16 = (vector(float32, w) for w in (2, 4, 8, 16))
int2, int4 = vector(int32, 2), vector(int32, 4)

__all__ = list(_core_all) + list(_cuda_all) + [
    "FLOAT", "DOUBLE", "INT", "LONG", "abs", "absAndSumUp", "absAndSumUp2", "absAndSumUp4", "add",
    "add2", "add4", "div", "id", "id2", "id4", "id_of", "max", "min", "mult", "mult4",
    "multAndSumUp", "neg", "scalar_funs", "sub", "abs4", "lit", "user_fun", "ArrayType",
    "TupleType", "VectorType", "bool_", "float32", "float64", "int32", "int64", "tuple_of",
    "vector", "float2", "float4", "float8", "float16", "int2", "int4",
]
