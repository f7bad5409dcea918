"""The host path of one liftkit.blas call on CUDA beside CuPy's own call, session 24 (H4):
GEMV float32 N and T at 4096², DGEMM NN 1024, device arrays (CuPy) in and out. Runs on
whichever liftkit is on the path (the commit before the host change, or after it); where the
queue has `use_plan_calls` (after), also its modes: `new` (blocking stream, ctypes plan
calls), `ctypes` (independent stream: an event and a wait per call, ctypes), `bindings`
(independent stream, cuda.bindings events: the driver path of before); launches are
cuda.core's in every mode (run 1 of gemv24 also had them through ctypes, on arguments packed
once per plan: 7.6 µs a launch against cuda.core's 6.1 µs, so they went).

    python results/issue15/gemv24/host24.py --label after --out DIR    # on the GPU machine

Per case and mode, in alternating rounds with CuPy: the result checked first (float64 product;
NaN fails), then
- host: µs of Python per call issuing `repeat` calls while the stream they go on is held by a
  long product (no queue fills, nothing waits), median of 5;
- call: `repeat` calls back to back between CUDA events on CuPy's stream, median of 5 batches.
Then, after: the driver pieces (ctypes record on the legacy stream, wait, cuda.core's launch of
a planned kernel), µs per call over 2000 calls in batches of 100.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
from blas_cuda import _time, cupy_stream  # noqa: E402


def host_us(cp: Any, fn: Callable[[], Any], busy: Any, stream: Any, repeat: int) -> float:
    """Median µs per call of issuing `repeat` calls while `stream` runs a long product."""
    out = []
    for _ in range(5):
        cp.cuda.Device().synchronize()
        with stream:
            cp.matmul(busy, busy)
        t0 = time.perf_counter()
        for _ in range(repeat):
            fn()
        out.append((time.perf_counter() - t0) / repeat * 1e6)
        cp.cuda.Device().synchronize()
    return statistics.median(out)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--label", default="?")
    p.add_argument("--repeat", type=int, default=30)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", default=".")
    args = p.parse_args(argv)
    out = open(Path(args.out) / "host.jsonl", "a")

    import cupy as cp

    import liftkit
    import liftkit.blas as lb
    import liftkit.blas.session as S
    from liftkit.blas.queues import CUDAQueue

    modes: dict[str, Any] = {}
    if hasattr(CUDAQueue, "use_plan_calls"):
        s = lb.default_session("cuda")  # what lb.gemv(cupy arrays) runs on
        modes["new"] = s
        S.CUDAQueue = functools.partial(CUDAQueue, blocking=False)  # type: ignore[misc]
        modes["ctypes"] = lb.Session("gpu", warn=False)
        modes["bindings"] = lb.Session("gpu", warn=False)
        modes["bindings"].q.use_plan_calls(False)
        S.CUDAQueue = CUDAQueue  # type: ignore[misc]
    else:
        modes["before"] = lb.default_session("cuda")
    print(f"[{args.label}] liftkit from {liftkit.__file__}; modes {list(modes)}", flush=True)
    busy = cp.ones((4096, 4096), cp.float32)
    null = cp.cuda.Stream.null
    cp.random.seed(24)

    def rand(shape: Any, dt: Any) -> Any:
        return (cp.random.random_sample(shape, dtype=cp.float64) * 2 - 1).astype(dt)

    A32, x32, y32 = rand((4096, 4096), np.float32), rand(4096, np.float32), cp.empty(4096, np.float32)
    A64, B64, C64 = rand((1024, 1024), np.float64), rand((1024, 1024), np.float64), cp.empty((1024, 1024))
    cases = {
        "gemv float32 N 4096": (lambda s: s.gemv(A32, x32, y32), lambda: cp.matmul(A32, x32, out=y32),
                                lambda: A32.astype(cp.float64) @ x32.astype(cp.float64), y32, 1e-4),
        "gemv float32 T 4096": (lambda s: s.gemv(A32, x32, y32, trans=True),
                                lambda: cp.matmul(A32.T, x32, out=y32),
                                lambda: A32.T.astype(cp.float64) @ x32.astype(cp.float64), y32, 1e-4),
        "gemm float64 NN 1024": (lambda s: s.gemm(A64, B64, C64), lambda: cp.matmul(A64, B64, out=C64),
                                 lambda: A64 @ B64, C64, 1e-12),
    }
    for case, (lk, ref, want_f, res, tol) in cases.items():
        want = want_f()
        scale = float(cp.max(cp.abs(want)))
        got: dict[str, list[float]] = {}
        for name, s in modes.items():
            res.fill(np.nan)
            lk(s).result()
            res.fill(np.nan)
            lk(s).result()  # the planned path
            err = float(cp.max(cp.abs(res - want))) / scale
            assert err < tol, f"{case} {name}: rel error {err}"
            print(f"[{args.label}] {case} {name}: rel error {err:.1e}", flush=True)
        for _ in range(args.rounds):
            for name, s in [("cupy", None)] + list(modes.items()):
                if s is None:
                    fn, stream = ref, null
                else:
                    fn, stream = functools.partial(lk, s), cupy_stream(cp, s.q.stream)
                got.setdefault(f"{name}_host", []).append(host_us(cp, fn, busy, stream, args.repeat))
                got.setdefault(f"{name}_call", []).append(_time(cp, fn, args.repeat) * 1e6)
        med = {k: statistics.median(v) for k, v in got.items()}
        out.write(json.dumps({"label": args.label, "case": case, **got,
                              **{f"median_{k}": v for k, v in med.items()}}) + "\n")
        out.flush()
        line = " | ".join(f"{name} host {med[name + '_host']:5.1f} call {med[name + '_call']:6.1f}"
                          for name in ["cupy"] + list(modes))
        print(f"[{args.label}] {case:22s} us: {line}", flush=True)

    if "new" in modes:
        pieces(cp, modes["new"], out)
    return 0


def pieces(cp: Any, s: Any, out: Any) -> None:
    """Driver pieces on this host (ctypes through PlanCalls; cuda.core's launch)."""
    q = s.q
    d = q.direct
    A, x, y = cp.ones((256, 256), cp.float32), cp.ones(256, cp.float32), cp.empty(256, cp.float32)
    s.calls.clear()
    s.gemv(A, x, y).result()
    s.gemv(A, x, y).result()
    plan = next(v for v in s.calls._plans.values() if v)[0]
    ln = next(st for st in plan.launches if st.step == "launch")
    values = [int(A.data.ptr), int(x.data.ptr), int(y.data.ptr), np.float32(1), np.float32(0)] + \
        ([s.zeros(plan.zeros)[0].ptr] if plan.zeros else [])
    args = list(ln.args)
    for pos, slot in ln.slots:
        args[pos] = values[slot]
    ev = q._order_int
    sint = q._stream_int

    def t(fn: Callable[[], Any]) -> float:
        res = []
        for _ in range(20):
            t0 = time.perf_counter()
            for _ in range(100):
                fn()
            res.append((time.perf_counter() - t0) / 100 * 1e6)
            cp.cuda.Device().synchronize()
        return statistics.median(res)

    got = {
        "ctypes cuEventRecord, legacy stream": t(lambda: d.record(ev, 0)),
        "ctypes cuEventRecord, our stream": t(lambda: d.record(ev, sint)),
        "ctypes cuStreamWaitEvent": t(lambda: d.wait(sint, ev, 0)),
        "cuda.core launch (gemv 256)": t(lambda: q._core.launch(q.stream, ln.config, ln.handle, *args)),
        "launch_all": t(lambda: q.launch_all(plan.launches, values)),
        "call_event (ctypes)": t(q.call_event),
        "planned gemv 256, whole call": t(lambda: s.gemv(A, x, y)),
        "cupy matmul gemv 256, whole call": t(lambda: cp.matmul(A, x, out=y)),
    }
    out.write(json.dumps({"what": "pieces", "us": got}) + "\n")
    for k, v in got.items():
        print(f"   {k:40s} {v:6.2f} us", flush=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
