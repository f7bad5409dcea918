"""Code generation for reduceMmaZ64 (`liftkit.ir.patterns.cuda_complex`): a complex128 tile loop
on the FP64 tensor cores (DMMA m16n8k8), the complex tiles read as they are staged.

The product of complex tiles is the real product of a's rows read as reals (re, im of each k)
and b's real embedding, whose 2×2 block of complex element (k, n) is [[br, bi], [-bi, br]] at
real rows (k, re), (k, im) and columns (n, re), (n, im): column (n, re) of the result is then the
real part of C's element n, (n, im) its imaginary part. The k of a step may be summed in any
order as long as both operands agree, so one m16n8k8 instruction takes 4 complex k, its k-slot
t meaning (complex k t, part p) and slot t + 4 the other part, p = bit 1 of t; and 8 real
columns as 4 complex ones, slot 2j + c meaning (complex column j, part c), the instruction's own
accumulator layout:

- lane (group g, thread t) reads parts p and 1 - p of a's complex elements (g, t) and (g + 8, t)
  (8 bytes each, straight into the instruction's registers: A registers 0, 1 and 2, 3);
- it reads parts p ^ cj and p ^ cj ^ 1 of b's element (column g/2, k t), cj = g & 1 (lanes 2j
  and 2j+1 read the same element), the two embedded rows of its column g, and flips a sign
  where the embedding has -bi (or a conjugated factor asks), in the high word by a lane
  constant: no selects on the data;
- its accumulators 0, 1 are C's complex element (g, t) and 2, 3 element (g + 8, t), stored as
  one 16-byte complex each.

With part p varying by t, a half warp's 8-byte reads cover both halves of the complex elements,
so rows rotated as rules/cuda_complex.py stages them give 16 distinct words per read.
So no packing kernel writes the embedding and the staged b tile holds K×N complex numbers, half
of the embedded 2K×2N reals. Before sm_90 each m16n8k8 is four m8n8k4 on the same registers.
The tile loop is the cp.async pipeline the real kernels use, or (reduceMmaZ64Ahead) the
read-ahead loop: each k-step's fragments read one step early, the next tile's first ones right
after the pipeline's barrier, the copies of the tile s ahead issued among the last products.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from liftkit.arith import ArithExpr, Var, cst, prove_lt
from liftkit.codegen import views as V
from liftkit.codegen.memory import ctype
from liftkit.codegen.views import CodegenError, View
from liftkit.ir.patterns.cuda import WARP
from liftkit.ir.patterns.cuda_complex import ReduceMmaZ64
from liftkit.types import ArrayType, ScalarType, complex128, float64

if TYPE_CHECKING:  # pragma: no cover
    from liftkit.codegen.generator import Arg, Ctx, Generator
    from liftkit.ir.nodes import Param

HOPPER = "__CUDA_ARCH__ >= 900"  # the m16n8k8 FP64 shape is sm_90's
K16 = "mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64"
K4 = "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64"
FRAG_M, FRAG_N, FRAG_K = ReduceMmaZ64.shape  # complex rows, columns, k of one instruction


def zmma_grid(m: int, n: int, warps: int) -> tuple[int, int]:
    """(warps along m, along n) sharing an m×n complex tile in whole 16×4 fragments, the warp
    tiles (in reals: 16×8 fragments) as square as possible; (0, 0) where none fits."""
    from liftkit.codegen.cuda_mma import warp_grid

    if m % FRAG_M or n % FRAG_N:
        return 0, 0
    return warp_grid(m // FRAG_M, n // FRAG_N, warps, (16, 8))


def reduce_zmma(g: "Generator", p: ReduceMmaZ64, args: Sequence["Arg"], env: dict["Param", View],
                ctx: "Ctx", dest: Optional[View]) -> View:
    """See the module docstring."""
    from liftkit.codegen.cuda_mma import check_warps, tile_loop

    em = g.em
    warps = p.warp_count()
    conj_a, conj_b = p.conjugated()
    check_warps(g, p.name, warps)
    ls = g.local_size or (1,)
    init, tiles = args[0].gen(None), args[1].gen(None)
    tt = V.array_view_type(tiles.type)
    ops_t = g.result_type(p.f, [tt.elem], env, ctx.inside(p))
    m, n, k, _ = p.check_tiles(ops_t)
    wm, wn = zmma_grid(m, n, warps)
    if not wm:
        raise CodegenError(f"{p.name} {warps}: {warps} warps cannot share a {m}×{n} complex tile "
                           f"in whole {FRAG_M}×{FRAG_N} fragments")
    fm_n, fn_n = m // FRAG_M // wm, n // FRAG_N // wn
    out_t = ArrayType(ArrayType(ArrayType(complex128, cst(n)), cst(m)), cst(1))
    if dest is None:
        dest = g.allocate(out_t, ctx.write_to or "global", ctx, "mma_tile")
    cd = ctype(complex128)

    lcl = [em.dialect.ids("lcl", d) for d in range(len(ls))]
    lin = lcl[0] + "".join(f" + {_prod(ls[:d])} * {lcl[d]}" for d in range(1, len(ls)) if ls[d] > 1)
    nm = {h: em.names.fresh(h) for h in ("lk_warp_m", "lk_warp_n", "lk_g", "lk_t")}
    em.line(f"int {nm['lk_warp_m']} = ({lin}) / {WARP * wn}, {nm['lk_warp_n']} = (({lin}) / {WARP}) % {wn};")
    em.line(f"int {nm['lk_g']} = (({lin}) % {WARP}) >> 2, {nm['lk_t']} = ({lin}) & 3;")
    warp_m, warp_n = Var(nm["lk_warp_m"], 0, wm), Var(nm["lk_warp_n"], 0, wn)
    gv, tv = Var(nm["lk_g"], 0, 8), Var(nm["lk_t"], 0, 4)
    row0 = [warp_m * cst(fm_n * FRAG_M) + cst(fm * FRAG_M) for fm in range(fm_n)]
    col0 = [warp_n * cst(fn_n * FRAG_N) + cst(fn * FRAG_N) for fn in range(fn_n)]

    def c_elem(view: View, fm: int, fn: int, h: int) -> View:  # C's complex (g + 8h, t)
        return view.access(row0[fm] + cst(8 * h) + gv).access(col0[fn] + tv)

    acc: dict[tuple[int, int, int], str] = {}  # (fm, fn, register) -> a double
    for fm in range(fm_n):
        for fn in range(fn_n):
            for h in range(2):
                start = em.load(init) if isinstance(init.type, ScalarType) else em.load(c_elem(init, fm, fn, h))
                z = em.private_var(complex128, f"z{fm}_{fn}_{h}", start).name
                for part, field in enumerate("xy"):
                    acc[fm, fn, 2 * h + part] = em.private_var(float64, f"c{fm}_{fn}_{2 * h + part}",
                                                               f"{z}.{field}").name

    # the lane's k-slot parts: slot t holds part p = bit 1 of t, slot t + 4 the other (so that a
    # half warp's 8-byte reads of a's rows cover both halves of the complex elements: with the
    # rows rotated (rules/cuda_complex.py) no two lanes share a bank); b's register r reads
    # part (p ^ r) ^ cj of its element, cj = g & 1 the real (0) or imaginary (1) column, and
    # flips its sign (in the high word, a lane constant) where the embedding has -bi or a
    # conjugation asks
    p_, cj = em.names.fresh("lk_p"), em.names.fresh("lk_cj")
    em.line(f"int {p_} = ({nm['lk_t']} >> 1) & 1, {cj} = {nm['lk_g']} & 1;")
    masks = []
    for r in range(2):
        ci = f"({p_} ^ {r})"
        mask = em.names.fresh(f"lk_sign{r}")
        em.line(f"int {mask} = (({ci} & ({cj} ^ 1)) ^ ({int(conj_a)} & {ci}) ^ "
                f"({int(conj_b)} & ({ci} ^ {cj}))) << 31;")
        masks.append(mask)

    def frag_views(a: View, b: View, s: int) -> dict[Any, View]:
        """The complex elements lane (g, t) reads in k-step s of one tile pair."""
        k0 = cst(s * FRAG_K)
        out: dict[Any, View] = {("a", fm, h): a.access(row0[fm] + cst(8 * h) + gv).access(k0 + tv)
                                for fm in range(fm_n) for h in range(2)}
        out.update({("b", fn): b.access(col0[fn] + (gv // cst(2))).access(k0 + tv)
                    for fn in range(fn_n)})
        return out

    def read(views: dict[Any, View], keys: Sequence[Any]) -> dict[Any, list[str]]:
        """The registers of `keys` (k-slots t and t + 4) read as new variables, each an 8-byte
        part of its complex element in memory: a's as they are, b's as the embedding's."""
        regs: dict[Any, list[str]] = {}
        for key in keys:
            if not isinstance(em.resolve(views[key]), V.MemLoc):
                raise CodegenError(f"{p.name} reads the parts of its tiles' complex elements in "
                                   "memory: its function must give tiles in memory (staged by "
                                   "toLocal/toLocalAsync, or the inputs), not computed values")
            at = f"((const double*)&{em.load(views[key])})"
            rs = [em.names.fresh(f"f{key[0]}"), em.names.fresh(f"f{key[0]}")]
            for r, name in enumerate(rs):
                if key[0] == "a":
                    em.line(f"double {name} = {at}[{p_} ^ {r}];")
                else:
                    em.line(f"double {name} = {at}[{p_} ^ {cj} ^ {r}];")
                    em.line(f"{name} = __hiloint2double(__double2hiint({name}) ^ {masks[r]}, "
                            f"__double2loint({name}));")
            regs[key] = rs
        return regs

    def issue(fr: dict[Any, list[str]], fm: int, fn: int) -> None:
        a0, a1 = fr["a", fm, 0], fr["a", fm, 1]  # (re, im) of rows g and g + 8
        b = fr["b", fn]
        c = [acc[fm, fn, r] for r in range(4)]
        em.line(f"#if {HOPPER}")
        em.line(f'asm volatile("{K16} {{%0,%1,%2,%3}}, {{%4,%5,%6,%7}}, {{%8,%9}}, {{%0,%1,%2,%3}};" '
                f': "+d"({c[0]}), "+d"({c[1]}), "+d"({c[2]}), "+d"({c[3]}) '
                f': "d"({a0[0]}), "d"({a1[0]}), "d"({a0[1]}), "d"({a1[1]}), "d"({b[0]}), "d"({b[1]}));')
        em.line("#else")  # m8n8k4: rows g (h 0) and g + 8 (h 1), k slots t (re) and t + 4 (im)
        for h, ah in enumerate((a0, a1)):
            for j in range(2):
                em.line(f'asm volatile("{K4} {{%0,%1}}, {{%2}}, {{%3}}, {{%0,%1}};" '
                        f': "+d"({c[2 * h]}), "+d"({c[2 * h + 1]}) : "d"({ah[j]}), "d"({b[j]}));')
        em.line("#endif")

    a_keys = {fm: [("a", fm, h) for h in range(2)] for fm in range(fm_n)}
    b_keys = [("b", fn) for fn in range(fn_n)]
    steps = k // FRAG_K

    def products(a: View, b: View) -> None:
        for s in range(steps):
            fr = read(frag_views(a, b, s), b_keys + [x for fm in range(fm_n) for x in a_keys[fm]])
            for fm in range(fm_n):
                for fn in range(fn_n):
                    issue(fr, fm, fn)

    body = replace(ctx, write_to=None)
    ahead = (lambda staging: _ahead_loop(g, p, staging, tiles, env, body, steps, frag_views, read,
                                         issue, (fm_n, fn_n, a_keys, b_keys))) if p.ahead else None
    tile_loop(g, p, tiles, env, body, products, ahead)
    out = dest.access(cst(0))
    for fm in range(fm_n):
        for fn in range(fn_n):
            for h in range(2):
                em.store(c_elem(out, fm, fn, h),
                         f"{cd}_new({acc[fm, fn, 2 * h]}, {acc[fm, fn, 2 * h + 1]})")
    return dest


def _ahead_loop(g: "Generator", p: ReduceMmaZ64, chains: list[Any], tiles: View,
                env: dict["Param", View], ctx: "Ctx", steps: int,
                frag_views: Callable[[View, View, int], dict[Any, View]],
                read: Callable[[dict[Any, View], Sequence[Any]], dict[Any, list[str]]],
                issue: Callable[[dict[Any, list[str]], int, int], None], frags: Any) -> None:
    """reduceMmaZ64Ahead's loop (module docstring): s tiles issued before it; in tile i each
    k-step's products issue after the next step's fragments are read; at the last step
    `wait_group s-2` (tile i+1 landed), one barrier (tile i's fragments all read), tile i+1's
    first fragments read, then tile i's last products with the copies of tile i+s into tile i's
    buffer issued after their first row (a's) and second row (b's). The fragments carried from
    one tile to the next live in variables declared before the loop."""
    from liftkit.codegen.cuda_patterns import _async_copy, _through, stage_buffers
    from liftkit.codegen.generator import Scope

    em = g.em
    fm_n, fn_n, a_keys, b_keys = frags
    stages = chains[0][1].stage_count()
    if stages < 2:
        raise CodegenError(f"{p.name} reads the next tile's fragments while a cp.async pipeline "
                           "copies it: stage the tiles with toLocalAsync s ≥ 2")
    kt = V.array_view_type(tiles.type).length
    buffers, issue_copies = stage_buffers(g, chains, tiles, env, ctx)
    commit = 'asm volatile("cp.async.commit_group;" ::: "memory");'
    for s in range(stages):
        if prove_lt(cst(s), kt):
            issue_copies(cst(s), cst(s), ctx)
        else:
            with em.if_(f"{s} < {kt.to_c()}"):
                issue_copies(cst(s), cst(s), ctx)
        em.line(commit)
    em.line(f'asm volatile("cp.async.wait_group {stages - 1};" ::: "memory");')
    em.barrier({"CLK_LOCAL_MEM_FENCE"})

    def ops_at(slot: ArithExpr, c: "Ctx") -> list[View]:
        return [_through(g, post, buf.access(slot), env, c)
                for (post, _, _), (buf, _) in zip(chains, buffers)]

    def copy_operand(k_: int, j: ArithExpr, slot: ArithExpr, c: "Ctx") -> None:
        (_, _, pre), (buf, levels) = chains[k_], buffers[k_]
        with em.if_(f"{j.to_c()} < {kt.to_c()}"):
            _async_copy(g, levels, _through(g, pre, tiles.access(j).get(k_), env, c),
                        buf.access(slot), c)

    keys = b_keys + [x for fm in range(fm_n) for x in a_keys[fm]]
    first = read(frag_views(*ops_at(cst(0), ctx), 0), keys)
    carried: dict[Any, list[str]] = {}
    for key, regs in first.items():  # loop-carried copies (the compiler keeps them in registers)
        names = [em.names.fresh(f"r{key[0]}") for _ in regs]
        for nme, r in zip(names, regs):
            em.line(f"double {nme} = {r};")
        carried[key] = names
    name = em.names.fresh("i")
    i = Var(name, 0, kt)
    with em.for_loop(name, "0", f"{name} < {kt.to_c()}", f"{name} += 1"):
        c = ctx.inside(p, Scope("seq", 0, i, kt))
        slot = i % cst(stages)
        a, b = ops_at(slot, c)
        cur = carried
        for j in range(steps):
            last = j + 1 == steps
            if last:
                em.line(f'asm volatile("cp.async.wait_group {stages - 2};" ::: "memory");')
                em.barrier({"CLK_LOCAL_MEM_FENCE"})
                views = frag_views(*ops_at((i + cst(1)) % cst(stages), c), 0)
            else:
                views = frag_views(a, b, j + 1)
            nxt = read(views, b_keys)
            for fm in range(fm_n):
                for fn in range(fn_n):
                    issue(cur, fm, fn)
                nxt.update(read(views, a_keys[fm]))  # this row's a registers are free now
                if last and fm < len(chains):
                    copy_operand(fm, i + cst(stages), slot, c)
            if last:
                for k_ in range(fm_n, len(chains)):
                    copy_operand(k_, i + cst(stages), slot, c)
                em.line(commit)
                for key, names in carried.items():
                    for nme, r in zip(names, nxt[key]):
                        em.line(f"{nme} = {r};")
            cur = nxt
    em.line('asm volatile("cp.async.wait_group 0;" ::: "memory");')
    em.barrier({"CLK_LOCAL_MEM_FENCE"})  # the buffers are free for whatever follows


def _prod(xs: Sequence[int]) -> int:
    out = 1
    for x in xs:
        out *= x
    return out
