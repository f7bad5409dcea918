"""CGEMM (complex64) through liftkit.blas beside cuBLAS (CuPy) per call, on the complex FFMA
tiles (`ctiles-async`) and on the shipped `real` plan, NN/NT/TN at 1024, 4096, 8192.

Every candidate's product is checked first against a complex128 product on the GPU (output
poisoned with NaN; tolerance 10× cuBLAS's own error or 1e-3), then screened (one batch of calls)
and the fastest `--top` ctiles derivations plus the `real` plan timed in alternating rounds:
a batch of cuBLAS calls, then a batch of liftkit calls, `rounds` times; each side's median,
ratio = cuBLAS time / liftkit time. Complex flops 8mnk. NT and TN screen only the NN screen's
fastest (`--others`) at the same size. At 1024 the real plan is also timed packed once (its
embedding copies out of the call) and the best ctiles and real rows' device work alone.

    python results/issue15/cgemm24/bench_cgemm.py --jsonl rows.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any, Callable

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "benchmarks"))
from blas_cuda import _err, _kernel_and_host, _rand_gpu  # noqa: E402

LAYOUTS = {"NN": (False, False), "NT": (False, True), "TN": (True, False)}


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


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="1024,4096,8192")
    p.add_argument("--layouts", default="NN,NT,TN")
    p.add_argument("--top", type=int, default=3)
    p.add_argument("--others", type=int, default=4)
    p.add_argument("--cand", action="append", default=[], metavar="LAYOUT=VARIANT",
                   help="screen these derivations for LAYOUT (beside the real plan) instead of "
                        "the space's (NN) or the NN screen's fastest (NT, TN)")
    p.add_argument("--jsonl", default=None)
    args = p.parse_args(argv)

    import cupy as cp

    from liftkit.blas import Session
    from liftkit.blas.codelets import Kind, Variant, lookup_variant, space

    s = Session("gpu")
    print(f"liftkit.blas on {s.device.label} ({s.backend}), profile: "
          f"{'yes' if s.profile else 'none'}", flush=True)
    choose = s.choose
    forced: dict[Kind, Variant] = {}
    s.choose = lambda kind, sizes: forced.get(kind) or choose(kind, sizes)  # type: ignore
    ctiles = [v for v in space(Kind("mm", "complex64", "NN"), "gpu", "cuda")
              if v.codelet == "ctiles-async"]
    busy = cp.ones((6144, 6144), cp.float32)
    out = open(args.jsonl, "a") if args.jsonl else None
    table: list[str] = []

    def emit(r: dict[str, Any]) -> None:
        if out:
            out.write(json.dumps(r) + "\n")
            out.flush()

    for n in map(int, args.sizes.split(",")):
        repeat = 20 if n <= 1024 else 5 if n <= 4096 else 3
        rounds = 5 if n <= 4096 else 3
        flops = 8.0 * n ** 3
        screen_nn: list[tuple[float, Variant]] = []
        for lay in args.layouts.split(","):
            ta, tb = LAYOUTS[lay]
            dt = np.dtype("complex64")
            A = _rand_gpu(cp, (n, n), dt)
            B = _rand_gpu(cp, (n, n), dt)
            C = cp.full((n, n), np.nan, dt)
            opA, opB = (A.T if ta else A), (B.T if tb else B)
            want = opA.astype(cp.complex128) @ opB.astype(cp.complex128)
            ref = lambda: cp.matmul(opA, opB, out=C)  # noqa: E731
            ref()
            e_ref = _err(cp, C, want)
            kind = Kind("mm", "complex64", lay)
            given = [lookup_variant(kind, t.split("=", 1)[1]) for t in args.cand
                     if t.split("=", 1)[0] == lay]
            cands = [Variant.of("real")] + (
                given if given else ctiles if lay == "NN"
                else [v for _, v in sorted(screen_nn, key=lambda x: x[0])[:args.others]])
            ok: list[tuple[float, Variant]] = []
            for v in cands:
                forced[kind] = v
                s.forget_choices()
                C.fill(np.nan)
                try:
                    t0 = time.perf_counter()
                    s.gemm(A, B, C, trans_a=ta, trans_b=tb).result()
                    build = time.perf_counter() - t0
                except Exception as err:  # noqa: BLE001 - report and go on
                    print(f"{lay} {n} {v}: {type(err).__name__}: {str(err)[:300]}", flush=True)
                    continue
                e = _err(cp, C, want)
                if not e <= max(1e-3, 10 * e_ref):
                    print(f"{lay} {n} {v}: WRONG rel error {e:.1e} (cuBLAS {e_ref:.1e})",
                          flush=True)
                    emit({"n": n, "layout": lay, "variant": v.to_json(), "wrong": e})
                    continue
                call = lambda: s.gemm(A, B, C, trans_a=ta, trans_b=tb)  # noqa: E731
                call()
                t = _batch(cp, call, repeat)
                print(f"  screen {lay} {n} {str(v):60s} {flops / t / 1e9:9.0f} GFLOP/s  err "
                      f"{e:.1e} (cuBLAS {e_ref:.1e})  build {build:.1f}s", flush=True)
                emit({"n": n, "layout": lay, "variant": v.to_json(), "screen_s": t, "err": e,
                      "err_cublas": e_ref, "build_s": build})
                ok.append((t, v))
            del want
            if lay == "NN":
                screen_nn = [(t, v) for t, v in ok if v.codelet != "real"]
            best = [v for _, v in sorted(((t, v) for t, v in ok if v.codelet != "real"),
                                          key=lambda x: x[0])[:args.top]]
            timed = [v for _, v in ok if v.codelet == "real"] + best
            for v in timed:
                forced[kind] = v
                s.forget_choices()
                call = lambda: s.gemm(A, B, C, trans_a=ta, trans_b=tb)  # noqa: E731
                call()
                lk, cb = [], []
                for _ in range(rounds):  # alternating: cuBLAS, then liftkit
                    cb.append(_batch(cp, ref, repeat))
                    lk.append(_batch(cp, call, repeat))
                t_lk, t_cb = statistics.median(lk), statistics.median(cb)
                r: dict[str, Any] = {
                    "n": n, "layout": lay, "variant": v.to_json(), "liftkit_s": t_lk,
                    "cublas_s": t_cb, "liftkit": flops / t_lk / 1e9, "cublas": flops / t_cb / 1e9,
                    "ratio": t_cb / t_lk, "rounds": rounds, "calls": repeat,
                    "round_ratios": [c / x for c, x in zip(cb, lk)]}
                if n <= 1024 and (v.codelet == "real" or v == best[0]):
                    t_k, t_h = _kernel_and_host(cp, s, call, repeat, busy)
                    r.update(device=flops / t_k / 1e9, host_us=t_h * 1e6)
                    if v.codelet == "real":
                        plan = s.plan_gemm(A.shape, B.shape, dt, trans_a=ta, trans_b=tb)
                        ws = s.scratch
                        pa, pb = plan.pack("A", A, ws), plan.pack("B", B, ws)
                        run = lambda: plan.run(pa, pb, C, workspace=ws)  # noqa: E731
                        run()
                        r["packed"] = flops / statistics.median(
                            _batch(cp, run, repeat) for _ in range(rounds)) / 1e9
                line = (f"| {lay} | {n} | {v} | {r['liftkit']:,.0f} | {r['cublas']:,.0f} | "
                        f"**{r['ratio']:.3f}** | {min(r['round_ratios']):.3f}–"
                        f"{max(r['round_ratios']):.3f} | "
                        + (f"{r['device']:,.0f}" if "device" in r else "") + " | "
                        + (f"{r['packed']:,.0f}" if "packed" in r else "") + " |")
                print(line, flush=True)
                table.append(line)
                emit(r)
            forced.pop(kind, None)
            s.forget_choices()
            del A, B, C
            cp.get_default_memory_pool().free_all_blocks()
    print("\n| layout | n | derivation | liftkit GFLOP/s | cuBLAS GFLOP/s | ratio per call | "
          "rounds' ratios | device GFLOP/s | packed once |\n|---|---|---|---|---|---|---|---|---|")
    print("\n".join(table))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
