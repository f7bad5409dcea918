"""The rewrite engine's core: positions in a program, typed sites, rules and their application.

A program is first put in *rewrite normal form*: every function a pattern takes is a lambda
whose body applies something (map(abs) becomes map(λx. abs(x))), so every application is a
FunCall that has a position. A position is the path of child indices from the program's body
(FunCall: 0 = its function, 1.. = its arguments; Lambda: 0 = body; Pattern: its functions in
order). A rule looks at a *site* — a FunCall with its type, its arguments' types and the
patterns around it — and offers *choices* (numeric parameters such as split factors); applying a
choice replaces the FunCall and re-checks the program's type.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional, Sequence, Union

from liftkit.ir.nodes import Expr, FunCall, FunDecl, Lambda, Literal, Node, Param, UserFun
from liftkit.ir.patterns.base import Pattern
from liftkit.ir.typecheck import LocatedTypeError, TypeChecker
from liftkit.types import LiftTypeError, Type

Path = tuple[int, ...]


class RewriteError(LiftTypeError):
    """A rule was applied where it does not apply, or produced an ill-typed program."""


# ---------------------------------------------------------------------------------------------
# positions


def children(node: Node) -> list[Node]:
    if isinstance(node, FunCall):
        return [node.f, *node.args]
    if isinstance(node, Lambda):
        return [node.body]
    if isinstance(node, Pattern):
        return list(node.functions())
    return []


def get(node: Node, path: Path) -> Node:
    for i in path:
        node = children(node)[i]
    return node


def replace_at(node: Node, path: Path, new: Node) -> Node:
    """The tree with the node at `path` replaced (every node on the path rebuilt)."""
    if not path:
        return new
    i, rest = path[0], path[1:]
    kids = children(node)
    kids[i] = replace_at(kids[i], rest, new)
    if isinstance(node, FunCall):
        return FunCall(kids[0], tuple(kids[1:]))  # type: ignore[arg-type]
    if isinstance(node, Lambda):
        return Lambda(node.params, kids[0])  # type: ignore[arg-type]
    if isinstance(node, Pattern):
        return node.with_functions(kids)  # type: ignore[arg-type]
    raise RewriteError(f"no child {i} in {node!r}")


def positions(node: Node, prefix: Path = ()) -> Iterator[tuple[Path, Node]]:
    """Every (path, node), pre-order (an explicit stack: nested generators cost a frame per
    level for every node yielded, which made listing a deep program's sites quadratic)."""
    stack: list[tuple[Path, Node]] = [(prefix, node)]
    while stack:
        path, n = stack.pop()
        yield path, n
        kids = children(n)
        for i in range(len(kids) - 1, -1, -1):
            stack.append((path + (i,), kids[i]))


# ---------------------------------------------------------------------------------------------
# rewrite normal form


def eta_expand(f: FunDecl, nargs: int = 1) -> Lambda:
    """λ(x1..xk). f(x1..xk) for the k arguments f is called with: the function as a lambda
    whose body is an application (map(mult) over pairs becomes map(λp. mult(p)))."""
    if isinstance(f, Lambda):
        return f
    params = tuple(Param(_param_hint(f, k, nargs)) for k in range(nargs))
    return Lambda(params, FunCall(f, params))


def _param_hint(f: FunDecl, k: int, nargs: int) -> str:
    if isinstance(f, UserFun) and nargs == f.arity and k < len(f.param_names):
        return f.param_names[k]
    return "x" if k == 0 else f"x{k}"


def passes(p: Pattern, call_args: int) -> int:
    """How many arguments pattern p passes to its function(s)."""
    from liftkit.ir.patterns import AbstractReduce, AddressSpaceWrapper

    if isinstance(p, AbstractReduce):
        return 2
    if isinstance(p, AddressSpaceWrapper):
        return call_args
    return 1


def normalize(node: Node, nargs: int = 1) -> Node:
    """Rewrite normal form: every function argument of a pattern is a lambda of as many
    parameters as the pattern passes, recursively. `nargs`: how many arguments `node` is
    called with when it is a bare pattern."""
    if isinstance(node, FunCall):
        f = node.f
        f2 = _normalize_pattern(f, len(node.args)) if isinstance(f, Pattern) else normalize(f)
        return FunCall(f2, tuple(normalize(a) for a in node.args))  # type: ignore[arg-type]
    if isinstance(node, Lambda):
        return Lambda(node.params, normalize(node.body))  # type: ignore[arg-type]
    if isinstance(node, Pattern):
        return _normalize_pattern(node, nargs)
    return node


def _normalize_pattern(p: Pattern, call_args: int) -> Pattern:
    fs = p.functions()
    if not fs:
        return p
    k = passes(p, call_args)
    return p.with_functions([normalize(eta_expand(f, k), k) for f in fs])


# ---------------------------------------------------------------------------------------------
# typed sites


class _Recorder(TypeChecker):
    """Type checker that also remembers every parameter's type and every call's context."""

    def __init__(self) -> None:
        super().__init__()
        self.param_types: dict[Param, Type] = {}
        self.arg_types: dict[int, tuple[Type, ...]] = {}
        self.enclosing: dict[int, tuple[Pattern, ...]] = {}

    def expr(self, e, env, enclosing=()):  # type: ignore[no-untyped-def]
        if isinstance(e, FunCall):
            self.enclosing[id(e)] = enclosing
        t = super().expr(e, env, enclosing)
        if isinstance(e, FunCall):
            self.arg_types[id(e)] = tuple(
                self.types[id(a)] if isinstance(a, FunCall) else
                (a.type if isinstance(a, Literal) else env.get(a, a.type))  # type: ignore[union-attr]
                for a in e.args)
        return t

    def apply(self, f, arg_types, env, enclosing):  # type: ignore[no-untyped-def]
        if isinstance(f, Lambda):
            for p, t in zip(f.params, arg_types):
                self.param_types[p] = t
        return super().apply(f, arg_types, env, enclosing)


@dataclass(frozen=True)
class Site:
    """A FunCall in a typed program: what a rule may look at."""

    program: Lambda
    path: Path  # from the program lambda (0 = its body)
    call: FunCall
    type: Type
    arg_types: tuple[Type, ...]
    enclosing: tuple[Pattern, ...]  # patterns whose functions contain this call, outermost first
    param_types: Mapping[Param, Type] = field(repr=False, default_factory=dict)
    # the checker that typed the program (types of every call by identity): lets a rule's
    # check of a replacement re-type only what the replacement can change (`retype`)
    typing: Optional["_Recorder"] = field(repr=False, compare=False, default=None)

    def type_of(self, e: Expr) -> Type:
        """The type of any expression at this site (its free parameters have known types)."""
        return TypeChecker().expr(e, dict(self.param_types), self.enclosing)

    @property
    def f(self) -> FunDecl:
        return self.call.f

    def inside(self, *kinds: type) -> bool:
        return any(isinstance(p, kinds) for p in self.enclosing)


def typed_sites(program: Lambda) -> list[Site]:
    """Every FunCall of a (normalized) program with its types, pre-order."""
    rec = _Recorder()
    rec.apply(program, [p.type for p in program.params], {}, ())  # type: ignore[misc]
    for p in program.params:
        rec.param_types[p] = p.type  # type: ignore[assignment]
    sites = []
    for path, node in positions(program):
        if isinstance(node, FunCall) and id(node) in rec.types:
            sites.append(Site(program, path, node, rec.types[id(node)], rec.arg_types[id(node)],
                              rec.enclosing.get(id(node), ()), rec.param_types, rec))
    return sites


class _Reusing(TypeChecker):
    """A checker that takes the type a call had in a typed program (`old`) where nothing its
    type depends on changed: the same call object, every parameter in scope of the same type as
    it was, the same kinds of enclosing patterns (the nesting rules look at their classes and
    dimensions only), and no iterate around it (whose body is typed once per iteration while
    the table keeps the last)."""

    def __init__(self, old: _Recorder) -> None:
        super().__init__()
        self.old = old

    def expr(self, e, env, enclosing=()):  # type: ignore[no-untyped-def]
        if isinstance(e, FunCall):
            t = self.old.types.get(id(e))
            if t is not None and self._unchanged(e, env, enclosing):
                return t
        return super().expr(e, env, enclosing)

    def _unchanged(self, e: FunCall, env: Mapping[Param, Type], enclosing: tuple[Pattern, ...]) -> bool:
        from liftkit.ir.patterns import Iterate

        before = self.old.enclosing.get(id(e))
        if before is None or len(before) != len(enclosing):
            return False
        for a, b in zip(before, enclosing):
            if isinstance(b, Iterate) or not (
                    a is b or (type(a) is type(b) and a.static_params() == b.static_params())):
                return False
        known = self.old.param_types
        for p, t in env.items():
            was = known.get(p)
            # structural equality (no arithmetic proof): a type that only provably equals
            # the old one counts as changed, which re-types more, never wrongly
            if was is None or not (was is t or was == t):
                return False
        return True


def retype(site: Site, new: Expr) -> Type:
    """The result type of the site's program with the site's call replaced by `new` (raises
    LiftTypeError where it does not type-check), re-typing only the calls whose types the
    replacement can change: the ones on the path to it and the ones that consume what it
    changed. A rule's side condition asks this once per offered parameter, and checking the
    whole program each time made a two-matrix program's choices cost seconds."""
    program = replace_at(site.program, site.path, new)
    assert isinstance(program, Lambda)
    checker = _Reusing(site.typing) if site.typing is not None else TypeChecker()
    return checker.apply(program, [p.type for p in program.params], {}, ())  # type: ignore[misc]


class SiteCache:
    """The typed sites of recently seen programs and the rewrites already applied to them.

    Typing a program is the rewrite engine's main cost (every pattern's type rule, symbolic
    lengths simplified), and a search asks for the same program's sites over and over: every
    rule and macro rule tried at every position, each macro's steps, each walk revisiting a
    program. The cache is keyed by the program object (kept alive with its entry, so an id is
    never reused while cached; the IR is immutable, so a program's types never change) and is
    an explicit object that a search or a strategy application owns: no global state. A program
    made by `apply_choice(..., cache=)` is typed once, by the check that accepts it, and its
    sites come from that same traversal.
    """

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self._entries: dict[int, _CacheEntry] = {}
        self.hits = 0
        self.misses = 0

    def knows(self, program: Lambda) -> bool:
        e = self._entries.get(id(program))
        return e is not None and e.program is program

    def _entry(self, program: Lambda) -> "_CacheEntry":
        e = self._entries.get(id(program))
        if e is not None and e.program is program:
            self.hits += 1
            if next(reversed(self._entries)) != id(program):  # least recently used goes first:
                self._entries[id(program)] = self._entries.pop(id(program))  # listing a program
            return e  # makes hundreds of others (macro steps) that must not evict it
        self.misses += 1
        try:
            table: Union[dict[Path, Site], LiftTypeError] = {
                s.path: s for s in typed_sites(program)}
        except LiftTypeError as err:
            table = err
        return self._put(program, table)

    def _put(self, program: Lambda, table: Union[dict[Path, Site], LiftTypeError]) -> "_CacheEntry":
        if len(self._entries) >= self.size:
            self._entries.pop(next(iter(self._entries)))
        e = self._entries[id(program)] = _CacheEntry(program, table, {}, {})
        return e

    def table(self, program: Lambda) -> dict[Path, Site]:
        """Sites by path; raises the program's type error when it does not type-check."""
        t = self._entry(program).table
        if isinstance(t, LiftTypeError):
            raise t
        return t

    def sites(self, program: Lambda) -> list[Site]:
        """As `typed_sites(program)`, from the cache when the program was seen."""
        return list(self.table(program).values())

    def site(self, program: Lambda, path: Path) -> Site:
        s = self.table(program).get(path)
        if s is None:
            raise RewriteError(f"no function call at position {'.'.join(map(str, path)) or 'root'}")
        return s

    def offers(self, program: Lambda, rule: Rule, path: Path) -> list[dict[str, Any]]:
        """`rule.choices` at the site at `path` (asked once per program, rule and position;
        raises the LiftTypeError it raised). Listing a program's choices, checking a chosen
        one and a macro rule's steps all ask the same question."""
        entry = self._entry(program)
        key = (id(rule), rule.name, path)
        got = entry.offers.get(key)
        if got is None:
            try:
                found: Union[list[dict[str, Any]], LiftTypeError] = [
                    dict(p) for p in rule.choices(self.site(program, path))]
            except LiftTypeError as err:
                found = err
            got = entry.offers[key] = (rule, found)  # the rule kept alive: its id stays unique
        if isinstance(got[1], LiftTypeError):
            raise got[1]
        return [dict(p) for p in got[1]]

    def pick(self, program: Lambda, rule: Rule, path: Path, params: Params
             ) -> Optional[dict[str, Any]]:
        """`pick_choice` at the site at `path` (from the offers where they were listed; raises
        the LiftTypeError the rule raised)."""
        entry = self._entry(program)
        listed = entry.offers.get((id(rule), rule.name, path))
        if listed is not None or rule.pick is None:
            return next((o for o in self.offers(program, rule, path) if agrees(o, params)), None)
        key = (id(rule), rule.name, path, json.dumps(_jsonable(params), sort_keys=True))
        got = entry.picked.get(key)
        if got is None:
            try:
                found: Union[Optional[dict[str, Any]], LiftTypeError] = pick_choice(
                    rule, self.site(program, path), params)
            except LiftTypeError as err:
                found = err
            got = entry.picked[key] = (rule, found)
        if isinstance(got[1], LiftTypeError):
            raise got[1]
        return None if got[1] is None else dict(got[1])


@dataclass
class _CacheEntry:
    program: Lambda
    table: Union[dict[Path, Site], LiftTypeError]
    # (id(rule), rule name, path, parameters) -> (rule, the rewritten program or its error)
    applied: dict[tuple[Any, ...], tuple[Any, Union[Lambda, LiftTypeError]]]
    # (id(rule), rule name, path) -> (rule, its offers there or the error they raised)
    offers: dict[tuple[Any, ...], tuple[Any, Union[list[dict[str, Any]], LiftTypeError]]]
    # (id(rule), rule name, path, parameters) -> (rule, the offer picked for them, or the error)
    picked: dict[tuple[Any, ...], tuple[Any, Any]] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# rules and choices

Params = Mapping[str, Any]


@dataclass(frozen=True)
class Rule:
    """A named rewrite: `choices(site)` lists the numeric parameters under which the rule applies
    at a site (empty: it does not apply; [{}]: it applies without parameters), `build(site,
    **params)` returns the replacement expression. `fact` states the equation in the papers'
    notation; `source` where it comes from (e.g. "seed 002 Fig. 6c")."""

    name: str
    fact: str
    choices: Callable[[Site], Sequence[Params]]
    build: Callable[..., Expr]
    source: str = ""
    lowering: bool = False  # an OpenCL-specific rule (seed 002 Fig. 7)
    # the first of `choices` agreeing with given (possibly partial) parameters, found without
    # checking every other choice (a derivation that names its parameters needs only its own;
    # a rule whose choices each build a whole kernel to check lists hundreds); None: filter
    # `choices`
    pick: Optional[Callable[[Site, Params], Optional[Params]]] = None

    def __repr__(self) -> str:
        return f"Rule({self.name})"


def agrees(offer: Params, params: Params) -> bool:
    """An offer has every given parameter with the given value."""
    return all(k in offer and offer[k] == v for k, v in params.items())


def pick_choice(rule: Rule, site: Site, params: Params) -> Optional[dict[str, Any]]:
    """The first of the rule's choices at the site agreeing with `params` (None: none)."""
    if rule.pick is not None:
        got = rule.pick(site, params)
        return None if got is None else dict(got)
    return next((dict(o) for o in rule.choices(site) if agrees(o, params)), None)


@dataclass(frozen=True)
class Choice:
    """One applicable rewrite: rule, position and parameters (a derivation step)."""

    rule: str
    path: Path
    params: Params = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "path": list(self.path), "params": _jsonable(self.params)}

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> "Choice":
        return Choice(d["rule"], tuple(d["path"]), dict(d.get("params", {})))

    def __str__(self) -> str:
        ps = ", ".join(f"{k}={v}" for k, v in self.params.items())
        return f"{self.rule}{'(' + ps + ')' if ps else ''} at {'.'.join(map(str, self.path)) or 'root'}"


def _jsonable(params: Params) -> dict[str, Any]:
    out = {}
    for k, v in params.items():
        json.dumps(v)  # parameters are plain numbers, strings or lists of them
        out[k] = v
    return out


def enumerate_choices(program: Lambda, rules: Iterable[Rule]) -> list[Choice]:
    """Every applicable (rule, position, parameters) in a normalized program."""
    return choices_in(typed_sites(program), rules)


def choices_in(sites: Sequence[Site], rules: Iterable[Rule]) -> list[Choice]:
    """Every applicable choice of `rules` at already typed sites (a rule whose side condition
    cannot be decided at a site does not apply there)."""
    out: list[Choice] = []
    for rule in rules:
        for site in sites:
            try:
                params = rule.choices(site)
            except LiftTypeError:
                continue
            for p in params:
                out.append(Choice(rule.name, site.path, dict(p)))
    return out


def site_at(program: Lambda, path: Path) -> Site:
    for s in typed_sites(program):
        if s.path == path:
            return s
    raise RewriteError(f"no function call at position {'.'.join(map(str, path)) or 'root'}")


def apply_choice(program: Lambda, choice: Choice, rules: Mapping[str, Rule],
                 cache: Optional[SiteCache] = None) -> Lambda:
    """Apply one choice; the result is normalized and type-checked (a rule that builds an
    ill-typed program is a bug in the rule, reported as RewriteError). With a `cache`, the
    program's sites come from it, the result's sites go into it (typed by the check itself),
    and a choice applied to the same program before returns the same result."""
    try:
        rule = rules[choice.rule]
    except KeyError:
        raise RewriteError(f"unknown rule {choice.rule!r}") from None
    if cache is None:
        return _apply(program, choice, rule, site_at(program, choice.path), None)
    entry = cache._entry(program)
    key = (id(rule), rule.name, tuple(choice.path), json.dumps(_jsonable(choice.params), sort_keys=True))
    got = entry.applied.get(key)
    if got is None:
        done: Union[Lambda, LiftTypeError]
        try:
            done = _apply(program, choice, rule, cache.site(program, tuple(choice.path)), cache)
        except LiftTypeError as err:
            done = err
        got = entry.applied[key] = (rule, done)
    if isinstance(got[1], LiftTypeError):
        raise got[1]
    return got[1]


def _apply(program: Lambda, choice: Choice, rule: Rule, site: Site,
           cache: Optional[SiteCache]) -> Lambda:
    picked = (cache.pick(program, rule, site.path, choice.params) if cache is not None
              else pick_choice(rule, site, choice.params))
    if picked != dict(choice.params):
        allowed = (cache.offers(program, rule, site.path) if cache is not None
                   else [dict(p) for p in rule.choices(site)])
        raise RewriteError(f"{rule.name} does not apply at {choice} "
                           f"(applicable parameters there: {allowed or 'none'})")
    new_expr = rule.build(site, **dict(choice.params))
    result = replace_at(program, choice.path, new_expr)
    assert isinstance(result, Lambda)
    result = normalize(result)
    try:
        if cache is None:
            TypeChecker().apply(result, [p.type for p in result.params], {}, ())  # type: ignore[misc]
        else:
            cache.table(result)  # type: ignore[arg-type]
    except LocatedTypeError as err:
        raise RewriteError(f"{rule.name} produced an ill-typed program at {choice}: {err.message}") from None
    return result  # type: ignore[return-value]

