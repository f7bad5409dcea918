"""cgemm24b: CGEMM (complex64) through liftkit.blas beside cuBLAS (CuPy `matmul`) per call, the
profile's shipped choice and the ctiles-async forms the tuning space gained in session 24
(`mm_codelets.ctiles_split_space`): the tiles capped at 128 registers (NT/TN tiled as stored
need 143-156 uncapped, one block per SM; capped two), the 64×64 tiles capped at four blocks,
and at 1024 (128 tiles of 128×64 for 132 SMs, 256 of 64×64) the whole grid split in 2 along K.

Every candidate is checked first: its product (output poisoned with NaN) against cuBLAS's
complex64 product of the same operands (max |difference| / max |cuBLAS| ≤ 1e-4; both round
at about 1e-6). Then each is timed per call in alternating rounds, a batch of cuBLAS calls then
a batch of liftkit calls (between CUDA events), in two passes over the case's candidates
(forward, then backward, so drift meets every candidate alike); each side's median, ratio =
cuBLAS time / liftkit time, complex flops 8mnk. The kernels are compiled ahead in a pool
(`liftkit.blas.prebuild`) before anything is timed; the split forms (a spin-wait fix-up that
traps if a part never comes) run after all others, so a fault loses only their rows.

    python3 results/issue15/cgemm24b/bench.py --jsonl rows.jsonl
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any, Callable

import numpy as np

LAYOUTS = {"NN": (False, False), "NT": (False, True), "TN": (True, False)}
BIG = "tm=128,tn=64,tk=16,rm=8,rn=4"
SMALL = "tm=64,tn=64,tk=16,rm=4,rn=8,stages=2"
B2, B4 = "bound=2,slots=264", "bound=4,slots=528"
# (layout, n, candidates beside the shipped choice); at 1024 the shipped NN/NT/TN choices are
# ctiles-async 128×64 (NT kt rot, TN kt), at 4096 NT the real plan, TN ctiles-async kt
CASES: tuple[tuple[str, int, tuple[str, ...]], ...] = (
    ("NN", 1024, (f"{BIG},stages=2,split=2,{B2}", f"{SMALL},split=2,{B4}")),
    ("NT", 1024, (f"{BIG},stages=2,kt=1,rot=1,{B2}", f"{SMALL},kt=1,rot=1,{B4}",
                  f"{BIG},stages=2,kt=1,rot=1,split=2,{B2}", f"{SMALL},kt=1,rot=1,split=2,{B4}")),
    ("TN", 1024, (f"{BIG},stages=2,kt=1,{B2}", f"{BIG},stages=2,kt=1,split=2,{B2}")),
    ("NT", 4096, (f"{BIG},stages=2,kt=1,rot=1,{B2}", f"{BIG},stages=3,kt=1,rot=1,{B2}",
                  f"{SMALL},kt=1,rot=1,{B4}")),
    ("TN", 4096, (f"{BIG},stages=2,kt=1,{B2}",)),
)


def _batch(cp: Any, fn: Callable[[], Any], repeat: int) -> float:
    """Seconds per call of `repeat` calls back to back between CUDA events."""
    cp.cuda.Device().synchronize()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record(cp.cuda.get_current_stream())
    for _ in range(repeat):
        last = fn()
    if hasattr(last, "result"):
        last.result()
    end.record(cp.cuda.get_current_stream())
    end.synchronize()
    return cp.cuda.get_elapsed_time(start, end) * 1e-3 / repeat


def _rand(cp: Any, n: int) -> Any:
    x = cp.random.random_sample((n, n), dtype=cp.float32) * 2 - 1
    y = cp.random.random_sample((n, n), dtype=cp.float32) * 2 - 1
    return (x + 1j * y).astype(cp.complex64)


def _rel_err(cp: Any, got: Any, want: Any) -> float:
    """max |got − want| / max |want| (NaN where `got` kept its poison)."""
    return float(cp.abs(got - want).max()) / max(float(cp.abs(want).max()), 1e-30)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--jsonl", default=None)
    p.add_argument("--cases", default="", help="only these layout:n cases (e.g. NT:1024,NT:4096)")
    p.add_argument("--workers", type=int, default=12)
    args = p.parse_args(argv)
    t_start = time.perf_counter()

    import cupy as cp

    from liftkit.blas import Session
    from liftkit.blas.codelets import Kind, Variant, lookup_variant
    from liftkit.blas.prebuild import for_session

    s = Session("gpu")
    card = s.device.label
    profiled = s.profile is not None  # (without one the "shipped" choice is the default)
    print(f"liftkit.blas on {card} ({s.backend}), profile: "
          f"{'yes' if s.profile else 'none'}", flush=True)
    choose = s.choose
    forced: dict[Any, Variant] = {}
    s.choose = lambda kind, sizes: forced.get(kind) or choose(kind, sizes)  # type: ignore
    out = open(args.jsonl, "a") if args.jsonl else None

    def emit(r: dict[str, Any]) -> None:
        print("  " + json.dumps(r), flush=True)
        if out:
            out.write(json.dumps({**r, "card": card, "profiled": profiled}) + "\n")
            out.flush()

    wanted = set(args.cases.split(",")) - {""}
    cases = []
    for lay, n, cands in CASES:
        if wanted and f"{lay}:{n}" not in wanted:
            continue
        kind = Kind("mm", "complex64", lay)
        sizes = {"M": n, "N": n, "K": n}
        shipped = choose(kind, sizes)
        vs = [shipped] + [v for v in (lookup_variant(kind, f"ctiles-async({c})") for c in cands)
                          if v != shipped]
        cases.append((lay, n, kind, shipped, vs))
    jobs = [(kind, v) for _, _, kind, _, vs in cases for v in vs if v.codelet == "ctiles-async"]
    print(f"{len(jobs)} kernels compiled ahead ({args.workers} workers)", flush=True)
    rows: list[dict[str, Any]] = []
    with for_session(s, jobs, args.workers) as pre:
        for phase in (0, 1):  # the split forms last, beside the shipped choice again
            for lay, n, kind, shipped, vs in cases:
                mine = [v for v in vs if bool(v.kw.get("split")) == bool(phase)]
                if phase and mine:
                    mine = [shipped] + mine
                if mine:
                    rows += _case(cp, s, pre, forced, lay, n, kind, shipped, mine, emit, phase)
    print(f"\ncgemm24b on {card}, per call, alternating rounds (ratio = cuBLAS time / liftkit "
          f"time; Δ: against the shipped choice in the same case)\n")
    print("| layout | n | derivation | liftkit TFLOP/s | cuBLAS TFLOP/s | ratio | rounds | Δ |")
    print("|---|---|---|---|---|---|---|---|")
    base = {(r["layout"], r["n"], r["phase"]): r["ratio"] for r in rows
            if r.get("shipped") and "ratio" in r}
    for r in rows:
        if "ratio" not in r:
            continue
        b = base.get((r["layout"], r["n"], r["phase"]))
        d = "shipped" if r.get("shipped") else f"{r['ratio'] - b:+.3f}" if b else ""
        print(f"| {r['layout']} | {r['n']} | {Variant.from_json(r['variant'])} | "
              f"{r['liftkit'] / 1e3:.1f} | {r['cublas'] / 1e3:.1f} | **{r['ratio']:.3f}** | "
              f"{min(r['round_ratios']):.3f}–{max(r['round_ratios']):.3f} | {d} |")
    print(f"\nwall {time.perf_counter() - t_start:.1f} s")
    return 0


def _case(cp: Any, s: Any, pre: Any, forced: dict[Any, Any], lay: str, n: int, kind: Any,
          shipped: Any, vs: list[Any], emit: Callable[[dict[str, Any]], None], phase: int
          ) -> list[dict[str, Any]]:
    """Check, then time `vs` for one layout and size: two passes of alternating rounds (rows
    of `phase` 1: the split forms and the shipped choice timed again beside them)."""
    ta, tb = LAYOUTS[lay]
    repeat, rounds = (50, 6) if n <= 1024 else (5, 4)
    flops = 8.0 * n ** 3
    A, B = _rand(cp, n), _rand(cp, n)
    C = cp.full((n, n), np.nan, cp.complex64)
    opA, opB = (A.T if ta else A), (B.T if tb else B)
    ref_out = cp.empty_like(C)
    ref = lambda: cp.matmul(opA, opB, out=ref_out)  # noqa: E731
    ref()
    want = ref_out.copy()
    ok = []
    rows = []
    for v in vs:
        forced[kind] = v
        s.forget_choices()
        base = {"n": n, "layout": lay, "variant": v.to_json(), "shipped": v == shipped,
                "phase": phase}
        try:
            pre.ready(kind, v)
            t0 = time.perf_counter()
            C.fill(np.nan)
            s.gemm(A, B, C, trans_a=ta, trans_b=tb).result()
            build = time.perf_counter() - t0
        except Exception as err:  # noqa: BLE001 - report and go on
            emit({**base, "error": f"{type(err).__name__}: {str(err)[:300]}"})
            continue
        err = _rel_err(cp, C, want)
        if not err <= 1e-4:
            emit({**base, "wrong": err})
            continue
        ok.append((v, base, err, build))
    got: dict[Any, tuple[list[float], list[float]]] = {v: ([], []) for v, *_ in ok}
    for order in (ok, ok[::-1]):  # forward, then backward
        for v, *_ in order:
            forced[kind] = v
            s.forget_choices()
            call = lambda: s.gemm(A, B, C, trans_a=ta, trans_b=tb)  # noqa: E731
            call().result()
            cb, lk = got[v]
            for _ in range(rounds):  # alternating: cuBLAS, then liftkit
                cb.append(_batch(cp, ref, repeat))
                lk.append(_batch(cp, call, repeat))
    for v, base, err, build in ok:
        cb, lk = got[v]
        t_lk, t_cb = statistics.median(lk), statistics.median(cb)
        r = {**base, "liftkit_s": t_lk, "cublas_s": t_cb, "liftkit": flops / t_lk / 1e9,
             "cublas": flops / t_cb / 1e9, "ratio": t_cb / t_lk, "rounds": len(lk),
             "calls": repeat, "round_ratios": [c / x for c, x in zip(cb, lk)], "err": err,
             "build_s": build}
        emit(r)
        rows.append(r)
    forced.pop(kind, None)
    s.forget_choices()
    del A, B, C, ref_out, want
    cp.get_default_memory_pool().free_all_blocks()
    return rows


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
