"""Matrix multiplication derived by the search from the high-level `mm` alone, timed against the
bundled hand-written low-level programs and (on an NVIDIA GPU, through CuPy) cuBLAS (issue 10
item 2).

One search from scratch (fresh tuning database under --out, the GPU or CPU macro rules), then
the search's best kernel (read back from the database, as `liftkit run mm --tuned` does) and the
hand-written kernels are checked against the NumPy reference on fresh random inputs and timed in
the same process: --rounds alternating rounds of --repeat event-timed runs, median. cuBLAS
(`cupy.matmul`, float32, TF32 off) is checked and timed with CUDA events in the same run.

    python benchmarks/mm_search.py --device gpu --size 4096 --budget 40 --out results/issue10/mm-gpu
    python benchmarks/mm_search.py --device cpu --rules cpu --size 512 --budget 30 \\
        --out results/issue10/mm-cpu
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from search_compare import check_then_time, rel_error  # this folder (the script's path)

HAND = ("mm_nvidia", "mm_amd", "mm_tiled")


def search(sizes: dict[str, int], args: argparse.Namespace, out: Path) -> dict[str, Any]:
    from liftkit.explore import SearchSettings, TuningDB, explore

    db = TuningDB(out / "tuning.sqlite")
    t0 = time.time()
    result = explore("mm", sizes, args.device, rules=args.rules, db=db, progress=False,
                     settings=SearchSettings(budget=args.budget, seconds=args.seconds,
                                             max_choices=args.choices, seed=args.seed))
    recs = result.records
    best = result.best
    info: dict[str, Any] = {
        "program": "mm", "sizes": sizes, "rules": args.rules, "candidates": len(recs),
        "valid": sum(r.ok for r in recs), "valid_share": sum(r.ok for r in recs) / max(len(recs), 1),
        "search_seconds": result.elapsed, "stop_reason": result.stop_reason, "counts": result.counts(),
        "best_ms_in_search": best.time * 1e3 if best else None,  # type: ignore[operator]
        "best_candidate": best.seq + 1 if best else None,
        "seconds_to_best": best.created - t0 if best else None,
        "derivation": [str(c) for c in best.derivation] if best else None,
        "candidates_list": [{"seq": r.seq + 1, "validity": r.validity,
                             "ms": r.time * 1e3 if r.time else None,  # type: ignore[operator]
                             "steps": [c.rule for c in r.derivation]} for r in recs],
    }
    if best is not None:
        (out / "mm.cl").write_text(best.source)
        (out / "mm.lift").write_text(best.low_level + "\n")
    return info


def cublas_ms(sizes: dict[str, int], args: argparse.Namespace) -> dict[str, Any]:
    """cupy.matmul (cuBLAS SGEMM, TF32 off), checked, then median of --repeat CUDA-event timings."""
    os.environ.setdefault("CUPY_TF32", "0")
    try:
        import cupy as cp
    except Exception as err:  # noqa: BLE001 - no CuPy: no cuBLAS column
        return {"cuBLAS": f"unavailable ({type(err).__name__})"}
    from liftkit.programs import PROGRAMS

    spec = PROGRAMS["mm"]
    A, B = spec.inputs(sizes, seed=7)
    a, b = cp.asarray(A), cp.asarray(B)
    err = rel_error(cp.asnumpy(a @ b), spec.reference(A, B))
    if not err < 1e-4:
        raise SystemExit(f"cuBLAS is wrong (relative error {err:.3g})")
    ts = []
    for _ in range(args.rounds):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        per = []
        for _ in range(args.repeat):
            start.record()
            a @ b
            end.record()
            end.synchronize()
            per.append(cp.cuda.get_elapsed_time(start, end))
        ts.append(statistics.median(per))
    return {"cuBLAS ms": statistics.median(ts), "cuBLAS ms rounds": ts, "cuBLAS rel_error": err}


def time_all(sizes: dict[str, int], args: argparse.Namespace, out: Path) -> dict[str, Any]:
    from liftkit.backends.opencl import OpenCLRunner
    from liftkit.codegen import compile_program
    from liftkit.explore import TuningDB
    from liftkit.explore.tuned import best_for
    from liftkit.programs import PROGRAMS

    spec = PROGRAMS["mm"]
    runner = OpenCLRunner(args.device)
    progs: dict[str, Any] = {h: compile_program(PROGRAMS[h].program) for h in args.hand.split(",")}
    derived = best_for(spec.program, sizes, runner.device, TuningDB(out / "tuning.sqlite"))
    if derived is not None:
        progs["derived"] = compile_program(derived[0])
    row: dict[str, Any] = {"device": runner.device.name}
    row.update(check_then_time("mm", runner, spec, progs, sizes, args.rounds, args.repeat))
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="gpu")
    ap.add_argument("--rules", default=None, help="gpu or cpu (default: the device's)")
    ap.add_argument("--size", type=int, default=4096, help="M = N = K")
    ap.add_argument("--budget", type=int, default=40)
    ap.add_argument("--seconds", type=float, default=None)
    ap.add_argument("--choices", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--hand", default=None, help="hand-written programs to time (default: "
                    "mm_nvidia on a GPU, mm_nvidia,mm_amd,mm_tiled on a CPU)")
    ap.add_argument("--out", default="results/issue10/mm")
    ap.add_argument("--time-only", action="store_true",
                    help="no search: time the best derivation the database under --out holds")
    args = ap.parse_args()
    args.rules = args.rules or ("cpu" if args.device == "cpu" else "gpu")
    args.hand = args.hand or ("mm_nvidia" if args.device == "gpu" else ",".join(HAND))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sizes = {"M": args.size, "N": args.size, "K": args.size}
    if args.time_only:
        info = json.loads((out / "search.json").read_text())
        info = {k: v for k, v in info.items() if " ms" not in k and "rel_error" not in k}
    else:
        info = search(sizes, args, out)
    print(json.dumps({k: v for k, v in info.items() if k != "candidates_list"}, default=str), flush=True)
    row = info | time_all(sizes, args, out)
    if args.device == "gpu":
        row |= cublas_ms(sizes, args)
    name = "timing.json" if args.time_only else "search.json"
    (out / name).write_text(json.dumps(row, indent=2, default=str) + "\n")
    labels = ["derived"] + args.hand.split(",") + (["cuBLAS"] if "cuBLAS ms" in row else [])
    print(f"\nmm {args.size}³ on {row['device']}: {info['candidates']} candidates, "
          f"{info['valid_share']:.0%} valid, best at candidate {info['best_candidate']} "
          f"after {info['seconds_to_best'] or 0:.1f} s of {info['search_seconds']:.1f} s")
    for label in labels:
        ms = row.get(f"{label} ms")
        if ms is not None:
            ratio = ms / row["derived ms"] if "derived ms" in row else float("nan")
            print(f"  {label:<10} {ms:9.4f} ms   ({ratio:.2f}× the derived kernel's time)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
