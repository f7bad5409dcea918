"""Types with symbolic array lengths (seed 000 §5.1)."""

from liftkit.types.core import (
    SCALARS,
    VECTOR_WIDTHS,
    ArrayType,
    LiftTypeError,
    ScalarType,
    TupleType,
    Type,
    VectorType,
    array_dims,
    bool_,
    complex64,
    complex128,
    float32,
    float64,
    int32,
    int64,
    same_type,
    scalar_of,
    size_vars_of,
    tuple_of,
    vector,
)

__all__ = [
    "SCALARS", "VECTOR_WIDTHS", "ArrayType", "LiftTypeError", "ScalarType", "TupleType", "Type",
    "VectorType", "array_dims", "bool_", "complex64", "complex128", "float32", "float64", "int32",
    "int64", "same_type",
    "scalar_of", "size_vars_of", "tuple_of", "vector",
]
