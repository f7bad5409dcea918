"""Bundled derivations: the searches' best derivations of the bundled high-level programs, kept
as reviewable text files under `liftkit/derivations/` (package data), so that `liftkit run
PROGRAM --tuned` and `liftkit bench`'s "derived" column work without searching first.

One file per (program, sizes, device): the program and its sizes, the device it was found on
(fingerprint and kind), the search that found it (candidates, valid share, time to the best),
the derivation steps (one JSON object per line, replayable from the high-level program), the
derived low-level program in the printer's notation (read back with the parser) and, for the
reader, the same program pretty-printed. A derivation applies to a program whose text is still
the one it was found for, at the same sizes; the device found on comes first, else another
device of the same kind (CPU or GPU), which the lookup says.

    python -m liftkit.explore.bundled export --db results/issue10/derived-cpu/tuning.sqlite --kind cpu
    python -m liftkit.explore.bundled list
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

from liftkit.ir.nodes import Lambda
from liftkit.rewrite.core import Choice

BUNDLED_DIR = Path(__file__).resolve().parents[1] / "derivations"
SUFFIX = ".lift"
_HEADER = ("# A derivation found by `liftkit explore` (liftkit.explore.bundled). `liftkit run "
           "{name} --tuned` uses it\n# at these sizes on a device of this kind when the tuning "
           "database has none for that device.\n")
_FIELDS = ("program", "sizes", "device", "kind", "rules", "time", "search", "origin",
           "high-level", "low-level")


class DerivationFileError(ValueError):
    """A bundled derivation file that cannot be read (named in the message)."""


@dataclass(frozen=True)
class Derivation:
    """One derivation of a high-level program, as stored in a bundled file."""

    program: str  # the high-level program's name
    high_level: str  # its text (liftkit.explore.problem.program_text) when it was searched
    sizes: dict[str, int]
    device: str  # fingerprint of the device it was found and timed on
    kind: str  # "cpu" or "gpu"
    rules: str
    time: float  # the search's median kernel time, seconds
    candidates: int
    valid: int
    search_seconds: float  # all searches for this key together
    seconds_to_best: float  # from the start of the search that found it
    best_candidate: int  # 1-based position in that search
    steps: tuple[Choice, ...]
    low_level: str
    origin: str = ""  # where it was exported from
    path: Optional[Path] = field(default=None, compare=False)

    @property
    def device_label(self) -> str:
        """`platform / device` (or the CUDA GPU) of the fingerprint."""
        parts = self.device.split("|")
        return f"{parts[0]} / {parts[1]}" if len(parts) >= 2 and parts[0] != "cuda" else \
            (f"CUDA / {parts[1]}" if len(parts) >= 2 else self.device)

    @property
    def valid_share(self) -> float:
        return self.valid / self.candidates if self.candidates else 0.0

    def size_text(self) -> str:
        return " ".join(f"{k}={v}" for k, v in sorted(self.sizes.items()))

    def summary(self) -> str:
        return (f"{self.program} at {self.size_text()} on {self.device_label}: "
                f"{self.time * 1e3:.4g} ms; search {self.candidates} candidates, "
                f"{self.valid_share:.0%} valid, best after {self.seconds_to_best:.1f} s of "
                f"{self.search_seconds:.1f} s")

    def text(self) -> str:
        """The file's text (read back by `parse`)."""
        from liftkit.ir.parser import parse_program
        from liftkit.ir.printer import pretty

        lines = [_HEADER.format(name=self.program).rstrip("\n"),
                 f"program: {self.program}",
                 f"sizes: {self.size_text()}",
                 f"device: {self.device}",
                 f"kind: {self.kind}",
                 f"rules: {self.rules}",
                 f"time: {self.time * 1e3:.6g} ms",
                 f"search: {self.candidates} candidates, {self.valid} valid, "
                 f"{self.search_seconds:.1f} s; best: candidate {self.best_candidate} after "
                 f"{self.seconds_to_best:.1f} s",
                 f"origin: {self.origin}",
                 f"high-level: {self.high_level}"]
        lines += [f"step: {json.dumps(c.to_json(), separators=(', ', ': '))}" for c in self.steps]
        lines.append(f"low-level: {self.low_level}")
        try:
            shown = pretty(parse_program(self.low_level, _user_funs(self.program)))
        except Exception:  # noqa: BLE001 - a program no longer bundled: the line as it is
            shown = self.low_level
        lines.append("pretty:")
        lines += ["  " + ln for ln in shown.splitlines()]
        return "\n".join(lines) + "\n"

    @classmethod
    def parse(cls, text: str, path: Optional[Path] = None) -> "Derivation":
        where = str(path) if path else "derivation"
        vals: dict[str, str] = {}
        steps: list[Choice] = []
        for n, line in enumerate(text.splitlines(), 1):
            if line == "pretty:":
                break
            if not line.strip() or line.startswith("#"):
                continue
            key, sep, value = line.partition(": ")
            if not sep:
                raise DerivationFileError(f"{where}:{n}: expected 'name: value', got {line[:60]!r}")
            if key == "step":
                try:
                    steps.append(Choice.from_json(json.loads(value)))
                except (ValueError, KeyError, TypeError) as err:
                    raise DerivationFileError(f"{where}:{n}: a step that is not a rewrite ({err})") from None
            elif key in _FIELDS:
                vals[key] = value
            else:
                raise DerivationFileError(f"{where}:{n}: unknown field {key!r}")
        missing = [k for k in _FIELDS if k not in vals and k != "origin"]
        if missing:
            raise DerivationFileError(f"{where}: missing {', '.join(missing)}")
        try:
            sizes = {k: int(v) for k, v in (s.split("=") for s in vals["sizes"].split())}
            time_ms = float(vals["time"].removesuffix(" ms"))
            m = re.fullmatch(r"(\d+) candidates, (\d+) valid, ([\d.]+) s; best: candidate (\d+) "
                             r"after ([\d.]+) s", vals["search"])
            if m is None:
                raise ValueError(f"search: {vals['search']!r}")
            cands, valid, secs, best_at, to_best = m.groups()
        except ValueError as err:
            raise DerivationFileError(f"{where}: {err}") from None
        return cls(vals["program"], vals["high-level"], sizes, vals["device"], vals["kind"],
                   vals["rules"], time_ms / 1e3, int(cands), int(valid), float(secs),
                   float(to_best), int(best_at), tuple(steps), vals["low-level"],
                   vals.get("origin", ""), path)

    def file_name(self) -> str:
        return f"{self.program}-{'-'.join(f'{k}{v}' for k, v in sorted(self.sizes.items()))}{SUFFIX}"

    def dir_name(self) -> str:
        return f"{self.kind}-" + (re.sub(r"[^a-z0-9]+", "-", self.device_label.lower()).strip("-")
                                  or "device")


def _user_funs(name: str) -> dict[str, Any]:
    """The standard user functions and those of the bundled program `name`."""
    from liftkit.explore.tuned import rule_user_funs
    from liftkit.ir.nodes import UserFun, walk
    from liftkit.ir.userfuns import standard_user_funs
    from liftkit.programs import PROGRAMS

    funs = dict(standard_user_funs()) | rule_user_funs()
    if name in PROGRAMS:
        funs |= {u.name: u for u in walk(PROGRAMS[name].program) if isinstance(u, UserFun)}
    return funs


# -- lookup ---------------------------------------------------------------------------------------


def load_all(directory: Optional[Path] = None) -> list[Derivation]:
    """Every derivation file under `directory` (default: the bundled ones), sorted by path."""
    root = Path(directory) if directory is not None else BUNDLED_DIR
    if not root.is_dir():
        return []
    return [Derivation.parse(p.read_text(), p) for p in sorted(root.rglob(f"*{SUFFIX}"))]


def _kind(device: Any) -> str:
    if isinstance(device, str):
        return "gpu" if device.startswith("cuda|") else "cpu"
    return "gpu" if getattr(device, "is_gpu", False) else "cpu"


@dataclass(frozen=True)
class Found:
    derivation: Derivation
    same_device: bool

    def describe(self) -> str:
        d = self.derivation
        where = "this device" if self.same_device else d.device_label
        name = d.path.name if d.path is not None else d.file_name()
        return f"bundled derivation {name} (found on {where}, {d.time * 1e3:.4g} ms there)"


def find(program: Lambda, sizes: Mapping[str, int], device: Any,
         directory: Optional[Path] = None) -> Optional[Found]:
    """The bundled derivation for this program (its current text) at these sizes: the one
    found on this device, else the fastest found on another device of the same kind."""
    from liftkit.explore.problem import program_text, size_names

    text = program_text(program)
    used = {k: int(v) for k, v in sizes.items() if k in size_names(program)}
    fingerprint = device if isinstance(device, str) else device.fingerprint
    kind = _kind(device)
    cuda = fingerprint.startswith("cuda|")
    fits = [d for d in load_all(directory)
            if d.high_level == text and d.sizes == used and d.kind == kind
            and (cuda or not cuda_only(d))]
    same = [d for d in fits if d.device == fingerprint]
    if same:
        return Found(min(same, key=lambda d: d.time), True)
    return Found(min(fits, key=lambda d: d.time), False) if fits else None


def cuda_only(d: Derivation) -> bool:
    """Whether the derived program uses a pattern only the CUDA backend compiles (cp.async,
    warp shuffles, tensor cores): an OpenCL device never takes it."""
    from liftkit.ir.patterns.cuda import CudaPattern

    names, todo = set(), list(CudaPattern.__subclasses__())
    while todo:
        c = todo.pop()
        names.add(c.name)
        todo += c.__subclasses__()
    return d.device.startswith("cuda|") and any(re.search(rf"\b{re.escape(n)}\b", d.low_level)
                                                for n in names if n and n[0].isalpha())


def available(name: str, directory: Optional[Path] = None) -> list[Derivation]:
    """The bundled derivations of the program called `name`."""
    return [d for d in load_all(directory) if d.program == name]


def not_bundled_note(name: str, directory: Optional[Path] = None) -> str:
    """What is bundled for `name`, for an error saying nothing fits."""
    have = available(name, directory)
    if not have:
        return f"no bundled derivation of {name}"
    where = "; ".join(f"{d.size_text()} on {d.kind} ({d.device_label})" for d in have)
    return f"bundled derivations of {name}: {where}"


def low_level_program(found: Derivation, program: Lambda) -> Lambda:
    """The derived low-level program, read back from its text (else replayed from its steps)."""
    from liftkit.explore.db import Record
    from liftkit.explore.space import RuleSetError, load_rule_space
    from liftkit.explore.tuned import program_of

    try:
        space = load_rule_space(found.rules)  # its steps may be the rule set's macros
    except RuleSetError:
        space = None
    return program_of(Record(found.steps, found.low_level, "ok", found.time), program, space)


# -- export ---------------------------------------------------------------------------------------


def of_key(db: Any, key: str, kind: str, origin: str = "") -> Optional[Derivation]:
    """The best valid candidate timed on `key`'s device (`TuningDB.best_measured`), with its
    searches' statistics."""
    info, best = db.key_info(key), db.best_measured(key)  # with those the other backend won
    if info is None or best is None:
        return None
    recs = db.candidates(key)
    searches = db.searches(key)
    started = {s.search_id: s.started for s in searches}
    total = 0.0
    for s in searches:
        times = [r.created for r in recs if r.search_id == s.search_id]
        total += (max(times) - s.started) if times else 0.0
    rules = next((s.settings.get("rules") for s in searches if s.search_id == best.search_id), None)
    return Derivation(info.name, info.program, dict(info.sizes), info.device, kind,
                      str(rules or "default"), float(best.time or 0.0), len(recs),
                      sum(1 for r in recs if r.ok), total,
                      best.created - started.get(best.search_id, best.created), best.seq + 1,
                      best.derivation, best.low_level, origin)


def from_db(db: Any, kind: str, names: Optional[Iterable[str]] = None, origin: str = ""
            ) -> list[Derivation]:
    """The best valid candidate of every key in a tuning database (of the programs `names`)."""
    wanted = set(names) if names is not None else None
    found = (of_key(db, info.key, kind, origin) for info in db.keys()
             if wanted is None or info.name in wanted)
    return [d for d in found if d is not None]


def write(derivations: Sequence[Derivation], directory: Optional[Path] = None) -> list[Path]:
    root = Path(directory) if directory is not None else BUNDLED_DIR
    paths = []
    for d in derivations:
        path = root / d.dir_name() / d.file_name()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(d.text())
        paths.append(path)
    return paths


def main(argv: Optional[Sequence[str]] = None) -> int:
    from liftkit.explore.db import TuningDB

    p = argparse.ArgumentParser(prog="python -m liftkit.explore.bundled",
                                description="list or export bundled derivations")
    sub = p.add_subparsers(dest="cmd", required=True)
    ex = sub.add_parser("export", help="write the best derivation of each key of a database")
    ex.add_argument("--db", required=True)
    ex.add_argument("--kind", choices=("cpu", "gpu"), required=True,
                    help="the kind of device the database's searches ran on")
    ex.add_argument("--programs", default=None, help="a,b,... (default: every program)")
    ex.add_argument("--out", default=None, help=f"directory (default {BUNDLED_DIR})")
    ex.add_argument("--origin", default=None, help="where it came from (default: the --db path)")
    ls = sub.add_parser("list", help="the bundled derivations")
    ls.add_argument("--dir", default=None)
    args = p.parse_args(argv)
    if args.cmd == "list":
        for d in load_all(Path(args.dir) if args.dir else None):
            print(d.summary())
        return 0
    if not Path(args.db).is_file():
        print(f"error: no tuning database at {args.db}", file=sys.stderr)
        return 1
    names = args.programs.split(",") if args.programs else None
    found = from_db(TuningDB(args.db), args.kind, names, args.origin or args.db)
    for path in write(found, Path(args.out) if args.out else None):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
