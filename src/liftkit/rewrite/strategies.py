"""Rewrite strategies in the spirit of ELEVATE: rules, combinators and traversals as values.

A `Strategy` is applied to a program at a *focus* (a position, see `rewrite.core`) and returns a
`Success` (the new program plus the `Step`s it took: every rule application is recorded as a
`Choice`, so a strategy leaves a replayable derivation) or a `Failure` with a reason. Failure is
a value, not an exception, so `choice`, `try_` and the traversals can react to it.

    split4 = rule("split-join", n=4)             # at the focus, with the given parameter
    s = innermost(split4) >> topdown("split-join-id") >> normalize_with("map-fusion")
    result = s.apply(program)                    # Success(program, steps) or Failure(reason)
    derivation = s.derive(program)               # a Derivation (raises on failure)

Rule names are looked up when a strategy runs (the rules package's `RULES_BY_NAME`, the standard
macro rules, then whatever `rules=` adds), so strategies can be written before the rules exist.
A `MacroRule` (seed 002 §6.1: "rules which perform multiple small steps at once") is a named
strategy that can be used wherever a rule name is; its steps are recorded one by one, tagged with
the macro's name, so a derivation made through it replays without it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

from liftkit.ir.nodes import FunCall, Lambda, Node, UserFun
from liftkit.ir.patterns.base import Pattern
from liftkit.ir.printer import show_short
from liftkit.rewrite.core import (
    Choice,
    Path,
    RewriteError,
    Rule,
    Site,
    SiteCache,
    apply_choice,
    children,
    get,
    typed_sites,
)
from liftkit.rewrite.derivation import (
    ON_DEMAND,
    Derivation,
    Step,
    fmt_path,
    load_rule_registry,
    normal_form,
    parse_path,
)
from liftkit.types import LiftTypeError

REPEAT_LIMIT = 100  # successful iterations of `repeat` / passes of `normalize_with` before failing


# ---------------------------------------------------------------------------------------------
# results


@dataclass(frozen=True)
class Success:
    """The rewritten program, the steps that made it, and the Rule objects they used (so the
    derivation replays even with rules that are not in the rules package)."""

    program: Lambda
    steps: tuple[Step, ...] = ()
    rules: Mapping[str, Rule] = field(default_factory=dict, compare=False, repr=False)

    def __bool__(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"Success({show_short(self.program, 100)}, {len(self.steps)} step(s))"

    @property
    def changed(self) -> bool:
        return bool(self.steps)

    def then(self, other: "Success") -> "Success":
        return Success(other.program, self.steps + other.steps, {**self.rules, **other.rules})


@dataclass(frozen=True)
class Failure:
    """Why a strategy did not apply."""

    reason: str

    def __bool__(self) -> bool:
        return False


Result = Union[Success, Failure]
Rewriter = Union[Rule, "MacroRule"]
RuleRef = Union[str, Rule, "MacroRule"]


class _Context:
    """One application's environment: the rule registry and the typed sites of the programs it
    meets (a `SiteCache`: a program is typed once, not once per position or rule tried; a
    search passes its own cache so the macro rules it tries share the typing)."""

    def __init__(self, rules: Mapping[str, Rewriter], cache: Optional[SiteCache] = None) -> None:
        self.rules = rules
        self.cache = cache if cache is not None else SiteCache(64)

    def resolve(self, ref: RuleRef) -> Union[Rewriter, str]:
        if isinstance(ref, (Rule, MacroRule)):
            return ref
        found = self.rules.get(ref)
        if found is None:
            close = sorted(n for n in self.rules if ref.lower()[:4] in n.lower())[:6]
            hint = f"; similar: {', '.join(close)}" if close else ""
            return f"unknown rule {ref!r}{hint}"
        return found

    def typing_error(self, program: Lambda) -> Optional[str]:
        """Why the program does not type-check (None when it does)."""
        s = self.site(program, ())
        return s if isinstance(s, str) and s.startswith("the program") else None

    def site(self, program: Lambda, path: Path) -> Union[Site, str]:
        try:
            table = self.cache.table(program)
        except LiftTypeError as err:
            return f"the program does not type-check: {err}"
        s = table.get(path)
        if s is None:
            return f"no function call there ({_describe(program, path)})"
        return s


def default_rules() -> dict[str, Rewriter]:
    """Every rule of the rules package and every standard macro rule, by name."""
    reg: dict[str, Rewriter] = dict(load_rule_registry())
    reg.update(STANDARD_MACROS)
    return reg


# ---------------------------------------------------------------------------------------------
# strategies


class Strategy:
    """A program transformation that may fail. `s1 >> s2` is `seq`, `s1 | s2` is `choice`."""

    def __init__(self, name: str, run: Callable[[Lambda, Path, _Context], Result]) -> None:
        self.name = name
        self.run = run

    def apply(self, program: Lambda, focus: Union[str, Sequence[int]] = (), *,
              rules: Optional[Mapping[str, Rewriter]] = None,
              cache: Optional[SiteCache] = None) -> Result:
        """Apply to a program (put in rewrite normal form first) at a focus (default: the whole
        program). `rules` adds to or overrides the default registry. `cache`: typed sites and
        rewrites shared with other applications (a program the cache has typed is taken as
        already in normal form: the cache holds only normalized programs)."""
        ctx = _Context({**default_rules(), **dict(rules or {})}, cache)
        if cache is None or not cache.knows(program):
            program = normal_form(program)
        return self.run(program, parse_path(focus), ctx)

    __call__ = apply

    def derive(self, program: Lambda, focus: Union[str, Sequence[int]] = (), *,
               rules: Optional[Mapping[str, Rewriter]] = None, name: Optional[str] = None
               ) -> Derivation:
        """The derivation this strategy makes from `program`; raises RewriteError on failure."""
        r = self.apply(program, focus, rules=rules)
        if not r:
            raise RewriteError(r.reason)
        return Derivation(program, r.steps, name=name, rules=r.rules)

    def __rshift__(self, other: Any) -> "Strategy":
        return seq(self, other)

    def __rrshift__(self, other: Any) -> "Strategy":
        return seq(other, self)

    def __or__(self, other: Any) -> "Strategy":
        return choice(self, other)

    def __ror__(self, other: Any) -> "Strategy":
        return choice(other, self)

    def __repr__(self) -> str:
        return self.name


StrategyLike = Union[Strategy, RuleRef]


def as_strategy(s: StrategyLike) -> Strategy:
    """Strategies stay; a rule name, Rule or MacroRule becomes `rule(...)`."""
    if isinstance(s, Strategy):
        return s
    if isinstance(s, (str, Rule, MacroRule)):
        return rule(s)
    raise TypeError(f"not a strategy or rule: {s!r}")


def _ref_name(ref: RuleRef) -> str:
    return ref if isinstance(ref, str) else ref.name


# -- basic strategies from rules ------------------------------------------------------------------


def rule(ref: RuleRef, **params: Any) -> Strategy:
    """Apply a rule (or macro rule) at the focus: with the given parameters, which must be among
    those the rule offers there (a subset of keys selects the first offer that matches), or
    else with the first parameters it offers."""
    ps = ", ".join(f"{k}={v}" for k, v in params.items())
    name = f"{_ref_name(ref)}({ps})" if ps else _ref_name(ref)

    def run(p: Lambda, focus: Path, ctx: _Context) -> Result:
        target = ctx.resolve(ref)
        if isinstance(target, str):
            return Failure(target)
        if isinstance(target, MacroRule):
            return target.run(p, focus, ctx, params)
        return _apply_rule(target, p, focus, ctx, params)

    return Strategy(name, run)


def _apply_rule(r: Rule, p: Lambda, focus: Path, ctx: _Context, params: Mapping[str, Any]
                ) -> Result:
    where = fmt_path(focus)
    site = ctx.site(p, focus)
    if isinstance(site, str):
        return Failure(f"{r.name} does not apply at {where}: {site}")
    try:
        picked = ctx.cache.pick(p, r, focus, params)
        offers = ctx.cache.offers(p, r, focus) if picked is None else []
    except LiftTypeError as err:
        return Failure(f"{r.name} does not apply at {where}: {err}")
    if picked is None:
        if offers:
            return Failure(f"{r.name} does not apply at {where} with {dict(params)} (to "
                           f"{show_short(site.call, 80)}; it offers {offers})")
        return Failure(f"{r.name} does not apply at {where} (to a call of {_head(site.call)})")
    choice_ = Choice(r.name, focus, picked)
    try:
        new = apply_choice(p, choice_, {r.name: r}, ctx.cache)
    except (RewriteError, LiftTypeError) as err:
        return Failure(str(err))
    return Success(new, (Step(choice_, None, ON_DEMAND, new),), {r.name: r})


def at(path: Union[str, Sequence[int]], s: StrategyLike) -> Strategy:
    """s at a position relative to the focus (at the top level: the absolute position)."""
    rel, st = parse_path(path), as_strategy(s)
    return Strategy(f"at({fmt_path(rel)}, {st})", lambda p, f, c: st.run(p, f + rel, c))


def _id_run(p: Lambda, f: Path, c: _Context) -> Result:
    return Success(p)


def _fail_run(p: Lambda, f: Path, c: _Context) -> Result:
    return Failure("fail")


id_ = Strategy("id", _id_run)
fail = Strategy("fail", _fail_run)


# -- combinators ---------------------------------------------------------------------------------


def seq(*ss: StrategyLike) -> Strategy:
    """Each in turn on the previous one's result; fails when any fails."""
    sts = [as_strategy(s) for s in ss]

    def run(p: Lambda, f: Path, c: _Context) -> Result:
        acc = Success(p)
        for s in sts:
            r = s.run(acc.program, f, c)
            if not r:
                return r
            acc = acc.then(r)
        return acc

    return Strategy(" >> ".join(map(repr, sts)) if sts else "id", run)


def choice(*ss: StrategyLike) -> Strategy:
    """Left-biased choice (ELEVATE's `<+`): the first that succeeds."""
    sts = [as_strategy(s) for s in ss]

    def run(p: Lambda, f: Path, c: _Context) -> Result:
        reasons = []
        for s in sts:
            r = s.run(p, f, c)
            if r:
                return r
            reasons.append(r.reason)
        return Failure(_clip("no alternative applies: " + " | ".join(reasons)))

    return Strategy("(" + " | ".join(map(repr, sts)) + ")", run)


def try_(s: StrategyLike) -> Strategy:
    """s, or the program unchanged where s fails."""
    st = as_strategy(s)
    return Strategy(f"try({st})", choice(st, id_).run)


def where(s: StrategyLike) -> Strategy:
    """Succeeds (without changing the program) exactly where s would succeed."""
    st = as_strategy(s)

    def run(p: Lambda, f: Path, c: _Context) -> Result:
        r = st.run(p, f, c)
        return Success(p) if r else r

    return Strategy(f"where({st})", run)


def not_(s: StrategyLike) -> Strategy:
    """Succeeds (unchanged) exactly where s fails."""
    st = as_strategy(s)

    def run(p: Lambda, f: Path, c: _Context) -> Result:
        return Failure(f"not({st}): it applies at {fmt_path(f)}") if st.run(p, f, c) else Success(p)

    return Strategy(f"not({st})", run)


def repeat(s: StrategyLike, limit: int = REPEAT_LIMIT) -> Strategy:
    """s until it fails (or succeeds without a step); always succeeds, except that still
    applying after `limit` applications is a failure (most likely a rule that undoes or
    re-enables itself)."""
    st = as_strategy(s)

    def run(p: Lambda, f: Path, c: _Context) -> Result:
        acc, n = Success(p), 0
        while True:
            r = st.run(acc.program, f, c)
            if not r or not r.steps:
                return acc
            if n == limit:
                return Failure(f"repeat({st}): still applies after {limit} applications (the "
                               f"limit; pass limit= to raise it)")
            acc, n = acc.then(r), n + 1

    return Strategy(f"repeat({st})", run)


# -- traversals ----------------------------------------------------------------------------------


def _arity(p: Lambda, focus: Path) -> int:
    try:
        return len(children(get(p, focus)))
    except (IndexError, RewriteError):
        return 0


def one(s: StrategyLike) -> Strategy:
    """s on the first child of the focus (left to right) where it applies."""
    st = as_strategy(s)

    def run(p: Lambda, f: Path, c: _Context) -> Result:
        for i in range(_arity(p, f)):
            r = st.run(p, f + (i,), c)
            if r:
                return r
        return Failure(f"one({st}): applies to no child of {fmt_path(f)}")

    return Strategy(f"one({st})", run)


def all_(s: StrategyLike) -> Strategy:
    """s on every child of the focus; fails when it fails on one (succeeds on a leaf)."""
    st = as_strategy(s)

    def run(p: Lambda, f: Path, c: _Context) -> Result:
        acc = Success(p)
        for i in range(_arity(p, f)):
            r = st.run(acc.program, f + (i,), c)
            if not r:
                return Failure(f"all({st}) at {fmt_path(f)}: child {i}: {r.reason}")
            acc = acc.then(r)
        return acc

    return Strategy(f"all({st})", run)


def some(s: StrategyLike) -> Strategy:
    """s on every child of the focus where it applies; fails when it applies to none."""
    st = as_strategy(s)

    def run(p: Lambda, f: Path, c: _Context) -> Result:
        acc, hit = Success(p), False
        for i in range(_arity(p, f)):
            r = st.run(acc.program, f + (i,), c)
            if r:
                acc, hit = acc.then(r), True
        return acc if hit else Failure(f"some({st}): applies to no child of {fmt_path(f)}")

    return Strategy(f"some({st})", run)


def topdown(s: StrategyLike) -> Strategy:
    """s once, at the first position in pre-order (the focus, then its children left to right)
    where it applies: the outermost, leftmost one."""
    st = as_strategy(s)

    def find(p: Lambda, f: Path, c: _Context) -> Optional[Success]:
        r = st.run(p, f, c)
        if r:
            return r
        for i in range(_arity(p, f)):
            found = find(p, f + (i,), c)
            if found is not None:
                return found
        return None

    def run(p: Lambda, f: Path, c: _Context) -> Result:
        r = find(p, f, c)
        return r if r is not None else _nowhere(f"topdown({st})", p, f, c)

    return Strategy(f"topdown({st})", run)


def bottomup(s: StrategyLike) -> Strategy:
    """s once, at the first position in post-order (children before their parent) where it
    applies: an innermost, leftmost one."""
    st = as_strategy(s)

    def find(p: Lambda, f: Path, c: _Context) -> Optional[Success]:
        for i in range(_arity(p, f)):
            found = find(p, f + (i,), c)
            if found is not None:
                return found
        r = st.run(p, f, c)
        return r if r else None

    def run(p: Lambda, f: Path, c: _Context) -> Result:
        r = find(p, f, c)
        return r if r is not None else _nowhere(f"bottomup({st})", p, f, c)

    return Strategy(f"bottomup({st})", run)


def _nowhere(what: str, p: Lambda, f: Path, c: _Context) -> Failure:
    """'applies nowhere', naming the real cause when the program itself does not type-check."""
    typing = c.typing_error(p)
    cause = f" ({typing})" if typing else ""
    return Failure(f"{what}: applies nowhere under {fmt_path(f)}{cause}")


def everywhere(s: StrategyLike) -> Strategy:
    """One bottom-up pass: s tried once at every position (children first), kept where it
    applies. A rewritten node is not revisited in the same pass (so an expanding rule cannot
    loop); always succeeds, with no steps where s applies nowhere."""
    st = as_strategy(s)

    def go(acc: Success, f: Path, c: _Context) -> Success:
        for i in range(_arity(acc.program, f)):
            acc = go(acc, f + (i,), c)
        r = st.run(acc.program, f, c)
        return acc.then(r) if r else acc

    return Strategy(f"everywhere({st})", lambda p, f, c: go(Success(p), f, c))


Predicate = Union[Callable[[Node], bool], StrategyLike, None]


def guard(pred: Predicate) -> Strategy:
    """A test from a predicate on the node at the focus (or from a strategy: where it applies)."""
    if pred is None:
        return id_
    if isinstance(pred, (Strategy, str, Rule, MacroRule)):
        return where(pred)
    fn = pred

    def run(p: Lambda, f: Path, c: _Context) -> Result:
        try:
            ok = fn(get(p, f))
        except (IndexError, RewriteError):
            ok = False
        return Success(p) if ok else Failure(f"{_pred_name(fn)} does not hold at {fmt_path(f)}")

    return Strategy(_pred_name(fn), run)


def _pred_name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__name__", "pred")


def calls(*names: str) -> Callable[[Node], bool]:
    """Predicate: the node is a call of a pattern or user function with one of these names."""
    def pred(n: Node) -> bool:
        return isinstance(n, FunCall) and isinstance(n.f, (Pattern, UserFun)) and n.f.name in names

    pred.__name__ = f"calls({', '.join(names)})"
    return pred


def outermost(pred: Predicate, s: StrategyLike) -> Strategy:
    """s once at the outermost position satisfying pred where it applies."""
    st = as_strategy(s)
    return Strategy(f"outermost({_pred_label(pred)}, {st})", topdown(seq(guard(pred), st)).run)


def innermost(s: StrategyLike, pred: Predicate = None) -> Strategy:
    """s once at an innermost position (satisfying pred, if given) where it applies."""
    st = as_strategy(s)
    label = f"innermost({st})" if pred is None else f"innermost({st}, {_pred_label(pred)})"
    return Strategy(label, bottomup(seq(guard(pred), st)).run)


def _pred_label(pred: Predicate) -> str:
    return repr(guard(pred))


def normalize_with(s: StrategyLike, limit: int = REPEAT_LIMIT) -> Strategy:
    """`everywhere(s)` until a pass changes nothing (a fixpoint); fails after `limit` passes."""
    st = as_strategy(s)
    return Strategy(f"normalize({st})", repeat(everywhere(st), limit).run)


# ---------------------------------------------------------------------------------------------
# macro rules


@dataclass(frozen=True)
class MacroRule:
    """A named strategy used like a rule (seed 002 §6.1). `strategy` is a Strategy, or a
    function from the macro's parameters to one (`rule(macro, n=4)` passes n). Applied at a
    focus, it runs the strategy there and records each underlying step with its name."""

    name: str
    strategy: Union[Strategy, Callable[..., Strategy]]
    fact: str
    source: str = ""
    # a cheap test of a focus (its typed site) before the strategy runs there: a search that
    # tries every macro at every position would otherwise run long strategies everywhere
    where: Optional[Callable[[Site], bool]] = None

    def strategy_for(self, **params: Any) -> Strategy:
        if isinstance(self.strategy, Strategy):
            if params:
                raise TypeError(f"macro {self.name} takes no parameters")
            return self.strategy
        return as_strategy(self.strategy(**params))

    def run(self, p: Lambda, focus: Path, ctx: _Context, params: Mapping[str, Any]) -> Result:
        try:
            st = self.strategy_for(**params)
        except TypeError as err:
            return Failure(f"{self.name}: {err}")
        r = st.run(p, focus, ctx)
        if not r:
            return Failure(f"{self.name} does not apply at {fmt_path(focus)}: {r.reason}")
        return Success(r.program, tuple(s.in_macro(self.name) for s in r.steps), r.rules)

    def apply(self, program: Lambda, focus: Union[str, Sequence[int]] = (), *,
              rules: Optional[Mapping[str, Rewriter]] = None,
              cache: Optional[SiteCache] = None, **params: Any) -> Result:
        return rule(self, **params).apply(program, focus, rules=rules, cache=cache)

    def __repr__(self) -> str:
        return f"MacroRule({self.name})"


def applications(program: Lambda, rewriters: Iterable[Rewriter], *,
                 rules: Optional[Mapping[str, Rewriter]] = None) -> list[tuple[str, Path]]:
    """Every (rule or macro name, position) where it applies with its first parameters (for a
    search that treats macros like rules; plain rules' full choices: `enumerate_choices`)."""
    program = normal_form(program)
    ctx = _Context({**default_rules(), **dict(rules or {})})
    try:
        sites = typed_sites(program)
    except LiftTypeError:
        return []
    out = []
    for rw in rewriters:
        for s in sites:
            if rule(rw).run(program, s.path, ctx):
                out.append((rw.name, s.path))
    return out


# -- standard macro rules (the rules they combine are looked up by name when they run) ------------

PARTRED_REDUCESEQ = MacroRule(
    "partRed-reduceSeq", seq(rule("partRed-reduce"), rule("reduce-reduceSeq")),
    "partRed(⊕, z) 1 → reduceSeq(⊕, z)", "seed 002 Fig. 10 step 7 (6d & 7b)")
REDUCE_MAP_FUSION = MacroRule(
    "reduce-map-fusion",
    seq(rule("reduce-reduceSeq"), at((2,), "map-mapSeq"), rule("reduceSeq-mapSeq-fusion")),
    "reduce(⊕, z) ∘ map(f) → reduceSeq(λ(acc, x). acc ⊕ f(x), z)",
    "seed 002 §6.1 (the map-reduce fusion macro)")
PARTRED_MAP_FUSION = MacroRule(
    "partRed-map-fusion",
    seq(at((2,), "map-mapSeq"), rule(PARTRED_REDUCESEQ), rule("reduceSeq-mapSeq-fusion")),
    "partRed(⊕, z) 1 ∘ map(f) → reduceSeq(λ(acc, x). acc ⊕ f(x), z)",
    "seed 002 Fig. 10 steps 6-8")
STANDARD_MACROS: dict[str, MacroRule] = {
    m.name: m for m in (PARTRED_REDUCESEQ, REDUCE_MAP_FUSION, PARTRED_MAP_FUSION)}


def _clip(text: str, n: int = 600) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


def _head(call: FunCall) -> str:
    """What is called, cheaply (failure messages are built at every position a traversal
    tries, so they must not print whole subtrees)."""
    f = call.f
    return f.name if isinstance(f, (Pattern, UserFun)) else "a lambda"


def _describe(program: Lambda, path: Path) -> str:
    try:
        node = get(program, path)
    except (IndexError, RewriteError):
        return "the position is outside the program"
    if isinstance(node, (Pattern, UserFun)):
        return f"the function {node.name}"
    return {"Lambda": "a lambda", "Param": "a parameter", "Literal": "a literal"}.get(
        type(node).__name__, type(node).__name__)


__all__ = [
    "Failure", "MacroRule", "PARTRED_MAP_FUSION", "PARTRED_REDUCESEQ", "REDUCE_MAP_FUSION",
    "REPEAT_LIMIT", "Result", "STANDARD_MACROS", "Strategy", "Success",
    "all_", "applications", "as_strategy", "at", "bottomup", "calls", "choice", "default_rules",
    "everywhere", "fail", "guard", "id_", "innermost", "normalize_with", "not_", "one",
    "outermost", "repeat", "rule", "seq", "where", "some", "topdown", "try_",
]
