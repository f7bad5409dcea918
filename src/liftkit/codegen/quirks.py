"""Workarounds for defects of the C compilers that build our kernels, one table entry per defect.

A backend that finds a defect in its device's compiler (by running a known-answer kernel, see
`liftkit.backends.opencl.quirks`) compiles with `CompileOptions(quirks=...)` naming the entry,
and the generator writes the statements the defect hits in a form that compiler builds
correctly. Kernels for every other device are unchanged, so only the affected device pays.
"""

from __future__ import annotations

from liftkit.ir.nodes import FunDecl, UserFun, walk

# Intel's CPU OpenCL runtime vectorises subtraction loops wrongly, silently: 2026.2.0 (driver
# 2026.22.10.0.01) turns `acc = acc - x[i]` over float, 16 or more steps, into `init - x[N-1]`
# (also `acc + (-x[i])`); 2026.1.2 and 2026.2.0 add instead of subtract ints read through a
# permuted index. Such reduceSeq loops are written with vectorisation off; additions keep it
# (they are 5x faster vectorised there).
SERIAL_SUB_REDUCTIONS = "serial-sub-reductions"
NO_VECTORIZE_PRAGMA = "#pragma clang loop vectorize(disable)"

QUIRKS: dict[str, str] = {
    SERIAL_SUB_REDUCTIONS: "reductions that subtract run their loop unvectorised",
}


def check_quirks(names: frozenset[str]) -> None:
    """Refuse an unknown quirk name in words."""
    unknown = sorted(set(names) - set(QUIRKS))
    if unknown:
        raise ValueError(f"unknown compiler quirk(s) {', '.join(unknown)}: known are "
                         f"{', '.join(sorted(QUIRKS))}")


def may_subtract(f: FunDecl) -> bool:
    """Whether a reduction with function `f` may compile to a subtraction: a `-` in some user
    function `f` calls (conservative: a minus in an exponent or an index also counts)."""
    return any(isinstance(n, UserFun) and "-" in n.body for n in walk(f))


def affects(program: FunDecl, names: frozenset[str]) -> bool:
    """Whether compiling `program` with the quirks `names` changes its kernels: a runner
    recompiles only then (and a hand-written kernel, whose program is only its specification,
    is never recompiled for a quirk that does not touch it)."""
    from liftkit.ir import patterns as P

    if SERIAL_SUB_REDUCTIONS not in names:
        return False
    return any(isinstance(n, P.AbstractReduce) and may_subtract(n.f) for n in walk(program))
