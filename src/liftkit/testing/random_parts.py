"""The building blocks of the random-program generator (`liftkit.testing.random_programs`):
generated values and functions, inputs, scalar/tuple/vector functions, sequential functions of
arrays and the data-layout views kernels start from. `random_programs` builds kernels, their
work-group bodies and the program's result on top of these."""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import numpy as np

from liftkit import dsl as D
from liftkit.arith import ArithExpr, cst, size_var
from liftkit.ir.nodes import Expr, FunDecl, Literal, Param, UserFun, lit, user_fun
from liftkit.ir.userfuns import ScalarFuns, scalar_funs
from liftkit.types import ArrayType, ScalarType, TupleType, Type, VectorType, float32, float64, int32

LENGTHS = (64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048)  # many divisors
ROWS, COLS = (8, 12, 16, 24, 32, 48, 64), (8, 16, 24, 32, 64)
BOUNDARIES = ("clamp", "wrap", "mirror", "constant")

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


class Parts:
    """One draw's building blocks: every choice comes from `rng`, so (seed, attempt, flags)
    fix the program."""

    def __init__(self, seed: int, attempt: int, flags: Any) -> None:
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
        # the shapes added later (issue 11: doubles, iterate over global maps, nested tuple
        # results) draw from their own stream, so the earlier shapes' programs stay as they were
        self.extra = random.Random(seed * 7919 + attempt)
        if self.extra.random() < 0.15:
            self.S, self.F = float64, scalar_funs(float64)
        # 16-wide vectors (the rules' widest, VECTOR_WIDTHS) from a stream of their own too
        self.wide = random.Random(seed * 104729 + attempt)
        # private arrays in registers read or accumulated as vectors: their own stream as well
        self.regs = random.Random(seed * 15485863 + attempt)

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

    def vector_width(self, ws: Sequence[int], length: int) -> int:
        """A width of `ws` (drawn as before 16 was added), now and then 16 where it divides
        `length`: the rules vectorise with 2, 4, 8 and 16."""
        w = self.rng.choice(ws)
        return 16 if length % 16 == 0 and self.wide.random() < 0.3 else w

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

    def weighted(self, w: int, b: int) -> tuple[FunDecl, int]:
        """A window of w elements to its dot product with an array literal of differing weights
        (a const array in the kernel); drawn from the `extra` stream. Returns (function, bound)."""
        ws = [self.extra.choice([-2, -1, 1, 2, 3]) for _ in range(w)]
        if len(set(ws)) == 1:
            ws[0] = -ws[0]
        weights = lit(np.array(ws, self.S.dtype), ArrayType(self.S, cst(w)))
        F = self.F
        self.note(f"weights{ws}")
        dot = D.fn(lambda win: D.reduceSeq(lambda acc, p: F.add(acc, F.mult(p[0], p[1])), self.c(0))
                   << D.zip(win, weights))
        return dot, b * sum(map(abs, ws))

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
            window: FunDecl = D.reduceSeq(op, init)
            if self.extra.random() < 0.4 and self.ok(b * 6 * w):  # weights in a literal
                window, nb = self.weighted(w, b)
            return Fn(D.compose(D.join, D.mapSeq(window), D.slide(w, 1), pad), t, nb)

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

        def vector_registers() -> Optional[Fn]:
            """A private array kept in registers (every index constant) read as vectors, or a
            block of sums in registers that vectorised adds update (the rules' register blocks:
            their vloads/vstores once named an array that had turned into scalars)."""
            ws = [w for w in (2, 4, 8, 16) if n % w == 0 and n // w <= 8]
            if not (small and isinstance(elem, ScalarType) and elem == S and ws):
                return None
            w = self.regs.choice(ws)
            if self.regs.random() < 0.5:
                g = self.unary(b)
                v = self.vector_fun(VectorType(S, w), g.bound)
                self.note(f"registers-as-vectors{w}")
                return Fn(D.compose(D.asScalar, D.mapSeqUnroll(v.f), D.asVector(w),
                                    D.toPrivate(D.mapSeqUnroll(g.f))), t, v.bound)
            k = 2 * w if n % (2 * w) == 0 else w
            op = self.regs.choice([self.F.add, self.F.max, self.F.min])
            nb = b * (n // k) if op is self.F.add else b
            if not self.ok(nb):
                return None
            vop = op.vectorize(w)
            zeros = lit(np.zeros(k, S.dtype), ArrayType(S, cst(k)))
            step = D.fn(lambda acc, x: D.asScalar << D.mapSeqUnroll(vop)
                        << D.zip(D.asVector(w) << acc, D.asVector(w) << x))
            self.note(f"vector-sums-in-registers{w}")
            return Fn(D.compose(D.mapSeqUnroll(self.F.id), D.join,
                                D.reduceSeq(step, D.toPrivate(D.mapSeqUnroll(self.F.id)) << zeros),
                                D.split(k)), ArrayType(S, cst(k)), nb)

        if self.regs.random() < 0.15:
            regs = vector_registers()
            if regs is not None:
                return regs
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
            w, v = self.vector_width([2, 4, 4, 8], self.n), self.vector_input()
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
