"""Programs to rewrite: random well-typed high-level programs, the bundled high-level programs,
and partially lowered variants of both obtained by applying random rules.

`random_case(seed)` builds a program type-directed from map, zip, reduce, split, join, reorder
and iterate (plus a little asVector/asScalar) over user functions with declared facts (add, mult,
max and min with their identities, an associative and commutative `addNoId` without one, and
scalar maps such as abs, neg, dbl, inc), together with integer-valued float32 inputs. It tracks a
bound on every value so that all intermediate results stay exact small integers: summation order
then cannot change a result, and a sound rewrite must reproduce the interpreter's output bit for
bit. `walk(case, rules, rng, steps)` applies random rules; `run` and `same_result` evaluate and
compare.

A random `Case` can be rebuilt from its seed alone (`random_case(seed)`), so a failure report
needs only the seed and the walk.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

import numpy as np

from liftkit.arith import ArithExpr, cst, size_var
from liftkit.ir import patterns as P
from liftkit.ir.nodes import Expr, FunCall, Lambda, Literal, Param, UserFun, user_fun, walk
from liftkit.ir.typecheck import check_program
from liftkit.ir.userfuns import FLOAT, INT
from liftkit.rewrite.core import Choice, Rule, apply_choice, enumerate_choices
from liftkit.rewrite.rules.common import call, divisors, fresh, identity_literal, lam, normal_form
from liftkit.semantics.interpreter import EvaluationError, interpret
from liftkit.types import ArrayType, LiftTypeError, ScalarType, TupleType, Type, VectorType, float32, int32

EXACT = 2 ** 20  # every value the generator allows stays below this: float32 sums stay exact

# -- user functions -------------------------------------------------------------------------------
dbl = user_fun("dbl", [("x", float32)], float32, "return x + x;", lambda x: x + x)
inc = user_fun("inc", [("x", float32)], float32, "return x + 1.0f;", lambda x: x + np.float32(1))
addNoId = user_fun("addNoId", [("x", float32), ("y", float32)], float32, "return x + y;",
                   lambda x, y: x + y, associative=True, commutative=True)

# (function, bound of the result from the argument bound)
UNARY: tuple[tuple[UserFun, Callable[[float], float]], ...] = (
    (FLOAT.abs, lambda b: b), (FLOAT.neg, lambda b: b), (FLOAT.id, lambda b: b),
    (dbl, lambda b: 2 * b), (inc, lambda b: b + 1))
BINARY: tuple[tuple[UserFun, Callable[[float, float], float]], ...] = (
    (FLOAT.add, lambda a, b: a + b), (FLOAT.sub, lambda a, b: a + b),
    (FLOAT.mult, lambda a, b: a * b), (FLOAT.max, max), (FLOAT.min, max))
REDUCERS: tuple[UserFun, ...] = (FLOAT.add, FLOAT.mult, FLOAT.max, FLOAT.min, addNoId)
INT_REDUCERS: tuple[UserFun, ...] = (INT.add, INT.max, INT.min)

LENGTHS = (8, 12, 16, 24, 32, 48, 64, 96, 128)
ROWS = (4, 6, 8, 12, 16)


@dataclass
class Case:
    """A program in rewrite normal form with inputs and its interpreted result."""

    program: Lambda
    inputs: list[Any]
    expected: Any
    seed: int
    origin: str  # "random", "bundled:asum", ... plus the rules of a walk
    sizes: Mapping[str, int] = field(default_factory=dict)
    steps: tuple[Choice, ...] = ()

    @property
    def symbolic(self) -> bool:
        return any(_symbolic(p.type) for p in self.program.params)  # type: ignore[arg-type]


def _symbolic(t: Type) -> bool:
    if isinstance(t, ArrayType):
        return not t.length.is_constant or _symbolic(t.elem)
    if isinstance(t, TupleType):
        return any(_symbolic(e) for e in t.elems)
    return False


# ---------------------------------------------------------------------------------------------
# running and comparing


def run(program: Lambda, inputs: Sequence[Any], sizes: Optional[Mapping[str, int]] = None) -> Any:
    return interpret(program, *inputs, sizes=dict(sizes or {}) or None)


def same_result(a: Any, b: Any) -> bool:
    """Equal shapes, dtypes and values (NaN equal to NaN), through tuples and structured arrays."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        return (isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b)
                and all(same_result(x, y) for x, y in zip(a, b)))
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.names:
        return all(same_result(a[n], b[n]) for n in a.dtype.names)
    return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))


def is_size_error(err: Exception) -> bool:
    """A run-time divisibility failure (a factor chosen for a symbolic length that the bound
    sizes do not admit)."""
    msg = str(err)
    return isinstance(err, EvaluationError) and ("divide" in msg or "divisible" in msg)


# ---------------------------------------------------------------------------------------------
# the random program generator


@dataclass(frozen=True)
class V:
    """A generated value: expression, type, and a bound on the magnitude of every leaf."""

    e: Expr
    t: Type
    bound: float


class Generator:
    """Builds one program type-directed: each stage takes the current 1-D array value and picks a
    pattern that applies to it, keeping every bound below EXACT (mult reductions only over
    values of magnitude at most 1)."""

    def __init__(self, rng: random.Random, symbolic: bool = False) -> None:
        self.rng = rng
        self.symbolic = symbolic
        self.params: list[Param] = []
        self.bounds: dict[Param, float] = {}

    # -- inputs ------------------------------------------------------------------------------
    def input(self, t: Type, bound: float, name: str) -> V:
        p = Param(name, t)
        self.params.append(p)
        self.bounds[p] = bound
        return V(p, t, bound)

    def scalars(self) -> list[V]:
        return [V(p, p.type, self.bounds[p]) for p in self.params if isinstance(p.type, ScalarType)]  # type: ignore[arg-type]

    # -- stages on a 1-D array ---------------------------------------------------------------
    def stage(self, v: V, depth: int, allow_reduce: bool = True) -> V:
        t = v.t
        assert isinstance(t, ArrayType)
        n = t.length.value if t.length.is_constant else None
        options: list[Callable[[], Optional[V]]] = [
            lambda: self.map_unary(v), lambda: self.map_unary(v), lambda: self.map_lambda(v),
            lambda: self.map_zip(v), lambda: self.reorder(v), lambda: self.reorder_map(v),
            lambda: self.map_map(v)]
        if allow_reduce:
            options += [lambda: self.reduce(v), lambda: self.reduce(v), lambda: self.part_reduce(v)]
        if n is None or n >= 4:
            options += [lambda: self.split_map_join(v, depth), lambda: self.split_map_join(v, depth),
                        lambda: self.iterate(v), lambda: self.layout_noise(v),
                        lambda: self.layout_noise(v)]
        for _ in range(8):
            out = self.rng.choice(options)()
            if out is not None and out.bound < EXACT:
                return out
        return v

    def map_unary(self, v: V) -> Optional[V]:
        if not _float_elems(v.t):
            return None
        f, b = self.rng.choice(UNARY)
        body = f if self.rng.random() < 0.4 else lam(1, lambda x: call(f, x))
        return V(call(P.Map(body), v.e), v.t, b(v.bound))

    def map_lambda(self, v: V) -> Optional[V]:
        """map(λx. g(f(x), x)) or map(λx. g(a, x)) with a scalar input a: a body that uses its
        parameter twice, or a free variable."""
        if not _float_elems(v.t):
            return None
        (f, fb), (g, gb) = self.rng.choice(UNARY), self.rng.choice(BINARY)
        sc = self.scalars()
        if sc and self.rng.random() < 0.5:
            a = self.rng.choice(sc)
            return V(call(P.Map(lam(1, lambda x: call(g, a.e, x))), v.e), v.t, gb(a.bound, v.bound))
        return V(call(P.Map(lam(1, lambda x: call(g, call(f, x), x))), v.e), v.t,
                 gb(fb(v.bound), v.bound))

    def map_zip(self, v: V) -> Optional[V]:
        if not _float_elems(v.t):
            return None
        copy = V(fresh(v.e), v.t, v.bound)  # a second use: no binders shared between copies
        other = self.map_unary(copy) if self.rng.random() < 0.5 else None
        w = other if other is not None else copy
        g, gb = self.rng.choice(BINARY)
        z = call(P.Zip(2), v.e, w.e)
        style = self.rng.randrange(3)
        if style == 0:
            f = g  # map(add)(zip(..)): a user function of two parameters on pairs
        elif style == 1:
            f = lam(1, lambda p: call(g, p), ("p",))
        else:
            f = lam(1, lambda p: call(g, call(P.Get(cst(0)), p), call(P.Get(cst(1)), p)), ("p",))
        return V(call(P.Map(f), z), v.t, gb(v.bound, w.bound))

    def reorder(self, v: V) -> V:
        return V(call(P.Reorder(), v.e), v.t, v.bound)

    def reduce(self, v: V) -> Optional[V]:
        t = v.t
        assert isinstance(t, ArrayType)
        elem = t.elem
        if elem not in (float32, int32):
            return None
        ops = [op for op in (REDUCERS if elem == float32 else INT_REDUCERS)
               if op.name != "mult" or v.bound <= 1]
        op = self.rng.choice(ops)
        z = identity_literal(op, elem) if op.identity is not None else None
        if z is None or self.rng.random() < 0.2:
            z = Literal(float(self.rng.choice((1, 2))) if elem == float32 else 1, elem)
            if op.name == "mult":
                z = Literal(1.0, elem)
        n = t.length.value if t.length.is_constant else 4096
        zb = abs(float(z.value)) if np.isfinite(z.value) else 0.0
        if op.name.startswith("mult"):
            bound = max(zb, 1.0) * max(v.bound, 1.0)
        elif op.name.startswith(("max", "min")):
            bound = max(zb, v.bound)
        else:
            bound = zb + n * v.bound
        body = op if self.rng.random() < 0.5 else lam(2, lambda a, b: call(op, a, b), ("acc", "x"))
        return V(call(P.Reduce(body), z, v.e), ArrayType(elem, cst(1)), bound)

    def part_reduce(self, v: V) -> Optional[V]:
        """partRed(⊕, z) m: z the identity of ⊕ or (where the rules must then refuse to iterate
        it) another value; m divides the length."""
        t = v.t
        assert isinstance(t, ArrayType)
        n = t.length.value if t.length.is_constant else None
        if t.elem != float32 or n is None:
            return None
        m = self.rng.choice(divisors(n))
        op = self.rng.choice((FLOAT.add, FLOAT.max, FLOAT.min, addNoId))
        z = identity_literal(op, float32)
        if z is None or self.rng.random() < 0.3:
            z = Literal(float(self.rng.choice((1, 2))), float32)
        zb = abs(float(z.value)) if np.isfinite(z.value) else 0.0
        bound = max(zb, v.bound) if op.name in ("max", "min") else zb + (n // m) * v.bound
        return V(call(P.PartRed(lam(2, lambda a, b: call(op, a, b), ("acc", "x")), cst(m)), z, v.e),
                 ArrayType(float32, cst(m)), bound)

    def _factor(self, t: ArrayType, lo: int = 2) -> Optional[int]:
        n = t.length.value if t.length.is_constant else None
        if n is None:
            return self.rng.choice((2, 4, 8))
        ds = [d for d in range(lo, n) if n % d == 0]
        return self.rng.choice(ds) if ds else None

    def split_map_join(self, v: V, depth: int) -> Optional[V]:
        t = v.t
        assert isinstance(t, ArrayType)
        k = self._factor(t)
        if k is None or depth >= 2:
            return None
        row = Param("row")
        rv = V(row, ArrayType(t.elem, cst(k)), v.bound)
        for _ in range(self.rng.randrange(1, 3)):
            rv = self.stage(rv, depth + 1)
        if rv.e is row:
            rv = self.map_unary(rv) or rv
        rt = rv.t
        assert isinstance(rt, ArrayType)
        outer = call(P.Map(Lambda((row,), rv.e)), call(P.Split(cst(k)), v.e))
        m = ArrayType(rt, t.length // cst(k))
        if self.rng.random() < 0.8:
            return V(call(P.Join(), outer), ArrayType(rt.elem, m.length * rt.length), rv.bound)
        return V(outer, m, rv.bound)

    def iterate(self, v: V) -> Optional[V]:
        t = v.t
        assert isinstance(t, ArrayType)
        if self.rng.random() < 0.5 and t.elem == float32:
            n = t.length.value if t.length.is_constant else 64
            k_max = int(math.log2(n & -n)) if n else 0
            if k_max < 1:
                return None
            k = self.rng.randrange(1, min(k_max, 3) + 1)
            op = self.rng.choice((FLOAT.add, FLOAT.max))
            e = identity_literal(op, float32)
            step = lam(1, lambda a: call(P.Join(), call(P.Map(lam(1, lambda c: call(
                P.Reduce(lam(2, lambda x, y: call(op, x, y))), e, c))), call(P.Split(cst(2)), a))))
            bound = v.bound * (2 ** k if op is FLOAT.add else 1)
            return V(call(P.Iterate(cst(k), step), v.e), ArrayType(t.elem, t.length // cst(2 ** k)),
                     bound)
        if not _float_elems(t):
            return None
        f = self.rng.choice((FLOAT.abs, FLOAT.neg, FLOAT.id))
        k = self.rng.randrange(1, 4)
        return V(call(P.Iterate(cst(k), lam(1, lambda a: call(P.Map(f), a))), v.e), t, v.bound)

    def map_map(self, v: V) -> Optional[V]:
        """map(f) ∘ map(g), sometimes sequential (mapSeq ∘ mapSeq) or feeding a reduceSeq."""
        a = self.map_unary(v)
        b = self.map_unary(a) if a is not None else None
        if b is None or self.rng.random() < 0.6:
            return b
        seq = call(P.MapSeq(b.e.f.f), call(P.MapSeq(a.e.f.f), v.e))  # type: ignore[attr-defined]
        if self.rng.random() < 0.5:
            return V(seq, b.t, b.bound)
        red = self.reduce(V(seq, b.t, b.bound))
        if red is None:
            return None
        return V(call(P.ReduceSeq(red.e.f.f), *red.e.args), red.t, red.bound)  # type: ignore[attr-defined]

    def reorder_map(self, v: V) -> Optional[V]:
        """map(f) ∘ reorder or reorder ∘ map(f): a reorder next to a map."""
        if self.rng.random() < 0.5:
            return self.map_unary(self.reorder(v))
        m = self.map_unary(v)
        return None if m is None else self.reorder(m)

    def layout_noise(self, v: V) -> Optional[V]:
        """Layout that cancels: join ∘ split k; join ∘ map(map(f)) ∘ split k ∘ join ∘ split k (a
        split k ∘ join of inner length k); asScalar ∘ asVector w, possibly around a map of a
        vector function or twice (asVector w ∘ asScalar inside)."""
        t = v.t
        assert isinstance(t, ArrayType)
        r = self.rng.random()
        k = self._factor(t)
        if r < 0.25:
            return None if k is None else V(call(P.Join(), call(P.Split(cst(k)), v.e)), t, v.bound)
        if r < 0.5:
            if k is None or not _float_elems(t):
                return None
            f, b = self.rng.choice(UNARY)
            rows = call(P.Split(cst(k)), call(P.Join(), call(P.Split(cst(k)), v.e)))
            inner = lam(1, lambda row: call(P.Map(lam(1, lambda x: call(f, x))), row), ("row",))
            return V(call(P.Join(), call(P.Map(inner), rows)), t, b(v.bound))
        if t.elem != float32 or not t.length.is_constant:
            return None
        ws = [w for w in (2, 4, 8) if t.length.value % w == 0]
        if not ws:
            return None
        w = self.rng.choice(ws)
        inner = call(P.AsVector(cst(w)), v.e)
        r = self.rng.random()
        if r < 0.3:
            f = self.rng.choice((FLOAT.abs, FLOAT.neg, FLOAT.id)).vectorize(w)
            inner = call(P.Map(lam(1, lambda q: call(f, q))), inner)
        elif r < 0.65:
            inner = call(P.AsVector(cst(w)), call(P.AsScalar(), inner))
        return V(call(P.AsScalar(), inner), t, v.bound)

    # -- 2-D ---------------------------------------------------------------------------------
    def matrix_stage(self, a: V, x: Optional[V]) -> V:
        t = a.t
        assert isinstance(t, ArrayType) and isinstance(t.elem, ArrayType)
        r = self.rng.random()
        row = Param("row")
        rv = V(row, t.elem, a.bound)
        if r < 0.35 and x is not None:  # gemv-like: reduce(add) ∘ map(mult) ∘ zip(row, x)
            g = lam(1, lambda p: call(FLOAT.mult, p), ("p",))
            prod = V(call(P.Map(g), call(P.Zip(2), row, x.e)), t.elem, a.bound * x.bound)
            rv = self.reduce(prod) or prod
        else:
            for _ in range(self.rng.randrange(1, 3)):
                rv = self.stage(rv, 1)
        rt = rv.t
        assert isinstance(rt, ArrayType)
        out = call(P.Map(Lambda((row,), rv.e)), a.e)
        return V(call(P.Join(), out), ArrayType(rt.elem, t.length * rt.length), rv.bound)

    # -- whole programs ----------------------------------------------------------------------
    def length(self) -> ArithExpr:
        return size_var("N") if self.symbolic else cst(self.rng.choice(LENGTHS))

    def program(self) -> Lambda:
        rng = self.rng
        if rng.random() < 0.3:
            rows = cst(rng.choice(ROWS))
            cols = size_var("M") if self.symbolic else cst(rng.choice(LENGTHS[:6]))
            a = self.input(ArrayType(ArrayType(float32, cols), rows), rng.choice((1, 3)), "A")
            x = self.input(ArrayType(float32, cols), rng.choice((1, 3)), "x") if rng.random() < 0.7 else None
            v = self.matrix_stage(a, x)
        else:
            elem = int32 if rng.random() < 0.1 else float32
            n = self.length()
            v = self.input(ArrayType(elem, n), rng.choice((1, 3)), "xs")
            if rng.random() < 0.3:
                self.input(float32, 2, "a")
            if elem == int32:
                return Lambda(tuple(self.params), self.reduce(v).e)  # type: ignore[union-attr]
        for _ in range(rng.randrange(1, 5)):
            v = self.stage(v, 0)
        if rng.random() < 0.5:
            v = self.reduce(v) or v
        return Lambda(tuple(self.params), v.e)

    def inputs(self, sizes: Mapping[str, int], nprng: np.random.Generator) -> list[Any]:
        return [random_value(p.type, int(self.bounds[p]), sizes, nprng) for p in self.params]  # type: ignore[arg-type]


def _float_elems(t: Type) -> bool:
    return isinstance(t, ArrayType) and t.elem == float32


def random_value(t: Type, bound: int, sizes: Mapping[str, int], rng: np.random.Generator) -> Any:
    """Integer-valued data of type t (floats hold small integers)."""
    if isinstance(t, TupleType):
        return tuple(random_value(e, bound, sizes, rng) for e in t.elems)
    shape: list[int] = []
    while isinstance(t, ArrayType):
        shape.append(int(t.length.eval(sizes)))
        t = t.elem
    if isinstance(t, VectorType):
        shape.append(t.width)
        t = t.elem
    assert isinstance(t, ScalarType)
    vals = rng.integers(-bound, bound + 1, size=tuple(shape))
    return vals.astype(t.dtype) if shape else t.dtype.type(vals)


def random_case(seed: int) -> Case:
    """A random high-level program (retried until it type-checks and runs) with inputs."""
    rng = random.Random(seed)
    for _ in range(50):
        gen = Generator(rng, symbolic=rng.random() < 0.15)
        try:
            prog = normal_form(gen.program())
            check_program(prog)  # type: ignore[arg-type]
            sizes = {"N": rng.choice((64, 128)), "M": rng.choice((16, 32))} if gen.symbolic else {}
            inputs = gen.inputs(sizes, np.random.default_rng(seed))
            out = run(prog, inputs, sizes)  # type: ignore[arg-type]
        except (LiftTypeError, EvaluationError):
            continue
        return Case(prog, inputs, out, seed, "random", sizes)  # type: ignore[arg-type]
    raise RuntimeError(f"random_case({seed}): no program after 50 draws")


# ---------------------------------------------------------------------------------------------
# the bundled high-level programs


INTEGER_INPUTS = {"scal", "asum", "dot", "gemv", "mm", "stencil3"}
SMALL_SIZES = {"scal": {"N": 64}, "asum": {"N": 128}, "dot": {"N": 96}, "gemv": {"N": 8, "M": 32},
               "blackscholes": {"N": 64}, "md": {"N": 16, "M": 4}, "nbody": {"N": 16},
               "mm": {"M": 8, "K": 16, "N": 4}, "stencil3": {"N": 48}}


def bundled_cases(seed: int = 0) -> list[Case]:
    """Every bundled high-level program, with symbolic and with constant sizes (small), on
    integer-valued inputs where it reduces with + (so reassociation is exact)."""
    from liftkit.programs import PROGRAMS

    out = []
    for spec in PROGRAMS:
        if spec.level != "high" or spec.name not in SMALL_SIZES:
            continue
        sizes = SMALL_SIZES[spec.name]
        nprng = np.random.default_rng(seed)
        for const_sizes in (False, True):
            prog = spec.build()
            if spec.name in INTEGER_INPUTS:
                inputs = [random_value(p.type, 3, sizes, nprng) for p in prog.params]  # type: ignore[arg-type]
            else:
                inputs = spec.inputs(sizes, seed)
            if const_sizes:
                prog = specialize(prog, sizes)
            prog = normal_form(prog)  # type: ignore[assignment]
            run_sizes = {} if const_sizes else sizes
            out.append(Case(prog, inputs, run(prog, inputs, run_sizes), seed,  # type: ignore[arg-type]
                            f"bundled:{spec.name}{'(const)' if const_sizes else ''}", run_sizes))
    return out


def specialize(program: Lambda, sizes: Mapping[str, int]) -> Lambda:
    """The program with size variables replaced by constants (in parameter types and in the
    patterns' sizes)."""
    subst = {k: cst(v) for k, v in sizes.items()}

    def ty(t: Any) -> Any:
        if isinstance(t, ArrayType):
            return ArrayType(ty(t.elem), t.length.substitute(subst))
        if isinstance(t, TupleType):
            return TupleType(tuple(ty(e) for e in t.elems))
        return t

    params = {p: Param(p.name, ty(p.type)) for p in program.params}

    def go(n: Any) -> Any:
        if isinstance(n, Param):
            return params.get(n, n)
        if isinstance(n, FunCall):
            return FunCall(go(n.f), tuple(go(a) for a in n.args))
        if isinstance(n, Lambda):
            return Lambda(n.params, go(n.body))
        if isinstance(n, P.Pattern):
            changes = {f: getattr(n, f).substitute(subst) for f, k in _size_fields(n)}
            m = replace(n, **changes) if changes else n
            fs = m.functions()
            return m.with_functions([go(f) for f in fs]) if fs else m
        return n

    return Lambda(tuple(params[p] for p in program.params), go(program.body))


def _size_fields(p: P.Pattern) -> Iterable[tuple[str, P.Kind]]:
    return [(n, k) for n, k in p.signature() if k is P.Kind.SIZE and isinstance(getattr(p, n), ArithExpr)]


# ---------------------------------------------------------------------------------------------
# partially lowered programs: random walks


def walk_rules(case: Case, rules: Sequence[Rule], rng: random.Random, steps: int,
               by_name: Optional[Mapping[str, Rule]] = None) -> Case:
    """Apply up to `steps` random rules (a rule chosen uniformly among those that apply, then one
    of its choices), so rarely applicable rules get their turn. The result keeps the original's
    `expected` (sound rules preserve it) and records the walk in `steps` (see `replay`)."""
    by_name = by_name or {r.name: r for r in rules}
    prog, taken = case.program, list(case.steps)
    for _ in range(steps):
        choices = enumerate_choices(prog, rules)
        if not choices:
            break
        names = sorted({c.rule for c in choices})
        name = rng.choice(names)
        choice = rng.choice([c for c in choices if c.rule == name])
        nxt = apply_choice(prog, choice, by_name)
        if len(list(walk(nxt))) > 4000:
            break
        prog = nxt
        taken.append(choice)
    return replace(case, program=prog, steps=tuple(taken),
                   origin=case.origin.split(" +")[0] + (f" + {len(taken)} rule(s)" if taken else ""))


def replay(case: Case, base: Lambda, by_name: Mapping[str, Rule]) -> list[tuple[Choice, Lambda]]:
    """The programs along a case's walk, from `base`."""
    out, prog = [], base
    for c in case.steps:
        prog = apply_choice(prog, c, by_name)
        out.append((c, prog))
    return out


def count_nodes(program: Lambda) -> int:
    return sum(1 for _ in walk(program))


__all__ = ["Case", "Generator", "random_case", "bundled_cases", "specialize", "walk_rules", "replay",
           "run", "same_result", "is_size_error", "random_value", "count_nodes", "EXACT", "dbl", "inc", "addNoId"]
