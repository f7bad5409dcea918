"""LLVM code generation, runtime support emitted into every module (seed 003 §5.7.3):

* ``lk_alloc``: arrays allocated by compiled code come from ``malloc`` and are chained into a
  per-call arena (environment slot 5) that ``lk_free`` releases after the call returns;
* parallel loops: the body is outlined into ``i32 body(env, closure, lo, hi)`` and handed to
  the process-wide worker pool (``cg_pool``) whose entry point is environment slot 7;
* ``lk_entry``: unpacks the argument block the dispatcher fills and calls the function.

Environment slots (i64): 0 error kind, 1 line, 2-4 error details, 5 arena head, 6 threads,
7 the pool's parallel-for entry."""

from __future__ import annotations

from llvmlite import ir

from . import types as T
from . import vrir as V
from .cg_pool import BODY_TY, POOL_TY
from .cg_scalar import I32, I64, I64P, PTR
from .codegen import ERR_MEMORY, FunctionCodegen, ModuleContext, flat_types, nslots


def _c(v: int) -> ir.Constant:
    return ir.Constant(I64, v)


def _libc(mod: ir.Module, name: str, ty: ir.FunctionType) -> ir.Function:
    fn = mod.globals.get(name)
    if fn is None:
        fn = ir.Function(mod, ty, name)
    return fn


def runtime_alloc_fn(mod: ir.Module) -> ir.Function:
    fn = mod.globals.get("lk_alloc")
    if fn is not None:
        return fn
    malloc = _libc(mod, "malloc", ir.FunctionType(PTR, [I64]))
    fn = ir.Function(mod, ir.FunctionType(PTR, [I64P, I64]), "lk_alloc")
    fn.linkage = "internal"
    fn.return_value.add_attribute("noalias")
    env, n = fn.args
    b = ir.IRBuilder(fn.append_basic_block())
    p = b.call(malloc, [b.add(n, _c(64))])
    ok = b.append_basic_block("ok")
    bad = b.append_basic_block("bad")
    b.cbranch(b.icmp_unsigned("==", b.ptrtoint(p, I64), _c(0)), bad, ok)
    b.position_at_end(bad)
    b.ret(ir.Constant(PTR, None))
    b.position_at_end(ok)
    if "linux" in mod.triple:
        _advise_huge_pages(b, mod, p, n)
    head = b.gep(env, [_c(5)])
    hdr = b.bitcast(p, I64P)
    b.store(b.load(head), hdr)                 # header: next block, payload size
    b.store(n, b.gep(hdr, [_c(1)]))
    b.store(b.ptrtoint(p, I64), head)
    b.ret(b.gep(p, [_c(64)]))
    return fn


HUGE_PAGE_MIN = 4 << 20  # NumPy's threshold for asking Linux for huge pages
MADV_HUGEPAGE = 14


def _advise_huge_pages(b: ir.IRBuilder, mod: ir.Module, p: ir.Value, n: ir.Value) -> None:
    """Large blocks ask for transparent huge pages, as NumPy's allocator does: the first touch
    of a fresh 128 MiB array costs ~9 ms instead of ~47 ms (4 KiB page faults; measured on the
    development machine), which a GPU section's download into it pays too."""
    madvise = _libc(mod, "madvise", ir.FunctionType(ir.IntType(32), [PTR, I64, ir.IntType(32)]))
    big = b.append_basic_block("huge")
    done = b.append_basic_block("huge.done")
    b.cbranch(b.icmp_unsigned(">=", n, _c(HUGE_PAGE_MIN)), big, done)
    b.position_at_end(big)
    lo = b.ptrtoint(b.gep(p, [_c(64)]), I64)
    start = b.and_(b.add(lo, _c(4095)), _c(~4095))
    length = b.and_(b.sub(b.add(lo, n), start), _c(~4095))
    b.call(madvise, [b.inttoptr(start, PTR), length, ir.Constant(ir.IntType(32), MADV_HUGEPAGE)])
    b.branch(done)
    b.position_at_end(done)


def alloc(cg: FunctionCodegen, nbytes: ir.Value) -> ir.Value:
    """``nbytes`` of fresh memory (MemoryError when malloc fails)."""
    p = cg.b.call(runtime_alloc_fn(cg.ctx.module), [cg.env, nbytes])
    cg.fail_if(cg.b.icmp_unsigned("==", cg.b.ptrtoint(p, I64), _c(0)), ERR_MEMORY, nbytes)
    return p


def build_free(mod: ir.Module) -> None:
    """``lk_free(env)``: release the call's arena."""
    free = _libc(mod, "free", ir.FunctionType(ir.VoidType(), [PTR]))
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [I64P]), "lk_free")
    env = fn.args[0]
    b = ir.IRBuilder(fn.append_basic_block())
    head = b.gep(env, [_c(5)])
    loop = b.append_basic_block("loop")
    body = b.append_basic_block("body")
    done = b.append_basic_block("done")
    first = b.load(head)
    pre = b.block
    b.branch(loop)
    b.position_at_end(loop)
    cur = b.phi(I64)
    cur.add_incoming(first, pre)
    b.cbranch(b.icmp_unsigned("==", cur, _c(0)), done, body)
    b.position_at_end(body)
    p = b.inttoptr(cur, I64P)
    nxt = b.load(p)
    b.call(free, [b.bitcast(p, PTR)])
    cur.add_incoming(nxt, body)
    b.branch(loop)
    b.position_at_end(done)
    b.store(_c(0), head)
    b.ret_void()


def free_names(body: tuple, symtab: dict) -> list[str]:
    """Variables a loop body mentions (captured by value into its closure)."""
    seen: dict[str, None] = {}

    def walk(x: object) -> None:
        if isinstance(x, V.Name):
            seen[x.name] = None
        if isinstance(x, V.For):
            seen[x.var] = None
        if isinstance(x, tuple):
            for i in x:
                walk(i)
        elif hasattr(x, "__dataclass_fields__"):
            for f in x.__dataclass_fields__:
                walk(getattr(x, f))
    walk(body)
    return [n for n in seen if n in symtab]


def distinct_arrays(f: V.Function, noalias: bool) -> frozenset[str]:
    """Array variables that own memory no other array variable can reach (alias analysis,
    §5.4): parameters the dispatcher found disjoint (``noalias``) and never reassigned, and
    variables only ever assigned fresh allocations."""
    from .passes.walk import nodes

    alloc = ("zeros", "ones", "empty", "full", "arange", "copy")
    fresh: dict[str, bool] = {}
    for n in nodes(f.body):
        if isinstance(n, V.Assign) and isinstance(n.target, V.Name):
            v = n.value
            fresh[n.target.name] = fresh.get(n.target.name, True) and \
                isinstance(v, V.LibCall) and v.fn in alloc and n.target.name not in f.params
    params = {p for p in f.params if noalias and p not in fresh}
    return frozenset(params | {k for k, ok in fresh.items() if ok})


def _holds_array(t: T.Type) -> bool:
    """A tuple holding arrays can alias any array variable (not tracked by the analysis)."""
    return isinstance(t, T.ArrayType) or (isinstance(t, T.TupleType) and
                                           any(_holds_array(i) for i in t.items))


def parallel_for(cg: FunctionCodegen, s: V.ParFor) -> None:
    """Outline the body of ``s`` and run it on the thread pool; a domain of several
    dimensions is collapsed into one iteration space, so every dimension is shared out."""
    b = cg.b
    dom = s.domain
    nd = len(dom.starts)
    starts = [cg.value(x) for x in dom.starts]
    steps = [cg.value(x) for x in dom.steps]
    counts = [cg.trip_count(st, cg.value(sp), sv, sn)
              for st, sp, sv, sn in zip(starts, dom.stops, steps, dom.steps)]
    total = counts[0]
    for c in counts[1:]:
        total = b.mul(total, c)
    captured = [n for n in free_names(s.body, cg.symtab) if n not in s.vars]
    types = [cg.symtab[n] for n in captured]
    nslot = sum(nslots(t) for t in types) + 3 * nd
    clo = b.alloca(I64, _c(max(nslot, 1)))
    k = 0
    for n, t in zip(captured, types):
        cg.to_slots(t, cg.load_var(n), b.gep(clo, [_c(k)]))
        k += nslots(t)
    for d in range(nd):
        for j, v in enumerate((starts[d], steps[d], counts[d])):
            b.store(v, b.gep(clo, [_c(k + 3 * d + j)]))
    body_fn = _outline(cg, s, captured, types, k, nd)
    if cg.ctx.options.threads:
        # the process-wide pool (cg_pool), its entry point passed in environment slot 7
        pool = b.inttoptr(b.load(b.gep(cg.env, [_c(7)])), POOL_TY.as_pointer())
        st = b.call(pool, [cg.env, body_fn, clo, total])
    else:
        st = b.call(body_fn, [cg.env, clo, _c(0), total])
    bad = b.append_basic_block("par.err")
    ok = b.append_basic_block("par.ok")
    b.cbranch(b.icmp_signed("!=", st, ir.Constant(I32, 0)), bad, ok)
    b.position_at_end(bad)
    b.ret(st)
    b.position_at_end(ok)


def _outline(cg: FunctionCodegen, s: V.ParFor, captured: list, types: list, dom_at: int,
             nd: int) -> ir.Function:
    """``body(env, closure, lo, hi)`` unpacks the closure and calls the loop body, an internal
    function taking the captured values as parameters: arrays that alias analysis proves
    disjoint get ``noalias`` there (LLVM keeps it as scoped metadata when it inlines), which
    the serial code has from its own parameters — without it the outlined loop is not
    vectorised and reloads every array after each store."""
    ctx = cg.ctx
    distinct = distinct_arrays(cg.f, ctx.options.noalias)
    arrays = [n for n, t in zip(captured, types) if isinstance(t, T.ArrayType)]
    tuples = [t for t in types if isinstance(t, T.TupleType) and _holds_array(t)]
    restrict = bool(arrays) and not tuples and all(n in distinct for n in arrays)
    flat = [x for t in types for x in flat_types(t)]
    inner_ty = ir.FunctionType(I32, [I64P, I64, I64] + flat + [I64] * (3 * nd))
    inner = ir.Function(ctx.module, inner_ty, name=ctx.fresh(f"par.body.{cg.f.name}"))
    inner.linkage = "internal"
    inner.attributes.add("alwaysinline")
    fn = ir.Function(ctx.module, BODY_TY, name=ctx.fresh(f"par.{cg.f.name}"))
    fn.linkage = "internal"

    tramp = FunctionCodegen(ctx, cg.f)
    tramp.b = ir.IRBuilder(fn.append_basic_block())
    env, clo, lo, hi = fn.args
    vals: list = [env, lo, hi]
    k = 0
    for t in types:
        vals += tramp.flatten(t, tramp.from_slots(t, tramp.b.gep(clo, [_c(k)])))
        k += nslots(t)
    vals += [tramp.b.load(tramp.b.gep(clo, [_c(dom_at + j)])) for j in range(3 * nd)]
    tramp.b.ret(tramp.b.call(inner, vals))

    sub = FunctionCodegen(ctx, cg.f)
    sub.fn = inner
    sub.env, lo, hi = inner.args[:3]
    sub.result = ir.Constant(I64P, None)
    sub._begin(inner)
    b = sub.b
    args = list(inner.args[3:])
    for n, t in zip(captured, types):
        m = len(flat_types(t))
        part, args = args[:m], args[m:]
        if restrict and isinstance(t, T.ArrayType):
            part[0].add_attribute("noalias")
        sub.store_var(n, sub.unflatten(t, part))
    dom = [args[3 * d:3 * d + 3] for d in range(nd)]
    sub.line = s.line

    def at(d: int, kk: ir.Value) -> None:
        start, step, _ = dom[d]
        sub.store_var(s.vars[d], b.add(start, b.mul(kk, step)))

    if nd == 1:
        def one(kk: ir.Value) -> None:
            at(0, b.add(lo, kk))
            sub.stmts(s.body)
        sub.counted_loop(b.sub(hi, lo), one, name="par0")
    else:
        # [lo, hi) of the collapsed space: whole or partial rows of the last dimension
        run, skip = inner.append_basic_block("par.rows"), inner.append_basic_block("par.none")
        b.cbranch(b.icmp_signed(">", hi, lo), run, skip)
        b.position_at_end(skip)
        b.ret(ir.Constant(I32, 0))
        b.position_at_end(run)
        last = dom[-1][2]
        r0 = b.sdiv(lo, last)
        r1 = b.sdiv(b.sub(b.add(hi, last), _c(1)), last)

        def row(t: ir.Value) -> None:
            r = b.add(r0, t)
            rem = r
            for d in reversed(range(nd - 1)):
                at(d, b.srem(rem, dom[d][2]))
                rem = b.sdiv(rem, dom[d][2])
            base = b.mul(r, last)
            jlo = b.sub(lo, base)
            jlo = b.select(b.icmp_signed(">", jlo, _c(0)), jlo, _c(0))
            jhi = b.sub(hi, base)
            jhi = b.select(b.icmp_signed("<", jhi, last), jhi, last)

            def col(j: ir.Value) -> None:
                at(nd - 1, b.add(jlo, j))
                sub.stmts(s.body)
            sub.counted_loop(b.sub(jhi, jlo), col, name="par.col")
        sub.counted_loop(b.sub(r1, r0), row, name="par.row")
    if not b.block.is_terminated:
        b.ret(ir.Constant(I32, 0))
    return fn


def build_entry(ctx: ModuleContext) -> ir.Function:
    """``i32 lk_entry(env, args, result)``: unpack the argument block, call the function."""
    f = ctx.vrir.functions[0]
    main = ctx.function(f.name)
    fn = ir.Function(ctx.module, ir.FunctionType(I32, [I64P, I64P, I64P]), "lk_entry")
    cg = FunctionCodegen(ctx, f)
    cg.b = ir.IRBuilder(fn.append_basic_block())
    env, args, res = fn.args
    st = cg.symtab
    vals: list = [env]
    k = 0
    for p in f.params:
        v = cg.from_slots(st[p], cg.b.gep(args, [_c(k)]))
        k += nslots(st[p])
        vals += cg.flatten(st[p], v)
    vals.append(res)
    cg.b.ret(cg.b.call(main, vals))
    return fn


__all__ = ["alloc", "build_free", "build_entry", "distinct_arrays", "parallel_for"]
