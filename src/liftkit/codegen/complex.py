"""Complex numbers in generated C: the type and the helpers the complex user functions call.

A complex value is a pair (re, im) in `.x`/`.y`, laid out as NumPy's complex64/complex128, so
buffers pass to kernels unchanged. The dialect declares the type and its constructor
`cfloat_new(re, im)` (OpenCL C: float2; CUDA C: an aligned struct); the arithmetic written here
on top of them is the same text in both languages. Division is Smith's algorithm (no overflow
from |b|² where the quotient is representable).
"""

from __future__ import annotations

from liftkit.codegen.dialect import Dialect
from liftkit.types import ScalarType

_HELPERS = (
    "{c} {c}_add({c} a, {c} b) {{ return {c}_new(a.x + b.x, a.y + b.y); }}",
    "{c} {c}_sub({c} a, {c} b) {{ return {c}_new(a.x - b.x, a.y - b.y); }}",
    "{c} {c}_mul({c} a, {c} b) {{ return {c}_new(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }}",
    "{c} {c}_div({c} a, {c} b) {{\n"
    "  if (fabs(b.x) >= fabs(b.y)) {{\n"
    "    {r} q = b.y / b.x, d = b.x + b.y * q;\n"
    "    return {c}_new((a.x + a.y * q) / d, (a.y - a.x * q) / d);\n"
    "  }}\n"
    "  {r} q = b.x / b.y, d = b.x * q + b.y;\n"
    "  return {c}_new((a.x * q + a.y) / d, (a.y * q - a.x) / d);\n"
    "}}",
)


def complex_definitions(t: ScalarType, dialect: Dialect) -> list[str]:
    """The C lines that declare complex type t and its helpers in `dialect`."""
    c, r = t.name, t.real.name
    return dialect.complex_type(c, r) + [dialect.user_fun_prefix + h.format(c=c, r=r)
                                         for h in _HELPERS]
