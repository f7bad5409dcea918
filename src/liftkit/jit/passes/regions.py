"""Region detection and specialisation (seed 003 ch. 6), at the granularity of the compiled
function after inlining (its entry is the region's single entry; the dispatcher plays the
role of the region dispatcher with a code cache of at most five versions per signature).

Region detection finds the *critical* variables: arrays whose shapes the loop nests and
array operations depend on (critical shape variables: arrays indexed inside loops, operands of
array operators, arrays whose extents bound loops) and integers the shapes and loop bounds
depend on (critical value variables: loop bounds, allocation sizes, subscript terms that are
not loop indices). Those that are parameters never reassigned are the specialisation key; the
specialisation pass then replaces their extents and values by constants (§6.7.1), which
shape inference, bounds-check elimination and LLVM then fold."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .. import types as T
from .. import vrir as V
from .walk import assigned, nodes, rewrite

MAX_VERSIONS = 5


@dataclass(frozen=True)
class Critical:
    shapes: tuple[str, ...]      # array parameters whose shapes are specialised on
    values: tuple[str, ...]      # integer parameters whose values are specialised on


def _names(e: object) -> set[str]:
    return {n.name for n in nodes(e) if isinstance(n, V.Name)}


def critical(m: V.Module) -> Critical:
    """The critical shape and value variables of the entry function's regions."""
    f = m.functions[0]
    shape_vars: set[str] = set()
    value_vars: set[str] = set()
    loop_vars: set[str] = set()

    def bound_exprs(e: object) -> None:
        for n in nodes(e):
            if isinstance(n, V.Name) and isinstance(n.type, T.ScalarType):
                value_vars.add(n.name)
            if isinstance(n, V.Dim) and isinstance(n.array, V.Name):
                shape_vars.add(n.array.name)

    def visit(stmts: tuple, in_loop: bool) -> None:
        for s in stmts:
            if isinstance(s, V.For):
                bound_exprs((s.start, s.stop, s.step))
                loop_vars.add(s.var)
                visit(s.body, True)
            elif isinstance(s, V.ParFor):
                bound_exprs(s.domain)
                loop_vars.update(s.vars)
                visit(s.body, True)
            elif isinstance(s, V.While):
                visit(s.body, True)
            elif isinstance(s, V.If):
                visit(s.then, in_loop)
                visit(s.orelse, in_loop)
            elif isinstance(s, V.GpuSection):
                visit(s.body, in_loop)
            for n in nodes(s if not isinstance(s, (V.For, V.ParFor, V.While, V.If, V.GpuSection))
                           else ()):
                if isinstance(n, V.LibCall) and n.fn in ("zeros", "ones", "empty", "full"):
                    bound_exprs(n.args)
                elif isinstance(n, V.Index) and isinstance(n.array, V.Name) and in_loop:
                    shape_vars.add(n.array.name)
                    for i in n.indices:
                        if not isinstance(i, V.Slice):
                            value_vars.update(x for x in _names(i) if x not in loop_vars)
                elif isinstance(n.__class__, type) and isinstance(getattr(n, "type", None),
                                                                   T.ArrayType):
                    if isinstance(n, (V.BinOp, V.UnOp, V.Compare, V.LibCall)):
                        shape_vars.update(_names(n))
    visit(f.body, False)
    reassigned = assigned(f.body)
    st = f.symtab()
    shapes = tuple(p for p in f.params if p in shape_vars and p not in reassigned
                   and isinstance(st[p], T.ArrayType))
    values = tuple(p for p in f.params if p in value_vars and p not in reassigned
                   and isinstance(st[p], T.ScalarType) and st[p].is_int)  # type: ignore[union-attr]
    return Critical(shapes, values)


def specialise(m: V.Module, spec: dict, report) -> V.Module:  # noqa: ANN001
    """Replace the extents of critical arrays and the values of critical integers by the
    constants seen at this call (``spec``: {"shapes": {name: shape}, "values": {name: int}})."""
    f = m.functions[0]
    shapes, values = spec.get("shapes", {}), spec.get("values", {})
    st = f.symtab()

    def fold(x: object) -> object:
        if isinstance(x, V.Dim) and isinstance(x.array, V.Name) and x.array.name in shapes:
            return V.Const(int(shapes[x.array.name][x.axis]), T.INT64)
        if isinstance(x, V.Name) and x.name in values:
            return V.Const(int(values[x.name]), st[x.name])  # type: ignore[arg-type]
        return x
    body = rewrite(f.body, fold)
    report.specialised = {"shapes": dict(shapes), "values": dict(values)}
    return dataclasses.replace(m, functions=(dataclasses.replace(f, body=body),) + m.functions[1:])
