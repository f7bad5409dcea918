"""Random well-typed low-level Lift programs, for differential testing of the code generator.

`generate(seed)` builds a program type-directed: it tracks the current type and a bound on every
value's magnitude and picks only patterns that apply; `check_program` and the interpreter vet the
result (a rejected draw is retried). Kernels look like real ones: a parallel map (mapGlb in 1–2
dimensions, or mapWrg over chains of mapLcl phases) over a layout of the inputs, maybe followed by
a sequential reduction or a second parallel map (a second kernel); address-space wrappers only
where OpenCL allows them. Data are small integers whose bound keeps every value exact (< 2^22
for floats), so results must equal the interpreter's bit for bit (`liftkit.testing.check_case`).
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass, fields
from typing import Any, Callable, Optional, Sequence

import numpy as np

from liftkit import dsl as D
from liftkit.arith import ArithExpr, cst, size_var
from liftkit.ir.nodes import Expr, FunDecl, Lambda, Literal, Param, UserFun, lit, user_fun
from liftkit.ir.typecheck import check_program
from liftkit.ir.userfuns import ScalarFuns, id_of, scalar_funs
from liftkit.types import ArrayType, LiftTypeError, ScalarType, TupleType, Type, VectorType, float32, int32

MAX_ATTEMPTS = 40  # draws per seed before giving up (a draw fails only on a generator slip)
LENGTHS = (64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048)  # many divisors
ROWS, COLS = (8, 12, 16, 24, 32, 48, 64), (8, 16, 24, 32, 64)
BOUNDARIES = ("clamp", "wrap", "mirror", "constant")


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


@dataclass(frozen=True)
class Fn:
    """A generated function, the type it returns and a bound on |every scalar| of its result."""

    f: FunDecl
    out: Type
    bound: int


@dataclass(frozen=True)
class Val:
    """A generated expression, its type and bound; in a work-group `space` says where it lives
    (input: a view of the inputs; global, local: computed; iter: iterate's buffers)."""

    e: Expr
    t: Type
    bound: int
    space: str = "input"


@functools.cache
def _sq(t: ScalarType) -> UserFun:
    """x*x as one user function (mapVec needs a user function, not a lambda)."""
    return user_fun("sq" if t == float32 else f"sq_{t.name}", [("x", t)], t, "return x * x;", lambda x: x * x)


def _divisors(n: int, lo: int, hi: int) -> list[int]:
    return [d for d in range(max(lo, 1), min(hi, n) + 1) if n % d == 0]


def _arr(t: Type) -> ArrayType:
    assert isinstance(t, ArrayType), t
    return t


def _flat(t: Type) -> bool:
    return isinstance(t, (ScalarType, TupleType))


class _Gen:
    """One draw: every choice comes from `rng`, so (seed, attempt, flags) fix the program."""

    def __init__(self, seed: int, attempt: int, flags: GeneratorFlags) -> None:
        self.rng = random.Random(seed * 1009 + attempt)
        self.flags = flags
        self.S: ScalarType = self.rng.choice([float32, int32])
        self.F: ScalarFuns = scalar_funs(self.S)
        self.limit = 2**22 if self.S.is_float else 2**29
        self.b0 = self.rng.choice([2, 3, 4, 8])
        self.symbolic = self.rng.random() < 0.4
        self.n = self.rng.choice(LENGTHS)
        self.rows, self.cols = self.rng.choice(ROWS), self.rng.choice(COLS)
        self.sizes: dict[str, int] = {}
        self.params: list[Param] = []
        self.inputs: list[Any] = []
        self.scalar: Optional[Param] = None
        self.notes: list[str] = []
        self.data = np.random.default_rng(seed)

    # -- helpers ---------------------------------------------------------------------------------
    def pick(self, options: Sequence[tuple[float, Callable[[], Any]]]) -> Any:
        """Call a weighted random builder; one that returns None does not apply here."""
        opts = [o for o in options if o[0] > 0]
        while opts:
            r = self.rng.random() * sum(w for w, _ in opts)
            k = 0
            while k < len(opts) - 1 and r > opts[k][0]:
                r -= opts[k][0]
                k += 1
            out = opts.pop(k)[1]()
            if out is not None:
                return out
        return None

    def ok(self, bound: int) -> bool:
        return 0 <= bound <= self.limit

    def c(self, v: int) -> Literal:
        return lit(float(v)) if self.S.is_float else lit(int(v))

    def length(self, t: Type) -> int:
        return _arr(t).length.eval(self.sizes)

    def note(self, s: str) -> None:
        self.notes.append(s)

    # -- inputs ----------------------------------------------------------------------------------
    def _input(self, t: Type, shape: tuple[int, ...]) -> Val:
        p = Param("xyzw"[sum(isinstance(q.type, ArrayType) for q in self.params)], t)
        self.params.append(p)
        self.inputs.append(self.data.integers(-self.b0, self.b0 + 1, shape).astype(self.S.dtype))
        return Val(p, t, self.b0)

    def _outer(self, n: int) -> ArithExpr:
        if self.symbolic:
            self.sizes["N"] = n
        return size_var("N") if self.symbolic else cst(n)

    def vector_input(self, fresh: bool = False) -> Val:
        """A 1D input of the main length: an existing one unless `fresh` (at most three)."""
        ones = [p for p in self.params
                if isinstance(p.type, ArrayType) and isinstance(p.type.elem, ScalarType)]
        if ones and (not fresh or len(ones) >= 3):
            p = self.rng.choice(ones)
            return Val(p, p.type, self.b0)
        return self._input(ArrayType(self.S, self._outer(self.n)), (self.n,))

    def matrix_input(self) -> Val:
        return self._input(ArrayType(ArrayType(self.S, cst(self.cols)), self._outer(self.rows)),
                           (self.rows, self.cols))

    def scalar_input(self) -> Param:
        if self.scalar is None:
            self.scalar = Param("a", self.S)
            self.params.append(self.scalar)
            self.inputs.append(self.S.dtype.type(self.rng.choice([-2, -1, 2, 3])))
        return self.scalar

    def perm(self, n: int, for_scatter: bool = False) -> tuple[FunDecl, str]:
        """A permutation of n elements as a read view (gather, reorderStride) or a scatter."""
        s = self.rng.choice(_divisors(n, 2, n // 2) or [1])
        opts = [
            (2, lambda: (lambda i, m: m - 1 - i, "reverse")),
            (2 if s > 1 else 0, lambda: (lambda i, m: (i % s) * (m // s) + i // s, f"stride{s}")),
            (0 if for_scatter or s == 1 else 2, lambda: (D.reorderStride(s), f"reorderStride{s}"))]
        f, name = self.pick(opts)
        return (f if isinstance(f, FunDecl) else D.scatter(f) if for_scatter else D.gather(f)), name

    def pad_slide(self, n: int) -> tuple[FunDecl, int]:
        """pad(l, r, boundary) for a window of w = l + r + 1 slid by 1: keeps the length n."""
        w = self.rng.choice([2, 3, 3, 5])
        left = self.rng.randrange(w)
        kind = self.rng.choice(BOUNDARIES)
        if kind == "mirror" and w > n:
            kind = "clamp"
        return D.pad(left, w - 1 - left, self.c(self.rng.choice([0, 7])) if kind == "constant" else kind), w

    # -- scalar, tuple and vector functions ------------------------------------------------------
    def binop(self, b1: int, b2: int) -> tuple[UserFun, int]:
        F = self.F
        cands = [(F.add, b1 + b2), (F.sub, b1 + b2), (F.max, max(b1, b2)), (F.min, max(b1, b2)),
                 (F.mult, b1 * b2)]
        return self.rng.choice([c for c in cands if self.ok(c[1])])

    def unary(self, b: int, depth: int = 0) -> Fn:
        """S -> S: a user function, or a lambda over user functions, literals and a scalar input."""
        F, S = self.F, self.S
        k = self.rng.choice([-3, -1, 2, 5])
        (op_c, b_c), (op_s, b_s) = self.binop(b, abs(k)), self.binop(b, b)

        def composed() -> Fn:
            g = self.unary(b, depth + 1)
            f = self.unary(g.bound, depth + 1)
            return Fn(D.compose(f.f, g.f), S, f.bound)

        return self.pick([
            (1, lambda: Fn(F.id, S, b)), (1, lambda: Fn(F.abs, S, b)), (1, lambda: Fn(F.neg, S, b)),
            (3, lambda: Fn(D.fn(lambda v: op_s(v, v)), S, b_s)),
            (3, lambda: Fn(D.fn(lambda v: op_c(v, self.c(k))), S, b_c)),
            (1 if self.ok(3 * b) else 0,
             lambda: Fn(D.fn(lambda v: F.mult(self.scalar_input(), v)), S, 3 * b)),
            (0 if depth else 2, composed)])

    def tuple_fun(self, t: TupleType, b: int) -> Fn:
        """(S, S[, S]) -> S: a binary user function spread over a pair, or get and combine."""
        k, S = len(t.elems), self.S
        op1, b1 = self.binop(b, b)
        op2, b2 = self.binop(b1, b)
        i = self.rng.randrange(k)

        def via_get() -> Fn:
            u = self.unary(b, 1)
            return Fn(D.fn(lambda tp: u.f(tp[i])), S, u.bound)

        return self.pick([
            (2 if k == 2 else 0, lambda: Fn(op1, S, b1)), (1, via_get),
            (3 if k == 2 else 0, lambda: Fn(D.fn(lambda tp: op1(tp[1], tp[0])), S, b1)),
            (3 if k == 3 else 0, lambda: Fn(D.fn(lambda tp: op2(op1(tp[0], tp[1]), tp[2])), S, b2))])

    def vector_fun(self, t: VectorType, b: int) -> Fn:
        """S<w> -> S<w>: mapVec of a user function, or a vectorised user function."""
        F, w = self.F, t.width
        unary = [F.neg] + ([] if self.flags.avoid_int_vector_abs and not self.S.is_float else [F.abs])
        op, nb = self.binop(b, b)
        vop = op.vectorize(w)
        f, fb = self.rng.choice([(u, b) for u in unary] + [(F.id, b), (_sq(self.S), b * b)])
        return self.pick([
            (2 if self.ok(fb) else 0, lambda: Fn(D.mapVec(f), t, fb)),
            (1, lambda: Fn(self.rng.choice(unary).vectorize(w), t, b)),
            (2, lambda: Fn(D.fn(lambda v: vop(v, v)), t, nb))])

    def elem_fun(self, t: Type, b: int, depth: int = 0, in_wrg: bool = False) -> Fn:
        """One element to a storable value (scalar, vector, or array of those)."""
        if isinstance(t, ScalarType):
            return self.unary(b)
        if isinstance(t, TupleType):
            return self.tuple_fun(t, b)
        if isinstance(t, VectorType):
            return self.vector_fun(t, b)
        return self.seq_fun(_arr(t), b, depth + 1, in_wrg)

    def red_op(self, elem: Type, b: int, n: int) -> Optional[tuple[FunDecl, Literal, int, str]]:
        """(operator, initial value, bound of the result, name) to reduce n elements of `elem`."""
        F = self.F
        z = self.rng.choice([0, 0, 1, -2])
        init: Literal = self.c(z)
        cands: list[tuple[Callable[[], FunDecl], int, str]]
        if isinstance(elem, ScalarType):
            cands = [(lambda: F.add, n * b, "add"), (lambda: F.max, b, "max"), (lambda: F.min, b, "min"),
                     (lambda: D.fn(lambda acc, x: F.add(acc, F.mult(x, x))), n * b * b, "sumsq"),
                     (lambda: F.absAndSumUp, n * b, "absAndSumUp"),
                     (lambda: D.fn(lambda acc, x: F.max(acc, F.add(x, x))), 2 * b, "max2x"),
                     (lambda: D.fn(lambda acc, x: F.sub(acc, x)), n * b, "sub")]
            if n <= 12 and b ** n <= self.limit and self.rng.random() < 0.5:
                z, init = 1, self.c(self.rng.choice([1, -1]))
                cands = [(lambda: F.mult, b ** n, "mult")]
        elif isinstance(elem, TupleType) and len(elem.elems) == 2:
            cands = [(lambda: F.multAndSumUp, n * b * b, "multAndSumUp"),
                     (lambda: D.fn(lambda acc, tp: F.add(acc, F.max(tp[0], tp[1]))), n * b, "summax"),
                     (lambda: D.fn(lambda acc, tp: F.max(acc, F.sub(tp[0], tp[1]))), 2 * b, "maxdiff")]
        elif isinstance(elem, TupleType):
            cands = [(lambda: D.fn(lambda acc, tp: F.add(acc, F.mult(tp[0], F.add(tp[1], tp[2])))),
                      2 * n * b * b, "sum3")]
        elif isinstance(elem, VectorType):
            w = elem.width
            z, init = 0, lit(tuple(self.c(0).value for _ in range(w)), VectorType(self.S, w))
            cands = [(lambda: F.add.vectorize(w), n * b, "add_vec"),
                     (lambda: F.max.vectorize(w), b, "max_vec")]
        else:
            return None
        cands = [c for c in cands if self.ok(c[1] + abs(z))]
        if not cands:
            return None
        mk, nb, name = self.rng.choice(cands)
        return mk(), init, nb + abs(z), name

    # -- sequential functions of arrays (one thread) -----------------------------------------------
    def seq_fun(self, t: ArrayType, b: int, depth: int = 0, in_wrg: bool = False) -> Fn:
        """[E]_n -> an array, computed sequentially by one thread."""
        elem, n, S = t.elem, self.length(t), self.S
        const = t.length.is_constant
        small, leaf = const and n <= 16, isinstance(elem, (ScalarType, TupleType, VectorType))

        def map_seq(unroll: bool = False) -> Optional[Fn]:
            if (unroll and not small) or (not leaf and depth >= 2):
                return None
            g = self.elem_fun(elem, b, depth, in_wrg)
            out = Fn((D.mapSeqUnroll if unroll else D.mapSeq)(g.f), ArrayType(g.out, t.length), g.bound)
            if isinstance(g.out, ArrayType) and self.rng.random() < 0.6:
                out = Fn(D.compose(D.join, out.f), ArrayType(g.out.elem, t.length * g.out.length), out.bound)
            return out

        def reduce(unroll: bool = False, post: bool = False) -> Optional[Fn]:
            r = None if unroll and not small else self.red_op(elem, b, n)
            if r is None:
                return None
            op, init, nb, _ = r
            f: FunDecl = (D.reduceSeqUnroll if unroll else D.reduceSeq)(op, init)
            if post and isinstance(init.type, ScalarType):
                u = self.unary(nb, 1)
                return Fn(D.compose(D.mapSeq(u.f), f), ArrayType(init.type, cst(1)), u.bound)
            return Fn(f, ArrayType(init.type, cst(1)), nb)

        def private_then_reduce() -> Optional[Fn]:
            if not (const and n <= 32 and _flat(elem)):
                return None
            g = self.elem_fun(elem, b, depth, in_wrg)
            r = self.red_op(S, g.bound, n)
            if r is None:
                return None
            op, init, nb, _ = r
            return Fn(D.compose(D.reduceSeq(op, init), D.toPrivate(D.mapSeq(g.f))), ArrayType(S, cst(1)), nb)

        def permuted() -> Optional[Fn]:
            if not leaf:
                return None
            pf, _ = self.perm(n)
            g = self.elem_fun(elem, b, depth, in_wrg)
            return Fn(D.compose(D.mapSeq(g.f), pf), ArrayType(g.out, t.length), g.bound)

        def chunks() -> Optional[Fn]:
            ks = _divisors(n, 2, min(16, n // 2))
            r = self.red_op(elem, b, ks[-1]) if ks and _flat(elem) else None
            if r is None:
                return None
            k = self.rng.choice(ks)
            op, init, nb, _ = r
            return Fn(D.compose(D.join, D.mapSeq(D.reduceSeq(op, init)), D.split(k)),
                      ArrayType(S, t.length // k), nb)

        def stencil() -> Optional[Fn]:
            if not isinstance(elem, ScalarType) or n < 4:
                return None
            pad, w = self.pad_slide(n)
            r = self.red_op(S, b, w)
            if r is None:
                return None
            op, init, nb, _ = r
            return Fn(D.compose(D.join, D.mapSeq(D.reduceSeq(op, init)), D.slide(w, 1), pad), t, nb)

        def let_neighbours() -> Optional[Fn]:
            if not (isinstance(elem, ScalarType) and n >= 2):
                return None
            spaces = ["global"] + (["private"] if const and n <= 32 else []) + (
                ["local"] if in_wrg and const and n <= 64 else [])
            wrap = {"global": D.fn, "private": D.toPrivate, "local": D.toLocal}[self.rng.choice(spaces)]
            g = self.unary(b)
            h = self.tuple_fun(TupleType((S, S)), g.bound)
            pf, _ = self.perm(n)
            f = D.fn(lambda xs: D.let(wrap(D.mapSeq(g.f)) << xs,
                                      lambda tmp: D.mapSeq(h.f) << D.zip(tmp, pf << tmp)))
            return Fn(f, ArrayType(S, t.length), h.bound)

        def tree() -> Optional[Fn]:  # a tree reduction by one thread of a mapGlb (global buffers)
            if in_wrg or not (const and isinstance(elem, ScalarType) and n % 2 == 0):
                return None
            m = self.rng.randint(1, max(j for j in range(1, 6) if n % 2 ** j == 0))
            step = D.compose(D.join, D.mapSeq(D.reduceSeq(self.F.add, self.c(0))), D.split(2))
            f: FunDecl = D.iterate(m, step)
            if self.rng.random() < 0.5:  # read by a copy (else written directly)
                f = D.compose(D.join, D.mapSeq(D.mapSeq(self.F.id)), D.split(1), f)
            self.note(f"seq:iterate{m}")
            return Fn(f, ArrayType(S, cst(n // 2 ** m)), b * 2 ** m) if self.ok(b * 2 ** m) else None

        out = self.pick([(4, map_seq), (3, lambda: map_seq(True)), (4, reduce), (3, lambda: reduce(True)),
                         (1, lambda: reduce(post=True)), (3, private_then_reduce), (1, permuted),
                         (1, chunks), (2, stencil), (1, let_neighbours), (2, tree)])
        assert out is not None, f"no sequential function for {t}"
        return out

    # -- kernel inputs -----------------------------------------------------------------------------
    def base_1d(self, allow: set[str]) -> Val:
        """An array [E]_n over the inputs through data-layout patterns; `allow` names the
        element kinds the consumer takes: scalar, tuple, vector, array."""
        n, S = self.n, self.S

        def permuted() -> Val:
            v, (pf, name) = self.vector_input(), self.perm(n)
            self.note(f"in:{name}")
            return Val(pf << v.e, v.t, v.bound)

        def zipped() -> Val:
            k = self.rng.choice([2, 2, 3])
            parts = [self.vector_input(fresh=self.rng.random() < 0.6) for _ in range(k)]
            es = [p.e if j == 0 or self.rng.random() < 0.6 else self.perm(n)[0] << p.e
                  for j, p in enumerate(parts)]
            self.note(f"zip{k}")
            return Val(D.zip(*es), ArrayType(TupleType((S,) * k), parts[0].t.length), self.b0)

        def vectors() -> Val:
            w, v = self.rng.choice([2, 4, 4, 8]), self.vector_input()
            self.note(f"asVector{w}")
            return Val(D.asVector(w) << v.e, ArrayType(VectorType(S, w), v.t.length // w), v.bound)

        def rows() -> Val:
            v, ks = self.vector_input(), _divisors(n, 2, 64)
            small = [k for k in ks if k <= 16]
            k = self.rng.choice(small if small and self.rng.random() < 0.6 else ks)
            if self.rng.random() < 0.3:
                self.note(f"transpose∘split{n // k}")
                e = D.transpose << (D.split(n // k) << v.e)
                return Val(e, ArrayType(ArrayType(S, v.t.length // (n // k)), cst(n // k)), v.bound)
            self.note(f"split{k}")
            return Val(D.split(k) << v.e, ArrayType(ArrayType(S, cst(k)), v.t.length // k), v.bound)

        def windows() -> Val:
            v, (pad, w) = self.vector_input(), self.pad_slide(n)
            self.note(f"slide{w}")
            return Val(D.slide(w, 1) << (pad << v.e), ArrayType(ArrayType(S, cst(w)), v.t.length), v.bound)

        def joined() -> Val:
            v = self.matrix_input()
            self.n = self.rows * self.cols
            self.note("join2d")
            return Val(D.join << v.e, ArrayType(S, _arr(v.t).length * self.cols), v.bound)

        def matrix_rows() -> Val:
            self.note("rows2d")
            return self.matrix_input()

        arrays = "array" in allow
        return self.pick([(3, self.vector_input), (2, permuted), (3 if "tuple" in allow else 0, zipped),
                          (3 if "vector" in allow else 0, vectors), (2 if arrays else 0, rows),
                          (2 if arrays else 0, windows), (1, joined), (1 if arrays else 0, matrix_rows)])

    def base_2d(self) -> Val:
        """[[E]_m]_n with scalar or tuple elements."""
        def split_1d() -> Optional[Val]:
            v = self.base_1d({"scalar", "tuple"})
            k = self.rng.choice(_divisors(self.length(v.t), 4, 64) or [0])
            self.note(f"split{k}")
            return Val(D.split(k) << v.e, ArrayType(ArrayType(_arr(v.t).elem, cst(k)), v.t.length // k),
                       v.bound) if k else None

        def transposed() -> Val:
            v = self.matrix_input()
            self.note("transpose")
            t = ArrayType(ArrayType(self.S, _arr(v.t).length), cst(self.cols))
            return Val(D.transpose << v.e, t, v.bound)

        def row_perm() -> Val:
            v, (pf, name) = self.matrix_input(), self.perm(self.cols)
            self.note(f"map({name})")
            return Val(D.map(pf) << v.e, v.t, v.bound)

        return self.pick([(3, split_1d), (2, self.matrix_input), (2, transposed), (1, row_perm)])

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
            f, space = wrap(D.mapLcl(0)(D.reduceSeq(r[0], r[1])), ArrayType(S, cst(1)))
            self.note(f"wg:stencil{w}")
            e = D.join << (f << (D.slide(w, 1) << (pad << v.e)))
            return Val(e, ArrayType(S, v.t.length), r[2], space)

        def vectors() -> Optional[Val]:
            ws = [w for w in (2, 4, 8) if L % w == 0]
            if not scalar or v.space not in ("input", "local") or not ws:
                return None
            w = self.rng.choice(ws)
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

    def program(self) -> Optional[Lambda]:
        kernel = self.pick([(3, self.glb_1d), (2, self.glb_2d), (5, self.wrg_1d), (1, self.wrg_2d),
                            (1, self.tiles)])
        out = self.finish(kernel) if kernel is not None else None
        return None if out is None else Lambda(tuple(self.params), out.e)


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
