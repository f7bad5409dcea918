"""Monte-Carlo descent over derivations (seed 002 §6.1).

Starting from the high-level program, each step lists the applicable choices (rules, macro
rules, and their numeric parameters: split factors, vector widths, ...). For each choice — or a
sample of them when there are many — R random walks go from the rewritten program down to a
terminal (OpenCL-level, compilable) program; the terminals (and the rewritten program itself when
it is already OpenCL-level, as a macro's result often is) are evaluated; the choice whose walks
gave the best time is fixed, and the next step starts from it. Rules keep applying to OpenCL-level
programs (vectorisation, local memory, ...), so "terminal" means: the fixed program is OpenCL-level
and valid, and no sampled choice's walks beat it (a sample whose walks found nothing valid is
resampled first). The descent also ends when the budget (evaluated candidates or seconds) is
spent. The best candidate seen anywhere is the result.

Random walks must terminate: the deeper a walk, the likelier lowering rules become and the
rarer algorithmic ones; past `max_depth` every step must reduce the program's `highness` (its
high-level patterns), at most `lowering_tail` more steps; a walk may stop at any OpenCL-level
program it reaches. Every random draw comes from a generator seeded by (seed,
position in the search, fixed program text), so for a seed the search is deterministic whenever
the timings rank the choices the same way.
"""

from __future__ import annotations

import hashlib
import math
import random
import time
import uuid
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Optional, Sequence

from liftkit.ir.nodes import Lambda
from liftkit.ir.printer import show
from liftkit.ir.typecheck import is_low_level
from liftkit.rewrite.core import Choice
from liftkit.types import LiftTypeError

from liftkit.explore.db import Record, TuningDB
from liftkit.explore.evaluate import Evaluator
from liftkit.explore.problem import Problem
from liftkit.explore.space import RuleSpace


@dataclass(frozen=True)
class SearchSettings:
    """budget: candidates to evaluate; seconds: optional wall-clock limit; walks: R random walks
    per choice; max_choices: choices tried per step (a random sample beyond that); max_depth:
    walk length after which every step must make progress toward OpenCL level (lowering_tail
    such steps at most); stop_probability: a walk at an OpenCL-level program stops there with
    this probability; lowering_bias: how fast lowering rules gain (and algorithmic ones lose)
    weight with depth; macro_weight: weight of macro rules (half of it against algorithmic 1 and
    lowering 0.25 at depth 0); max_steps: derivation steps fixed at most."""

    budget: int = 200
    seconds: Optional[float] = None
    walks: int = 3
    max_choices: int = 8
    max_depth: int = 10
    lowering_tail: int = 20
    stop_probability: float = 0.3
    lowering_bias: float = 0.3
    macro_weight: float = 2.0
    max_steps: int = 30
    max_walks: Optional[int] = None  # default: 10 × budget (walks that only re-find candidates)
    resamples: int = 2  # fresh samples of choices when a sample's walks found nothing valid
    tail_tries: int = 40  # rewrites tried per step past max_depth to find one that makes progress
    seed: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SearchResult:
    """The outcome: the best record (None if nothing valid was found) and everything evaluated."""

    problem: str
    key: str
    search_id: str
    best: Optional[Record]
    records: list[Record]
    fixed: list[Choice]
    final: Lambda  # the program the descent ended at
    elapsed: float
    walks: int = 0
    dead_ends: int = 0
    stop_reason: str = ""
    rule_faults: list[str] = field(default_factory=list)
    started: float = 0.0  # time.time() at the start (records' `created` count from it)
    keys: dict[str, str] = field(default_factory=dict)  # each backend's key (records go there)

    @property
    def derivation(self) -> tuple[Choice, ...]:
        return self.best.derivation if self.best else ()

    @property
    def source(self) -> str:
        return self.best.source if self.best else ""

    @property
    def valid(self) -> list[Record]:
        return [r for r in self.records if r.ok]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.records:
            out[r.validity] = out.get(r.validity, 0) + 1
        return out


def _rng(*parts: Any) -> random.Random:
    """A generator seeded by the parts' text (stable across processes, unlike hash())."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


_HIGH_WEIGHTS = {"map": 1, "reduce": 1, "reorder": 1, "partRed": 2}


def highness(program: Lambda) -> int:
    """How far a program is from OpenCL level: its high-level-only patterns (a map that only
    rearranges data is compiled as a view and does not count). partRed weighs more than what
    lowers it: partRed m (m > 1) 4, above join ∘ map(partRed 1) ∘ split (3); partRed 1 2,
    above reduce (1)."""
    from liftkit.ir.nodes import walk
    from liftkit.ir.patterns import Map, Pattern
    from liftkit.ir.typecheck import layout_only

    n = 0
    for node in walk(program):
        if isinstance(node, Pattern) and node.high_level and node.name in _HIGH_WEIGHTS:
            if isinstance(node, Map) and layout_only(node.f):
                continue
            n += _HIGH_WEIGHTS[node.name]
            if node.name == "partRed" and str(getattr(node, "m", 1)) != "1":
                n += 2
    return n


class _Budget(Exception):
    """The budget is spent: unwind to the top of the search."""


class Search:
    """One search run; `run()` returns the result. Records go to `db` when given."""

    def __init__(self, problem: Problem, space: RuleSpace, evaluator: Evaluator,
                 settings: SearchSettings = SearchSettings(), db: Optional[TuningDB] = None,
                 progress: bool = False, pipeline: Any = None,
                 resume: Optional[str] = None) -> None:
        self.problem = problem
        self.pipeline = pipeline  # a liftkit.explore.pipeline.Pipeline: host stages in parallel
        self.space = space
        self.evaluator = evaluator
        self.settings = settings
        self.db = db
        self.progress = progress
        self.key = problem.key(evaluator.device_fingerprint)
        # each record goes under the key of the device it was timed on (a search over both
        # backends has two; the search itself is filed under the first, `key`)
        fps = (evaluator.fingerprints() if hasattr(evaluator, "fingerprints")
               else {"opencl": evaluator.device_fingerprint})  # a pipeline worker's walker
        self.fingerprints = dict(fps)
        self.keys = {b: problem.key(fp) for b, fp in fps.items()}
        self.backends = tuple(self.keys)
        self.search_id = ""
        self.resume = resume  # an interrupted search's id: its records are taken, not re-run
        self._resumed: list[Record] = []
        self.records: list[Record] = []
        self.best: Optional[Record] = None
        self._memo: dict[str, Record] = {}
        self._walks = 0
        self._dead = 0
        self._step = 0
        self._deadline: Optional[float] = None
        self._bar: Any = None
        self._task: Any = None

    # -- top level --------------------------------------------------------------------------------

    def run(self) -> SearchResult:
        s = self.settings
        t0, started = time.monotonic(), time.time()
        self._deadline = t0 + s.seconds if s.seconds is not None else None  # 0: nothing
        settings = s.as_dict() | {"rules": self.space.name, "problem": self.problem.name,
                                  "backends": list(self.backends)}
        if self.db is not None:
            self.db.register_key(self.key, self.problem.name, self.problem.text, self.problem.sizes,
                                 self.evaluator.device_fingerprint)
            for b, fp in self.fingerprints.items():
                if self.keys[b] != self.key:
                    self.db.register_key(self.keys[b], self.problem.name, self.problem.text,
                                         self.problem.sizes, fp)
            if self.resume:
                self.search_id = self.resume
                self._resumed = self.db.candidates(self.key, self.resume)
            else:
                self.search_id = self.db.start_search(self.key, settings)
        else:
            self.search_id = uuid.uuid4().hex
        if self.pipeline is not None:
            self.pipeline.start(self)
        try:
            with self._progress_bar():
                fixed, final, why = self._descend()
        finally:
            if self.pipeline is not None:
                self.pipeline.close()
        if self.db is not None:
            self.db.finish_search(self.search_id, why)
        return SearchResult(self.problem.name, self.key, self.search_id, self.best, self.records,
                            fixed, final, time.monotonic() - t0, self._walks, self._dead, why,
                            list(self.space.errors), started, dict(self.keys))

    def _descend(self) -> tuple[list[Choice], Lambda, str]:
        s = self.settings
        program: Lambda = self.space.prepare(self.problem.program)
        fixed: list[Choice] = []
        try:
            while True:
                if self._step >= s.max_steps:
                    return fixed, program, f"fixed {s.max_steps} derivation steps"
                text = show(program)
                choices = self.space.choices(program)
                here = self._evaluate(program, fixed) if is_low_level(program) else None
                if not choices:
                    why = "reached a terminal program" if here else "no rule applies"
                    return fixed, program, why
                scored: list[tuple[float, int, int, tuple[Choice, ...], Lambda]] = []
                for attempt in range(1 + s.resamples):
                    rng = _rng(s.seed, "step", self._step, attempt, text)
                    scored = self._score(program, fixed, self._sample(choices, rng), text, attempt)
                    # a fresh sample only when none of this one's walks gave a valid program
                    # (but the fixed program is valid): an unlucky sample, not evidence
                    if not (here is not None and here.ok and all(math.isinf(t[0]) for t in scored)):
                        break
                if not scored:
                    return fixed, program, "no choice could be applied"
                best_time, _, _, steps, child = min(scored, key=lambda t: t[:3])
                if here is not None and here.ok:
                    if math.isinf(best_time):
                        return fixed, program, "no choice led to a valid program"
                    if best_time >= here.time:  # type: ignore[operator]
                        return fixed, program, "the fixed program beats every choice"
                fixed.extend(steps)
                program = child
                self._step += 1
        except _Budget as b:
            return fixed, program, str(b)

    def _score(self, program: Lambda, fixed: list[Choice], options: Sequence[Choice], text: str,
               attempt: int) -> list[tuple[float, int, int, tuple[Choice, ...], Lambda]]:
        """For each option: (best valid time of its walks, -walks that reached a terminal,
        index, its steps, the rewritten program)."""
        if self.pipeline is not None:
            return self.pipeline.score(self, program, fixed, options, text, attempt)
        s = self.settings
        scored = []
        for i, choice in enumerate(options):
            try:
                child, steps = self.space.apply_steps(program, choice)
            except LiftTypeError:
                continue
            if not self._divisible(child):
                continue
            best, reached = math.inf, 0
            if is_low_level(child) and self._generable(child):
                # the choice's own result is its first terminal (a macro's kernel is measured
                # as the macro made it, not only after random walks changed it)
                reached += 1
                rec = self._evaluate(child, fixed + list(steps))
                if rec.ok and rec.time is not None:
                    best = rec.time
            for r in range(s.walks):
                end = self._walk(child, _rng(s.seed, "walk", self._step, attempt, i, r, text))
                if end is None:
                    continue
                reached += 1
                rec = self._evaluate(end[0], fixed + list(steps) + end[1])
                if rec.ok and rec.time is not None:
                    best = min(best, rec.time)
            scored.append((best, -reached, i, steps, child))
        return scored

    # -- choices and walks ------------------------------------------------------------------------

    def _groups(self, choices: Sequence[Choice]) -> dict[tuple[str, tuple[int, ...]], list[Choice]]:
        """Choices by (rule, position): the numeric parameters of one rewrite form a group, so a
        rule with many split factors does not crowd out the others."""
        groups: dict[tuple[str, tuple[int, ...]], list[Choice]] = {}
        for c in choices:
            groups.setdefault((c.rule, c.path), []).append(c)
        return groups

    def _sample(self, choices: Sequence[Choice], rng: random.Random) -> list[Choice]:
        """All choices when few. Else every macro-rule choice (seed 002 §6.1: macros are there
        to shorten the search, so each step considers them all; when more than `max_choices`,
        one per (macro, position) group first, see `_sample_groups`), and the room left for
        `max_choices` (rule, position) groups of plain rules at random (one parameter each;
        more parameters of the same groups if room is left)."""
        n = self.settings.max_choices
        if len(choices) <= n:
            return list(choices)
        macros = [c for c in choices if self.space.is_macro(c)]
        if len(macros) > n:
            macros = self._sample_groups(macros, n, rng)
        rules = [c for c in choices if not self.space.is_macro(c)]
        room = n - len(macros)
        picked: list[Choice] = []
        if room > 0 and rules:
            groups = list(self._groups(rules).values())
            if len(groups) > room:
                groups = rng.sample(groups, room)
                groups.sort(key=lambda g: rules.index(g[0]))
            picked = [rng.choice(g) for g in groups]
            rest = [c for c in rules if c not in picked]
            extra = room - len(picked)
            if extra > 0 and rest:
                more = rng.sample(rest, min(extra, len(rest)))
                picked = [c for c in rules if c in picked or c in more]
        chosen = set(map(id, macros + picked))
        return [c for c in choices if id(c) in chosen]

    def _sample_groups(self, choices: Sequence[Choice], n: int, rng: random.Random) -> list[Choice]:
        """n of the choices, taken round-robin from the (rule, position) groups in random order
        (one parameter of each group, then a second of each, ...), so a macro with many
        parameter values (gpu-reduction's 8) does not crowd out one with a few (mm-tiles)."""
        groups = [rng.sample(g, len(g)) for g in self._groups(choices).values()]
        rng.shuffle(groups)
        picked: list[Choice] = []
        while len(picked) < n:
            for g in groups:
                if g and len(picked) < n:
                    picked.append(g.pop())
        return picked

    def _kind(self, choice: Choice) -> str:
        if self.space.is_macro(choice):
            return "macro"
        return "lowering" if self.space.is_lowering(choice) else "algorithmic"

    def _kind_weight(self, kind: str, depth: int) -> float:
        """Algorithmic rules first, lowering rules later: the deeper the walk, the more weight
        moves from one to the other; macro rules keep a constant weight."""
        b = self.settings.lowering_bias
        if kind == "algorithmic":
            return 1.0 / (1.0 + b * depth)
        if kind == "lowering":
            return 0.25 + b * depth
        return 0.5 * self.settings.macro_weight

    def _pick(self, choices: Sequence[Choice], depth: int, rng: random.Random) -> Choice:
        """A kind of rule by weight, then a (rule, position) group of it, then parameters —
        each uniformly, so neither many positions nor many split factors crowd others out."""
        by_kind: dict[str, list[list[Choice]]] = {}
        for g in self._groups(choices).values():
            by_kind.setdefault(self._kind(g[0]), []).append(g)
        kinds = sorted(by_kind)
        weights = [self._kind_weight(k, depth) for k in kinds]
        x = rng.random() * sum(weights)
        kind = kinds[-1]
        for k, w in zip(kinds, weights):
            x -= w
            if x < 0:
                kind = k
                break
        group = by_kind[kind][rng.randrange(len(by_kind[kind]))]
        return group[rng.randrange(len(group))]

    def _walk(self, program: Lambda, rng: random.Random) -> Optional[tuple[Lambda, list[Choice]]]:
        """A random walk to an OpenCL-level program: (program, the walk's steps), or None for a
        walk that found none. Past `max_depth` a step must make progress: fewer high-level
        patterns remain (see `highness`)."""
        self.count_walk()
        last = self.walk_from(program, rng)
        if last is None:
            self._dead += 1
        return last

    def count_walk(self) -> None:
        """Count a walk against the budget of walks."""
        s = self.settings
        self._walks += 1
        limit = s.max_walks if s.max_walks is not None else 10 * s.budget
        if self._walks > limit:
            raise _Budget(f"made {limit} random walks")

    def walk_from(self, program: Lambda, rng: random.Random) -> Optional[tuple[Lambda, list[Choice]]]:
        """The walk itself (pure: what a pipeline's worker runs)."""
        s = self.settings
        path: list[Choice] = []
        last: Optional[tuple[Lambda, list[Choice]]] = (
            (program, []) if is_low_level(program) and self._generable(program) else None)
        depth = 0
        while depth < s.max_depth + s.lowering_tail:
            at_low = last is not None and len(last[1]) == len(path)
            if at_low and (depth >= s.max_depth or rng.random() < s.stop_probability):
                break
            tail = depth >= s.max_depth
            h0 = highness(program) if tail else 0
            choices = self.space.choices(program)
            nxt, tries = None, 0
            while choices and nxt is None and tries < s.tail_tries:
                c = self._pick(choices, depth, rng)
                choices = [x for x in choices if x is not c]
                try:
                    cand = self.space.apply_steps(program, c)
                except LiftTypeError:
                    continue
                if not self._divisible(cand[0]):
                    continue  # every program below it would be filtered: walk elsewhere
                if tail:
                    tries += 1
                    if highness(cand[0]) >= h0:
                        continue
                nxt = cand
            if nxt is None:
                break
            program = nxt[0]
            path.extend(nxt[1])
            depth += 1
            if is_low_level(program) and self._generable(program):
                last = (program, list(path))
        return last

    @staticmethod
    def _generable(program: Lambda) -> bool:
        """The code generator accepts the kernel structure (no parallel map's result read in
        the kernel that computes it): otherwise the walk goes on, since a candidate the
        compiler refuses would only spend the budget (8 of 16 in a CPU gemv search)."""
        from liftkit.codegen.compiler import kernel_structure_error

        try:
            return kernel_structure_error(program) is None
        except Exception:  # noqa: BLE001 - no verdict: let the evaluation decide
            return True

    def _divisible(self, program: Lambda) -> bool:
        """Every split, asVector and reorderStride factor divides its input at the problem's
        sizes. Rewrites keep these factors, so a program failing this leads only to candidates
        the filters reject; the walks and the step choices avoid it (with symbolic lengths the
        rules offer split factors 2..4096 whatever the sizes)."""
        from liftkit.explore.filters import FilterContext, sizes_not_divisible

        try:
            ctx = FilterContext(program, self.problem.sizes, self.evaluator.device_limits)
            return sizes_not_divisible(ctx) is None
        except Exception:  # noqa: BLE001 - no verdict: let the evaluation's filters decide
            return True

    # -- evaluation and recording -----------------------------------------------------------------

    def _evaluate(self, program: Lambda, derivation: Sequence[Choice]) -> Record:
        """Evaluate a terminal once per search (re-finding it costs nothing) and record it."""
        return self.admit(show(program), lambda: self.evaluator.evaluate(
            program, derivation, self.best.time if self.best else None))

    def admit(self, text: str, make: Any) -> Record:
        """The record of the candidate `text` (made by `make()` unless found before), counted
        against the budget and recorded."""
        if text in self._memo:
            return self._memo[text]
        if len(self.records) >= self.settings.budget:
            raise _Budget(f"evaluated {self.settings.budget} candidates")
        if self._deadline is not None and time.monotonic() >= self._deadline:
            raise _Budget(f"spent {self.settings.seconds:g} s")
        seq = len(self.records)
        if seq < len(self._resumed) and self._resumed[seq].low_level == text:
            rec = self._resumed[seq]  # the same seed draws the same candidates: not run again
        else:
            rec = make()
            # one backend: its own; several: the record says which one it was timed on
            backend = rec.backend if len(self.backends) > 1 else self.backends[0]
            rec = replace(rec, key=self.keys.get(backend, self.key), search_id=self.search_id,
                          seq=seq, step=self._step, created=time.time(), backend=backend)
            if self.db is not None:
                rec = self.db.insert(rec)
        self._memo[text] = rec
        self.records.append(rec)
        if rec.ok and (self.best is None or rec.time < self.best.time):  # type: ignore[operator]
            self.best = rec
        self._advance()
        return rec

    # -- progress ---------------------------------------------------------------------------------

    def _progress_bar(self) -> Any:
        import contextlib

        if not self.progress:
            return contextlib.nullcontext()
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                       TimeElapsedColumn(), TextColumn("{task.fields[best]}"),
                       console=Console(stderr=True), transient=False)
        self._bar = bar
        self._task = bar.add_task(f"exploring {self.problem.name}", total=self.settings.budget,
                                  best="best: -")
        return bar

    def _advance(self) -> None:
        if self._bar is None:
            return
        best = f"best: {self.best.time * 1e3:.4g} ms" if self.best else "best: -"  # type: ignore[operator]
        self._bar.update(self._task, advance=1, best=f"{best}  step {self._step}")


def search(problem: Problem, space: RuleSpace, evaluator: Evaluator,
           settings: SearchSettings = SearchSettings(), db: Optional[TuningDB] = None,
           progress: bool = False, pipeline: Any = None, resume: Optional[str] = None
           ) -> SearchResult:
    """Run one Monte-Carlo descent (see the module docstring); `pipeline` (a
    liftkit.explore.pipeline.Pipeline) runs the host stages of each step in parallel; `resume`
    continues an interrupted search of `db` (its finished candidates are kept, not re-run)."""
    return Search(problem, space, evaluator, settings, db, progress, pipeline, resume).run()
