"""TF32 GEMM on Hopper's warpgroup MMA fed by TMA (`mm-wgmma-tma`, reduceWgmmaTmaTF32Z) beside
cuBLAS with TF32 allowed, in one run: every tiling the rule offers is checked first, then the
ones that pass are timed at 4096³ (issue 12, TF32 bullet; results/issue12/tma/README.md).

    python benchmarks/cuda_wgmma_tma.py [--size 4096] [--repeat 30] [--only 256x128x32w8s4g8,...]
        [--groups 0,8,4,16] [--copies tma,tma-pair] [--rounds 7] [--best 3]

Checks, per tiling and launch order (each a derivation `tensor_core_mm("tf32z", tm, tn, tk,
warps, stages, wgmma=True, copy="tma", group=g)` from the high-level product of truncated
operands; g > 0: the blocks started g row tiles at a time):
- integer-valued inputs in [-8, 8], exact (C == A·B bit for bit), at shapes with 1, s, s+1 and
  2s+3 k-tiles (s the stages: every pipeline wrap and parity flip) and 2-3 tiles along M and N
  (every consumer warpgroup and B block of a work-group, several work-groups; grouped: one and
  two groups of g row tiles);
- B = I: C is A truncated to TF32 bit for bit; A = I: C is B truncated;
- normal floats at 4096³: ‖C − ref‖/‖ref‖ < 2e-3 against float64 NumPy-on-GPU (the stated TF32
  tolerance), and < 1e-5 against the float64 product of the truncated operands (the pattern's
  meaning: truncation).
Timing: CUDA events around 10 back-to-back launches, median over `repeat` batches; cuBLAS TF32
through PyTorch (`torch.backends.cuda.matmul.allow_tf32 = True`) and through CuPy with
CUPY_TF32=1, each checked to be TF32 by its error (≈ 3e-4, FP32 would be ≈ 1e-6), timed
before and after the kernels (the spread), after a warm-up of the GPU (cuBLAS back to back for
`--warmup` seconds: clocks and temperature settle). Then the fair comparison: cuBLAS (both) and
the `--best` fastest variants in `--rounds` alternating rounds (each side one CUDA-event batch of
back-to-back launches per round, the order reversed every other round); per variant the median
over rounds of the per-round ratio cuBLAS ms / ours (each cuBLAS against itself measured in
the same round), so clock drift during the run cancels.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from typing import Any

os.environ.setdefault("CUPY_TF32", "1")  # read when CuPy's cuBLAS wrapper loads
warnings.filterwarnings("ignore", "ExternalStream is deprecated", DeprecationWarning)

import numpy as np  # noqa: E402

from liftkit.rewrite.rules.cuda_tma import WGMMA_TMA_GROUPS, WGMMA_TMA_STAGES, WGMMA_TMA_TILES  # noqa: E402

TOL, TOL_TRUNC = 2e-3, 1e-5
BATCH = 10


def offered(pair: bool = False) -> list[tuple[int, int, int, int, int]]:
    from liftkit.codegen.cuda_wgmma_tma import plan_error

    return [(tm, tn, tk, w, s) for tm, tn, tk, w in WGMMA_TMA_TILES for s in WGMMA_TMA_STAGES
            if plan_error(tm, tn, tk, w, s, pair=pair) is None]


def round_ratios(times: dict[str, list[float]], base: str) -> dict[str, dict[str, float]]:
    """Per version: its median ms over the rounds, and the median, min and max over rounds of
    base's ms / its ms in the same round."""
    out = {}
    for v, ts in times.items():
        r = [b / t for b, t in zip(times[base], ts)]
        out[v] = {"ms": float(np.median(ts)), "x": float(np.median(r)), "x_min": min(r), "x_max": max(r)}
    return out


def trunc(x: Any) -> Any:
    import cupy as cp

    return (x.view(cp.uint32) & cp.uint32(0xFFFFE000)).view(cp.float32)


def launcher(runner: Any, compiled: Any, A: Any, B: Any, C: Any) -> Any:
    """A function launching the kernel once on runner's stream (no sync), its arguments made as
    the runner makes them (tensor maps encoded by the host)."""
    from liftkit.backends.cuda import tensor_maps
    from liftkit.backends.cuda.runner import _driver
    from liftkit.backends.pipeline import Launch

    (k,) = compiled.kernels
    kernel = runner.get_kernel(k)
    M, K = A.shape
    N = B.shape[1]
    sizes = {"M": M, "N": N, "K": K}
    bufs = {"input:A": A.data.ptr, "input:B": B.data.ptr, "output": C.data.ptr}
    values: list[Any] = []
    for a in k.args:
        if a.kind == "buffer":
            values.append(bufs[a.buffer])
        elif a.kind == "size":
            values.append(np.int32(a.size.eval(sizes)))
        else:
            values.append(tensor_maps.encode(_driver(), a.tensor_map, bufs[a.buffer],
                                             int(a.tensor_map.row.eval(sizes)),
                                             int(a.tensor_map.elements.eval(sizes))))
    glob = tuple(int(g.eval(sizes)) for g in k.ndrange.global_size)
    block, grid = runner.geometry(Launch(k.name, glob, k.ndrange.local_size))
    shared = k.dynamic_shared
    return lambda: tensor_maps.launch(_driver(), kernel, grid, block, shared, runner.stream.handle, values)


def batched_ms(launch: Any, stream: Any, repeat: int, batch: int = BATCH) -> float:
    """Median milliseconds per launch: events around `batch` launches, `repeat` batches (batch
    1: each launch alone between its events, the stream idle before it)."""
    import cupy as cp

    launch()
    stream.sync()
    s = cp.cuda.ExternalStream(int(stream.handle))
    times = []
    for _ in range(repeat):
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record(s)
        for _ in range(batch):
            launch()
        e1.record(s)
        e1.synchronize()
        times.append(cp.cuda.get_elapsed_time(e0, e1) / batch)
    return float(np.median(times))


def check(runner: Any, compiled: Any, tiles: tuple[int, ...], rng: Any, pair: bool = False,
          group: int = 0) -> str:
    """'' when every exact check passes, else what failed (pair: an even number of row tiles;
    group: one and two groups of `group` row tiles)."""
    import cupy as cp

    tm, tn, tk, _, s = tiles
    bad = []
    shapes = (((2, 2), (4, 1), (2, 3)) if pair else ((group, 2), (2 * group, 3)) if group
              else ((2, 2), (3, 1), (1, 3)))
    for kts in sorted({1, s, s + 1, 2 * s + 3}):
        for mt, nt in shapes:
            m, n, k = mt * tm, nt * tn, kts * tk
            A = cp.asarray(rng.integers(-8, 9, (m, k)).astype(np.float32))
            B = cp.asarray(rng.integers(-8, 9, (k, n)).astype(np.float32))
            got = cp.asarray(runner.run(compiled, A, B))
            want = A @ B
            if not bool((got == want).all()):
                nb = int((got != want).sum())
                bad.append(f"int {m}x{n}x{k}: {nb} wrong")
    n = max(2 * max(tm, tn), group * tm)
    k = (s + 2) * tk
    X = cp.asarray(rng.standard_normal((n, k)).astype(np.float32))
    if not bool((cp.asarray(runner.run(compiled, X, cp.eye(k, n, dtype=cp.float32))) == trunc(X) @ cp.eye(k, n, dtype=cp.float32)).all()):
        bad.append("B = I")
    Y = cp.asarray(rng.standard_normal((k, n)).astype(np.float32))
    if not bool((cp.asarray(runner.run(compiled, cp.eye(n, k, dtype=cp.float32), Y)) == cp.eye(n, k, dtype=cp.float32) @ trunc(Y)).all()):
        bad.append("A = I")
    return "; ".join(bad)


def main() -> None:
    import cupy as cp
    import torch

    from liftkit.backends.cuda import CUDARunner, ModuleCache, list_devices
    from liftkit.codegen import CompileOptions, compile_program
    from liftkit.rewrite.rules.cuda import tensor_core_mm

    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--only", default="")
    ap.add_argument("--schedules", default="default",
                    help="consumer schedules: default (by stages), after, inflight")
    ap.add_argument("--copies", default="tma", help="rules: tma (mm-wgmma-tma), tma-pair")
    ap.add_argument("--groups", default=",".join(str(g) for g in WGMMA_TMA_GROUPS),
                    help="launch orders of mm-wgmma-tma: row tiles per group (0: the grid's own)")
    ap.add_argument("--rounds", type=int, default=7, help="alternating rounds (0: none)")
    ap.add_argument("--round-batch", type=int, default=20, help="launches per side and round")
    ap.add_argument("--best", type=int, default=3, help="variants in the rounds")
    ap.add_argument("--warmup", type=float, default=2.0, help="seconds of cuBLAS before timing")
    ap.add_argument("--json", default=os.path.join(os.environ.get("OUT", "."), "tma.json"))
    args = ap.parse_args()
    dev = list_devices()[0]
    runner = CUDARunner(dev, ModuleCache(disk=False))
    print(f"device: {dev.label}; torch {torch.__version__}, cupy {cp.__version__}", flush=True)
    rng = np.random.default_rng(12)
    n = args.size
    flops = 2.0 * n ** 3
    A = cp.asarray(rng.standard_normal((n, n)).astype(np.float32))
    B = cp.asarray(rng.standard_normal((n, n)).astype(np.float32))
    ref = A.astype(cp.float64) @ B.astype(cp.float64)
    ref_t = trunc(A).astype(cp.float64) @ trunc(B).astype(cp.float64)
    rn, rtn = float(cp.linalg.norm(ref)), float(cp.linalg.norm(ref_t))
    rel = lambda C, r=ref, nr=rn: float(cp.linalg.norm(cp.asarray(C).astype(cp.float64) - r)) / nr  # noqa: E731
    rows: list[dict[str, Any]] = []
    stream = runner.stream
    s_cp = cp.cuda.ExternalStream(int(stream.handle))

    ta, tb = torch.as_tensor(A, device="cuda"), torch.as_tensor(B, device="cuda")
    torch.backends.cuda.matmul.allow_tf32 = True
    tc, c_cp = torch.empty_like(ta), cp.empty_like(A)

    def torch_go() -> None:
        torch.matmul(ta, tb, out=tc)

    def cupy_go() -> None:
        with s_cp:
            cp.matmul(A, B, out=c_cp)

    def cublas(label: str) -> None:
        err = rel(cp.asarray(torch.matmul(ta, tb)))
        ts = []
        for _ in range(args.repeat):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            for _ in range(BATCH):
                torch.matmul(ta, tb, out=tc)
            e1.record()
            e1.synchronize()
            ts.append(e0.elapsed_time(e1) / BATCH)
        ms = float(np.median(ts))
        singles = []
        for _ in range(args.repeat):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            torch.matmul(ta, tb, out=tc)
            e1.record()
            e1.synchronize()
            singles.append(e0.elapsed_time(e1))
        rows.append({"version": f"cuBLAS TF32 (torch allow_tf32) {label}", "ms": ms, "tflops": flops / ms / 1e9,
                     "rel_err": err, "single_ms": float(np.median(singles))})
        C = cp.empty_like(A)
        with s_cp:
            err = rel(cp.matmul(A, B))
            ts = []
            for _ in range(args.repeat):
                e0, e1 = cp.cuda.Event(), cp.cuda.Event()
                e0.record(s_cp)
                for _ in range(BATCH):
                    cp.matmul(A, B, out=C)
                e1.record(s_cp)
                e1.synchronize()
                ts.append(cp.cuda.get_elapsed_time(e0, e1) / BATCH)
        ms = float(np.median(ts))
        rows.append({"version": f"cuBLAS (CuPy matmul, CUPY_TF32={os.environ.get('CUPY_TF32')}) {label}",
                     "ms": ms, "tflops": flops / ms / 1e9, "rel_err": err})
        print(rows[-2], rows[-1], flush=True)

    t0 = time.time()  # warm-up: clocks and temperature as under a sustained load
    while time.time() - t0 < args.warmup:
        for _ in range(20):
            torch_go()
        torch.cuda.synchronize()
    print(f"warm-up: {time.time() - t0:.1f} s of cuBLAS", flush=True)
    cublas("before")
    from liftkit.codegen import cuda_wgmma_tma as gen

    schedules = [None if x == "default" else gen.Schedule(x) for x in args.schedules.split(",")]
    want = set(args.only.split(",")) if args.only else None
    todo = []
    groups = [int(g) for g in args.groups.split(",")]
    for copy in args.copies.split(","):
        for sch in schedules:
            gen.SCHEDULE = sch  # what plan_error (the offered tilings) and the code generator use
            todo += [(copy, sch, t, g) for t in offered(copy == "tma-pair")
                     for g in (groups if copy == "tma" else [0])
                     if (not g or n // t[0] % g == 0)
                     and (want is None or "{}x{}x{}w{}s{}".format(*t) + (f"g{g}" if g else "") in want)]
    launches: dict[str, Any] = {}  # version -> its launcher (for the rounds)
    for copy, sch, t, g in todo:
        mode = (sch or gen.default_schedule(t[4])).mode
        label = f"wgmma {copy} Z " + "{}x{}x{} w{} s{}".format(*t) + f" {mode}" + (f" g{g}" if g else "")
        t0 = time.time()
        try:
            gen.SCHEDULE = sch  # the experiment's schedule (the module's default is the checked one)
            grp = {"group": g} if copy == "tma" else {}
            compiled = compile_program(tensor_core_mm("tf32z", *t, wgmma=True, copy=copy, **grp).final,
                                       CompileOptions(dialect="cuda"))
            wrong = check(runner, compiled, t, rng, copy == "tma-pair", g)
            if wrong:
                rows.append({"version": label, "ms": float("nan"), "error": "WRONG " + wrong})
                print(label, "WRONG", wrong, flush=True)
                continue
            C = cp.asarray(runner.run(compiled, A, B))
            err, err_t = rel(C), rel(C, ref_t, rtn)
            if not (err < TOL and err_t < TOL_TRUNC):
                rows.append({"version": label, "ms": float("nan"), "error": f"WRONG float: {err:.2e} / trunc {err_t:.2e}"})
                print(label, rows[-1]["error"], flush=True)
                continue
            C2 = cp.full_like(A, cp.nan)
            go = launcher(runner, compiled, A, B, C2)
            ms = batched_ms(go, stream, args.repeat)
            single = batched_ms(go, stream, args.repeat, 1)
            stream.sync()
            if not float(cp.linalg.norm(C2 - C)) == 0.0:
                raise RuntimeError("the batched launches gave another product than runner.run")
            _, info = runner.run_with_info(compiled, A, B, timing=True, repeat=args.repeat)
            rows.append({"version": label, "ms": ms, "tflops": flops / ms / 1e9, "rel_err": err,
                         "rel_err_trunc": err_t, "runner_ms": info.total_seconds * 1e3, "single_ms": single})
            if sch is None:  # the shipped schedule only in the rounds
                launches[label] = go
        except Exception as e:  # noqa: BLE001 - one tiling failing is a row
            rows.append({"version": label, "ms": float("nan"), "error": f"{type(e).__name__}: {e}"[:400]})
        print(rows[-1], f"({time.time() - t0:.1f} s)", flush=True)
    cublas("after")
    base = min(r["ms"] for r in rows if r["version"].startswith("cuBLAS TF32 (torch"))
    # the fair comparison: cuBLAS and the fastest variants in alternating rounds
    timed = sorted((r for r in rows if r["version"] in launches), key=lambda r: r["ms"])
    chosen = timed[:args.best]  # and the fastest in the grid's own order (the grouped orders' baseline)
    chosen += [r for r in timed if " g" not in r["version"]][:1] if not any(
        " g" not in r["version"] for r in chosen) else []
    sides = {"cuBLAS TF32 (torch)": torch_go, "cuBLAS (CuPy, CUPY_TF32=1)": cupy_go,
             **{r["version"]: launches[r["version"]] for r in chosen}}
    times: dict[str, list[float]] = {v: [] for v in sides}
    ev = lambda: torch.cuda.Event(enable_timing=True)  # noqa: E731 - on torch's current stream
    torch_stream = torch.cuda.current_stream()
    for rnd in range(args.rounds):
        order = list(sides) if rnd % 2 == 0 else list(reversed(sides))
        for v in order:
            go = sides[v]
            if v.startswith("cuBLAS TF32 (torch)"):
                stream.sync()
                e0, e1 = ev(), ev()
                e0.record()
                for _ in range(args.round_batch):
                    go()
                e1.record()
                e1.synchronize()
                times[v].append(e0.elapsed_time(e1) / args.round_batch)
            else:  # CuPy's matmul and ours on the runner's stream
                torch_stream.synchronize()
                e0, e1 = cp.cuda.Event(), cp.cuda.Event()
                e0.record(s_cp)
                for _ in range(args.round_batch):
                    go()
                e1.record(s_cp)
                e1.synchronize()
                times[v].append(cp.cuda.get_elapsed_time(e0, e1) / args.round_batch)
    rounds = round_ratios(times, "cuBLAS TF32 (torch)") if args.rounds else {}
    rounds_cp = round_ratios(times, "cuBLAS (CuPy, CUPY_TF32=1)") if args.rounds else {}
    with open(args.json, "w") as f:
        json.dump({"device": dev.label, "size": n, "rows": rows, "rounds": times,
                   "round_batch": args.round_batch}, f, indent=1)
    print(f"\n{n}³ on {dev.label}; × = cuBLAS TF32 (torch, best of before/after) ms / ms")
    print(f"{'version':72s} {'ms':>8s} {'TFLOP/s':>8s} {'×':>6s} {'rel err':>9s} {'alone ms':>9s}")
    for r in rows:
        if r.get("error"):
            print(f"{r['version']:72s} {r['error'][:150]}")
        else:
            print(f"{r['version']:72s} {r['ms']:8.3f} {r['tflops']:8.1f} {base / r['ms']:6.2f} {r['rel_err']:9.2e} "
                  f"{r.get('single_ms', float('nan')):9.3f}")
    if rounds:
        print(f"\nalternating rounds: {args.rounds} × (one CUDA-event batch of {args.round_batch} launches "
              "per side), the order reversed every other round; × = median over rounds of the "
              "per-round ratio cuBLAS ms / ms")
        print(f"{'version':56s} {'ms':>7s} {'× torch':>8s} {'(min-max)':>12s} {'× CuPy':>7s}")
        for v, r in rounds.items():
            print(f"{v:56s} {r['ms']:7.3f} {r['x']:8.3f} {r['x_min']:5.2f}-{r['x_max']:4.2f} "
                  f"{rounds_cp[v]['x']:7.3f}")
    if any(r.get("error") for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
