"""Kernel boundaries: where a program must be cut into several kernels, and what is refused
because no cut can make it right.

OpenCL (and CUDA) have no barrier across work-groups inside a kernel, so a value written to
global memory by the work-items of a parallel map can only be read safely by a later kernel.
`split_stages` cuts the program where a top-level computation reads another one's result (the
papers' two-kernel reductions) and unrolls an `iterate` whose function contains a parallel map
over the whole NDRange into one kernel per step. `check_no_unsynchronised_reads` refuses, in
pattern words, what remains racy inside one kernel: a parallel map's result read inside a
pattern's function, a loop (iterate, reduceSeq) whose steps need a global barrier, and a loop
that every work-item of a group runs over the group's shared memory.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Optional

from liftkit.codegen.views import CodegenError
from liftkit.ir import patterns as P
from liftkit.ir.nodes import Expr, FunCall, FunDecl, Lambda, Literal, Param, apply, substitute, walk
from liftkit.ir.typecheck import TypeChecker, layout_only
from liftkit.ir.userfuns import id_of
from liftkit.types import ArrayType, TupleType, Type

LAYOUT = (P.Split, P.Join, P.Zip, P.Unzip, P.Get, P.Tuple, P.Id, P.Reorder, P.ReorderStride,
          P.Gather, P.Scatter, P.Transpose, P.Slide, P.Pad, P.Crop, P.AsVector, P.AsScalar, P.At,
          P.Streamed)
LOOPS = (P.Iterate, P.AbstractReduce)


def is_layout(f: FunDecl) -> bool:
    """A data-layout pattern, or a map of a function that only rearranges data: both are views."""
    return isinstance(f, LAYOUT) or (isinstance(f, P.Map) and layout_only(f.f))


def global_map_in(f: FunDecl) -> Optional[P.ParallelMap]:
    """The first mapGlb or mapWrg inside f: its work-items span work-groups, so reading its
    result needs a barrier across work-groups (a new kernel)."""
    return next((n for n in walk(f) if isinstance(n, (P.MapGlb, P.MapWrg, P.LastWrg))), None)


@dataclass(frozen=True)
class Stage:
    param: Optional[Param]  # the intermediate result it produces (None for the final stage)
    body: Expr
    step: bool = False  # a step of an iterate run as one kernel per step


def split_stages(program: Lambda) -> list[Stage]:
    """Cut the program where a top-level computation consumes another one's result.

    Top level means outside every map's function: code there runs in every thread of a
    kernel, so a sequential reduction of a parallel map's result must run after it, in a kernel
    of its own (one work-item). An iterate whose function contains a mapGlb or mapWrg becomes
    one kernel per step; a top-level loop that reads back what its previous step wrote to
    memory (iterate, reduceSeq over an array) and is not its kernel's whole result gets a
    kernel of its own, since every work-item of a kernel runs top-level code (the final kernel
    copies its result with a mapGlb)."""
    stages: list[Stage] = []
    types = {p: p.type for p in program.params}

    def stage(call: Expr, step: bool = False) -> Param:
        t = TypeChecker().expr(call, types)
        p = Param(f"stage{len(stages)}", t)
        types[p] = t
        stages.append(Stage(p, call, step))
        return p

    def visit(e: Expr, feeds_compute: bool, root: bool) -> Expr:
        if isinstance(e, (Param, Literal)):
            return e
        assert isinstance(e, FunCall)
        f = e.f
        if isinstance(f, Lambda):
            args = [visit(a, True, False) for a in e.args]
            reduced = apply(f, args)
            if isinstance(reduced, FunCall) and reduced.f is f:
                # a let: its arguments are now inputs or views of them (computations became
                # kernels), so substituting them moves no computation; its body is split too
                reduced = substitute(f.body, dict(zip(f.params, args)))
            return visit(reduced, feeds_compute, root)
        if is_layout(f):
            return FunCall(f, tuple(visit(a, feeds_compute, root and len(e.args) == 1)
                                    for a in e.args))
        loop = _unwrapped(f)
        if isinstance(loop, P.Iterate) and global_map_in(loop.f) is not None:
            # each step's result is a kernel's output in global memory, whatever an address
            # space wrapper around the iterate asked for
            cur = visit(e.args[0], True, False)
            k = loop.count()
            for step in range(k):
                last = step == k - 1
                first = len(stages)
                cur = visit(apply(loop.f, [cur]), feeds_compute if last else True, root and last)
                if not last and not _is_view(cur):
                    cur = stage(cur)
                for j in range(first, len(stages)):
                    stages[j] = replace(stages[j], step=True)
            return cur
        call = FunCall(f, tuple(visit(a, True, False) for a in e.args))
        if not feeds_compute and (root or not _state_in_memory(call, types)):
            return call
        done = stage(call)
        return done if feeds_compute else _copied(done)

    final = visit(program.body, False, True)
    stages.append(Stage(None, final))
    return stages


def _copied(p: Param) -> Expr:
    """A stage's result as part of the final kernel's result: copied by a mapGlb."""
    assert isinstance(p.type, ArrayType)
    return FunCall(P.MapGlb(_copy_fn(p.type.elem), 0), (p,))


def _copy_fn(t: Type) -> FunDecl:
    return P.MapSeq(_copy_fn(t.elem)) if isinstance(t, ArrayType) else id_of(t)


def _unwrapped(f: FunDecl) -> FunDecl:
    while isinstance(f, P.AddressSpaceWrapper):
        f = f.f  # type: ignore[assignment]
    return f


def _state_in_memory(call: FunCall, types: dict[Param, Type]) -> bool:
    """A loop that reads back what its previous step wrote to memory: an iterate (its two
    buffers), or a reduction whose accumulator holds an array (updated in place)."""
    f = _unwrapped(call.f)
    if isinstance(f, P.Iterate):
        return True
    if not isinstance(f, P.AbstractReduce):
        return False
    acc = TypeChecker().expr(call.args[0], types)
    return _holds_array(acc)


def _holds_array(t: Optional[Type]) -> bool:
    return isinstance(t, ArrayType) or (
        isinstance(t, TupleType) and any(isinstance(x, ArrayType) for x in t.elems))


def _is_view(e: Expr) -> bool:
    """Only data-layout patterns over inputs and stage results: nothing left to compute."""
    return all(not isinstance(n, FunCall) or is_layout(n.f) for n in walk(e)
               if isinstance(n, (Param, FunCall, Literal)))


def kernel_structure_error(program: Lambda) -> Optional[str]:
    """Why the code generator would refuse this OpenCL-level program's kernel structure (a
    parallel map's result read in the kernel that computes it), or None. Cheap: no code is
    generated; the exploration uses it to keep walking past such programs."""
    try:
        for st in split_stages(program):
            check_no_unsynchronised_reads(st.body)
    except CodegenError as err:
        return str(err)
    return None


def check_no_unsynchronised_reads(body: Expr) -> None:
    """Refuse what would race inside one kernel.

    Inside a pattern's function (a kernel's threads), the result of a mapGlb or mapWrg may
    only flow out through data-layout patterns: work-items of other work-groups write it, and
    OpenCL has no barrier across work-groups, so a computation reading it in the same kernel
    (a reduceSeq of a nested mapGlb's results, say) would race. At a stage's top level
    `split_stages` starts a new kernel instead. For the same reason a loop whose function
    contains a mapGlb or mapWrg is refused unless `split_stages` unrolled it into kernels."""

    def flows(e: Expr, consumer: Optional[str]) -> None:
        if not isinstance(e, FunCall):
            return
        f = e.f
        if isinstance(f, (P.MapGlb, P.MapWrg)) and consumer is not None:
            raise CodegenError(
                f"{f.name}({f.dim})'s result is read by {consumer} in the same kernel: other "
                "work-groups write it and OpenCL cannot synchronise them; let the parallel map "
                "produce the function's result, or compute it at the top level (a kernel of "
                "its own)")
        if isinstance(f, Lambda):
            into = consumer if layout_only(f) else (consumer or "the function applied to it")
            for a in e.args:
                flows(a, into)
            flows(f.body, consumer)
            return
        into = consumer if is_layout(f) else _label(f)
        for a in e.args:
            flows(a, into)

    for node in walk(body):
        if isinstance(node, P.Pattern):
            if isinstance(node, LOOPS):
                _check_loop(node)
            for fn in node.functions():
                if isinstance(fn, Lambda):
                    flows(fn.body, None)
    _check_group_loops(body)


def _check_loop(loop: P.Pattern) -> None:
    inner = global_map_in(loop.f)  # type: ignore[attr-defined]
    if inner is None:
        return
    what = f"{inner.name}({inner.dim})"
    if isinstance(loop, P.Iterate):
        raise CodegenError(
            f"iterate's function contains {what}: each step reads what other work-groups wrote "
            "in the previous one, and OpenCL cannot synchronise work-groups inside a kernel; "
            "put the iterate at the top level of the program (it then runs as one kernel per "
            "step)")
    raise CodegenError(
        f"{loop.name}'s function contains {what}: each step reads the accumulator other "
        "work-groups wrote in the previous one, and OpenCL cannot synchronise work-groups "
        "inside a kernel; reduce inside the parallel map instead (e.g. "
        f"{inner.name}(reduceSeq(f)) ∘ transpose)")


class _LoopRecorder(TypeChecker):
    """Type checker that notes every loop call with its enclosing patterns and, for a
    reduction, whether its accumulator lives in shared memory."""

    def __init__(self) -> None:
        super().__init__()
        self.loops: list[tuple[FunCall, tuple[P.Pattern, ...], bool]] = []

    def expr(self, e, env, enclosing=()):  # type: ignore[no-untyped-def]
        t = super().expr(e, env, enclosing)
        if isinstance(e, FunCall) and isinstance(e.f, LOOPS):
            shared = True
            if isinstance(e.f, P.AbstractReduce):
                init = e.args[0]
                if isinstance(init, FunCall):
                    acc = self.types.get(id(init))
                elif isinstance(init, Param):
                    acc = env.get(init, init.type)
                else:
                    acc = init.type  # type: ignore[union-attr]
                private = any(isinstance(n, P.ToPrivate) for n in walk(init))
                shared = _holds_array(acc) and not private
            self.loops.append((e, enclosing, shared))
        return t


def _check_group_loops(body: Expr) -> None:
    """Inside a mapWrg but outside its mapLcl, every work-item of the group runs the code; a
    loop there that keeps its state in shared memory (iterate's buffers, an array accumulator
    not in private memory) must share out each step with a mapLcl, whose barrier orders the
    steps; otherwise fast work-items overwrite what slow ones still read."""
    rec = _LoopRecorder()
    rec.expr(body, {})
    for call, enclosing, shared in rec.loops:
        loop: Any = call.f
        in_wrg = any(isinstance(e, P.MapWrg) for e in enclosing)
        in_thread = any(isinstance(e, (P.MapLcl, P.MapGlb)) for e in enclosing)
        if (in_wrg and not in_thread and shared
                and not any(isinstance(m, P.MapLcl) for m in walk(loop.f))):
            raise CodegenError(
                f"{loop.name} inside mapWrg but outside mapLcl runs in every work-item of the "
                "group over the group's shared memory, and each step reads what the previous "
                "step wrote: share out each step with mapLcl (its barrier orders the steps), "
                "or move the loop into a mapLcl")


def _label(f: FunDecl) -> str:
    return getattr(f, "name", None) or type(f).__name__
