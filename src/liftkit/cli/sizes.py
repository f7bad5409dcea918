"""Size variables on the command line: which names a program has, whether the values fit in
memory, and the divisibility facts its patterns and types state.

Everything here runs before inputs are generated or a kernel is launched, so a wrong size is
one line in the program's terms ("split 128 needs a length divisible by 128, but N = 100")
instead of a MemoryError traceback, a default size silently used, or a truncated result.

Sizes are at least 1 everywhere: the arithmetic the types and the code generator simplify with
assumes every size variable is positive (N/N = 1), so `--size N=0` and an empty input file are
refused alike.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional, Sequence

import numpy as np

from liftkit.arith import ArithError, ArithExpr
from liftkit.arith.nodes import IntDiv
from liftkit.cli.resolve import CliError, Resolved
from liftkit.ir.nodes import Lambda
from liftkit.ir.printer import show_type
from liftkit.types import ArrayType, ScalarType, TupleType, Type, VectorType, size_vars_of

HINT_RANGE = 1 << 16  # values tried per size variable when suggesting one that works


# ---------------------------------------------------------------------------------------------
# names


def size_names(program: Lambda, spec: Any = None) -> list[str]:
    """The size variables a user can set: those of the parameter types, plus the spec's."""
    names: set[str] = set(spec.sizes) if spec is not None else set()
    for p in program.params:
        if p.type is not None:
            names |= {v.name for v in size_vars_of(p.type)}
    return sorted(names)


def check_size_names(res: Resolved, sizes: Mapping[str, int]) -> None:
    """Every `--size NAME=...` names a size variable of the program (else it would be ignored
    and the default size run without a word)."""
    known = size_names(res.program, res.spec)
    for name, value in sizes.items():
        if name in known:
            continue
        if not known:
            raise CliError(f"--size {name}={value}: {res.name} has no size variables")
        close = [k for k in known if k.lower() == name.lower()]
        close += [k for k in difflib.get_close_matches(name, known, n=2) if k not in close]
        hint = f"; did you mean {close[0]}?" if close else ""
        raise CliError(f"--size {name}={value}: {res.name} has no size {name} "
                       f"(its sizes: {', '.join(known)}){hint}")


# ---------------------------------------------------------------------------------------------
# memory


def _elem_bytes(t: Type) -> int:
    if isinstance(t, ScalarType):
        return int(t.dtype.itemsize)
    if isinstance(t, VectorType):
        return int(t.elem.dtype.itemsize) * t.width
    if isinstance(t, TupleType):
        return sum(_elem_bytes(e) for e in t.elems)
    raise CliError(f"values of type {show_type(t)} have no size in memory")


def type_bytes(t: Type, sizes: Mapping[str, int]) -> Optional[int]:
    """Bytes of a value of type `t` at `sizes` (Python integers: no overflow), or None where a
    length cannot be evaluated (a size not given yet)."""
    if isinstance(t, ArrayType):
        try:
            n = int(t.length.eval(sizes))
        except (ArithError, ZeroDivisionError):
            return None
        inner = type_bytes(t.elem, sizes)
        return None if inner is None else max(n, 0) * inner
    if isinstance(t, TupleType):
        parts = [type_bytes(e, sizes) for e in t.elems]
        return None if any(p is None for p in parts) else sum(parts)  # type: ignore[misc]
    return _elem_bytes(t)


def available_memory() -> Optional[int]:
    """Bytes this process can still allocate: MemAvailable, capped by a cgroup (v2) limit."""
    avail: Optional[int] = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                avail = int(line.split()[1]) * 1024
                break
    except (OSError, ValueError, IndexError):
        pass
    if avail is None:
        try:
            avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, AttributeError):
            return None
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        used = Path("/sys/fs/cgroup/memory.current").read_text().strip()
        if limit != "max":
            avail = min(avail, max(int(limit) - int(used), 0))
    except (OSError, ValueError):
        pass
    return avail


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} PiB"


def check_memory(program: Lambda, result_type: Optional[Type], sizes: Mapping[str, int],
                 generate: Sequence[str], name: str, available: Optional[int] = None) -> None:
    """Refuse sizes whose generated inputs and result cannot fit in this machine's memory,
    before anything is allocated. `generate`: the parameters whose inputs will be made."""
    parts: list[tuple[str, int]] = []
    for p in program.params:
        if p.name in generate and p.type is not None:
            n = type_bytes(p.type, sizes)
            if n:
                parts.append((p.name, n))
    if result_type is not None:
        n = type_bytes(result_type, sizes)
        if n:
            parts.append(("the result", n))
    need = sum(n for _, n in parts)
    avail = available_memory() if available is None else available
    if avail is None or need <= avail:
        return
    biggest = max(parts, key=lambda p: p[1])
    size_text = " ".join(f"{k}={v}" for k, v in sorted(sizes.items()))
    raise CliError(f"{name} at {size_text} needs {human_bytes(need)} for its inputs and result "
                   f"({biggest[0]}: {human_bytes(biggest[1])}), but only {human_bytes(avail)} "
                   f"of memory is available; use smaller --size values")


# ---------------------------------------------------------------------------------------------
# divisibility


@dataclass(frozen=True)
class Fact:
    """`by` divides `length`: needed by a pattern (split 128) or stated by a type (N/2)."""

    what: str  # "split 128", "the type [float]_(N/2) of input x"
    length: ArithExpr
    by: ArithExpr
    pattern: bool = True  # False: stated by a type

    def describe(self, length: int, by: int) -> str:
        value = f"the length is {length}" if self.length.is_constant else f"{self.length} = {length}"
        if self.pattern:
            return f"{self.what} needs a length divisible by {by}, but {value}"
        return f"{self.what} needs {self.length} divisible by {by}, but {value}"


def _divisions(e: ArithExpr) -> Iterator[IntDiv]:
    if isinstance(e, IntDiv):
        yield e
    for k in e._kids():
        if isinstance(k, ArithExpr):
            yield from _divisions(k)


def _type_lengths(t: Type) -> Iterator[ArithExpr]:
    if isinstance(t, ArrayType):
        yield t.length
        yield from _type_lengths(t.elem)
    elif isinstance(t, TupleType):
        for e in t.elems:
            yield from _type_lengths(e)


def size_facts(program: Lambda, result_type: Optional[Type]) -> list[Fact]:
    """The patterns' divisibility needs (split, asVector, reorderStride, partRed), then the
    divisions the parameter and result types contain (`[float]_(2*(N/2))` says 2 divides N)."""
    from liftkit.codegen.constraints import divisibility_checks

    facts = [Fact(d.what, d.length, d.by) for d in divisibility_checks(program)]
    typed = [(f"the type {show_type(p.type)} of input {p.name}", p.type)
             for p in program.params if p.type is not None]
    if result_type is not None:
        typed.append((f"the result type {show_type(result_type)}", result_type))
    seen = {(str(f.length), str(f.by)) for f in facts}
    for what, t in typed:
        for length in _type_lengths(t):
            for d in _divisions(length):
                if (str(d.num), str(d.den)) not in seen:
                    seen.add((str(d.num), str(d.den)))
                    facts.append(Fact(what, d.num, d.den, pattern=False))
    return facts


def _holds(fact: Fact, env: Mapping[str, Any]) -> Any:
    from liftkit.arith.evalnp import eval_numpy

    by = np.asarray(eval_numpy(fact.by, env), dtype=np.int64)
    length = np.asarray(eval_numpy(fact.length, env), dtype=np.int64)
    return (by > 0) & (length % np.where(by > 0, by, 1) == 0)


def _suggestion(facts: Sequence[Fact], sizes: Mapping[str, int], var: str) -> Optional[int]:
    """The value of `var` nearest to the given one (others fixed) that satisfies every fact."""
    given = int(sizes[var])
    lo = max(1, given - HINT_RANGE // 2)
    vals = np.arange(lo, lo + HINT_RANGE, dtype=np.int64)
    env: dict[str, Any] = dict(sizes)
    env[var] = vals
    ok = np.ones(len(vals), dtype=bool)
    with np.errstate(all="ignore"):
        for f in facts:
            try:
                ok &= np.broadcast_to(_holds(f, env), vals.shape)
            except (ArithError, ZeroDivisionError, FloatingPointError, OverflowError):
                continue
    good = vals[ok]
    if len(good) == 0:
        return None
    return int(good[np.argmin(np.abs(good - given) * 2 + (good < given))])


def check_size_facts(facts: Sequence[Fact], sizes: Mapping[str, int], name: str,
                     size_rule: str = "") -> None:
    """The first fact that does not hold at `sizes`, as one error naming the pattern or type;
    facts over sizes not bound yet are skipped (checked again once the inputs bind them)."""
    for f in facts:
        try:
            length, by = int(f.length.eval(sizes)), int(f.by.eval(sizes))
        except (ArithError, ZeroDivisionError):
            continue
        if by > 0 and length % by == 0:
            continue
        msg = f"{name}: {f.describe(length, by)}"
        if size_rule:
            msg += f" (size rule: {size_rule})"
        else:
            names = sorted({v.name for v in f.length.free_vars()} & set(sizes))
            tips = []
            for var in names:
                good = _suggestion(facts, sizes, var)
                if good is not None and good != sizes[var]:
                    tips.append(f"{var}={good}")
            if tips:
                msg += f" (e.g. {' or '.join(tips)})"
        raise CliError(msg)


def check_positive(sizes: Mapping[str, int], where: str = "--size") -> None:
    for k, v in sizes.items():
        if v < 1:
            raise CliError(f"{where} {k}={v}: sizes are at least 1")


def empty_input_error(what: str, path: str, shape: Sequence[int]) -> CliError:
    return CliError(f"input {what}: {path} is empty (shape {tuple(shape)}); sizes are at least 1, "
                    f"as for --size")


__all__ = ["Fact", "available_memory", "check_memory", "check_positive", "check_size_facts",
           "check_size_names", "empty_input_error", "human_bytes", "size_facts", "size_names",
           "type_bytes"]
