"""LLVM code generation for accelerated sections (seed 003 §5.8): the host side.

Inside a section, a parallel loop is not run on the CPU: its captured variables and domain are
packed into an i64 block and handed to the task runtime through the callback in environment
slot 12 (``i32 cb(env, op, id, block)``, ops BEGIN/LAUNCH/HOST/END), which enqueues the kernel
and returns at once. Every other statement runs on the host; before it, the arrays whose data it
touches are synchronised (HOST: downloaded if a kernel wrote them, marked stale on the device
if the host writes them). The section's END waits for its kernels, checks their error buffer
and brings the arrays they wrote back to the host. A non-zero status from the callback is an
error the callback already described (environment slots 0-4)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from . import vrir as V
from .cg_scalar import I32, I64, I64P

if TYPE_CHECKING:
    from .codegen import FunctionCodegen

OP_BEGIN, OP_LAUNCH, OP_HOST, OP_END, OP_LIBRARY = 1, 2, 3, 4, 5
ENV_CALLBACK = 12
CALLBACK_TY = ir.FunctionType(I32, [I64P, I64, I64, I64P])


def _c(v: int) -> ir.Constant:
    return ir.Constant(I64, v)


def _block(cg: "FunctionCodegen", n: int) -> ir.Value:
    """An i64 block of ``n`` slots in the entry block (not re-allocated inside loops)."""
    bb = ir.IRBuilder(cg.alloca_block)
    if cg.alloca_block.is_terminated:
        bb.position_before(cg.alloca_block.instructions[-1])
    else:
        bb.position_at_end(cg.alloca_block)
    return bb.alloca(I64, _c(max(n, 1)))


def _call(cg: "FunctionCodegen", op: int, ident: int, block: ir.Value | None = None) -> None:
    b = cg.b
    fn = b.inttoptr(b.load(b.gep(cg.env, [_c(ENV_CALLBACK)])), CALLBACK_TY.as_pointer())
    st = b.call(fn, [cg.env, _c(op), _c(ident), block if block is not None
                     else ir.Constant(I64P, None)])
    bad = b.append_basic_block("gpu.err")
    ok = b.append_basic_block("gpu.ok")
    b.cbranch(b.icmp_signed("!=", st, ir.Constant(I32, 0)), bad, ok)
    b.position_at_end(bad)
    b.ret(st)
    b.position_at_end(ok)


def section(cg: "FunctionCodegen", s: V.GpuSection) -> None:
    """BEGIN, the body (kernels enqueued, host statements synchronised), END."""
    if cg.gpu_sid is not None:  # a section inside a section is part of it
        cg.stmts(s.body)
        return
    sid = cg.ctx.gpu.sections[id(s)]
    _call(cg, OP_BEGIN, sid)
    cg.gpu_sid = sid
    cg.stmts(s.body)
    cg.gpu_sid = None
    if not cg.b.block.is_terminated:
        _call(cg, OP_END, sid)


def end(cg: "FunctionCodegen") -> None:
    """END of the enclosing section (a return inside it)."""
    _call(cg, OP_END, cg.gpu_sid)  # type: ignore[arg-type]


def statement(cg: "FunctionCodegen", s: V.Stmt) -> bool:
    """Inside a section: launch a parallel loop (True), or synchronise what a host statement
    touches and let the caller emit it (False)."""
    plan = cg.ctx.gpu
    if isinstance(s, V.ParFor):
        launch(cg, s, plan.kernel_ids[id(s)])
        return True
    if id(s) in plan.library_ids:
        library(cg, s, plan.library_ids[id(s)])
        return True
    if not isinstance(s, (V.While, V.GpuSection)):
        host(cg, s)
    return False


def host(cg: "FunctionCodegen", s: V.Stmt) -> None:
    plan = cg.ctx.gpu
    aid = plan.access_ids.get(id(s))
    if aid is None or not plan.accesses[aid].arrays:
        return
    from .codegen import nslots
    arrays = plan.accesses[aid].arrays
    blk = _block(cg, sum(nslots(t) for _, t, _ in arrays))
    k = 0
    for name, t, _ in arrays:
        cg.to_slots(t, cg.load_var(name), cg.b.gep(blk, [_c(k)]))
        k += nslots(t)
    _call(cg, OP_HOST, aid, blk)


def launch(cg: "FunctionCodegen", s: V.ParFor, kid: int) -> None:
    """Pack the kernel's captured variables and domain; enqueue it through the runtime."""
    from .codegen import nslots
    kern = cg.ctx.gpu.kernels[kid]
    b = cg.b
    dom = s.domain
    starts = [cg.value(x) for x in dom.starts]
    steps = [cg.value(x) for x in dom.steps]
    counts = [cg.trip_count(st, cg.value(sp), sv, sn)
              for st, sp, sv, sn in zip(starts, dom.stops, steps, dom.steps)]
    total = sum(nslots(t) for _, t in kern.captured) + 3 * len(starts)
    blk = _block(cg, total)
    k = 0
    for name, t in kern.captured:
        cg.to_slots(t, cg.load_var(name), b.gep(blk, [_c(k)]))
        k += nslots(t)
    for d in range(len(starts)):
        for j, v in enumerate((starts[d], steps[d], counts[d])):
            b.store(v, b.gep(blk, [_c(k + 3 * d + j)]))
    _call(cg, OP_LAUNCH, kid, blk)


def library(cg: "FunctionCodegen", s: V.Stmt, lid: int) -> None:
    """A library operator on Lift kernels: its arrays packed, a scalar result read back."""
    from .codegen import nslots
    call = cg.ctx.gpu.libraries[lid]
    n = sum(nslots(t) for _, t in call.arrays)
    blk = _block(cg, n + 1)
    k = 0
    for name, t in call.arrays:
        cg.to_slots(t, cg.load_var(name), cg.b.gep(blk, [_c(k)]))
        k += nslots(t)
    _call(cg, OP_LIBRARY, lid, blk)
    if call.result is not None and isinstance(s, V.Assign) and isinstance(s.target, V.Name):
        cg.store_var(s.target.name, cg.from_slots(call.result, cg.b.gep(blk, [_c(n)])))
