"""The moves of the search: rewrite rules and macro rules, as one parameter.

Anything with the interface of `liftkit.rewrite.Rule` (`name`, `choices(site)`, `build(site,
**params)`, `lowering`) is a move; macro rules (seed 002 §6.1: several rules in a predefined
order, e.g. the map-reduce fusion of Fig. 10) plug in the same way, and are marked so the random
walks can prefer them. Rule sets are found by name (`default`, `algorithmic`, `lowering`) or as
`module:ATTR` / `path/to/file.py:ATTR`, so the rule modules being written elsewhere plug in
without changes here.
"""

from __future__ import annotations

import importlib
import inspect
import json
from typing import Any, Callable, Iterable, Optional, Sequence

from liftkit.ir.nodes import Lambda
from liftkit.rewrite.core import Choice, Rule, Site, SiteCache, apply_choice, normalize
from liftkit.rewrite.strategies import MacroRule
from liftkit.types import LiftTypeError

# where the strategies module keeps its macro rules (a dict name -> MacroRule, or a list)
_MACRO_ATTRS = ("STANDARD_MACROS", "MACRO_RULES", "MACROS")
# numeric parameters tried for a macro whose strategy needs one and says nothing about its values
DEFAULT_MACRO_NUMBERS = (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)


class RuleSetError(LiftTypeError):
    """A rule set that cannot be found or is malformed (a user error in the CLI)."""


class MacroMove:
    """A strategy-based macro rule (anything with `name` and `apply(program, focus, **params)`
    returning a truthy result with `.program` and `.steps`, as `strategies.MacroRule`) used as
    a move: it is tried at every call site with each of `params`, and applying it yields the
    underlying rule steps, so derivations replay with the plain rules."""

    def __init__(self, macro: Any, params: Optional[Sequence[dict[str, Any]]] = None) -> None:
        self.macro = macro
        self.name: str = macro.name
        self.lowering = bool(getattr(macro, "lowering", False))
        self.params = [dict(p) for p in params] if params is not None else _macro_params(macro)
        self._program: Optional[Lambda] = None
        self._results: dict[tuple[tuple[int, ...], str], Any] = {}

    def __repr__(self) -> str:
        return f"MacroMove({self.name})"

    def _run(self, program: Lambda, path: tuple[int, ...], params: dict[str, Any],
             cache: Optional[SiteCache] = None) -> Any:
        if self._program is not program:
            self._program, self._results = program, {}
        k = (path, json.dumps(params, sort_keys=True))
        if k not in self._results:
            if cache is not None and isinstance(self.macro, MacroRule):
                self._results[k] = self.macro.apply(program, path, cache=cache, **params)
            else:
                self._results[k] = self.macro.apply(program, path, **params)
        return self._results[k]

    def choices_in(self, program: Lambda, sites: Sequence[Site],
                   cache: Optional[SiteCache] = None) -> list[Choice]:
        out = []
        where = getattr(self.macro, "where", None)
        for site in sites:
            if where is not None and not where(site):
                continue
            # the parameters change numbers, not the shape a macro needs: when the first one
            # applies, all are offered (one that fails when chosen is skipped like any failing
            # rewrite), so listing choices runs each macro once per position, not once per value
            for k, ps in enumerate(self.params):
                r = self._run(program, site.path, ps, cache)
                if r and getattr(r, "steps", ()):
                    out.extend(Choice(self.name, site.path, dict(q)) for q in self.params[k:])
                    break
        return out

    def apply_steps(self, program: Lambda, choice: Choice, cache: Optional[SiteCache] = None
                    ) -> tuple[Lambda, tuple[Choice, ...]]:
        r = self._run(program, tuple(choice.path), dict(choice.params), cache)
        if not r:
            raise LiftTypeError(f"macro {self.name} does not apply at {choice}: "
                                f"{getattr(r, 'reason', r)}")
        steps = tuple(getattr(s, "choice", s) for s in r.steps)
        return r.program, steps


def _macro_params(macro: Any) -> list[dict[str, Any]]:
    """[{}] for a fixed strategy; for a strategy function, one numeric parameter from
    DEFAULT_MACRO_NUMBERS (more required parameters: give MacroMove(macro, params=...))."""
    strategy = getattr(macro, "strategy", None)
    if strategy is None or not callable(strategy) or hasattr(strategy, "run"):
        return [{}]
    try:
        sig = inspect.signature(strategy)
    except (TypeError, ValueError):
        return [{}]
    required = [p.name for p in sig.parameters.values() if p.default is inspect.Parameter.empty
                and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    if not required:
        return [{}]
    if len(required) == 1:
        return [{required[0]: n} for n in DEFAULT_MACRO_NUMBERS]
    return []


class RuleSpace:
    """Rules plus macro rules; enumerates and applies choices on normalised programs.

    `prepare` puts the start program in the form the rules expect (the rules package's
    `normal_form`; the engine's `normalize` by default). A rule whose `choices` or `build`
    raises anything (not only a type error) is treated as not applicable there, so one faulty
    rule cannot end a long search; its faults are kept in `errors`.
    """

    def __init__(self, rules: Iterable[Any], macros: Iterable[Any] = (), name: str = "custom",
                 prepare: Optional[Callable[[Lambda], Lambda]] = None) -> None:
        self.rules: list[Any] = list(rules)
        self.macros: list[Any] = []
        self.name = name
        self.prepare: Callable[[Lambda], Lambda] = _then_simplify(prepare or normalize)  # type: ignore[arg-type]
        for m in macros:
            if hasattr(m, "choices") and hasattr(m, "build"):
                self.macros.append(m)  # a macro written as a site rule
            elif isinstance(m, MacroMove) or hasattr(m, "apply"):
                self.macros.append(m if isinstance(m, MacroMove) else MacroMove(m))
            else:
                raise RuleSetError(f"{m!r} is neither a rule nor a macro rule")
        self.by_name: dict[str, Any] = {}
        for r in self.rules + self.macros:
            if not hasattr(r, "name") or not (isinstance(r, MacroMove) or
                                              (hasattr(r, "choices") and hasattr(r, "build"))):
                raise RuleSetError(f"{r!r} is not a rule (needs name, choices and build)")
            if r.name in self.by_name and self.by_name[r.name] is not r:
                raise RuleSetError(f"two rules are named {r.name!r}")
            self.by_name[r.name] = r
        self.macro_names = frozenset(m.name for m in self.macros)
        self.lowering_names = frozenset(r.name for r in self.rules + self.macros
                                        if getattr(r, "lowering", False))
        self.errors: list[str] = []  # faults of rules seen so far (for the summary)
        # choices by program text: random walks revisit programs (R walks start from each
        # choice's result), and listing choices costs 0.1–0.5 s on programs like gemv
        self._choice_cache: dict[str, list[Choice]] = {}
        self.choice_cache_size = 256
        # typed sites, rule offers and rewrites of the programs met (one typing per program,
        # shared by the rules, the macro rules' steps and the walks that apply them)
        self.typing = SiteCache(256)

    def __repr__(self) -> str:
        return f"RuleSpace({self.name}: {len(self.rules)} rules, {len(self.macros)} macros)"

    @property
    def all_rules(self) -> list[Any]:
        return self.rules + self.macros

    def is_lowering(self, choice: Choice) -> bool:
        return choice.rule in self.lowering_names

    def is_macro(self, choice: Choice) -> bool:
        return choice.rule in self.macro_names

    def choices(self, program: Lambda) -> list[Choice]:
        """Every applicable (rule, position, parameters), in rule order then pre-order."""
        from liftkit.ir.printer import show

        key = show(program)
        hit = self._choice_cache.get(key)
        if hit is not None:
            return list(hit)
        out = self._list_choices(program)
        if len(self._choice_cache) >= self.choice_cache_size:
            self._choice_cache.pop(next(iter(self._choice_cache)))
        self._choice_cache[key] = out
        return list(out)

    def _list_choices(self, program: Lambda) -> list[Choice]:
        sites = self.typing.sites(program)
        out: list[Choice] = []
        for rule in self.all_rules:
            if isinstance(rule, MacroMove):
                try:
                    out.extend(rule.choices_in(program, sites, self.typing))
                except Exception as err:  # noqa: BLE001 - see the class docstring
                    self._fault(rule.name, err)
                continue
            for site in sites:
                try:
                    params = (self.typing.offers(program, rule, site.path)
                              if isinstance(rule, Rule) else rule.choices(site))
                except LiftTypeError:
                    continue
                except Exception as err:  # noqa: BLE001 - see the class docstring
                    self._fault(rule.name, err)
                    continue
                out.extend(Choice(rule.name, site.path, dict(p)) for p in params)
        return out

    def apply_steps(self, program: Lambda, choice: Choice) -> tuple[Lambda, tuple[Choice, ...]]:
        """The rewritten program and the plain-rule steps that made it (one, or a macro's)."""
        rule = self.by_name.get(choice.rule)
        try:
            if isinstance(rule, MacroMove):
                return rule.apply_steps(program, choice, self.typing)
            if isinstance(rule, Rule):
                return apply_choice(program, choice, self.by_name, self.typing), (choice,)
            return apply_choice(program, choice, self.by_name), (choice,)
        except LiftTypeError:
            raise
        except Exception as err:  # noqa: BLE001
            self._fault(choice.rule, err)
            raise LiftTypeError(f"{choice}: {type(err).__name__}: {err}") from err

    def apply(self, program: Lambda, choice: Choice) -> Lambda:
        """The rewritten program (normalised, type-checked); LiftTypeError when it fails."""
        return self.apply_steps(program, choice)[0]

    def replay(self, program: Lambda, derivation: Sequence[Choice]) -> Lambda:
        """Apply a derivation's steps to `program` (prepared first)."""
        program = self.prepare(program)
        for c in derivation:
            program = self.apply(program, c)
        return program

    def _fault(self, rule: str, err: BaseException) -> None:
        if len(self.errors) < 100:
            self.errors.append(f"{rule}: {type(err).__name__}: {err}")


def _then_simplify(prepare: Callable[[Lambda], Lambda]) -> Callable[[Lambda], Lambda]:
    """`prepare`, then `iterate 0 f` and `iterate 1 f` removed: left in the start program they
    would keep every walk high-level (nothing lowers an iterate that never runs its function)."""
    from liftkit.rewrite.rules.iterate import simplify_iterations

    def prepared(program: Lambda) -> Lambda:
        return simplify_iterations(prepare(program))

    prepared.__name__ = f"{getattr(prepare, '__name__', 'prepare')}_simplified"
    return prepared


def load_rule_space(spec: Optional[str] = None) -> RuleSpace:
    """A rule space by name: `default` (all rules of `liftkit.rewrite.rules` plus the macro rules
    of `liftkit.rewrite.strategies`), `algorithmic`, `lowering`, or `module:ATTR` /
    `path/to/file.py:ATTR` naming a RuleSpace or a list of rules."""
    spec = (spec or "default").strip()
    if ":" in spec:
        return _from_reference(spec)
    if spec in ("gpu", "cpu"):  # the rules plus the GPU / CPU macro rules of explore.macros
        from liftkit.explore.macros import rule_space

        return rule_space(spec)
    attrs = {"default": "SEARCH_RULES", "all": "ALL_RULES", "algorithmic": "ALGORITHMIC_RULES",
             "lowering": "LOWERING_RULES"}
    if spec not in attrs:
        raise RuleSetError(f"unknown rule set {spec!r}: use {', '.join(attrs)}, gpu, cpu or "
                           f"module:ATTR")
    try:
        mod = importlib.import_module("liftkit.rewrite.rules")
        rules = list(getattr(mod, attrs[spec]))
    except (ImportError, AttributeError) as err:
        raise RuleSetError(f"the rule set liftkit.rewrite.rules.{attrs[spec]} is not available "
                           f"({type(err).__name__}: {err}); give --rules module:ATTR") from None
    macros = _macros() if spec in ("default", "all") else []
    names = {r.name for r in rules}
    prepare = getattr(mod, "normal_form", None)
    return RuleSpace(rules, [m for m in macros if m.name not in names], spec, prepare)


def _macros() -> list[Any]:
    try:
        mod = importlib.import_module("liftkit.rewrite.strategies")
    except ImportError:
        return []
    for attr in _MACRO_ATTRS:
        found = getattr(mod, attr, None)
        if found:
            return list(found.values()) if isinstance(found, dict) else list(found)
    return []


def _from_reference(ref: str) -> RuleSpace:
    where, _, attr = ref.rpartition(":")
    obj: Any = _load(where)
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise RuleSetError(f"{where} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if isinstance(obj, RuleSpace):
        return obj
    try:
        rules = list(obj)
    except TypeError:
        raise RuleSetError(f"{ref} is a {type(obj).__name__}, not a list of rules") from None
    return RuleSpace(rules, (), ref)


def _load(where: str) -> Any:
    """A module by dotted name or by file path (imported once per process)."""
    from liftkit.usercode import LoadError, load_module

    try:
        return load_module(where)
    except LoadError as err:
        raise RuleSetError(str(err)) from err
