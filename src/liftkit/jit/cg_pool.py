"""The process-wide worker pool for parallel loops (seed 003 §5.7.3), emitted as LLVM IR once
per process and kept loaded by the Runtime (worker threads block inside its code, so it must
outlive every compiled function).

Workers are POSIX threads created on first use and kept, each with a participant number (the
caller is 0). A job is published without locks: the caller stores it in the pool's job slots,
opens the job's state word (generation, open bit, count of joined workers) and bumps a
generation counter. Workers spin on that counter (``pause``, then ``sched_yield``) before they
sleep on a condition variable, which the caller signals only when some worker sleeps; a
worker joins the job by incrementing the count while the job is open. When the caller has run
out of chunks it closes the job and waits (spinning first) only for the workers that joined:
on an oversubscribed machine a worker that was not scheduled in time costs nothing. So
back-to-back parallel loops (lud: two per outer step) cost no system call. Participants
take chunks from an atomic counter: one chunk per participant when the trip count is small
(under 16 per participant: a static share, no extra atomics), four each otherwise (balance
for uneven loops such as julia's); a worker woken late finds its share taken.
glibc's mutex/condition initialisers are all-zero, so zero-initialised globals are valid
without init calls. A process-wide lock serialises parallel loops started from different
Python threads."""

from __future__ import annotations

from llvmlite import ir

from .cg_scalar import I32, I64, I64P, PTR

BODY_TY = ir.FunctionType(I32, [I64P, I64P, I64, I64])
POOL_TY = ir.FunctionType(I32, [I64P, BODY_TY.as_pointer(), I64P, I64])
# job slots: 0 body, 1 closure, 2 unused (the next chunk is pool.next), 3 nchunks, 4 chunk, 5 n, 6 status,
# 7 participants, 8.. env template
JOB = 16
# the job's state word: generation << GEN_SHIFT | OPEN while workers may join | joined count
GEN_SHIFT, OPEN, COUNT = 20, 1 << 19, (1 << 19) - 1


def _c(v: int) -> ir.Constant:
    return ir.Constant(I64, v)


SPIN_PAUSE = 4000  # polls with a pause instruction (about 0.1 ms) ...
SPIN_YIELD = 100   # ... then polls yielding the CPU, before sleeping on the condition variable
SEQ = "seq_cst"


def _pause(mod: ir.Module):  # noqa: ANN202
    """A call emitting the target's spin-wait hint (x86 ``pause``, Arm ``yield``), or None."""
    arch = mod.triple.split("-")[0]
    if arch in ("x86_64", "i686", "i386"):
        fn = mod.globals.get("llvm.x86.sse2.pause") or \
            ir.Function(mod, ir.FunctionType(ir.VoidType(), []), "llvm.x86.sse2.pause")
        return lambda b: b.call(fn, [])
    if arch in ("aarch64", "arm64"):
        fn = mod.globals.get("llvm.aarch64.hint") or \
            ir.Function(mod, ir.FunctionType(ir.VoidType(), [I32]), "llvm.aarch64.hint")
        return lambda b: b.call(fn, [ir.Constant(I32, 1)])
    return None


def _spin(b: ir.IRBuilder, fn: ir.Function, ready) -> None:  # noqa: ANN001
    """Poll ``ready`` SPIN_PAUSE times with a pause hint, then SPIN_YIELD times yielding the CPU
    (an oversubscribed machine loses little), then fall through to the sleeping path: waking
    a sleeping thread costs far more than a short poll between back-to-back parallel loops."""
    mod = fn.module
    yld = mod.globals.get("sched_yield") or ir.Function(mod, ir.FunctionType(I32, []), "sched_yield")
    pause = _pause(mod)
    for tag, count, wait in (("p", SPIN_PAUSE, pause), ("y", SPIN_YIELD, lambda b: b.call(yld, []))):
        pre = b.block
        head, body, out = (fn.append_basic_block(f"spin{tag}{n}") for n in ("", ".body", ".out"))
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(I64)
        i.add_incoming(_c(0), pre)
        go_on = b.and_(b.icmp_signed("<", i, _c(count)), b.not_(ready(b)))
        b.cbranch(go_on, body, out)
        b.position_at_end(body)
        if wait is not None:
            wait(b)
        i.add_incoming(b.add(i, _c(1)), body)
        b.branch(head)
        b.position_at_end(out)


def build_pool_module(triple: str, data_layout: str) -> str:
    mod = ir.Module(name="liftkit_jit_pool")
    mod.triple, mod.data_layout = triple, data_layout
    blob = ir.ArrayType(ir.IntType(8), 64)

    def glob(name: str, ty: ir.Type) -> ir.GlobalVariable:
        g = ir.GlobalVariable(mod, ty, name)
        g.initializer = ir.Constant(ty, None)
        g.align = 64  # one cache line each: spinning readers do not slow the writers
        g.linkage = "internal"
        return g
    mtx, busy = glob("pool.mtx", blob), glob("pool.busy", blob)
    cv_work, cv_done = glob("pool.work", blob), glob("pool.done", blob)
    gen, state, nworkers, sleepers, waiting, nextc = (
        glob(n, I64) for n in ("pool.gen", "pool.state", "pool.n", "pool.sleepers", "pool.waiting",
                               "pool.next"))  # next chunk: its own line, apart from the job
    jobdata = glob("pool.jobdata", ir.ArrayType(I64, JOB))
    fn_ty = ir.FunctionType
    lock = ir.Function(mod, fn_ty(I32, [PTR]), "pthread_mutex_lock")
    unlock = ir.Function(mod, fn_ty(I32, [PTR]), "pthread_mutex_unlock")
    wait = ir.Function(mod, fn_ty(I32, [PTR, PTR]), "pthread_cond_wait")
    bcast = ir.Function(mod, fn_ty(I32, [PTR]), "pthread_cond_broadcast")
    create = ir.Function(mod, fn_ty(I32, [I64P, PTR, fn_ty(PTR, [PTR]).as_pointer(), PTR]),
                         "pthread_create")
    detach = ir.Function(mod, fn_ty(I32, [I64]), "pthread_detach")

    def p(g: ir.GlobalVariable, b: ir.IRBuilder) -> ir.Value:
        return b.bitcast(g, PTR)

    def signal(b: ir.IRBuilder, fn: ir.Function, flag: ir.GlobalVariable, cv: ir.GlobalVariable,
               name: str) -> None:
        """Broadcast ``cv`` under the mutex if ``flag`` says someone sleeps on it (both sides
        use sequentially consistent accesses, so no wakeup is lost)."""
        yes, no = fn.append_basic_block(name), fn.append_basic_block(name + ".no")
        b.cbranch(b.icmp_signed("!=", b.load_atomic(flag, SEQ, 8), _c(0)), yes, no)
        b.position_at_end(yes)
        b.call(lock, [p(mtx, b)])
        b.call(bcast, [p(cv, b)])
        b.call(unlock, [p(mtx, b)])
        b.branch(no)
        b.position_at_end(no)

    # run(job): take chunks until none is left (a late worker's share is taken by the others:
    # an oversubscribed machine does not wait on it); the first error wins
    run = ir.Function(mod, fn_ty(ir.VoidType(), [I64P]), "pool.run")
    run.linkage = "internal"
    b = ir.IRBuilder(run.append_basic_block())
    job = run.args[0]

    def slot(k: int, bb: ir.IRBuilder = b, j: ir.Value = job) -> ir.Value:
        return bb.gep(j, [_c(k)])
    env = b.alloca(I64, _c(16))
    for k in range(8):
        b.store(b.load(slot(8 + k)), b.gep(env, [_c(k)]))
    # a parallel loop nested in a chunk (a jitted callee with prange, inlined) runs serially:
    # the pool is busy with this job, and waiting for it there would never end
    b.store(_c(1), b.gep(env, [_c(6)]))
    for k in range(8, 16):  # no BLAS entry points inside parallel loops (library is serial)
        b.store(_c(0), b.gep(env, [_c(k)]))
    body = b.inttoptr(b.load(slot(0)), BODY_TY.as_pointer())
    clo = b.inttoptr(b.load(slot(1)), I64P)
    loop, take, fail, done = (run.append_basic_block(n) for n in ("loop", "take", "fail", "done"))
    b.branch(take)
    b.position_at_end(take)
    c = b.atomic_rmw("add", nextc, _c(1), "monotonic")
    b.cbranch(b.icmp_signed(">=", c, b.load(slot(3))), done, loop)
    b.position_at_end(loop)
    lo = b.mul(c, b.load(slot(4)))
    hi = b.add(lo, b.load(slot(4)))
    n = b.load(slot(5))
    hi = b.select(b.icmp_signed(">", hi, n), n, hi)
    st = b.call(body, [env, clo, lo, hi])
    b.cbranch(b.icmp_signed("!=", st, ir.Constant(I32, 0)), fail, take)
    b.position_at_end(fail)
    b.call(lock, [p(mtx, b)])
    first = b.icmp_signed("==", b.load(slot(6)), _c(0))
    rec, skip = run.append_basic_block("record"), run.append_basic_block("skip")
    b.cbranch(first, rec, skip)
    b.position_at_end(rec)
    b.store(b.sext(st, I64), slot(6))
    for k in range(5):
        b.store(b.load(b.gep(env, [_c(k)])), slot(8 + k))
    b.branch(skip)
    b.position_at_end(skip)
    b.call(unlock, [p(mtx, b)])
    b.atomic_rmw("add", nextc, b.load(slot(3)), "monotonic")  # stop the others early
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()

    # worker(arg = generation at creation << 16 | participant number): wait for a new
    # generation, run it (if the job wants this many threads), report, repeat
    worker = ir.Function(mod, fn_ty(PTR, [PTR]), "pool.worker")
    worker.linkage = "internal"
    b = ir.IRBuilder(worker.append_basic_block())
    mine = b.alloca(I64)
    arg = b.ptrtoint(worker.args[0], I64)
    b.store(b.ashr(arg, _c(16)), mine)
    ident = b.and_(arg, _c(0xFFFF))
    top, chk, sleep, woke, go = (worker.append_basic_block(n)
                                 for n in ("top", "check", "sleep", "woke", "go"))
    b.branch(top)
    b.position_at_end(top)
    _spin(b, worker, lambda bb: bb.icmp_signed("!=", bb.load_atomic(gen, "acquire", 8),
                                               bb.load(mine)))
    fast = worker.append_basic_block("fast")
    b.cbranch(b.icmp_signed("!=", b.load_atomic(gen, "acquire", 8), b.load(mine)), go, fast)
    b.position_at_end(fast)
    b.call(lock, [p(mtx, b)])
    b.atomic_rmw("add", sleepers, _c(1), SEQ)
    b.branch(chk)
    b.position_at_end(chk)
    b.cbranch(b.icmp_signed("==", b.load_atomic(gen, SEQ, 8), b.load(mine)), sleep, woke)
    b.position_at_end(sleep)
    b.call(wait, [p(cv_work, b), p(mtx, b)])
    b.branch(chk)
    b.position_at_end(woke)
    b.atomic_rmw("sub", sleepers, _c(1), SEQ)
    b.call(unlock, [p(mtx, b)])
    b.branch(go)
    b.position_at_end(go)
    g = b.load_atomic(gen, "acquire", 8)
    b.store(g, mine)
    jobp = b.bitcast(jobdata, I64P)
    join, cas, joined = (worker.append_basic_block(n) for n in ("join", "cas", "joined"))
    b.branch(join)
    b.position_at_end(join)
    st0 = b.load_atomic(state, SEQ, 8)
    is_open = b.and_(b.icmp_unsigned("==", b.lshr(st0, _c(GEN_SHIFT)), g),
                     b.icmp_unsigned("!=", b.and_(st0, _c(OPEN)), _c(0)))
    b.cbranch(is_open, cas, top)  # closed already: the caller took the work
    b.position_at_end(cas)
    won = b.extract_value(b.cmpxchg(state, st0, b.add(st0, _c(1)), SEQ, SEQ), 1)
    b.cbranch(won, joined, join)
    b.position_at_end(joined)
    runit, after = worker.append_basic_block("run"), worker.append_basic_block("after")
    b.cbranch(b.icmp_signed("<", ident, b.load(b.gep(jobp, [_c(7)]))), runit, after)
    b.position_at_end(runit)
    b.call(run, [jobp])
    b.branch(after)
    b.position_at_end(after)
    left = b.sub(b.atomic_rmw("sub", state, _c(1), SEQ), _c(1))
    last, cont = worker.append_basic_block("last"), worker.append_basic_block("cont")
    b.cbranch(b.icmp_unsigned("==", b.and_(left, _c(OPEN | COUNT)), _c(0)), last, cont)
    b.position_at_end(last)
    signal(b, worker, waiting, cv_done, "wake.caller")
    b.branch(cont)
    b.position_at_end(cont)
    b.branch(top)

    # parfor(env, body, closure, n)
    pf = ir.Function(mod, POOL_TY, "lk_pool_parfor")
    envp, body_a, clo_a, n_a = pf.args
    b = ir.IRBuilder(pf.append_basic_block())
    nthreads = b.load(b.gep(envp, [_c(6)]))
    nthreads = b.select(b.icmp_signed(">", nthreads, n_a), n_a, nthreads)
    serial, par = pf.append_basic_block("serial"), pf.append_basic_block("par")
    b.cbranch(b.icmp_signed("<=", nthreads, _c(1)), serial, par)
    b.position_at_end(serial)
    b.ret(b.call(body_a, [envp, clo_a, _c(0), n_a]))
    b.position_at_end(par)
    b.call(lock, [p(busy, b)])
    tid = b.alloca(I64)
    grow, spawn, ready = (pf.append_basic_block(x) for x in ("grow", "spawn", "ready"))
    b.branch(grow)
    b.position_at_end(grow)
    b.cbranch(b.icmp_signed("<", b.load(nworkers), b.sub(nthreads, _c(1))), spawn, ready)
    b.position_at_end(spawn)
    arg = b.or_(b.shl(b.load(gen), _c(16)), b.add(b.load(nworkers), _c(1)))
    rc = b.call(create, [tid, ir.Constant(PTR, None), worker, b.inttoptr(arg, PTR)])
    ok, failed = pf.append_basic_block("created"), pf.append_basic_block("nocreate")
    b.cbranch(b.icmp_signed("==", rc, ir.Constant(I32, 0)), ok, failed)
    b.position_at_end(ok)
    b.call(detach, [b.load(tid)])
    b.store(b.add(b.load(nworkers), _c(1)), nworkers)
    b.branch(grow)
    b.position_at_end(failed)
    b.branch(ready)
    b.position_at_end(ready)
    # participants: the caller and the workers numbered below nthreads (fewer if some could
    # not be created); small trip counts are one chunk each, larger ones four per participant
    nw = b.load(nworkers)
    parts = b.add(nw, _c(1))
    parts = b.select(b.icmp_signed(">", parts, nthreads), nthreads, parts)
    jb = b.bitcast(jobdata, I64P)  # only joined workers read it, and they finish first
    small = b.icmp_signed("<", n_a, b.mul(parts, _c(16)))
    want = b.select(small, parts, b.mul(parts, _c(4)))
    nch = b.select(b.icmp_signed(">", want, n_a), n_a, want)
    chunk = b.sdiv(b.add(n_a, b.sub(nch, _c(1))), nch)
    nch = b.sdiv(b.add(n_a, b.sub(chunk, _c(1))), chunk)
    for k, v in enumerate([b.ptrtoint(body_a, I64), b.ptrtoint(clo_a, I64), _c(0), nch, chunk,
                           n_a, _c(0), parts]):
        b.store(v, b.gep(jb, [_c(k)]))
    for k in range(8):
        b.store(b.load(b.gep(envp, [_c(k)])), b.gep(jb, [_c(8 + k)]))
    b.store(_c(0), b.gep(jb, [_c(8 + 5)]))  # workers' allocations use their own arena chain
    b.store_atomic(_c(0), nextc, "monotonic", 8)  # published by the state word's store below
    g = b.add(b.load(gen), _c(1))
    b.store_atomic(b.or_(b.shl(g, _c(GEN_SHIFT)), _c(OPEN)), state, SEQ, 8)
    b.store_atomic(g, gen, SEQ, 8)
    signal(b, pf, sleepers, cv_work, "wake.workers")
    b.call(run, [jb])
    # close the job: workers arriving now find nothing; wait only for those that joined
    closed = b.atomic_rmw("and", state, _c(~OPEN), SEQ)

    def busy_workers(bb: ir.IRBuilder, order: str = "acquire") -> ir.Value:
        return bb.and_(bb.load_atomic(state, order, 8), _c(COUNT))
    wspin, wslow, wchk, wsleep, wdone, out = (pf.append_basic_block(x) for x in (
        "wspin", "wslow", "wchk", "wsleep", "wdone", "out"))
    b.cbranch(b.icmp_unsigned("==", b.and_(closed, _c(COUNT)), _c(0)), out, wspin)
    b.position_at_end(wspin)
    _spin(b, pf, lambda bb: bb.icmp_unsigned("==", busy_workers(bb), _c(0)))
    b.cbranch(b.icmp_unsigned("==", busy_workers(b), _c(0)), out, wslow)
    b.position_at_end(wslow)
    b.call(lock, [p(mtx, b)])
    b.store_atomic(_c(1), waiting, SEQ, 8)
    b.branch(wchk)
    b.position_at_end(wchk)
    b.cbranch(b.icmp_unsigned("!=", busy_workers(b, SEQ), _c(0)), wsleep, wdone)
    b.position_at_end(wsleep)
    b.call(wait, [p(cv_done, b), p(mtx, b)])
    b.branch(wchk)
    b.position_at_end(wdone)
    b.store_atomic(_c(0), waiting, SEQ, 8)
    b.call(unlock, [p(mtx, b)])
    b.branch(out)
    b.position_at_end(out)
    b.call(unlock, [p(busy, b)])
    st = b.load(b.gep(jb, [_c(6)]))
    bad, good = pf.append_basic_block("bad"), pf.append_basic_block("good")
    b.cbranch(b.icmp_signed("!=", st, _c(0)), bad, good)
    b.position_at_end(bad)
    for k in range(5):
        b.store(b.load(b.gep(jb, [_c(8 + k)])), b.gep(envp, [_c(k)]))
    b.ret(b.trunc(st, I32))
    b.position_at_end(good)
    b.ret(ir.Constant(I32, 0))
    return str(mod)
