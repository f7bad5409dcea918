"""The optimisation ablation of seed 000 Fig. 8: each CGO program compiled with no code-generator
optimisations, then adding barrier elimination, control-flow simplification and index
simplification (the last = all on). Each configuration is checked before it is timed; times are
reported relative to all-on, plus the generated source size with and without index
simplification. Loop unrolling (the *Unroll patterns) is a choice of the program, not of the
code generator, and stays on throughout.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from liftkit.bench.suite import Entry

CONFIGS: tuple[tuple[str, dict[str, bool]], ...] = (
    ("none", dict(eliminate_barriers=False, simplify_control_flow=False, simplify_indices=False)),
    ("+barrier elim.", dict(eliminate_barriers=True, simplify_control_flow=False, simplify_indices=False)),
    ("+control flow", dict(eliminate_barriers=True, simplify_control_flow=True, simplify_indices=False)),
    ("+indices (all)", dict(eliminate_barriers=True, simplify_control_flow=True, simplify_indices=True)),
)
ALL_ON = CONFIGS[-1][0]


def _source_bytes(compiled: Any) -> int:
    return sum(len(k.source.encode()) for k in compiled.kernels)


def ablate_entry(entry: Entry, runner: Any, device_kind: str, size_set: str, cfg: Any,
                 registry: Any) -> dict[str, Any]:
    """One row: per configuration its status, median seconds and source size."""
    from liftkit.bench.harness import _one_line, check_compiled, choose, prepare, time_compiled
    from liftkit.codegen import CompileOptions, compile_program

    row: dict[str, Any] = {"key": entry.key, "title": entry.title, "status": "ok", "program": "",
                           "configs": {}, "note": ""}
    sizes = entry.sizes_for(size_set)
    choice = choose(entry, device_kind, registry) if sizes else None
    if sizes is None or choice is None:
        row["status"] = "no sizes" if sizes is None else "not bundled"
        return row
    row["program"] = choice.name
    try:
        prep = prepare(entry, choice, sizes, cfg.seed)
    except Exception as err:  # noqa: BLE001
        row["status"], row["note"] = "error", _one_line(err)
        return row
    for label, switches in CONFIGS:
        cell: dict[str, Any] = {"status": "error", "seconds": None, "source_bytes": None}
        try:
            compiled = compile_program(choice.program, CompileOptions(**switches))
            cell["source_bytes"] = _source_bytes(compiled)
        except Exception as err:  # noqa: BLE001 - reported per configuration
            cell["status"], cell["note"] = "compile failed", _one_line(err)
            row["configs"][label] = cell
            continue
        try:
            d, _, _, _ = check_compiled(runner, compiled, prep)
            if d:
                cell["status"], cell["note"] = "wrong", d
            else:
                info = time_compiled(runner, compiled, prep, cfg.repeat)
                cell["status"], cell["seconds"] = "ok", float(info.total_seconds)
        except Exception as err:  # noqa: BLE001
            cell["note"] = _one_line(err)
        row["configs"][label] = cell
    base = row["configs"].get(ALL_ON, {}).get("seconds")
    for cell in row["configs"].values():
        cell["relative"] = cell["seconds"] / base if base and cell.get("seconds") else None
    row["source_bytes_no_index_simplification"] = row["configs"].get(CONFIGS[2][0], {}).get("source_bytes")
    row["source_bytes_all_on"] = row["configs"].get(ALL_ON, {}).get("source_bytes")
    return row


def run_ablation(entries: Sequence[Entry], runner: Any, device_kind: str, size_set: str, cfg: Any,
                 registry: Any, log: Callable[[str], None]) -> list[dict[str, Any]]:
    rows = []
    for e in entries:
        row = ablate_entry(e, runner, device_kind, size_set, cfg, registry)
        cells = ", ".join(f"{k}: {_cell_text(v)}" for k, v in row["configs"].items())
        log(f"ablation: {e.key}: {row['status']} {cells}")
        rows.append(row)
    return rows


def _cell_text(cell: dict[str, Any]) -> str:
    if cell.get("status") != "ok":
        return str(cell.get("status"))
    rel = cell.get("relative")
    return f"{cell['seconds'] * 1e3:.3f} ms" + (f" ({rel:.2f}×)" if rel else "")
