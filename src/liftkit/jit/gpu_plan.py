"""Planning the GPU sections of a module (seed 003 §5.8): which statements are kernels, library
calls or host statements, and what the runtime needs to know about each — the arrays a kernel
reads and writes, those whose values die in the section (freed without a download), those with
undefined contents (never uploaded), what a host statement touches. Alias analysis (§5.4) gives
the kernels their ``restrict`` qualifiers."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

from . import types as T
from . import vrir as V
from .gpu_codegen import GpuKernel, KernelWriter, lift_map
from .passes.walk import children, nodes

@dataclass(frozen=True)
class HostAccess:
    """Arrays a host statement inside a section reads or writes (synchronised before it)."""
    arrays: tuple[tuple[str, T.ArrayType, bool], ...]


@dataclass(frozen=True)
class LibraryCall:
    """A library operator of a section run on Lift kernels (gpu_library): ``op`` (mm, gemv,
    gemvt, dot, sum), its array operands (for mm and GEMV the result first) and the scalar
    result's type."""
    op: str
    arrays: tuple[tuple[str, T.ArrayType], ...]
    result: T.ScalarType | None
    line: int
    dead: frozenset[str] = frozenset()


@dataclass
class GpuPlan:
    """Every kernel, library call and host access of a module's sections, numbered in module
    order (the numbers are compiled into the machine code, so a disk-cache hit gets the same
    plan)."""
    kernels: list[GpuKernel]
    accesses: list[HostAccess]
    kernel_ids: dict[int, int]
    access_ids: dict[int, int]
    sections: dict[int, int]
    libraries: list[LibraryCall] = field(default_factory=list)
    library_ids: dict[int, int] = field(default_factory=dict)
    returned: dict[int, frozenset] = field(default_factory=dict)  # section -> returned-only
    host_uses: tuple[tuple[str, int], ...] = ()  # (array, line) the host reads or writes


def library_call(s: V.Stmt) -> V.LibCall | None:
    """The ``lift_*`` library call statement ``s`` is, if it is one."""
    v = s.value if isinstance(s, V.ExprStmt) or (isinstance(s, V.Assign) and
                                                  isinstance(s.target, V.Name)) else None
    if isinstance(v, V.LibCall) and v.fn.startswith("lift_"):
        return v
    return None


_NEW = ("zeros", "ones", "empty", "full", "arange")  # library calls returning new memory
_NEW_OR_COPY = _NEW + ("copy",)


def _fresh_arrays(f: V.Function) -> set[str]:
    """Array variables only ever assigned newly allocated arrays (alias analysis, §5.4)."""
    fresh: dict[str, bool] = {}
    for n in nodes(f.body):
        if isinstance(n, V.Assign) and isinstance(n.target, V.Name) and \
                isinstance(n.target.type, T.ArrayType):
            v = n.value
            new = isinstance(v, V.LibCall) and v.fn in _NEW_OR_COPY
            fresh[n.target.name] = fresh.get(n.target.name, True) and new
    return {k for k, ok in fresh.items() if ok and k not in f.params}


def _owned_arrays(f: V.Function) -> set[str]:
    """Array variables holding only memory the function allocated (copies of such names
    included): nothing outside the function can see them."""
    assigns: dict[str, list] = {}
    for n in nodes(f.body):
        if isinstance(n, V.Assign) and isinstance(n.target, V.Name) and \
                isinstance(n.target.type, T.ArrayType):
            assigns.setdefault(n.target.name, []).append(n.value)
    owned = {k for k in assigns if k not in f.params}
    changed = True
    while changed:
        changed = False
        for k in list(owned):
            if not all((isinstance(v, V.LibCall) and v.fn in _NEW_OR_COPY) or
                       (isinstance(v, V.Name) and v.name in owned) for v in assigns[k]):
                owned.discard(k)
                changed = True
    return owned


def _dead_after(f: V.Function, section: V.GpuSection, owned: set,
                loop: bool = False) -> frozenset[str]:
    """Owned arrays whose memory nothing outside ``section`` can reach: neither they nor any
    array variable copied from or to them (``x = y``) is mentioned outside it — their
    allocation before it apart, unless the section runs in a loop (its next run reads them)."""
    outside: set[str] = set()

    def walk(x: object) -> None:
        if not loop and isinstance(x, V.Assign) and isinstance(x.target, V.Name) and \
                x.target.name in owned and isinstance(x.value, V.LibCall) and x.value.fn in _NEW:
            walk(x.value.args)  # the allocation itself
            return
        if x is section:  # what a return inside it (@jit(target="gpu")) hands out escapes
            for r in nodes(section.body):
                if isinstance(r, V.Return):
                    walk(r.value)
            return
        if isinstance(x, V.Name):
            outside.add(x.name)
        for c in children(x):
            walk(c)
    walk(f.body)
    group = _groups(f, owned)
    outside.add("$escapes")
    return frozenset(k for k in owned if not group[k] & outside)


def _groups(f: V.Function, owned: set) -> dict[str, set]:
    """Owned names sharing memory through copies (``x = y``); a group copied to or from a name
    that is not owned (``r = new`` with ``r`` a parameter's name too) escapes: it is grouped
    with that name, which is always mentioned elsewhere (the ``"$escapes"`` marker)."""
    group = {k: {k} for k in owned}
    for n in nodes(f.body):
        if isinstance(n, V.Assign) and isinstance(n.target, V.Name) and \
                isinstance(n.value, V.Name) and isinstance(n.target.type, T.ArrayType):
            a, b = n.target.name, n.value.name
            if a in owned and b in owned:
                merged = group[a] | group[b]
            elif a in owned or b in owned:
                merged = group[a if a in owned else b] | {"$escapes"}
            else:
                continue
            for k in merged:
                if k in group:
                    group[k] = merged
    return group


def _returned_only(f: V.Function, section: V.GpuSection, owned: set) -> frozenset[str]:
    """Owned arrays that, outside ``section``, are only returned (by name or in a tuple): with
    GPU arrays among the arguments they leave the call on the device, never downloaded."""
    outside: set[str] = set()
    ret: set[str] = set()


    def walk(x: object) -> None:
        if x is section:  # a return inside it (@jit(target="gpu")) ends it first
            for r in nodes(section.body):
                if isinstance(r, V.Return):
                    walk(r)
            return
        if isinstance(x, V.Dim) and isinstance(x.array, V.Name):  # a shape is no data use
            return
        if isinstance(x, V.Assign) and isinstance(x.target, V.Name) and x.target.name in owned \
                and isinstance(x.value, V.LibCall) and x.value.fn in _NEW:
            walk(x.value.args)  # the allocation itself
            return
        if isinstance(x, V.Return) and x.value is not None:
            items = x.value.items if isinstance(x.value, V.TupleExpr) else (x.value,)
            for i in items:
                if isinstance(i, V.Name):
                    ret.add(i.name)
                else:
                    walk(i)
            return
        if isinstance(x, V.Name):
            outside.add(x.name)
        for c in children(x):
            walk(c)
    walk(f.body)
    group = _groups(f, owned)
    outside.add("$escapes")
    return frozenset(k for k in owned if group[k] & ret and not group[k] & outside)


def host_uses(f: V.Function) -> tuple[tuple[str, int], ...]:
    """(array, line) for every array whose data host code of ``f`` reads or writes — statements
    outside kernels and library calls, parallel loops outside sections (run on the CPU) — with
    the array variables assigned from it (``B = A``, views) counted as it."""
    out: list[tuple[str, int]] = []

    def body(stmts: tuple, gpu: bool) -> None:
        for st in stmts:
            if isinstance(st, V.GpuSection):
                body(st.body, True)
            elif isinstance(st, V.ParFor):
                if not gpu:
                    out.extend((n.name, st.line) for n in nodes(st.body)
                               if isinstance(n, V.Name) and isinstance(n.type, T.ArrayType))
            elif gpu and library_call(st) is not None:
                continue
            else:
                out.extend((a, getattr(st, "line", 0)) for a, _, _ in
                           host_arrays(_header(st), set()))
                for part in ((st.then, st.orelse) if isinstance(st, V.If) else
                             (st.body,) if isinstance(st, (V.For, V.While)) else ()):
                    body(part, gpu)
    body(f.body, False)
    alias: dict[str, set[str]] = {}  # name -> the names it may share memory with
    for n in nodes(f.body):
        if isinstance(n, V.Assign) and isinstance(n.target, V.Name) and \
                isinstance(n.target.type, T.ArrayType):
            root = n.value  # a copy of the variable or a view of it shares its memory
            while isinstance(root, V.Index) and isinstance(root.type, T.ArrayType):
                root = root.array
            if isinstance(root, V.Name):
                alias.setdefault(n.target.name, set()).add(root.name)
    seen = dict.fromkeys(out)
    changed = True
    while changed:
        changed = False
        for name, line in list(seen):
            for src in alias.get(name, ()):
                if (src, line) not in seen:
                    seen[(src, line)] = None
                    changed = True
    return tuple(seen)


def _undefined_arrays(f: V.Function, owned: set) -> set[str]:
    """Arrays allocated by ``np.empty`` (or copies of such names) that the host never reads or
    writes and that only one section, outside any loop, uses: their first kernel's writes need
    no upload of the (undefined) host contents."""
    def empty(v: object) -> bool:
        return isinstance(v, V.LibCall) and v.fn == "empty"
    cand = {k for k in owned if all(empty(n.value) or isinstance(n.value, V.Name)
                                    for n in nodes(f.body) if isinstance(n, V.Assign)
                                    and isinstance(n.target, V.Name) and n.target.name == k)}
    changed = True
    while changed:
        changed = False
        for k in list(cand):
            for n in nodes(f.body):
                if isinstance(n, V.Assign) and isinstance(n.target, V.Name) and \
                        n.target.name == k and isinstance(n.value, V.Name) and \
                        n.value.name not in cand:
                    cand.discard(k)
                    changed = True
                    break
    touched = {a for a, _, _ in host_arrays(f.body, set())}
    seen: dict[str, int] = {}

    def host_stmts(body: tuple) -> None:
        """What the host statements of a section touch (kernels and library calls apart)."""
        for st in body:
            if isinstance(st, V.ParFor) or library_call(st) is not None:
                continue
            touched.update(a for a, _, _ in host_arrays(_header(st), set()))
            if isinstance(st, V.If):
                host_stmts(st.then)
                host_stmts(st.orelse)
            elif isinstance(st, (V.For, V.While, V.GpuSection)):
                host_stmts(st.body)

    def visit(body: tuple, loop: bool) -> None:
        for st in body:
            if isinstance(st, V.GpuSection):
                names = {n.name for n in nodes(st.body) if isinstance(n, V.Name)}
                for nm in names:
                    seen[nm] = seen.get(nm, 0) + (2 if loop else 1)
                host_stmts(st.body)
                continue
            if isinstance(st, V.If):
                visit(st.then, loop)
                visit(st.orelse, loop)
            elif isinstance(st, (V.For, V.While, V.ParFor)):
                visit(st.body, True)
    visit(f.body, False)
    return {k for k in cand if k not in touched and seen.get(k, 0) == 1}


def _kernel(s: V.ParFor, f: V.Function, idx: int, raises: list, noalias: bool,
            fresh: set, switches: dict) -> GpuKernel:
    symtab = f.symtab()
    private = set(s.vars)
    for n in nodes(s.body):
        if isinstance(n, V.Assign) and isinstance(n.target, V.Name):
            private.add(n.target.name)
        elif isinstance(n, V.For):
            private.add(n.var)
    used: dict[str, None] = {}
    data, writes = set(), set()
    for n in nodes(s.body):
        if isinstance(n, V.Name) and n.name not in private:
            used[n.name] = None
        if isinstance(n, V.Index) and isinstance(n.array, V.Name):
            data.add(n.array.name)
        if isinstance(n, V.Assign) and isinstance(n.target, V.Index) and \
                isinstance(n.target.array, V.Name):
            writes.add(n.target.array.name)
    reads = set()
    for n in nodes(s.body):
        if isinstance(n, V.Assign) and isinstance(n.target, V.Index):
            for m in nodes((n.value, n.target.indices)):
                if isinstance(m, V.Index) and isinstance(m.array, V.Name):
                    reads.add(m.array.name)
        elif isinstance(n, V.Index) and isinstance(n.array, V.Name):
            reads.add(n.array.name)
    reads -= {w for w in writes if not _reads_target(s.body, w)}
    captured = [(n, symtab[n]) for n in used]
    arrays = [n for n, t in captured if isinstance(t, T.ArrayType) and n in data]
    restrict = all((noalias and a in f.params) or a in fresh for a in arrays)
    mode = "loop"
    if s.vars and s.vars[0].startswith("ew$w"):
        mode = "whole"
    elif s.vars and s.vars[0].startswith("ew$s"):
        mode = "slice"
    name = f"lk_{re.sub(r'[^A-Za-z0-9_]', '_', f.name)}_{idx}"
    writers = [(d, KernelWriter(d, s, symtab, name, raises, restrict, captured, data, writes,
                                switches.get("lanes"))) for d in ("opencl", "cuda")]
    sources = tuple((d, w.write()) for d, w in writers)
    lift = None
    if mode == "whole" and len(s.body) == 1 and isinstance(s.body[0], V.Assign) and \
            isinstance(s.body[0].target.type, T.ScalarType) and s.body[0].target.type.is_float:
        lift = lift_map(s.body[0].value, s.body[0].target.type)
    return GpuKernel(name, s.line, tuple(captured), frozenset(data), frozenset(reads),
                     frozenset(writes), len(s.vars), mode, sources, lift=lift,
                     fails=any(w.fails for _, w in writers))


def _reads_target(body: tuple, name: str) -> bool:
    """Does the loop body read array ``name`` (not only store into it)?"""
    for n in nodes(body):
        if isinstance(n, V.Assign) and isinstance(n.target, V.Index):
            if any(isinstance(m, V.Index) and isinstance(m.array, V.Name) and
                   m.array.name == name for m in nodes((n.value, n.target.indices))):
                return True
        elif isinstance(n, (V.If, V.While, V.For, V.ExprStmt)):
            for part in ((n.cond,) if isinstance(n, (V.If, V.While)) else
                         (n.start, n.stop, n.step) if isinstance(n, V.For) else (n.value,)):
                if any(isinstance(m, V.Index) and isinstance(m.array, V.Name) and
                       m.array.name == name for m in nodes(part)):
                    return True
    return False


def host_arrays(parts: tuple, written: set) -> tuple[tuple[str, T.ArrayType, bool], ...]:
    """Arrays whose data the host expressions ``parts`` touch, with whether they may be written.
    Pointer operations do not count: copying an array variable, taking a view, asking a shape,
    packing arrays into a tuple or returning them."""
    seen: dict[str, tuple] = {}

    def root(x: object) -> object:
        while isinstance(x, V.Index):
            x = x.array
        return x

    def walk(x: object, data: bool) -> None:
        if isinstance(x, V.Name):
            if data and isinstance(x.type, T.ArrayType):
                seen[x.name] = (x.name, x.type, x.name in written)
            return
        if isinstance(x, V.Dim):
            if not isinstance(x.array, V.Name):
                walk(x.array, False)
            return
        if isinstance(x, V.Index):
            element = not isinstance(x.type, T.ArrayType)
            walk(x.array, element)
            for i in x.indices:
                walk(i, True)
            return
        if isinstance(x, V.Assign):
            if isinstance(x.target, V.Index):
                walk(root(x.target), True)
                walk(x.target, False)
                walk(x.value, True)
            else:
                walk(x.value, False)
            return
        if isinstance(x, (V.Return, V.ExprStmt)):
            walk(x.value, False)
            return
        if isinstance(x, (V.TupleExpr, V.TupleGet)):
            for c in (x.items if isinstance(x, V.TupleExpr) else (x.tuple,)):
                walk(c, data)
            return
        if isinstance(x, (V.Function, V.ParFor, V.GpuSection)):
            return
        if isinstance(x, tuple):
            for i in x:
                walk(i, data)
        elif hasattr(x, "__dataclass_fields__") and not isinstance(
                x, (T.ScalarType, T.ArrayType, T.TupleType, T.DomainType, V.Check)):
            for fld in x.__dataclass_fields__:
                walk(getattr(x, fld), True)
    walk(parts, True)
    return tuple(seen.values())


def plan_sections(m: V.Module, noalias: bool, raises: list,
                  switches: dict | None = None) -> GpuPlan:
    """Kernels and host accesses of every section of ``m`` (see :class:`GpuPlan`). Of the
    jit's pass ``switches``: ``lanes``, lanes sharing a reduction loop on CUDA
    (``gpu_lanes.lane_plan``: None chooses per launch, False none, n that many)."""
    plan = GpuPlan([], [], {}, {}, {})
    for f in m.functions:
        fresh = _fresh_arrays(f)
        owned = _owned_arrays(f)
        undefined = frozenset(_undefined_arrays(f, owned))
        dead: frozenset[str] = frozenset()

        def stmts(body: tuple, gpu: bool, loop: bool = False) -> None:
            nonlocal dead
            for s in body:
                if isinstance(s, V.GpuSection):
                    if not gpu:
                        plan.returned[len(plan.sections)] = _returned_only(f, s, owned)
                        plan.sections[id(s)] = len(plan.sections)
                        dead = _dead_after(f, s, owned, loop)
                    stmts(s.body, True)
                    continue
                if gpu and isinstance(s, V.ParFor):
                    plan.kernel_ids[id(s)] = len(plan.kernels)
                    k = _kernel(s, f, len(plan.kernels), raises, noalias, fresh,
                                switches or {})
                    plan.kernels.append(dataclasses.replace(k, dead=dead,
                                                            undefined=undefined & k.writes))
                    continue
                lib = library_call(s) if gpu else None
                if lib is not None:
                    plan.library_ids[id(s)] = len(plan.libraries)
                    plan.libraries.append(LibraryCall(
                        lib.fn[5:], tuple((a.name, a.type) for a in lib.args),  # type: ignore
                        lib.type if isinstance(lib.type, T.ScalarType) else None, s.line, dead))
                    continue
                if gpu:
                    plan.access_ids[id(s)] = len(plan.accesses)
                    plan.accesses.append(HostAccess(host_arrays(_header(s), _written(s))))
                if isinstance(s, V.If):
                    stmts(s.then, gpu, loop)
                    stmts(s.orelse, gpu, loop)
                elif isinstance(s, (V.For, V.While, V.ParFor)):
                    stmts(s.body, gpu, True)
        stmts(f.body, False)
    plan.host_uses = host_uses(m.functions[0])
    return plan


def _header(s: V.Stmt) -> tuple:
    """What the host evaluates of ``s`` itself (a compound statement's body is planned apart)."""
    if isinstance(s, V.If):
        return (s.cond,)
    if isinstance(s, V.While):
        return (s.cond,)
    if isinstance(s, V.For):
        return (s.start, s.stop, s.step)
    return (s,)


def _written(s: V.Stmt) -> set:
    out = set()
    for n in nodes(s if not isinstance(s, (V.If, V.While, V.For)) else _header(s)):
        if isinstance(n, V.Assign) and isinstance(n.target, V.Index):
            root = n.target.array
            while isinstance(root, V.Index):
                root = root.array
            if isinstance(root, V.Name):
                out.add(root.name)
        if isinstance(n, V.Call):
            out |= {a.name for a in n.args if isinstance(a, V.Name) and
                    isinstance(a.type, T.ArrayType)}
    return out
