"""The VRIR pass pipeline (seed 003 ch. 5-6). Each pass is a pure function Module -> Module and
can be switched off for ablation (``@jit(passes={"bounds": False})``):

* ``inline``     - calls of @jit functions with a single final return are inlined (§5.3);
* ``simplify``   - constant folding, algebraic identities, dead branches (§5.2);
* ``specialise`` - region specialisation: shapes (and loop-bound values) of the critical
                   variables found by region detection become constants (§6.2-6.7);
* ``bounds``     - bounds-check elimination on affine loop nests with the Z3 solver (§5.6, §6.6).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import vrir as V

PASSES = ("inline", "simplify", "specialise", "bounds")


@dataclass
class PassReport:
    """What the passes did (for the benchmark's counts and for tests)."""
    checks_total: int = 0
    checks_removed: int = 0
    inlined: int = 0
    specialised: dict = field(default_factory=dict)


def run_passes(m: V.Module, switches: dict, spec: dict | None = None,
               report: PassReport | None = None) -> V.Module:
    """Run the enabled passes over ``m``; ``spec`` maps critical variables to the values seen
    at the call (from :func:`regions.critical`)."""
    from .bounds import eliminate_bounds_checks
    from .inline import inline_calls
    from .regions import specialise
    from .simplify import simplify
    report = report if report is not None else PassReport()
    on = {p: switches.get(p, True) for p in PASSES}
    if on["inline"]:
        m = inline_calls(m, report)
    if on["specialise"] and spec:
        m = specialise(m, spec, report)
    if on["simplify"]:
        m = simplify(m)
    if on["bounds"]:
        m = eliminate_bounds_checks(m, report, (spec or {}).get("shapes") if on["specialise"] else None)
    else:
        from .bounds import count_checks
        report.checks_total = count_checks(m)
    return m
