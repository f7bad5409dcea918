"""GPU sections, VRIR to VRIR (seed 003 §5.8): inside a ``GpuSection`` every element-wise array
statement becomes a parallel loop, so that the section's kernels are all ``ParFor`` bodies.

``x = a * b + c`` (a fused element-wise tree) becomes: views and other non-element-wise
operands hoisted into host variables, the broadcast shape computed and checked on the host,
``x = empty(shape)`` and one parallel loop writing ``x[i, j] = a[i, j] * b[i, j] + c[i, j]`` —
one kernel, one pass over memory. ``X[s] = expr`` (a slice store) loops over the target view;
operands sharing memory with the target are read from a copy (NumPy evaluates the right side
before the store: the launcher gives arrays sharing memory
with the target a copy-on-write copy). Element-wise loops made here use loop variables named
``ew$w...`` (target overwritten whole) and ``ew$s...`` (a slice store) for the launcher."""

from __future__ import annotations

import dataclasses
import itertools

from . import types as T
from . import vrir as V
from .cg_arrays import is_elementwise
from .passes.walk import nodes

_I = T.INT64
EW = "ew$"


def _children(e: V.Expr) -> tuple:
    if isinstance(e, (V.BinOp, V.Compare)):
        return (e.left, e.right)
    if isinstance(e, (V.UnOp, V.Cast)):
        return (e.operand,)
    return e.args  # type: ignore[union-attr]


class _Lowerer:
    def __init__(self, f: V.Function) -> None:
        self.syms = dict(f.symtab())
        self.counter = itertools.count()

    def tmp(self, t: T.Type, base: str = "g") -> V.Name:
        name = f"{base}${next(self.counter)}"
        self.syms[name] = t
        return V.Name(name, t)

    # -- statements
    def block(self, stmts: tuple, gpu: bool) -> tuple:
        out: list = []
        for s in stmts:
            out += self.stmt(s, gpu)
        return tuple(out)

    def stmt(self, s: V.Stmt, gpu: bool) -> list:
        if isinstance(s, V.GpuSection):
            return [dataclasses.replace(s, body=self.block(s.body, True))]
        if isinstance(s, V.If):
            return [dataclasses.replace(s, then=self.block(s.then, gpu),
                                        orelse=self.block(s.orelse, gpu))]
        if isinstance(s, (V.For, V.While)):
            return [dataclasses.replace(s, body=self.block(s.body, gpu))]
        if gpu and isinstance(s, V.Return) and s.value is not None:
            return self.returned(s)
        if not gpu or not isinstance(s, V.Assign):
            return [s]
        if isinstance(s.target, V.Name) and is_elementwise(s.value):
            return self.elementwise_into_new(s.target, s.value, s.line)
        if isinstance(s.target, V.Name) and isinstance(s.value, V.LibCall):
            lib = self.library(s.target, s.value, s.line)
            if lib is not None:
                return lib
        if isinstance(s.target, V.Index) and isinstance(s.target.type, T.ArrayType) and \
                (is_elementwise(s.value) or isinstance(s.value.type, T.ScalarType)
                 or isinstance(s.value, V.Name)):
            return self.slice_store(s.target, s.value, s.line)
        return [s]

    def returned(self, s: V.Return) -> list:
        """``return e`` inside a section (``@jit(target="gpu")``): an element-wise or library
        value (or such a tuple item) computed into a temporary first, lowered as ``t = e`` is,
        so that it runs on the GPU rather than as a host statement."""
        pre: list = []
        v = s.value
        if isinstance(v, V.TupleExpr):
            v = dataclasses.replace(v, items=tuple(self.hoisted(e, pre, s.line) for e in v.items))
        else:
            v = self.hoisted(v, pre, s.line)  # type: ignore[arg-type]
        return pre + [dataclasses.replace(s, value=v)]

    def hoisted(self, e: V.Expr, pre: list, line: int) -> V.Expr:
        if is_elementwise(e) or (isinstance(e, V.LibCall) and e.fn in ("dot", "sum")):
            t = self.tmp(e.type, "gr")
            pre += self.stmt(V.Assign(t, e, line), True)
            return t
        return e

    # -- element-wise trees
    def leaves(self, e: V.Expr, pre: list, line: int) -> V.Expr:
        """``e`` with every array leaf a Name (views and other array values hoisted)."""
        if is_elementwise(e):
            kids = tuple(self.leaves(c, pre, line) for c in _children(e))
            if isinstance(e, (V.BinOp, V.Compare)):
                return dataclasses.replace(e, left=kids[0], right=kids[1])
            if isinstance(e, (V.UnOp, V.Cast)):
                return dataclasses.replace(e, operand=kids[0])
            return dataclasses.replace(e, args=kids)
        if isinstance(e.type, T.ArrayType) and not isinstance(e, V.Name):
            t = self.tmp(e.type, "gv")
            pre += self.stmt(V.Assign(t, e, line), True)  # a library call may go to the GPU
            return t
        if isinstance(e.type, T.ScalarType) and not isinstance(e, (V.Name, V.Const)):
            t = self.tmp(e.type, "gs")  # evaluated once, on the host
            pre.append(V.Assign(t, e, line))
            return t
        return e

    def arrays_of(self, e: V.Expr) -> list[V.Name]:
        seen: dict[str, V.Name] = {}
        for n in nodes(e):
            if isinstance(n, V.Name) and isinstance(n.type, T.ArrayType):
                seen[n.name] = n
        return list(seen.values())

    def scalar_at(self, e: V.Expr, idx: list[V.Expr], nd: int) -> V.Expr:
        """The element of ``e`` at ``idx`` (right-aligned broadcasting, size-1 dims read 0)."""
        if isinstance(e, V.Name) and isinstance(e.type, T.ArrayType):
            k0 = nd - e.type.ndim
            ix = []
            for k in range(e.type.ndim):
                one = V.Compare("eq", V.Dim(e, k), V.Const(1, _I), T.BOOL)
                ix.append(V.Select(one, V.Const(0, _I), idx[k0 + k], _I))
            return V.Index(e, tuple(ix), (V.NO_CHECK,) * len(ix), e.type.elem)
        if not is_elementwise(e):
            return e
        kids = tuple(self.scalar_at(c, idx, nd) for c in _children(e))
        et = e.type.elem  # type: ignore[union-attr]
        if isinstance(e, V.BinOp):
            return V.BinOp(e.op, kids[0], kids[1], et)
        if isinstance(e, V.Compare):
            return V.Compare(e.op, kids[0], kids[1], T.BOOL)
        if isinstance(e, V.UnOp):
            return V.UnOp(e.op, kids[0], et)
        if isinstance(e, V.Cast):
            return V.Cast(kids[0], et)
        return V.LibCall(e.fn, kids, e.axis, et)  # type: ignore[union-attr]

    # -- library operators on Lift kernels (gpu_library)
    def operand(self, e: V.Expr, pre: list, line: int) -> V.Name:
        """``e`` as a Name (element-wise operands computed on the GPU first)."""
        if isinstance(e, V.Name):
            return e
        t = self.tmp(e.type, "gv")
        pre += self.stmt(V.Assign(t, e, line), True)
        return t

    def library(self, target: V.Name, e: V.LibCall, line: int) -> list | None:
        """``x = A @ B`` (matrices), ``y = M @ x`` / ``x @ M`` (a matrix and a vector),
        ``s = np.dot(x, y)`` (vectors), ``s = np.sum(x)`` (a vector) as library calls
        ``lift_mm``/``lift_gemv``/``lift_gemvt``/``lift_dot``/``lift_sum``; None for the
        others."""
        args = e.args
        if not all(isinstance(a.type, T.ArrayType) and a.type.elem.name in ("float32", "float64")
                   for a in args):
            return None
        elems = {a.type.elem for a in args}  # type: ignore[union-attr]
        nds = [a.type.ndim for a in args]  # type: ignore[union-attr]
        t = e.type
        ok_elem = len(elems) == 1 and (t.elem if isinstance(t, T.ArrayType) else t) in elems
        pre: list = []
        if e.fn == "dot" and nds in ([2, 2], [2, 1], [1, 2]) and ok_elem:
            a, b = (self.operand(x, pre, line) for x in args)
            pre.append(V.If(V.Compare("ne", V.Dim(a, nds[0] - 1), V.Dim(b, 0), T.BOOL),
                            (V.Raise("ValueError", f"line {line}: shapes not aligned for "
                                     "matrix multiplication", line),), (), line))
            # the result's extents; a matrix-vector product is GEMV (x @ M: Mᵀ·x, GEMV T)
            dims, fn, ops = {(2, 2): ((V.Dim(a, 0), V.Dim(b, 1)), "lift_mm", (a, b)),
                             (2, 1): ((V.Dim(a, 0),), "lift_gemv", (a, b)),
                             (1, 2): ((V.Dim(b, 1),), "lift_gemvt", (b, a))}[nds[0], nds[1]]
            fresh = self.tmp(T.ArrayType(t.elem, len(dims), "C"), "ga")  # type: ignore
            pre.append(V.Assign(fresh, V.LibCall("empty", dims, -1, fresh.type), line))
            pre.append(V.ExprStmt(V.LibCall(fn, (fresh, *ops), -1, T.VOID), line))
            tt = self.syms[target.name]
            pre.append(V.Assign(V.Name(target.name, tt), fresh if tt == fresh.type
                                else V.Cast(fresh, tt), line))
            return pre
        if e.fn == "dot" and nds == [1, 1] and ok_elem:
            a, b = (self.operand(x, pre, line) for x in args)
            pre.append(V.If(V.Compare("ne", V.Dim(a, 0), V.Dim(b, 0), T.BOOL),
                            (V.Raise("ValueError", f"line {line}: shapes not aligned for dot",
                                     line),), (), line))
            call = V.LibCall("lift_dot", (a, b), -1, t)
        elif e.fn == "sum" and e.axis == -1 and nds == [1] and ok_elem:
            call = V.LibCall("lift_sum", (self.operand(args[0], pre, line),), -1, t)
        else:
            return None
        tt = self.syms[target.name]
        if tt == t:
            pre.append(V.Assign(V.Name(target.name, tt), call, line))
        else:
            r = self.tmp(t, "gs")
            pre += [V.Assign(r, call, line), V.Assign(V.Name(target.name, tt), V.Cast(r, tt), line)]
        return pre

    def shape_of(self, arrays: list[V.Name], nd: int, pre: list, line: int) -> list[V.Expr]:
        """Host code computing (and checking) the broadcast shape; its extents as Names."""
        dims: list[V.Expr] = []
        for d in range(nd):
            r = self.tmp(_I, "gn")
            pre.append(V.Assign(r, V.Const(1, _I), line))
            for a in arrays:
                k = d - (nd - a.type.ndim)  # type: ignore[union-attr]
                if k >= 0:
                    n = V.Dim(a, k)
                    pre.append(V.If(V.Compare("ne", n, V.Const(1, _I), T.BOOL),
                                    (V.Assign(r, n, line),), (), line))
            for a in arrays:
                k = d - (nd - a.type.ndim)  # type: ignore[union-attr]
                if k >= 0:
                    n = V.Dim(a, k)
                    bad = V.Logical("and", V.Compare("ne", n, V.Const(1, _I), T.BOOL),
                                    V.Compare("ne", n, r, T.BOOL))
                    pre.append(V.If(bad, (V.Raise("ValueError", f"line {line}: operands could "
                                                  "not be broadcast together", line),), (), line))
            dims.append(r)
        return dims

    def loop(self, target: V.Name, dims: list[V.Expr], value: V.Expr, line: int,
             whole: bool) -> V.ParFor:
        nd = len(dims)
        names = [self.tmp(_I, EW + ("w" if whole else "s")).name for _ in range(nd)]
        idx: list[V.Expr] = [V.Name(n, _I) for n in names]
        elem = target.type.elem  # type: ignore[union-attr]
        v = self.scalar_at(value, idx, nd)
        if v.type != elem:
            v = V.Cast(v, elem)
        store = V.Assign(V.Index(target, tuple(idx), (V.NO_CHECK,) * nd, elem), v, line)
        dom = V.DomainExpr(tuple(V.Const(0, _I) for _ in dims), tuple(dims),
                           tuple(V.Const(1, _I) for _ in dims), T.DomainType(nd))
        return V.ParFor(tuple(names), dom, (target.name,), (store,), line)

    def elementwise_into_new(self, target: V.Name, value: V.Expr, line: int) -> list:
        pre: list = []
        e = self.leaves(value, pre, line)
        t = value.type
        assert isinstance(t, T.ArrayType)
        nd = t.ndim
        dims = self.shape_of(self.arrays_of(e), nd, pre, line)
        fresh = self.tmp(T.ArrayType(t.elem, nd, "C"), "ga")
        pre.append(V.Assign(fresh, V.LibCall("empty", tuple(dims), -1, fresh.type), line))
        pre.append(self.loop(fresh, dims, e, line, True))
        tt = self.syms[target.name]
        pre.append(V.Assign(V.Name(target.name, tt), fresh if fresh.type == tt
                            else V.Cast(fresh, tt), line))
        return pre

    def slice_store(self, target: V.Index, value: V.Expr, line: int) -> list:
        pre: list = []
        tv = self.tmp(target.type, "gt")
        pre.append(V.Assign(tv, target, line))
        e = self.leaves(value, pre, line)
        nd = target.type.ndim  # type: ignore[union-attr]
        arrays = self.arrays_of(e)
        dims: list[V.Expr] = [V.Dim(tv, k) for k in range(nd)]
        for a in arrays:
            for k in range(a.type.ndim):  # type: ignore[union-attr]
                d = nd - a.type.ndim + k  # type: ignore[union-attr]
                n = V.Dim(a, k)
                bad = V.Logical("and", V.Compare("ne", n, V.Const(1, _I), T.BOOL),
                                V.Compare("ne", n, dims[d] if d >= 0 else V.Const(-1, _I), T.BOOL))
                pre.append(V.If(bad, (V.Raise("ValueError", f"line {line}: could not broadcast "
                                              "input array into the slice's shape", line),), (), line))
        pre.append(self.loop(tv, dims, e, line, False))
        return pre


def lower_sections(m: V.Module) -> V.Module:
    """Element-wise array statements inside GPU sections as parallel loops (module docstring)."""
    fns = []
    for f in m.functions:
        if not any(isinstance(n, V.GpuSection) for n in nodes(f.body)):
            fns.append(f)
            continue
        lw = _Lowerer(f)
        body = lw.block(f.body, False)
        syms = tuple(V.Sym(n, t) for n, t in lw.syms.items())
        fns.append(dataclasses.replace(f, body=body, symbols=syms))
    return dataclasses.replace(m, functions=tuple(fns))


def has_sections(m: V.Module) -> bool:
    return any(isinstance(n, V.GpuSection) for n in nodes(m.functions))
