"""liftkit.blas GEMV and transpose variants on a CUDA GPU beside cuBLAS / the copy bandwidth, in
one run: every variant's result is checked first, then timed three ways, the reference in the
same run:

- `wall`: `repeat` library calls back to back between CUDA events, as a user sees them (the
  host path included wherever it is longer than the kernel), median of 5 batches;
- `kernel`: the same calls issued while the stream is held busy by a long CuPy product enqueued
  on it first, so the events around them time the kernels alone (no host gaps);
- `host`: microseconds of Python per call (perf_counter over the issuing loop).

Also: DGEMM NN (the default DMMA derivation) wall and kernel time beside cuBLAS, and a cProfile
of the host path of SGEMM 1024 and SGEMV N 8192 (`--profile FILE`).

    python benchmarks/blas_cuda_variants.py --sizes 8192,16384 --out variants.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import numpy as np

# the same CUDA-event timing (host path included) and kernel-only timing as blas_cuda.py
from blas_cuda import _kernel_and_host, _profile_calls, _time

GEMV = {"N": ["group-rows(L=64,w=4)", "row-groups(lanes=32,g=8,w=4)",
              "row-groups(lanes=32,g=4,w=4)", "row-groups(lanes=32,g=8,w=2)"],
        "T": ["column-groups(lanes=8,g=128,w=4)", "column-groups(lanes=8,g=64,w=4)",
              "column-groups(lanes=8,g=128,w=2)", "column-groups(lanes=16,g=32,w=2)",
              "column-groups(lanes=16,g=64,w=2)", "column-groups(lanes=32,g=32,w=1)"]}
# (run21b ran N: group-rows L=32/64 w=4, row-groups (32,8,4) (32,4,4) (32,16,4) (32,8,2);
# T: column-groups (32,32,1) (32,16,1) (32,8,2) (32,16,2) (16,32,2) (32,8,4))
TRANSPOSE = ["tiles-t(r=32,k=4)", "tiles-t(r=32,k=8)", "tiles-t(r=32,k=2)", "tiles-t(r=16,k=2)"]




def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="8192,16384")
    p.add_argument("--transpose", default="4096,8192")
    p.add_argument("--dtypes", default="float32,float64")
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--dgemm", default="4096")
    p.add_argument("--out", default=None)
    p.add_argument("--profile", default=None)
    p.add_argument("--gemv-n", default=";".join(GEMV["N"]), help="';'-separated variants")
    p.add_argument("--gemv-t", default=";".join(GEMV["T"]), help="';'-separated variants")
    p.add_argument("--transposes", default=";".join(TRANSPOSE), help="';'-separated variants")
    args = p.parse_args(argv)
    lists = {"N": [v for v in args.gemv_n.split(";") if v], "T": [v for v in args.gemv_t.split(";") if v],
             "transpose": [v for v in args.transposes.split(";") if v]}

    import cupy as cp

    from liftkit.blas import Session
    from liftkit.blas.codelets import Kind, lookup_variant

    s = Session("gpu", warn=False)
    print(f"liftkit.blas on {s.device.label} ({s.backend} backend)", flush=True)
    busy = cp.ones((6144, 6144), cp.float32)  # about 8 ms of SGEMM: hides the host path
    out = open(args.out, "w") if args.out else None
    cp.random.seed(0)

    def rand(shape: Any, dt: Any) -> Any:
        return (cp.random.random_sample(shape, dtype=cp.float64) * 2 - 1).astype(dt)

    chosen: dict[str, Any] = {}
    default_choose = s.choose
    s.choose = lambda kind, sizes: (  # type: ignore[method-assign]
        chosen.get(kind.op) or default_choose(kind, sizes))

    def emit(row: dict[str, Any]) -> None:
        print(f"{row['op']:9s} {row['dtype']:8s} {row['layout']:2s} {row['size']:>6} "
              f"{row['variant']:36s} wall {row['wall']:8.1f} kernel {row['kernel']:8.1f} "
              f"{row['ref_name']} {row['ref']:8.1f} {row['unit']}  "
              f"wall/ref {row['wall'] / row['ref']:5.2f}x "
              f"kernel/ref {row['kernel'] / row['ref']:5.2f}x  host {row['host_us']:6.1f} us",
              flush=True)
        if out:
            out.write(json.dumps(row) + "\n")
            out.flush()

    for dt_name in args.dtypes.split(","):
        dt = np.dtype(dt_name)
        for n in (int(v) for v in args.sizes.split(",") if v):
            A = rand((n, n), dt)
            x = rand((n,), dt)
            y = cp.full((n,), np.nan, dt)
            nbytes = (n * n + 2 * n) * dt.itemsize
            for lay, trans in (("N", False), ("T", True)):
                opA = A.T if trans else A
                want = opA.astype(cp.float64) @ x.astype(cp.float64)
                t_ref = _time(cp, lambda: cp.matmul(opA, x, out=y), args.repeat)
                for vtext in lists[lay]:
                    v = lookup_variant(Kind("gemv", dt_name, lay), vtext)
                    if dt_name == "float64" and v.kw.get("w") == 4 and v.codelet == "row-groups":
                        v = lookup_variant(Kind("gemv", dt_name, lay), vtext.replace("w=4", "w=2"))
                    chosen["gemv"] = v
                    s.calls.clear()  # a call plan keeps its kind's kernel: each variant its own
                    try:
                        y.fill(np.nan)
                        s.gemv(A, x, y, trans=trans).result()
                    except Exception as err:  # noqa: BLE001 - report and go on
                        print(f"gemv {dt_name} {lay} {n} {v}: {type(err).__name__}: {err}", flush=True)
                        continue
                    err = float(cp.max(cp.abs(y - want)) / cp.max(cp.abs(want)))
                    if not err < (1e-4 if dt == np.float32 else 1e-12):
                        print(f"gemv {dt_name} {lay} {n} {v}: WRONG (rel error {err:.1e})", flush=True)
                        continue
                    call = lambda: s.gemv(A, x, y, trans=trans)  # noqa: E731
                    t_wall = _time(cp, call, args.repeat)
                    t_k, t_h = _kernel_and_host(cp, s, call, args.repeat, busy)
                    emit({"op": "gemv", "dtype": dt_name, "layout": lay, "size": n, "variant": str(v),
                          "wall": nbytes / t_wall / 1e9, "kernel": nbytes / t_k / 1e9,
                          "ref": nbytes / t_ref / 1e9, "ref_name": "cuBLAS", "unit": "GB/s",
                          "host_us": t_h * 1e6, "rel_error": err})
            del A, x, y, want
            cp.get_default_memory_pool().free_all_blocks()
        for n in (int(v) for v in args.transpose.split(",") if v):
            A = rand((n, n), dt)
            T = cp.full((n, n), np.nan, dt)
            nbytes = 2.0 * n * n * dt.itemsize
            t_ref = _time(cp, lambda: cp.copyto(T, A), args.repeat)
            for vtext in lists["transpose"]:
                v = lookup_variant(Kind("transpose", dt_name), vtext)
                chosen["transpose"] = v
                s.calls.clear()
                try:
                    T.fill(np.nan)
                    s.transpose(A, T).result()
                except Exception as err:  # noqa: BLE001
                    print(f"transpose {dt_name} {n} {v}: {type(err).__name__}: {err}", flush=True)
                    continue
                if not bool(cp.array_equal(T, A.T)):
                    print(f"transpose {dt_name} {n} {v}: WRONG", flush=True)
                    continue
                call = lambda: s.transpose(A, T)  # noqa: E731
                t_wall = _time(cp, call, args.repeat)
                t_k, t_h = _kernel_and_host(cp, s, call, args.repeat, busy)
                emit({"op": "transpose", "dtype": dt_name, "layout": "-", "size": n,
                      "variant": str(v), "wall": nbytes / t_wall / 1e9, "kernel": nbytes / t_k / 1e9,
                      "ref": nbytes / t_ref / 1e9, "ref_name": "copy", "unit": "GB/s",
                      "host_us": t_h * 1e6, "rel_error": 0.0})
            del A, T
            cp.get_default_memory_pool().free_all_blocks()
    chosen.clear()
    try:
        if args.profile:
            import io

            report = io.StringIO()
            for what, n in (("gemm", 1024), ("gemv", 8192)):
                A = rand((n, n), np.float32)
                B = rand((n, n) if what == "gemm" else (n,), np.float32)
                C = cp.empty((n, n) if what == "gemm" else n, np.float32)
                call = (lambda: s.gemm(A, B, C)) if what == "gemm" else (lambda: s.gemv(A, B, C))
                call().result()
                t_wall = _time(cp, call, 20)
                t_k, t_h = _kernel_and_host(cp, s, call, 20, busy)
                print(f"host path {what} float32 {n}: wall {t_wall * 1e6:.1f} us, kernel "
                      f"{t_k * 1e6:.1f} us, host {t_h * 1e6:.1f} us per call", flush=True)
                if out:
                    out.write(json.dumps({"op": "host-path", "what": what, "size": n,
                                          "wall_us": t_wall * 1e6, "kernel_us": t_k * 1e6,
                                          "host_us": t_h * 1e6}) + "\n")
                _profile_calls(cp, call, f"{what} float32 {n}", report, 25)
            with open(args.profile, "w") as f:
                f.write(report.getvalue())
            print(report.getvalue()[:3000], flush=True)
        for n in (int(v) for v in args.dgemm.split(",") if v):
            for dt_name in ("float64", "float32"):
                A = rand((n, n), dt_name)
                B = rand((n, n), dt_name)
                C = cp.full((n, n), np.nan, dt_name)
                s.gemm(A, B, C).result()
                want = A.astype(cp.float64) @ B.astype(cp.float64)
                err = float(cp.max(cp.abs(C - want)) / cp.max(cp.abs(want)))
                flops = 2.0 * n ** 3
                call = lambda: s.gemm(A, B, C)  # noqa: E731
                t_ref = _time(cp, lambda: cp.matmul(A, B, out=C), 5)
                t_wall = _time(cp, call, 5)
                t_k, t_h = _kernel_and_host(cp, s, call, 5, busy)
                plan = s.plan_gemm(A.shape, B.shape, np.dtype(dt_name))
                emit({"op": "gemm", "dtype": dt_name, "layout": "NN", "size": n,
                      "variant": f"{plan.variant}", "wall": flops / t_wall / 1e9,
                      "kernel": flops / t_k / 1e9, "ref": flops / t_ref / 1e9, "ref_name": "cuBLAS",
                      "unit": "GFLOP/s", "host_us": t_h * 1e6, "rel_error": err})
                del A, B, C, want
    except Exception as err:  # noqa: BLE001 - the rows above stand
        print(f"profile/gemm: {type(err).__name__}: {err}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
