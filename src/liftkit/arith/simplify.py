"""Smart constructors: every public builder returns a canonical, simplified
expression (arithexpr style: simplification is eager, in the constructors).

Soundness contract: a constructor may assume that the division/modulo it
builds is evaluated inside C's well-defined domain (numerator >= 0,
denominator >= 1), because the value only has to be preserved there.  Any
*new* division it creates has a numerator proven non-negative, so the result
means the same under C's truncating and Python's flooring semantics.
"""

from __future__ import annotations

import numbers
from math import gcd
from typing import Any, Mapping

from . import ranges as _R
from .errors import ArithError
from .nodes import (
    MINUS_ONE,
    ONE,
    ZERO,
    ArithExpr,
    Cond,
    Cst,
    IfThenElse,
    IntDiv,
    Log,
    Max,
    Min,
    Mod,
    Pow,
    Prod,
    Sum,
    Var,
    Xor,
    _ilog,
)
from .poly import (
    Poly,
    add_into,
    assemble,
    content,
    keyof,
    make_term,
    mono_common,
    mono_div,
    mono_mul,
    poly_mul,
    split,
    term_list,
)

# ---------------------------------------------------------------------------
# conversion and polynomial assembly
# ---------------------------------------------------------------------------


def to_expr(x: Any) -> ArithExpr:
    """Canonical ArithExpr for an int or expression (raw trees are simplified)."""
    t = type(x)
    if t is Cst:
        return x
    if t is int:
        return Cst(x)
    if isinstance(x, ArithExpr):
        return x if x._canon else simplify(x)
    if isinstance(x, numbers.Integral) and not isinstance(x, bool):
        return Cst(int(x))
    raise TypeError(f"expected an integer expression, got {type(x).__name__} {x!r}")


def cst(v: int) -> Cst:
    return Cst(v)


def build(p: Poly) -> ArithExpr:
    """Canonical expression of a polynomial, after folding division/modulo
    pairs: (x/y)*y + x%y = x (rule 4) and x - (x/y)*y = x%y."""
    for m in p:
        for a in m:
            t = type(a)
            if t is Mod or t is IntDiv:
                return assemble(_fold_divmod(p))
    return assemble(p)


def _covered(p: Poly, need: dict) -> bool:
    """Every needed term is present with the same sign and enough weight."""
    return bool(need) and all(v and p.get(mm, 0) * v > 0 and abs(p[mm]) >= abs(v) for mm, v in need.items())


def _fold_once(p: Poly) -> bool:
    for m, c in list(p.items()):
        for k, atom in enumerate(m):
            ta = type(atom)
            if ta is Mod:
                # rule 4: c*(x%y)*R + c*(x/y)*y*R -> c*x*R
                x, y = atom.a, atom.b
                rest = m[:k] + m[k + 1 :]
                base = mono_mul((IntDiv(x, y, True),), rest)
                need: dict = {}
                for ym, yc in term_list(y):
                    mm = mono_mul(base, ym)
                    need[mm] = need.get(mm, 0) + yc * c
                if _covered(p, need):
                    add_into(p, need.items(), -1)
                    p[m] -= c
                    add_into(p, poly_mul(term_list(x), ((rest, c),)).items())
                    return True
            elif ta is IntDiv:
                # k*x*R - k*(x/y)*y*R -> k*(x%y)*R, for a single-term y
                x, y = atom.a, atom.b
                yt = tuple(term_list(y))
                if len(yt) != 1 or c % yt[0][1]:
                    continue
                rest = mono_div(m[:k] + m[k + 1 :], yt[0][0])
                if rest is None:
                    continue
                kk = -(c // yt[0][1])
                need = poly_mul(term_list(x), ((rest, kk),))
                if _covered(p, need):
                    add_into(p, need.items(), -1)
                    p[m] -= c
                    add_into(p, poly_mul(term_list(mod(x, y)), ((rest, kk),)).items())
                    return True
    return False


def _fold_divmod(p: Poly) -> Poly:
    """Apply the div/mod folds anywhere in a sum.  Each fold needs the whole
    partner multiple present with same-sign coefficients, so it only ever
    removes division terms; the iteration cap is a safety net."""
    p = {m: c for m, c in p.items() if c}
    for _ in range(16):
        if not _fold_once(p):
            break
        p = {m: c for m, c in p.items() if c}
    return p


# ---------------------------------------------------------------------------
# ring operations
# ---------------------------------------------------------------------------


def add(a: Any, b: Any) -> ArithExpr:
    a, b = to_expr(a), to_expr(b)
    if type(a) is Cst:
        if a.v == 0:
            return b
        if type(b) is Cst:
            return Cst(a.v + b.v)
    elif type(b) is Cst and b.v == 0:
        return a
    return build(add_into(dict(term_list(a)), term_list(b)))


def sub(a: Any, b: Any) -> ArithExpr:
    a, b = to_expr(a), to_expr(b)
    if type(b) is Cst:
        if b.v == 0:
            return a
        if type(a) is Cst:
            return Cst(a.v - b.v)
    return build(add_into(dict(term_list(a)), term_list(b), -1))


def neg(a: Any) -> ArithExpr:
    return mul(MINUS_ONE, a)


def mul(a: Any, b: Any) -> ArithExpr:
    a, b = to_expr(a), to_expr(b)
    if type(b) is Cst:
        a, b = b, a
    if type(a) is Cst:
        k = a.v
        if k == 0:
            return ZERO
        if k == 1:
            return b
        if type(b) is Cst:
            return Cst(k * b.v)
        # scaling keeps the div/mod ratios, so no rule-4 folding can appear
        return assemble({m: c * k for m, c in term_list(b)})
    return build(poly_mul(term_list(a), term_list(b)))


# ---------------------------------------------------------------------------
# division and modulo
# ---------------------------------------------------------------------------


def _div_text(n: ArithExpr, d: ArithExpr, op: str) -> str:
    return str(IntDiv(n, d) if op == "/" else Mod(n, d))


def _cancel_common(n: ArithExpr, d: ArithExpr) -> tuple[ArithExpr, ArithExpr, ArithExpr] | None:
    """Split off a positive common factor g: n = g*n', d = g*d'.  g is the
    gcd of the coefficients times the common atoms that are provably >= 0
    (g != 0 because d != 0 in C's domain).  Returns (n', d', g) or None."""
    pn, pd = dict(term_list(n)), dict(term_list(d))
    gn, mn = content(pn)
    gd, md = content(pd)
    g = gcd(gn, gd)
    common = tuple(a for a in mono_common(mn, md) if _R.nonneg(a))
    if g <= 1 and not common:
        return None
    nn = {mono_div(m, common): c // g for m, c in pn.items()}
    dd = {mono_div(m, common): c // g for m, c in pd.items()}
    return build(nn), build(dd), make_term(common, g)  # type: ignore[arg-type]


def _split_checked(n: ArithExpr, d: ArithExpr) -> tuple[Poly, ArithExpr]:
    """n = q*d + r with r proven >= 0 (rules 2/5/6); q empty if impossible."""
    q, r = split(dict(term_list(n)), d)
    if not q:
        return q, n
    rr = build(r)
    if _R.nonneg(rr):
        return q, rr
    # -d <= r < 0: borrow one d, i.e. q - 1 and r + d
    r2 = add(rr, d)
    if _R.nonneg(r2):
        q[()] = q.get((), 0) - 1
        q = {m: c for m, c in q.items() if c}
        return (q, r2) if q else ({}, n)
    return {}, n



def _drop_small(n: ArithExpr, d: ArithExpr) -> tuple[ArithExpr, ArithExpr] | None:
    """n = a + b with a a multiple of g, g | d (d a positive constant) and 0 <= b < g proven:
    then n/d = a/d and n%d = a%d + b (a = n - b > -g is a multiple of g, so a >= 0 in C's
    domain). Returns (a, b), or None. Lets (16*l + j)/64 with j < 4 become l/4, so that the
    lanes of a vector read through nested splits are seen to be consecutive."""
    if type(d) is not Cst or d.v <= 1:
        return None
    p = dict(term_list(n))
    for g in sorted({gcd(d.v, c) for c in p.values()} - {1}, reverse=True):
        small = {m: c for m, c in p.items() if c % g}
        if not small or len(small) == len(p):
            continue
        b = build(small)
        if _R.nonneg(b) and _R.prove_lt(b, Cst(g)):
            return build({m: c for m, c in p.items() if not c % g}), b
    return None


def intdiv(n: Any, d: Any) -> ArithExpr:
    """Integer division n/d, simplified (rules 1 and 2, gcd, nesting)."""
    n, d = to_expr(n), to_expr(d)
    if type(d) is Cst:
        if d.v == 0:
            raise ArithError(f"division by zero in {_div_text(n, d, '/')}")
        if d.v == 1:
            return n
        if type(n) is Cst:
            return Cst(n.v // d.v)
        if d.v < 0:  # outside C's well-defined domain: keep as written
            return IntDiv(n, d, True)
    if type(n) is Cst and n.v == 0:
        return ZERO
    if n == d:
        return ONE
    cancelled = _cancel_common(n, d)
    if cancelled is not None:  # (g*n)/(g*d) = n/d
        return intdiv(cancelled[0], cancelled[1])
    if type(n) is IntDiv:  # (x/a)/b = x/(a*b)
        return intdiv(n.a, mul(n.b, d))
    q, r = _split_checked(n, d)
    if q:  # rule 2: (x*y + z)/y = x + z/y with z >= 0 proven
        return add(build(q), intdiv(r, d))
    dropped = _drop_small(n, d)
    if dropped is not None:  # (g*x + b)/(g*c) = x/c for 0 <= b < g
        return intdiv(dropped[0], d)
    if _R.prove_lt(n, d):  # rule 1 (n >= 0 is C's domain)
        return ZERO
    return IntDiv(n, d, True)


def mod(n: Any, d: Any) -> ArithExpr:
    """Modulo n % d, simplified (rules 3, 5, 6, mod of mod)."""
    n, d = to_expr(n), to_expr(d)
    if type(d) is Cst:
        if d.v == 0:
            raise ArithError(f"division by zero in {_div_text(n, d, '%')}")
        if d.v in (1, -1):
            return ZERO
        if type(n) is Cst:
            return Cst(n.v % d.v)
        if d.v < 0:
            return Mod(n, d, True)
    if type(n) is Cst and n.v == 0:
        return ZERO
    if n == d:
        return ZERO
    cancelled = _cancel_common(n, d)
    if cancelled is not None:  # (g*n) % (g*d) = g*(n % d)
        return mul(cancelled[2], mod(cancelled[0], cancelled[1]))
    _, r = _split_checked(n, d)
    if type(r) is Cst and r.v == 0:
        return ZERO
    if type(r) is Mod and divides(d, r.b) is True:  # (x % (a*b)) % b = x % b
        return mod(r.a, d)
    dropped = _drop_small(r, d)
    if dropped is not None:  # (g*x + b) % (g*c) = (g*x) % (g*c) + b for 0 <= b < g
        return add(mod(dropped[0], d), dropped[1])
    if type(r) is Sum:
        # (x % (a*d) + y) % d = (x + y) % d: x >= x % (a*d), so the
        # numerator stays >= 0; applied to terms +c*(x % (a*d)), c > 0
        p = dict(term_list(r))
        hit = False
        for m, c in list(p.items()):
            if len(m) == 1 and c > 0 and type(m[0]) is Mod and divides(d, m[0].b) is True:
                p[m] -= c
                add_into(p, term_list(m[0].a), c)
                hit = True
        if hit:
            return mod(build(p), d)
    if _R.prove_lt(r, d):  # rule 3
        return r
    return Mod(r, d, True)


def divides(d: Any, n: Any) -> bool | None:
    """True: d | n for all valuations; False: provably never; None: unknown."""
    d, n = to_expr(d), to_expr(n)
    if type(n) is Cst and n.v == 0:
        return True
    if type(d) is Cst and type(n) is Cst:
        return False if d.v == 0 else n.v % d.v == 0
    if type(d) is Cst and d.v == 0:
        return None
    pn = dict(term_list(n))
    dt = list(term_list(d))
    if len(dt) == 1:
        dm, dc = dt[0]
        if all(mono_div(m, dm) is not None and c % dc == 0 for m, c in pn.items()):
            return True
        # dc | d, so n must be 0 modulo g = gcd(dc, non-constant coefficients)
        g = abs(dc)
        for m, c in pn.items():
            if m:
                g = gcd(g, c)
        if g > 1 and pn.get((), 0) % g:
            return False
        return None
    q, r = split(pn, d)
    return True if q and not r else None


# ---------------------------------------------------------------------------
# pow, log, min, max, conditionals
# ---------------------------------------------------------------------------


def pow_(a: Any, b: Any) -> ArithExpr:
    """a ** b for b >= 0; small constant exponents are multiplied out."""
    a, b = to_expr(a), to_expr(b)
    if type(b) is Cst:
        k = b.v
        if k < 0:
            raise ArithError(f"negative exponent in pow({a}, {k})")
        if k == 0:
            return ONE
        if k == 1:
            return a
        if type(a) is Cst:
            return Cst(a.v**k)
        nterms = len(tuple(term_list(a)))
        if (nterms == 1 and k <= 16) or (nterms <= 4 and k <= 4):
            r = a
            for _ in range(k - 1):
                r = mul(r, a)
            return r
        return Pow(a, b, True)
    if type(a) is Cst:
        if a.v == 1:
            return ONE
        if a.v == 0 and _R.prove_ge(b, 1):
            return ZERO
    if type(a) is Pow:  # (x^e)^b = x^(e*b) for e, b >= 0
        return pow_(a.a, mul(a.b, b))
    return Pow(a, b, True)


def log(base: Any, x: Any) -> ArithExpr:
    """floor(log_base(x)) for base >= 2, x >= 1."""
    base, x = to_expr(base), to_expr(x)
    if type(base) is Cst and base.v < 2:
        raise ArithError(f"logarithm base must be >= 2 in log({base}, {x})")
    if type(x) is Cst:
        if x.v < 1:
            raise ArithError(f"logarithm of a non-positive number in log({base}, {x})")
        if x.v == 1:
            return ZERO
        if type(base) is Cst:
            return Cst(_ilog(base.v, x.v))
    if x == base:
        return ONE
    if type(x) is Pow and x.a == base:
        return x.b
    return Log(base, x, True)


def _minmax(a: Any, b: Any, is_min: bool) -> ArithExpr:
    a, b = to_expr(a), to_expr(b)
    if a == b:
        return a
    if type(a) is Cst and type(b) is Cst:
        return Cst(min(a.v, b.v) if is_min else max(a.v, b.v))
    if _R.prove_le(a, b):
        return a if is_min else b
    if _R.prove_le(b, a):
        return b if is_min else a
    if keyof(b) < keyof(a):
        a, b = b, a
    return Min(a, b, True) if is_min else Max(a, b, True)


def min_(a: Any, b: Any) -> ArithExpr:
    return _minmax(a, b, True)


def max_(a: Any, b: Any) -> ArithExpr:
    return _minmax(a, b, False)


def _twos(e: ArithExpr) -> int:
    """b such that 2^b provably divides e (at most 62; 0 when nothing is known)."""
    if type(e) is Cst:
        return 62 if e.v == 0 else min(62, (e.v & -e.v).bit_length() - 1)
    b = 62
    for mono, c in term_list(e):
        t = (c & -c).bit_length() - 1
        for atom in mono:
            if type(atom) is Xor:
                t += min(_twos(atom.a), _twos(atom.b))
        b = min(b, t)
    return b


def _xor_operands(e: ArithExpr) -> list[ArithExpr]:
    """The operands of a (canonical) xor chain, or [e]; an operand y + l with y a multiple of
    2^b and 0 < l < 2^b a constant is y ^ l (two operands)."""
    if type(e) is Xor and e._canon:
        return _xor_operands(e.a) + _xor_operands(e.b)
    if type(e) is Sum:
        c = dict(term_list(e)).get((), 0)
        if c > 0:
            low = c % (1 << _twos(sub(e, c)))
            if low:
                return _xor_operands(sub(e, low)) + [Cst(low)]
    return [e]


def _xor_chain(ops: list[ArithExpr]) -> ArithExpr:
    acc = ops[0]
    for x in ops[1:]:
        acc = Xor(acc, x, True)
    return acc


def _xor_split(ops: list[ArithExpr]) -> ArithExpr | None:
    """2^m*q + (r ^ others) for an operand 2^m*q + r with 0 <= r < 2^m and every other
    operand in [0, 2^m) (a xor never carries into the bits above them); the smallest such
    m, or None. Keeps the xor to the low bits, e.g. (17*x + 256*j) ^ 5 = 256*j + ((17*x) ^ 5):
    the part that varies with an unrolled index added outside."""
    for i, s in enumerate(ops):
        if type(s) is Cst:
            continue
        others = ops[:i] + ops[i + 1:]
        his = []
        for o in others:
            lo, hi = _R.const_bounds(o)
            if lo is None or lo < 0 or hi is None:
                break
            his.append(hi)
        else:
            terms = list(term_list(s))
            for m in range(max(his).bit_length(), 63):
                g = 1 << m
                high: dict = {}
                low: dict = {}
                for mono, c in terms:
                    if mono == ():
                        if c // g:
                            high[()] = (c // g) * g
                        if c % g:
                            low[()] = c % g
                    elif c % g == 0:
                        high[mono] = c
                    else:
                        low[mono] = c
                if not high:
                    break  # a larger m keeps no more terms high
                r = build(low) if low else ZERO
                if _R.nonneg(r) and _R.prove_lt(r, Cst(g)):
                    return add(build(high), xor(r, _xor_chain(others)) if others else r)
    return None


def _xor_low(ops: list[ArithExpr]) -> ArithExpr | None:
    """(x ^ (c - l)) + l for a constant c whose low bits l the other operands, all multiples
    of 2^b, have clear (x ^ c = (x ^ (c - l)) + l): e.g. (2*s ^ 5) = (2*s ^ 4) + 1, so two
    adjacent chunks of a pair swizzled together read at adjacent addresses. None if no such
    bits."""
    if type(ops[-1]) is not Cst or ops[-1].v < 0:
        return None
    low = ops[-1].v % (1 << min(_twos(x) for x in ops[:-1]))  # bits below the others'
    if not low:
        return None
    return add(xor(_xor_chain(ops[:-1]), ops[-1].v - low), low)


def xor(a: Any, b: Any) -> ArithExpr:
    """a ^ b for a, b >= 0 (C's ^ on the non-negative domain), simplified: nested xors
    flattened and sorted, constants folded, equal operands cancelled (x ^ x = 0, x ^ 0 = x),
    and bits that only one operand has moved out as a sum: the high bits of one operand the
    others cannot reach (`_xor_split`), a constant's low bits below the others' (`_xor_low`)."""
    a, b = to_expr(a), to_expr(b)
    if type(a) is Cst and type(b) is Cst:
        return Cst(a.v ^ b.v)
    c = 0
    odd: dict = {}
    for x in _xor_operands(a) + _xor_operands(b):
        if type(x) is Cst:
            c ^= x.v
        elif x in odd:
            del odd[x]  # x ^ x = 0
        else:
            odd[x] = True
    ops = sorted(odd, key=keyof)
    if c:
        ops.append(Cst(c))
    if not ops:
        return ZERO
    if len(ops) == 1:
        return ops[0]
    for rule in (_xor_split, _xor_low):
        moved = rule(ops)
        if moved is not None:
            return moved
    return _xor_chain(ops)


def _cmp(op: str, a: Any, b: Any) -> Cond:
    return Cond(op, to_expr(a), to_expr(b), True)


def lt(a: Any, b: Any) -> Cond:
    return _cmp("<", a, b)


def le(a: Any, b: Any) -> Cond:
    return _cmp("<=", a, b)


def gt(a: Any, b: Any) -> Cond:
    return _cmp(">", a, b)


def ge(a: Any, b: Any) -> Cond:
    return _cmp(">=", a, b)


def eq(a: Any, b: Any) -> Cond:
    return _cmp("==", a, b)


def ne(a: Any, b: Any) -> Cond:
    return _cmp("!=", a, b)


def decide(c: Cond) -> bool | None:
    """Truth value of a comparison when provable either way, else None."""
    op, x, y = c.op, to_expr(c.lhs), to_expr(c.rhs)
    if op in (">", ">="):
        op, x, y = ("<" if op == ">" else "<="), y, x
    if op == "<":
        return True if _R.prove_lt(x, y) else (False if _R.prove_le(y, x) else None)
    if op == "<=":
        return True if _R.prove_le(x, y) else (False if _R.prove_lt(y, x) else None)
    d = sub(x, y)
    if type(d) is Cst:
        r: bool | None = d.v == 0
    elif _R.prove_lt(x, y) or _R.prove_lt(y, x):
        r = False
    else:
        r = None
    return r if (op == "==" or r is None) else not r


def if_then_else(cond: Cond, a: Any, b: Any) -> ArithExpr:
    """``cond ? a : b``, folded when the condition is provable either way."""
    if not isinstance(cond, Cond):
        raise TypeError(f"if_then_else needs a Cond (use lt/le/...), got {cond!r}")
    if not cond._canon:
        cond = _cmp(cond.op, cond.lhs, cond.rhs)
    a, b = to_expr(a), to_expr(b)
    d = decide(cond)
    if d is not None:
        return a if d else b
    if a == b:
        return a
    return IfThenElse(cond, a, b, True)


# ---------------------------------------------------------------------------
# rebuilding: simplify and substitute
# ---------------------------------------------------------------------------


def _rebuild(e: ArithExpr, sub_map: dict | None, memo: dict) -> ArithExpr:
    if sub_map is None and e._canon:
        return e
    t = type(e)
    if t is Cst:
        return e
    r = memo.get(id(e))
    if r is not None:
        return r[1]
    rb = lambda x: _rebuild(x, sub_map, memo)  # noqa: E731
    if t is Var:
        r2: ArithExpr = e
        if sub_map:
            if e.name in sub_map:
                r2 = sub_map[e.name]
            else:
                names = {v.name for v in e.lo.free_vars()}
                if e.hi is not None:
                    names |= {v.name for v in e.hi.free_vars()}
                if names & sub_map.keys():
                    r2 = Var(e.name, rb(e.lo), None if e.hi is None else rb(e.hi))
    elif t is Sum:
        acc: dict = {}
        for term in e._f:
            add_into(acc, term_list(rb(term)))
        r2 = build(acc)
    elif t is Prod:
        r2 = ONE
        for f in e._f:
            r2 = mul(r2, rb(f))
    elif t is IfThenElse:
        c = e.cond
        r2 = if_then_else(_cmp(c.op, rb(c.lhs), rb(c.rhs)), rb(e.then), rb(e.els))
    else:
        fn = {IntDiv: intdiv, Mod: mod, Pow: pow_, Log: log, Min: min_, Max: max_, Xor: xor}[t]
        r2 = fn(rb(e.a), rb(e.b))
    memo[id(e)] = (e, r2)  # keep e alive so its id stays unique
    return r2


def simplify(e: Any) -> ArithExpr:
    """Rebuild a (raw) tree through the smart constructors."""
    if isinstance(e, ArithExpr):
        return _rebuild(e, None, {})
    return to_expr(e)


def substitute(e: ArithExpr, mapping: Mapping[Any, Any]) -> ArithExpr:
    """Replace variables (keys: names or Vars) by expressions, re-simplifying."""
    sub_map: dict = {}
    for k, v in mapping.items():
        name = k.name if isinstance(k, Var) else k
        if not isinstance(name, str):
            raise TypeError(f"substitution keys must be names or Vars, got {k!r}")
        sub_map[name] = to_expr(v)
    if not sub_map:
        return to_expr(e)
    return _rebuild(e, sub_map, {})


__all__ = [
    "add",
    "build",
    "cst",
    "decide",
    "divides",
    "eq",
    "ge",
    "gt",
    "if_then_else",
    "intdiv",
    "le",
    "log",
    "lt",
    "max_",
    "min_",
    "mod",
    "mul",
    "ne",
    "neg",
    "pow_",
    "simplify",
    "sub",
    "substitute",
    "to_expr",
    "xor",
]
