"""Derivations: a start program and the rewrite steps that lead from it (seed 002 Fig. 10).

A derivation is the record a strategy leaves behind, kept as data so it can be printed in the
papers' notation, saved as JSON and read back, replayed (each step re-applied, checked against
the program text recorded when it was made) and re-verified against the interpreter: every
intermediate program must compute what the start program computes. A step is one `Choice` (rule,
position, parameters), possibly made inside a macro rule; macros are never replayed as a whole,
so a derivation stays valid even when a macro's definition changes.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path as FilePath
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np

from liftkit.ir.nodes import Lambda, Node, UserFun, walk
from liftkit.ir.patterns.base import Pattern
from liftkit.ir.printer import pretty, show, show_fun, show_short
from liftkit.rewrite.core import (
    Choice,
    Path,
    RewriteError,
    Rule,
    apply_choice,
    get,
    normalize,
    site_at,
)
from liftkit.types import ArrayType, LiftTypeError, ScalarType, TupleType, Type, VectorType
from liftkit.types.core import array_dims, size_vars_of

FORMAT = "liftkit-derivation/1"


class ReplayError(RewriteError):
    """A recorded step no longer applies, or gives a different program than recorded."""


class VerificationError(LiftTypeError):
    """An intermediate program of a derivation computes something else than the start program."""


def fmt_path(path: Path) -> str:
    return ".".join(map(str, path)) or "root"


def parse_path(path: Union[str, Sequence[int]]) -> Path:
    """(0, 2, 0), [0, 2, 0], "0.2.0" or "root" as a position."""
    if isinstance(path, str):
        path = path.strip()
        return () if path in ("", "root") else tuple(int(p) for p in path.split("."))
    return tuple(int(p) for p in path)


def normal_form(program: Lambda) -> Lambda:
    """Rewrite normal form with each pattern function taking as many parameters as the pattern
    passes (map(mult) over pairs: λp. mult(p)). The rules package provides it; the engine's
    `normalize` eta-expands by the function's own arity, which makes a map over zipped pairs
    ill-typed, so it is only the fallback while the rules package is missing."""
    try:
        from liftkit.rewrite.rules import normal_form as nf
    except ImportError:
        return normalize(program)  # type: ignore[return-value]
    return nf(program)  # type: ignore[return-value]


def load_rule_registry() -> dict[str, Rule]:
    """The rules package's rules by name (empty while the package does not exist yet)."""
    try:
        from liftkit.rewrite import rules as pkg  # type: ignore[attr-defined]
    except ImportError:
        return {}
    return dict(getattr(pkg, "RULES_BY_NAME", {}))


# ---------------------------------------------------------------------------------------------
# steps


class _OnDemand:
    """The marker of a step whose printed program is made from its result when first asked."""

    def __repr__(self) -> str:
        return "ON_DEMAND"


ON_DEMAND = _OnDemand()


class Step:
    """One rewrite: the choice made, the macro rule it was made in (outermost first, joined by
    '/'), and the printed program after it (what a replay must reproduce).

    `program=ON_DEMAND` (with a result): printed when first asked for — a search tries macro
    rules at every position and keeps few of their steps, and printing every intermediate
    program cost a quarter of a GPU-rule search of gesummv. Immutable; equal when choice, macro
    and printed program are."""

    __slots__ = ("choice", "macro", "_program", "result")

    def __init__(self, choice: Choice, macro: Optional[str] = None,
                 program: Union[str, None, _OnDemand] = None, result: Optional[Lambda] = None) -> None:
        if program is ON_DEMAND and result is None:
            raise ValueError("a step printed on demand needs its result")
        object.__setattr__(self, "choice", choice)
        object.__setattr__(self, "macro", macro)
        object.__setattr__(self, "_program", program)
        object.__setattr__(self, "result", result)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Step is immutable (cannot set {name})")

    def __reduce__(self) -> tuple[Any, ...]:  # pickling (search workers) rebuilds through __init__
        return (Step, (self.choice, self.macro, self._program, self.result))

    @property
    def program(self) -> Optional[str]:
        """show(result), as recorded, or printed on first use for an ON_DEMAND step (None: not
        recorded)."""
        if self._program is ON_DEMAND:
            from liftkit.ir.printer import show

            object.__setattr__(self, "_program", show(self.result))
        return self._program  # type: ignore[return-value]

    def _key(self) -> tuple[Any, ...]:
        return (self.choice, self.macro, self.program)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Step) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash((self.choice.rule, self.choice.path, self.macro, self.program))

    def __repr__(self) -> str:
        return f"Step(choice={self.choice!r}, macro={self.macro!r}, program={self.program!r})"

    @property
    def rule(self) -> str:
        return self.choice.rule

    def label(self) -> str:
        """`splitJoin(n=4) at 0.2.0`, with `[macro fuseMapReduce]` when made in a macro."""
        return str(self.choice) + (f" [macro {self.macro}]" if self.macro else "")

    def in_macro(self, name: str) -> "Step":
        return Step(self.choice, name if self.macro is None else f"{name}/{self.macro}",
                    self._program, self.result)

    def to_json(self) -> dict[str, Any]:
        d = self.choice.to_json()
        if self.macro:
            d["macro"] = self.macro
        if self.program is not None:
            d["program"] = self.program
        return d

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> "Step":
        return Step(Choice.from_json(d), d.get("macro"), d.get("program"))


# ---------------------------------------------------------------------------------------------
# derivations


class Derivation:
    """A start program plus steps. `rules` holds rules not in the rules package (used by replay;
    not saved: pass them again to `load`)."""

    def __init__(self, start: Lambda, steps: Sequence[Step] = (), *, name: Optional[str] = None,
                 rules: Optional[Mapping[str, Rule]] = None) -> None:
        self.start: Lambda = normal_form(start)
        self.steps: list[Step] = list(steps)
        self.name = name
        self.rules: dict[str, Rule] = dict(rules or {})

    @staticmethod
    def of_program(name: str) -> "Derivation":
        """An empty derivation starting from a bundled program."""
        from liftkit.programs import PROGRAMS

        return Derivation(PROGRAMS[name].program, name=name)

    def __len__(self) -> int:
        return len(self.steps)

    def __repr__(self) -> str:
        return f"Derivation({self.name or show_short(self.start, 60)!s}, {len(self.steps)} steps)"

    # -- building ----------------------------------------------------------------------------
    def extended(self, steps: Sequence[Step], rules: Optional[Mapping[str, Rule]] = None
                 ) -> "Derivation":
        """A new derivation with more steps (the steps must start from this one's final program)."""
        return Derivation(self.start, self.steps + list(steps), name=self.name,
                          rules={**self.rules, **dict(rules or {})})

    def then(self, strategy: Any, focus: Union[str, Sequence[int]] = (),
             rules: Optional[Mapping[str, Any]] = None) -> "Derivation":
        """Apply a strategy to the final program and record its steps; raises RewriteError when
        the strategy fails (the failure's reason is the message)."""
        result = strategy.apply(self.final, parse_path(focus),
                                rules={**self.rules, **dict(rules or {})})
        if not result:
            raise RewriteError(f"after step {len(self.steps)}: {result.reason}")
        return self.extended(result.steps, result.rules)

    # -- programs ----------------------------------------------------------------------------
    def programs(self) -> list[Lambda]:
        """Start program and the program after every step (recorded results, else replayed)."""
        if all(s.result is not None for s in self.steps):
            return [self.start] + [s.result for s in self.steps]  # type: ignore[misc]
        return self.replay()

    @property
    def final(self) -> Lambda:
        return self.programs()[-1]

    def registry(self, rules: Optional[Mapping[str, Rule]] = None) -> dict[str, Rule]:
        return {**load_rule_registry(), **self.rules, **dict(rules or {})}

    def replay(self, rules: Optional[Mapping[str, Rule]] = None, check_text: bool = True
               ) -> list[Lambda]:
        """Re-apply every step from the start program; each must apply and (with check_text)
        give exactly the recorded program text. Returns all programs; raises ReplayError naming
        the first step that fails."""
        reg = self.registry(rules)
        out = [self.start]
        for k, step in enumerate(self.steps, 1):
            new = apply_step(out[-1], step.choice, reg, k)
            if check_text and step.program is not None:
                got = show(new)
                if got != step.program:
                    raise ReplayError(f"step {k}: {step.label()} gives a different program than "
                                      f"recorded\n  recorded: {step.program}\n  now:      {got}")
            out.append(new)
        # keep the replayed programs (a loaded derivation need not replay again to print)
        self.steps = [s if s.result is not None else Step(s.choice, s.macro, s._program, p)
                      for s, p in zip(self.steps, out[1:])]
        return out

    # -- printing ----------------------------------------------------------------------------
    def lines(self, full: bool = False) -> list[str]:
        """The derivation as in seed 002 Fig. 10: the start, then one numbered line per step
        with the program after it and the rule that made it."""
        progs = self.programs()
        head = f"{self.name} = " if self.name else ""
        out = [f"    {head}{notation(progs[0], full)}"]
        for k, (step, p) in enumerate(zip(self.steps, progs[1:]), 1):
            out.append(f"({k}) → {notation(p, full)}    -- {step.label()}")
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def pretty(self, width: int = 100) -> str:
        """Multi-line layout: each step's rule on its own line, the program below it."""
        progs = self.programs()
        out = [f"{self.name or 'start'}:", _indent(pretty(progs[0], width))]
        for k, (step, p) in enumerate(zip(self.steps, progs[1:]), 1):
            out += [f"({k}) → {step.label()}", _indent(pretty(p, width))]
        return "\n".join(out)

    # -- JSON --------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "program": self.name,
            "start": show(self.start),
            "user_funs": sorted(user_fun_names(self.start)),
            "steps": [s.to_json() for s in self.steps],
        }

    def dumps(self) -> str:
        """JSON with one line per step (diffable)."""
        d = self.to_json()
        head = {k: v for k, v in d.items() if k != "steps"}
        lines = [f" {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}," for k, v in head.items()]
        steps = [f"  {json.dumps(s, ensure_ascii=False)}" for s in d["steps"]]
        body = ' "steps": [' + ("\n" + ",\n".join(steps) + "\n ]" if steps else "]")
        return "{\n" + "\n".join(lines) + "\n" + body + "\n}"

    def save(self, path: Union[str, FilePath]) -> None:
        FilePath(path).write_text(self.dumps() + "\n", encoding="utf-8")

    @staticmethod
    def from_json(d: Mapping[str, Any], *, rules: Optional[Mapping[str, Rule]] = None,
                  user_funs: Optional[Mapping[str, UserFun]] = None) -> "Derivation":
        """Read a saved derivation: the start program is parsed from its printed form, its user
        functions looked up by name (standard ones, the bundled program's, then `user_funs`).
        Steps are not re-applied here: call `replay()` to check them."""
        from liftkit.ir.parser import parse_program
        from liftkit.ir.userfuns import standard_user_funs

        if d.get("format", FORMAT) != FORMAT:
            raise ReplayError(f"unknown derivation format {d.get('format')!r} (expected {FORMAT})")
        name = d.get("program")
        known: dict[str, UserFun] = dict(standard_user_funs())
        if name:
            from liftkit.programs import PROGRAMS

            if name in PROGRAMS:
                known.update(_user_funs_in(PROGRAMS[name].program))
        known.update(user_funs or {})
        missing = [n for n in d.get("user_funs", []) if n not in known]
        if missing:
            raise ReplayError(f"the derivation uses user function(s) {', '.join(missing)}, which "
                              f"are neither standard nor given (pass user_funs={{name: UserFun}})")
        start = parse_program(d["start"], known)
        deriv = Derivation(start, [Step.from_json(s) for s in d.get("steps", [])], name=name,
                           rules=rules)
        if show(deriv.start) != d["start"]:
            raise ReplayError(f"the start program reads back differently:\n  saved: {d['start']}\n"
                              f"  read:  {show(deriv.start)}")
        return deriv

    @staticmethod
    def loads(text: str, **kw: Any) -> "Derivation":
        return Derivation.from_json(json.loads(text), **kw)

    @staticmethod
    def load(path: Union[str, FilePath], **kw: Any) -> "Derivation":
        return Derivation.loads(FilePath(path).read_text(encoding="utf-8"), **kw)

    # -- verification ------------------------------------------------------------------------
    def verify(self, *, sizes: Optional[Mapping[str, int]] = None, trials: int = 2, seed: int = 0,
               inputs: Optional[Sequence[Any]] = None, rtol: float = 0.0, atol: float = 0.0,
               replay: bool = True, raise_on_error: bool = True) -> list[str]:
        """Evaluate every program of the derivation with the interpreter on random
        integer-valued inputs (so sums are exact whatever the order) and compare each with the
        start program's result. Returns the list of problems (empty: all equal); raises
        VerificationError listing them unless raise_on_error=False."""
        from liftkit.semantics import bind_sizes, interpret

        progs = self.replay() if replay else self.programs()
        if inputs is not None:
            draws = [list(inputs)]
            sizes = bind_sizes(self.start, draws[0], sizes)  # read off the inputs' shapes
        else:
            sizes = dict(sizes or self.default_sizes(progs))
            rng = np.random.default_rng(seed)
            draws = [random_inputs(self.start, sizes, rng) for _ in range(trials)]
        problems: list[str] = []
        for xs in draws:
            want = interpret(self.start, *xs, sizes=sizes)
            for k, (step, p) in enumerate(zip(self.steps, progs[1:]), 1):
                try:
                    got = interpret(p, *xs, sizes=sizes)
                except LiftTypeError as err:
                    problems.append(f"step {k} ({step.label()}): evaluation failed: {err}")
                    continue
                diff = _difference(want, got, rtol, atol)
                if diff:
                    problems.append(f"step {k} ({step.label()}): the result differs from the "
                                    f"start program's ({diff}) with sizes {sizes}")
            if problems:
                break
        if problems and raise_on_error:
            raise VerificationError("\n".join(problems))
        return problems

    def default_sizes(self, progs: Optional[Sequence[Lambda]] = None) -> dict[str, int]:
        """Sizes for verification: the bundled program's defaults when they fit every step,
        else each size variable twice the lcm of every constant size and parameter used."""
        names = sorted(v.name for p in self.start.params
                       for v in size_vars_of(p.type))  # type: ignore[arg-type]
        if not names:
            return {}
        factors = [1]
        for p in progs or self.programs():
            factors += _constant_sizes(p)
        for s in self.steps:
            factors += [v for v in s.choice.params.values() if isinstance(v, int) and v > 0]
        lcm = math.lcm(*factors)
        if self.name:
            from liftkit.programs import PROGRAMS

            if self.name in PROGRAMS:
                base = dict(PROGRAMS[self.name].sizes)
                if all(n in base and base[n] % lcm == 0 for n in names):
                    return base
        return {n: 2 * lcm for n in names}


# ---------------------------------------------------------------------------------------------
# helpers


def apply_step(program: Lambda, choice: Choice, rules: Mapping[str, Rule], k: int) -> Lambda:
    """Apply one recorded choice, with a message naming the step when it does not apply."""
    where = fmt_path(choice.path)
    rule = rules.get(choice.rule)
    if rule is None:
        raise ReplayError(f"step {k}: unknown rule {choice.rule!r} (not in the rules package and "
                          f"not given: pass rules={{name: Rule}})")
    try:
        site = site_at(program, choice.path)
    except LiftTypeError as err:
        node = _node_at(program, choice.path)
        raise ReplayError(f"step {k}: {choice.rule} does not apply at {where} ({err}; the node "
                          f"there is {node})") from None
    try:
        allowed = [dict(p) for p in rule.choices(site)]
    except LiftTypeError:
        allowed = []
    if dict(choice.params) not in allowed:
        ps = f" with {dict(choice.params)}" if choice.params else ""
        raise ReplayError(f"step {k}: {choice.rule} does not apply at {where}{ps} (the call there "
                          f"is {show_short(site.call, 100)}; applicable parameters there: "
                          f"{allowed or 'none'})")
    try:
        return apply_choice(program, choice, rules)
    except RewriteError as err:
        raise ReplayError(f"step {k}: {err}") from None


def _node_at(program: Lambda, path: Path) -> str:
    try:
        return show_short(get(program, path), 80)
    except (IndexError, LiftTypeError):
        return "missing: the position is outside the program"


def notation(program: Lambda, full: bool = False) -> str:
    """A program as the figures print it: a one-input program as its composition
    (`reduce(add, 0.0f) ∘ map(abs)`), others (or full=True) with typed parameters."""
    if not full and len(program.params) == 1:
        return show_fun(program)
    return show(program)


def _indent(text: str, by: int = 4) -> str:
    return "\n".join(" " * by + line for line in text.splitlines())


def _user_funs_in(node: Node) -> dict[str, UserFun]:
    return {n.name: n for n in walk(node) if isinstance(n, UserFun)}


def user_fun_names(node: Node) -> set[str]:
    return set(_user_funs_in(node))


def _constant_sizes(program: Lambda) -> list[int]:
    """Every constant positive integer among the patterns' static parameters (split 4, ...)."""
    out = []
    for n in walk(program):
        if isinstance(n, Pattern):
            for v in n.static_params():
                if getattr(v, "is_constant", False):
                    try:
                        x = int(v.value)
                    except (TypeError, ValueError):
                        continue
                    if 0 < x <= 1 << 16:
                        out.append(x)
    return out


def random_inputs(program: Lambda, sizes: Mapping[str, int], rng: np.random.Generator
                  ) -> list[Any]:
    """Integer-valued inputs for a program: array elements in [-4, 4], scalars ±2..4 (never 0,
    so a scaling factor cannot hide a wrong step)."""
    return [random_value(p.type, sizes, rng) for p in program.params]  # type: ignore[arg-type]


def random_value(t: Type, sizes: Mapping[str, int], rng: np.random.Generator) -> Any:
    dims, elem = array_dims(t)
    shape = tuple(int(d.eval(dict(sizes))) for d in dims)
    if isinstance(elem, TupleType):
        comps = tuple(random_value(_array_of(e, dims), sizes, rng) for e in elem.elems)
        return comps
    if isinstance(elem, VectorType):
        return _ints(elem.elem, shape + (elem.width,), rng)
    if isinstance(elem, ScalarType):
        if not shape:
            v = int(rng.choice([-3, -2, 2, 3, 4]))
            return elem.dtype.type(bool(v > 0)) if elem.dtype == np.bool_ else elem.dtype.type(v)
        return _ints(elem, shape, rng)
    raise LiftTypeError(f"cannot make a random input of type {t}")


def _array_of(t: Type, dims: Sequence[Any]) -> Type:
    for d in reversed(dims):
        t = ArrayType(t, d)
    return t


def _ints(elem: ScalarType, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    if elem.dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    return rng.integers(-4, 5, shape).astype(elem.dtype)


def _difference(want: Any, got: Any, rtol: float, atol: float) -> str:
    """'' when equal (within the tolerances), else a short description of the difference."""
    from liftkit.semantics.compare import difference

    return difference(got, want, rtol, atol)


__all__ = ["Derivation", "ReplayError", "Step", "VerificationError", "apply_step", "fmt_path",
           "load_rule_registry", "notation", "parse_path", "random_inputs"]
