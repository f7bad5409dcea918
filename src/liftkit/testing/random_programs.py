"""Random well-typed low-level Lift programs, for differential testing of the code generator.

`generate(seed)` builds a program type-directed: it tracks the current type and a bound on every
value's magnitude and picks only patterns that apply; `check_program` and the interpreter vet the
result (a rejected draw is retried). Kernels look like real ones: a parallel map (mapGlb in 1–2
dimensions, or mapWrg over chains of mapLcl phases) over a layout of the inputs, maybe followed by
a sequential reduction or a second parallel map (a second kernel); address-space wrappers only
where OpenCL allows them. Data are small integers whose bound keeps every value exact (< 2^22
for floats), so results must equal the interpreter's bit for bit (`liftkit.testing.check_case`).

Issue 11's shapes come from a stream of their own (earlier seeds' other programs are unchanged):
doubles (bare numbers settled to double), iterate over parallel maps of the whole array (one
kernel per step), results in nested tuples, and stencils weighted by array literals. The
building blocks (inputs, element and sequential functions, layouts) are in `random_parts`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Optional

import numpy as np

from liftkit import dsl as D
from liftkit.arith import ArithExpr, cst
from liftkit.ir.literals import settle_literals
from liftkit.ir.nodes import Expr, FunDecl, Lambda, Param
from liftkit.ir.typecheck import check_program
from liftkit.ir.userfuns import id_of
from liftkit.testing.random_parts import Fn, Parts, Val, _arr, _divisors, _flat
from liftkit.types import ArrayType, LiftTypeError, ScalarType, TupleType, Type, VectorType

MAX_ATTEMPTS = 40  # draws per seed before giving up (a draw fails only on a generator slip)


@dataclass(frozen=True)
class GeneratorFlags:
    """Constructs the generator leaves out because the compiler (or the device) gets them wrong
    today; each flag names one finding (reproducers in the issue report). Switch one off to
    see the failure again: `scripts/replay_random_program.py SEED --allow FLAG`."""

    # barrier elimination drops the barrier between toLocal(mapLcl(1)(mapLcl(0)(f))) and a
    # mapLcl(1) applied directly to it whose body reads other threads' elements; the generator
    # then puts an `Id` between the two, which keeps the barrier
    avoid_direct_cross_thread_local_reads: bool = False  # fixed in barrier_free_maps
    # abs_int4 / mapVec(abs_int) return abs(intN), a uintN, as intN: an OpenCL build error
    avoid_int_vector_abs: bool = False  # fixed in userfuns (abs keeps its type)
    # PoCL 3.0 miscompiles some work-groups with local-memory tree reductions (if-guarded regions
    # and barriers, control-flow simplification on); Oclgrind runs them correctly and race-free.
    # `iterate` loops trigger it most (~6 in 1000 programs); writing an m-step tree as m chained
    # `iterate 1` leaves ~1 in 3000 (seed 40126)
    avoid_pocl_iterate_loops: bool = True

    def avoided(self) -> list[str]:
        return [f.name for f in fields(self) if getattr(self, f.name)]


DEFAULT_FLAGS = GeneratorFlags()


@dataclass
class RandomCase:
    """One generated program with its inputs, sizes and the interpreter's result."""

    seed: int
    program: Lambda
    inputs: list[Any]
    sizes: dict[str, int]
    description: str
    expected: Any
    flags: GeneratorFlags = DEFAULT_FLAGS
    attempts: int = 1  # draws needed (retries after a rejected draw)



class _Gen(Parts):
    """One draw: kernels, work-group bodies and the program's result over `Parts`."""

    # -- work-group bodies: chains of mapLcl phases over one chunk --------------------------------
    def wg_body(self, t: ArrayType, b: int) -> Fn:
        """[X]_c -> the work-group's result, in 1–3 phases of local work."""
        got: list[Val] = []
        count = self.rng.choice([1, 2, 2, 3, 3])

        def body(chunk: Param) -> Expr:
            v = Val(chunk, t, b, "input")
            for k in range(count):
                v = self.wg_phase(v, last=k == count - 1)
            got.append(v)
            return v.e

        f = D.fn(body)  # calls body once, which fills `got`
        return Fn(f, got[0].t, got[0].bound)

    def wg_phase(self, v: Val, last: bool) -> Val:
        """One phase; the last one writes the work-group's result (so it is not in toLocal)."""
        X, L, S = _arr(v.t).elem, self.length(v.t), self.S
        scalar, flat = isinstance(X, ScalarType), _flat(X)

        def wrap(f: FunDecl, out: Type) -> tuple[FunDecl, str]:
            r = self.rng.random()
            if not last and r < 0.45 and not isinstance(out, ArrayType):
                return D.toLocal(f), "local"
            return (D.toGlobal(f) if r > 0.85 else f), "global"

        def elementwise() -> Val:
            src = v.e
            if flat and self.rng.random() < 0.25:
                pf, name = self.perm(L)
                self.note(f"wg:{name}")
                src = pf << src
            g = self.elem_fun(X, v.bound, in_wrg=True)
            self.note("wg:map")
            if isinstance(g.out, ArrayType):  # windows reduced per thread
                e = D.join << (D.mapLcl(0)(g.f) << src)
                return Val(e, ArrayType(g.out.elem, v.t.length * g.out.length), g.bound, "global")
            f, space = wrap(D.mapLcl(0)(g.f), g.out)
            return Val(f << src, ArrayType(g.out, v.t.length), g.bound, space)

        def per_thread() -> Optional[Val]:
            ks = _divisors(L, 2, min(16, L // 2))
            if not flat or not ks:
                return None
            k, strided = self.rng.choice(ks), self.rng.random() < 0.4
            g = self.seq_fun(ArrayType(X, cst(k)), v.bound, 1, in_wrg=True)
            out = _arr(g.out)
            lay = (D.transpose << (D.split(L // k) << v.e)) if strided else (D.split(k) << v.e)
            f, space = wrap(D.mapLcl(0)(g.f), g.out)
            self.note(f"wg:{'strided' if strided else 'chunks'}{k}")
            return Val(D.join << (f << lay), ArrayType(out.elem, cst(L // k) * out.length), g.bound, space)

        def stage() -> Optional[Val]:
            if last or not flat:
                return None
            g = Fn(id_of(X), X, v.bound) if self.rng.random() < 0.6 or not scalar else self.unary(v.bound)
            self.note("wg:toLocal")
            return Val(D.toLocal(D.mapLcl(0)(g.f)) << v.e, ArrayType(g.out, v.t.length), g.bound, "local")

        def tree() -> Optional[Val]:
            """A tree reduction in local memory (iterate of halving steps), staged there first
            when needed: a copy, or per-thread partial reductions as in the seeds' asum."""
            if not scalar or L % 2:
                return None
            F, src = self.F, v
            if v.space != "local":
                ks = [k for k in _divisors(L, 2, 16) if (L // k) % 2 == 0]
                r = self.red_op(S, v.bound, max(ks)) if ks and self.rng.random() < 0.5 else None
                if r is not None:
                    k = self.rng.choice(ks)
                    part = D.toLocal(D.mapLcl(0)(D.reduceSeq(r[0], r[1])))
                    src = Val(D.join << (part << (D.split(k) << v.e)), ArrayType(X, cst(L // k)), r[2],
                              "local")
                    self.note(f"wg:partial{k}")
                else:
                    src = Val(D.toLocal(D.mapLcl(0)(id_of(X))) << v.e, v.t, v.bound, "local")
            n0 = self.length(src.t)
            k = 2 if n0 % 4 or self.rng.random() < 0.7 else 4
            m = self.rng.randint(1, max(j for j in range(1, 7) if n0 % k ** j == 0))
            op, z, nb = self.rng.choice([(F.add, 0, src.bound * k ** m), (F.max, -1, src.bound),
                                         (F.min, 2, src.bound)])
            if not self.ok(nb):
                return None
            red = D.reduceSeq(op, self.c(z))
            step = D.mapLcl(0)(D.compose(D.toLocal(D.mapSeq(F.id)), red) if self.rng.random() < 0.3 else red)
            body = D.compose(D.join, step, D.split(k))
            self.note(f"wg:iterate{m}x{k}")
            steps = [D.iterate(1, body)] * m if self.flags.avoid_pocl_iterate_loops else [D.iterate(m, body)]
            out = Val(D.compose(*steps) << src.e, ArrayType(X, cst(n0 // k ** m)), nb, "iter")
            if not last or self.rng.random() < 0.4:  # last: iterate writes the result directly
                return out
            # iterate's result is read by a computation that writes the work-group's output
            g = self.unary(nb) if self.rng.random() < 0.5 else Fn(F.id, S, nb)
            copy = D.mapLcl(0)(D.mapSeq(g.f))
            copy = D.toGlobal(copy) if self.rng.random() < 0.3 else copy
            return Val(D.join << (copy << (D.split(1) << out.e)), out.t, g.bound, "global")

        def neighbours() -> Optional[Val]:
            if not scalar or L < 2:
                return None
            g = self.unary(v.bound)
            h = self.tuple_fun(TupleType((S, S)), g.bound)
            pf, name = self.perm(L)
            first = D.toLocal(D.mapLcl(0)(g.f)) if self.rng.random() < 0.7 else D.mapLcl(0)(g.f)
            second, space = wrap(D.mapLcl(0)(h.f), S)
            self.note(f"wg:let({name})")
            e = D.let(first << v.e, lambda tmp: second << D.zip(tmp, pf << tmp))
            return Val(e, ArrayType(S, v.t.length), h.bound, space)

        def stencil() -> Optional[Val]:
            if not scalar or L < 4:
                return None
            pad, w = self.pad_slide(L)
            r = self.red_op(S, v.bound, w)
            if r is None:
                return None
            window, nb = D.reduceSeq(r[0], r[1]), r[2]
            if self.extra.random() < 0.4 and self.ok(v.bound * 6 * w):  # weights in a literal
                window, nb = self.weighted(w, v.bound)
            f, space = wrap(D.mapLcl(0)(window), ArrayType(S, cst(1)))
            self.note(f"wg:stencil{w}")
            e = D.join << (f << (D.slide(w, 1) << (pad << v.e)))
            return Val(e, ArrayType(S, v.t.length), nb, space)

        def vectors() -> Optional[Val]:
            ws = [w for w in (2, 4, 8) if L % w == 0]
            if not scalar or v.space not in ("input", "local") or not ws:
                return None
            w = self.vector_width(ws, L)
            g = self.vector_fun(VectorType(S, w), v.bound)
            f, space = wrap(D.mapLcl(0)(g.f), g.out)
            self.note(f"wg:vec{w}")
            return Val(D.asScalar << (f << (D.asVector(w) << v.e)), v.t, g.bound, space)

        def local_2d() -> Optional[Val]:
            # dimension 1 gets at most 4 threads: other phases use up to 256 in dimension 0
            d0, d1 = (0, 1) if self.rng.random() < 0.7 else (1, 0)
            ks = [k for k in _divisors(L, 2, L // 2) if (L // k if d1 == 1 else k) <= 4]
            if not flat or not ks:
                return None
            k = self.rng.choice(ks)
            g = self.elem_fun(X, v.bound, in_wrg=True)
            f, space = wrap(D.mapLcl(d1)(D.mapLcl(d0)(g.f)), ArrayType(g.out, cst(k)))
            self.note(f"wg:lcl2d{k}")
            return Val(D.join << (f << (D.split(k) << v.e)), ArrayType(g.out, v.t.length), g.bound, space)

        def scattered() -> Optional[Val]:
            if not last or not flat:
                return None
            g = self.elem_fun(X, v.bound, in_wrg=True)
            sf, name = self.perm(L, for_scatter=True)
            self.note(f"wg:scatter({name})")
            return Val(sf << (D.mapLcl(0)(g.f) << v.e), ArrayType(g.out, v.t.length), g.bound, "global")

        out = self.pick([(3, elementwise), (3, per_thread), (2, stage), (3, tree), (2, neighbours),
                         (2, stencil), (3, vectors), (1, local_2d), (1, scattered)])
        assert out is not None
        return out

    # -- kernels ------------------------------------------------------------------------------------
    def glb_1d(self) -> Val:
        v = self.base_1d({"scalar", "tuple", "vector", "array"})
        g = self.elem_fun(_arr(v.t).elem, v.bound)
        f = D.toGlobal(g.f) if isinstance(g.out, ArrayType) and self.rng.random() < 0.2 else g.f
        self.note("mapGlb")
        return Val(D.mapGlb(0)(f) << v.e, ArrayType(g.out, v.t.length), g.bound)

    def glb_2d(self) -> Val:
        v = self.base_2d()
        inner = _arr(_arr(v.t).elem)
        g = self.elem_fun(inner.elem, v.bound)
        style = self.rng.choice(["01", "10", "seq"])
        self.note(f"mapGlb2d[{style}]")
        f = D.mapGlb(self.rng.choice([0, 1]))(D.mapSeq(g.f)) if style == "seq" else \
            D.mapGlb(int(style[0]))(D.mapGlb(int(style[1]))(g.f))
        return Val(f << v.e, ArrayType(ArrayType(g.out, inner.length), _arr(v.t).length), g.bound)

    def chunk_size(self, n: int) -> Optional[int]:
        cs = [c for c in _divisors(n, 8, 256) if n // c <= 64] or _divisors(n, 2, 256)
        pow2 = [c for c in cs if c & (c - 1) == 0]
        return self.rng.choice(pow2 if pow2 and self.rng.random() < 0.7 else cs) if cs else None

    def wrg_1d(self) -> Optional[Val]:
        v = self.base_1d({"scalar", "tuple", "array"})
        n, elem = self.length(v.t), _arr(v.t).elem
        c = self.chunk_size(n)
        if c is None or (isinstance(elem, ArrayType) and not elem.length.is_constant):
            return None  # local memory needs constant sizes
        e = v.e
        if isinstance(elem, ScalarType) and self.rng.random() < 0.2:
            s = self.rng.choice(_divisors(n, 2, n // 2) or [1])
            e = D.reorderStride(s) << e
            self.note(f"in:reorderStride{s}")
        body = self.wg_body(ArrayType(elem, cst(c)), v.bound)
        self.note(f"mapWrg[c={c}]")
        return Val(D.mapWrg(0)(body.f) << (D.split(c) << e), ArrayType(body.out, v.t.length // c), body.bound)

    def wrg_2d(self) -> Optional[Val]:
        v = self.base_1d({"scalar", "tuple"})
        n = self.length(v.t)
        c = self.chunk_size(n)
        k = self.rng.choice(_divisors(n // c, 2, 8) or [0]) if c else 0
        if not k:
            return None
        body = self.wg_body(ArrayType(_arr(v.t).elem, cst(c)), v.bound)
        d_out, d_in = (1, 0) if self.rng.random() < 0.7 else (0, 1)
        self.note(f"mapWrg2d[c={c},k={k}]")
        e = D.mapWrg(d_out)(D.mapWrg(d_in)(body.f)) << (D.map(D.split(c)) << (D.split(c * k) << v.e))
        return Val(e, ArrayType(ArrayType(body.out, cst(k)), v.t.length // (c * k)), body.bound)

    def tiles(self) -> Optional[Val]:
        """2D work-groups over a x b tiles of a matrix, staged in local memory."""
        v = self.matrix_input()
        ra, cb = _divisors(self.rows, 4, 16), _divisors(self.cols, 4, 16)
        if not ra or not cb:
            return None
        a, b = self.rng.choice(ra), self.rng.choice(cb)
        g = self.unary(v.bound)
        style = self.rng.choice(["plain", "staged", "transposed", "stencil", "reversed"])
        style = "staged" if style == "transposed" and a != b else style
        copy = D.toLocal(D.mapLcl(1)(D.mapLcl(0)(id_of(self.S))))
        compute = D.mapLcl(1)(D.mapLcl(0)(g.f))
        nb = g.bound
        if style in ("plain", "staged", "transposed"):
            body: FunDecl = {"plain": compute, "staged": D.compose(compute, copy),
                             "transposed": D.compose(compute, D.transpose, copy)}[style]
        else:  # threads read their row neighbours' elements
            row: FunDecl = D.compose(D.mapLcl(0)(g.f), D.gather(lambda i, m: m - 1 - i))
            if style == "stencil":
                pad, w = self.pad_slide(b)
                r = self.red_op(self.S, v.bound, w)
                if r is None:
                    return None
                row, nb = D.compose(D.join, D.mapLcl(0)(D.reduceSeq(r[0], r[1])), D.slide(w, 1), pad), r[2]
            keep_barrier = self.flags.avoid_direct_cross_thread_local_reads
            body = D.compose(D.mapLcl(1)(row), *([D.Id] if keep_barrier else []), copy)
        self.note(f"tiles{a}x{b}[{style}]")
        return Val(D.untile() << (D.mapWrg(1)(D.mapWrg(0)(body)) << (D.tile(a, b) << v.e)), v.t, nb)

    # -- after the parallel map ----------------------------------------------------------------------
    def flatten(self, v: Val) -> Val:
        """join / asScalar until an array of scalars (views: free)."""
        t = _arr(v.t)
        if isinstance(t.elem, ArrayType):
            return self.flatten(Val(D.join << v.e, ArrayType(t.elem.elem, t.length * t.elem.length), v.bound))
        if isinstance(t.elem, VectorType):
            t = ArrayType(t.elem.elem, t.length * t.elem.width)
            return self.flatten(Val(D.asScalar << v.e, t, v.bound))
        return v

    def finish(self, v: Val) -> Optional[Val]:
        """The program's result: the kernel's as is, flattened, written through a permutation
        or transposed, reduced sequentially, or fed to a second parallel map."""
        f = self.flatten(v)
        scalars = isinstance(_arr(f.t).elem, ScalarType)
        n = self.length(f.t)

        def permute_out() -> Val:
            s = self.rng.choice(_divisors(n, 2, n // 2) or [1])
            sf, name = (D.reorderStride(s), f"reorderStride{s}") if self.rng.random() < 0.5 \
                else self.perm(n, for_scatter=True)
            self.note(f"out:{name}")
            return Val(sf << f.e, f.t, f.bound)

        def transposed() -> Optional[Val]:
            t = _arr(v.t)
            if not (isinstance(t.elem, ArrayType) and isinstance(t.elem.elem, ScalarType)):
                return None
            self.note("out:transpose")
            tt = ArrayType(ArrayType(t.elem.elem, t.length), t.elem.length)
            return Val(D.transpose << v.e, tt, v.bound)

        def reduced() -> Optional[Val]:
            r = self.red_op(self.S, f.bound, n)
            if r is None:
                return None
            e = f.e
            if self.rng.random() < 0.25:
                pf, pname = self.perm(n)
                e = pf << e
                self.note(f"final:{pname}")
            self.note(f"final:reduceSeq({r[3]})")
            return Val(D.reduceSeq(r[0], r[1]) << e, ArrayType(self.S, cst(1)), r[2])

        def pipeline() -> Val:
            pf, name = self.perm(n)
            h = self.tuple_fun(TupleType((self.S, self.S)), f.bound)
            self.note(f"then:mapGlb(zip(t, {name} t))")
            return Val(D.let(f.e, lambda t: D.mapGlb(0)(h.f) << D.zip(t, pf << t)), f.t, h.bound)

        return self.pick([(2, lambda: v), (3, lambda: f),
                          (1 if scalars else 0, permute_out), (1, transposed), (2 if scalars else 0, reduced),
                          (1 if scalars else 0, pipeline)])

    # -- issue 11's shapes: iterate over global maps, nested tuple results ---------------------------
    def steady(self, b: int) -> FunDecl:
        """S -> S that keeps |x| ≤ b (an iterated step must not grow the values)."""
        F, k = self.F, self.rng.randint(-b, b)
        return self.rng.choice([F.neg, F.abs, F.id, D.fn(lambda v: F.max(v, self.c(k))),
                                D.fn(lambda v: F.min(v, self.c(k)))])

    def glb_iterate(self) -> Optional[Val]:
        """iterate(m, step) where each step is a parallel map over the whole array and reads
        other work-items' (and work-groups') results of the previous step: one kernel a step."""
        v, F, S = self.vector_input(), self.F, self.S
        n, b, m = self.n, v.bound, self.rng.choice([1, 2, 3])

        def stencil() -> Optional[tuple[FunDecl, int, ArithExpr]]:
            pad, w = self.pad_slide(n)
            op, grow = self.rng.choice([(F.max, 1), (F.min, 1), (F.add, w)])
            step = D.compose(D.join, D.mapGlb(0)(D.reduceSeq(op, self.c(0))), D.slide(w, 1), pad)
            self.note(f"glb-iterate{m}:stencil{w}")
            return step, b * grow ** m, v.t.length  # type: ignore[attr-defined]

        def weighted() -> Optional[tuple[FunDecl, int, ArithExpr]]:
            pad, w = self.pad_slide(n)
            dot, grow = self.weighted(w, 1)
            step = D.compose(D.join, D.mapGlb(0)(dot), D.slide(w, 1), pad)
            self.note(f"glb-iterate{m}:weighted{w}")
            return step, b * grow ** m, v.t.length  # type: ignore[attr-defined]

        def halving() -> Optional[tuple[FunDecl, int, ArithExpr]]:
            if n % 2 ** m:
                return None
            step = D.compose(D.join, D.mapGlb(0)(D.reduceSeq(F.add, self.c(0))), D.split(2))
            self.note(f"glb-iterate{m}:halving")
            return step, b * 2 ** m, v.t.length // 2 ** m  # type: ignore[attr-defined]

        def groups() -> Optional[tuple[FunDecl, int, ArithExpr]]:
            c = self.chunk_size(n)
            if c is None:
                return None
            pf, name = self.perm(n)
            step = D.compose(D.join, D.mapWrg(0)(D.mapLcl(0)(self.steady(b))), D.split(c), pf)
            self.note(f"glb-iterate{m}:mapWrg[c={c}]({name})")
            return step, b, v.t.length  # type: ignore[attr-defined]

        got = self.pick([(3, stencil), (3, weighted), (2, halving), (2, groups)])
        if got is None or not self.ok(got[1]):
            return None
        step, nb, length = got
        return Val(D.iterate(m, step) << v.e, ArrayType(S, length), nb)

    def tuple_result(self, v: Val) -> Val:
        """The result beside the results of more parallel maps, in a tuple nested one or two
        deep (unzip gives a tuple of two arrays): one output buffer per array."""
        x = self.vector_input()
        g, h = self.unary(x.bound), self.unary(x.bound)
        pair = D.unzip << (D.mapGlb(0)(D.fn(lambda a: D.tuple_(g.f << a, h.f << a))) << x.e)
        side = D.mapGlb(0)(g.f) << x.e
        shape = self.rng.choice(["(r, unzip)", "((r, side), unzip)", "(unzip, (side, r))"])
        self.note(f"out:tuple{shape}")
        e = {"(r, unzip)": lambda: D.tuple_(v.e, pair),
             "((r, side), unzip)": lambda: D.tuple_(D.tuple_(v.e, side), pair),
             "(unzip, (side, r))": lambda: D.tuple_(pair, D.tuple_(side, v.e))}[shape]()
        return Val(e, v.t, max(v.bound, g.bound, h.bound))

    def program(self) -> Optional[Lambda]:
        shape = self.extra.random()
        if shape < 0.12:
            kernel = self.glb_iterate()
        else:
            kernel = self.pick([(3, self.glb_1d), (2, self.glb_2d), (5, self.wrg_1d),
                                (1, self.wrg_2d), (1, self.tiles)])
        out = self.finish(kernel) if kernel is not None else None
        if out is not None and 0.12 <= shape < 0.27:
            out = self.tuple_result(out)
        # bare numbers (self.c) take the type their use asks for, as in programs made by `fun`
        return None if out is None else settle_literals(Lambda(tuple(self.params), out.e))


def generate(seed: int, flags: GeneratorFlags = DEFAULT_FLAGS) -> RandomCase:
    """The random program of `seed`, type-checked and evaluated by the interpreter (its result
    is kept as the expected output). Deterministic for a given seed and flags."""
    from liftkit.semantics import interpret

    errors: list[str] = []
    for attempt in range(MAX_ATTEMPTS):
        g = _Gen(seed, attempt, flags)
        try:
            prog = g.program()
            if prog is None:
                continue
            check_program(prog)
            expected = interpret(prog, *g.inputs, sizes=g.sizes or None)
        except LiftTypeError as err:  # a combination the type rules reject: draw again
            errors.append(str(err).splitlines()[0])
            continue
        sizes = ", ".join(f"{k}={v}" for k, v in g.sizes.items()) or "constant sizes"
        desc = f"{'float' if g.S.is_float else 'int'} data |x|≤{g.b0}, {sizes}: " + " → ".join(g.notes)
        return RandomCase(seed, prog, g.inputs, dict(g.sizes), desc, expected, flags, attempt + 1)
    raise RuntimeError(f"seed {seed}: no valid program in {MAX_ATTEMPTS} draws; last errors: {errors[-3:]}")
