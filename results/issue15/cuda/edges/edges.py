"""Odd-size GEMMs on a CUDA GPU: liftkit.blas padded (the operands copied into padded buffers,
as before) against guarded (the tiled derivation's guarded form, `mm-edge-tiles-async`: no
copies), beside cuBLAS (CuPy) in the same run.

    python results/issue15/cuda/edges/edges.py [--dry] [--sizes 1000x1000x1000,...] [--log F]

Per dtype and size: each mode's call is checked first against a float64/complex128 NumPy
product (a sample of rows, the last 40 included — the ragged edge — over every column), then
timed per call (`repeat` calls back to back between CUDA events, median of 5 batches; each
side's host path included), and its device span (an event before and after one call). Padded
is the library with the guarded forms switched off (`liftkit.blas.gemm.edge_forms` answering
none, plans made afresh); a dtype/size whose chosen kernel has no guarded form (DMMA for
float64/complex128, N or K not multiples of 4) runs padded in both modes and is timed once.

--dry (no GPU): derives and NVRTC-compiles (sm_90a) every kernel a GPU run would build for
these cases, with the shipped H100 profile's choices, and prints them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Iterator

import numpy as np

SIZES = "1000x1000x1000,4097x4095x4095,1023x1025x999"
DTYPES = ("float32", "float64", "complex64", "complex128")
H100_PROFILE = "profile-397cb6df054d2a73.json"


MODES = ("padded", "guarded", "guarded-all")


@contextlib.contextmanager
def mode(name: str) -> Iterator[None]:
    """padded: the library as it was before guarded forms (every off-tile size padded);
    guarded: as it is; guarded-all: guarded forms at every volume, also those that lack the
    padded kernel's speed-ups (DMMA lines, m16n8k8; `gemm.EDGE_LOSSY_VOLUME`)."""
    import importlib

    g = importlib.import_module("liftkit.blas.gemm")  # (liftkit.blas.gemm is also a function)
    keep = g.edge_forms, g.EDGE_LOSSY_VOLUME
    if name == "padded":
        g.edge_forms = lambda v: []  # type: ignore[assignment]
    elif name == "guarded-all":
        g.EDGE_LOSSY_VOLUME = float("inf")
    try:
        yield
    finally:
        g.edge_forms, g.EDGE_LOSSY_VOLUME = keep  # type: ignore[assignment]


def _sizes(text: str) -> list[tuple[int, int, int]]:
    return [tuple(int(x) for x in s.split("x")) for s in text.split(",") if s]  # type: ignore[misc]


class DrySession:
    """What plan_gemm asks of a session, without a device: the H100 profile's choice, kernels
    derived and compiled by NVRTC for sm_90a."""

    def __init__(self) -> None:
        from liftkit.blas.profile import Profile

        here = Path(__file__).resolve().parents[4] / "src/liftkit/blas/profiles" / H100_PROFILE
        self.profile = Profile.load(here)
        self.built: dict[Any, Any] = {}

    def choose(self, kind: Any, sizes: dict[str, int]) -> Any:
        from liftkit.blas.codelets import default_variant, multiples
        from liftkit.blas.session import _tuned_kinds

        for k in _tuned_kinds(kind):
            v = self.profile.choose(k, sizes, multiples)
            if v is not None:
                return v
        return default_variant(kind, "gpu", sizes, "cuda")

    def kernel(self, kind: Any, sizes: dict[str, int], variant: Any = None) -> Any:
        from liftkit.backends.cuda import compile_cuda
        from liftkit.blas.codelets import derive, multiples
        from liftkit.codegen.compiler import compile_program
        from liftkit.codegen.kernel import CompileOptions

        v = variant or self.choose(kind, sizes)
        if (kind, v) not in self.built:
            t0 = time.perf_counter()
            c = compile_program(derive(kind, v).final, CompileOptions(dialect="cuda"))
            for i, k in enumerate(c.kernels):
                compile_cuda(k.source, "sm_90a", name=f"{kind.op}-{i}.cu")
            print(f"  built {kind} {v} ({len(c.kernels)} kernel(s), "
                  f"{time.perf_counter() - t0:.1f} s)", flush=True)
            self.built[kind, v] = SimpleNamespace(kind=kind, variant=v,
                                                  multiples=multiples(kind, v))
        return self.built[kind, v]


def dry(sizes: list[tuple[int, int, int]]) -> int:
    from liftkit.blas.codelets import Kind
    from liftkit.blas.gemm import REAL_OF, mm_kernel

    s = DrySession()
    t0 = time.perf_counter()
    for m, n, k in sizes:  # size by size: a run cut short has every dtype of the first sizes
        for dt in DTYPES:
            for how in MODES:
                with mode(how):
                    if dt.startswith("complex"):
                        want = {"M": m, "N": 2 * n, "K": 2 * k}
                        b = mm_kernel(s, Kind("mm", REAL_OF[dt], "NN"), want)
                        s.kernel(Kind("cembed", dt, "N"), {"K": k, "N": n})
                    else:
                        b = mm_kernel(s, Kind("mm", dt, "NN"), {"M": m, "N": n, "K": k})
                print(f"{dt:10s} {m}x{n}x{k:<6d} {how:11s} -> {b.variant} "
                      f"(multiples {b.multiples})", flush=True)
    print(f"dry: {len(s.built)} kernels derived and NVRTC-compiled in "
          f"{time.perf_counter() - t0:.1f} s")
    return 0


def _check(cp: Any, A: Any, B: Any, C: Any, dt: str) -> float:
    """Max relative error of C over sampled rows (first 8, last 40, 16 random) against a
    float64/complex128 NumPy product of those rows."""
    m = A.shape[0]
    rows = sorted(set(range(min(8, m))) | set(range(max(0, m - 40), m))
                  | set(np.random.default_rng(1).integers(0, m, 16).tolist()))
    wide = np.complex128 if dt.startswith("complex") else np.float64
    a = cp.asnumpy(A[rows]).astype(wide)
    want = a @ cp.asnumpy(B).astype(wide)
    got = cp.asnumpy(C[rows]).astype(wide)
    return float(np.max(np.abs(got - want)) / max(float(np.max(np.abs(want))), 1e-30))


def gpu(sizes: list[tuple[int, int, int]], repeat: int, log: Any) -> int:
    import cupy as cp

    sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "benchmarks"))
    import blas_cuda as bc  # the suite's timing helpers (CUDA events, device spans)

    from liftkit.blas import Session
    from liftkit.blas.gemm import plan_gemm

    s = Session("gpu")
    card = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()

    def out(line: str) -> None:
        print(line, flush=True)
        log.write(line + "\n")
        log.flush()

    out(f"card: {card}; liftkit.blas {s.backend} backend, profile: {'yes' if s.profile else 'no'}")
    rows = []
    for m, n, k in sizes:  # size by size: a run cut short has every dtype of the first sizes
        for dt in DTYPES:
            A = bc._rand_gpu(cp, (m, k), np.dtype(dt))
            B = bc._rand_gpu(cp, (k, n), np.dtype(dt))
            ref = cp.empty((m, n), dt)
            t_ref = bc._time(cp, lambda: cp.matmul(A, B, out=ref), repeat)
            flops = (8 if dt.startswith("complex") else 2) * m * n * k
            seen: set[str] = set()
            for how in MODES:
                with mode(how):
                    s.forget_choices()
                    plan = plan_gemm(s, A.shape, B.shape, dt)
                    what = f"{plan.variant} on {plan.built.variant}" if plan.embed else \
                        str(plan.built.variant)
                    if what in seen:
                        out(f"{dt:10s} {m}x{n}x{k:<6d} {how}: the same kernel as before ({what})")
                        continue
                    seen.add(what)
                    C = cp.full((m, n), np.nan, dt)
                    call = lambda: s.gemm(A, B, C)  # noqa: E731
                    try:
                        call().result()
                        err = _check(cp, A, B, C, dt)
                        t = bc._time(cp, call, repeat)
                        dev = bc._device_time(s, call)
                    except Exception as exc:  # noqa: BLE001 - logged; the device may be unusable
                        out(f"  FAILED: {dt} {m}x{n}x{k} {how} [{what}]: "
                            f"{type(exc).__name__}: {exc}")
                        log.write(json.dumps(rows) + "\n")
                        return 1
                    copies = plan.padded != plan.sizes
                r = {"dtype": dt, "size": f"{m}x{n}x{k}", "mode": how, "variant": what,
                     "copies": copies, "call_us": t * 1e6, "device_us": dev * 1e6,
                     "cublas_us": t_ref * 1e6, "ratio": t_ref / t, "rel_error": err,
                     "tflops": flops / t * 1e-12, "card": card}
                rows.append(r)
                out(f"{dt:10s} {m}x{n}x{k:<6d} {how:11s} call {t * 1e6:9.1f} us (device "
                    f"{dev * 1e6:9.1f}) cuBLAS {t_ref * 1e6:9.1f} us  ratio {t_ref / t:5.2f}x  "
                    f"{flops / t * 1e-12:6.1f} TFLOP/s  err {err:.1e}  copies {copies}  [{what}]")
                if err > (1e-4 if dt in ("float32", "complex64") else 1e-10):
                    out(f"  ERROR: {dt} {m}x{n}x{k} {how} differs from the float64 product")
            cp.get_default_memory_pool().free_all_blocks()  # (the next operands rebind A, B)
    log.write(json.dumps(rows) + "\n")
    return 0


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--dry", action="store_true", help="no GPU: derive and NVRTC-compile only")
    p.add_argument("--sizes", default=SIZES)
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--log", default="edges.log")
    args = p.parse_args(argv)
    sizes = _sizes(args.sizes)
    if args.dry:
        return dry(sizes)
    with open(args.log, "w") as log:
        return gpu(sizes, args.repeat, log)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
