"""DGEMM on the FP64 tensor cores through liftkit.blas beside cuBLAS (CuPy), one process (issue
15, session 25, helper H9): the guarded DMMA kernel (`edge-mma`) with its ragged edge's
accumulators stored 16 bytes at a time (codegen/cuda_mma `_guarded_pair`) and the read-ahead
loops' fragment reads through slot pointers (`SLOT_POINTERS`), against the code before them
("scalar:" = per-element guarded stores, "noslot:" = reads indexed by elements; both = HEAD
f771043); at 1000³ the guarded forms of the tilings that won at 1024 (staged 3, 8 warps,
64×64); at 1023×1025×999 the split plan on those tilings as its interior kernel
(1023×1024×1024); DGEMM TN/NN/NT 1024 as the profile runs them with and without slot pointers,
and TN's other tilings.

    python3 results/issue15/fp64-25b/fp64_25b.py [--rounds 7] [--dry] [--jsonl FILE]

A row is forced through the profile as a tuning run would leave it: an entry at the row's very
sizes (`Profile.at_sizes`: `gemm.profiled_edge` runs a guarded one; at 1024 it tops the class),
for "split:" rows a split entry there plus the interior kernel's entry at 1023×1024×1024;
"profile" rows change nothing. Each kernel is built ahead by NVRTC in worker processes
(registers, spill bytes from ptxas); each row: C poisoned with NaN, one call, max |C - ref| /
max |ref| < 1e-12 against cuBLAS's product of the same operands (checked again after the
timing); then `rounds` alternating rounds (cuBLAS, liftkit) of per call timing (20 calls
between CUDA events, median of 5 batches) and the device work (calls queued behind a long
product), as results/issue15/fp64-25 and odd25 measure.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2] / "benchmarks"))

TOL = 1e-12
SCALAR, NOSLOT = "scalar:", "noslot:"
OLD = SCALAR + NOSLOT  # the code generation of HEAD f771043
PROFILE = "profile"
SPLIT = "split:"
ODD = (1023, 1025, 999)
INTERIOR = {"M": 1023, "N": 1024, "K": 1024}


def _e(tm: int, tn: int, tk: int, w: int, s: int) -> str:
    return f"edge-mma(tm={tm},tn={tn},tk={tk},warps={w},staged={s},lines=1,ik=8,ahead=2)"


def _m(tm: int, tn: int, tk: int, w: int, s: int, **extra: int) -> str:
    more = "".join(f",{k}={v}" for k, v in extra.items())
    return f"mma(tm={tm},tn={tn},tk={tk},warps={w},staged={s},lines=1,ik=8,ahead=2{more})"


E0 = _e(128, 64, 16, 4, 4)  # the shipped 1000³ entry and the split plan's interior kernel
FORMS = [_e(128, 64, 16, 4, 3), _e(128, 64, 16, 8, 4), _e(128, 64, 16, 8, 3),
         _e(64, 64, 16, 4, 4), _e(64, 64, 16, 4, 3), _e(64, 128, 16, 8, 4)]
PLAIN = "edge-mma(tm=64,tn=64,tk=8,warps=4,staged=4)"  # the 1023×1025×999 at-size entry (K odd)
# the profile's kernels at 1024 (for the jobs list): TN 64×64 ×4, NN 128×64 ×3 group 4, NT
# 128×64 w8 pairs
SHIPPED = {"TN": _m(64, 64, 16, 4, 4), "NN": _m(128, 64, 16, 4, 3, group=4),
           "NT": _m(128, 64, 16, 8, 4, pairs=1)}
ROWS: list[tuple[str, tuple[int, int, int], list[str]]] = [
    ("NN", (1000, 1000, 1000), [PROFILE, OLD + PROFILE, NOSLOT + PROFILE, *FORMS]),
    ("NN", ODD, [PROFILE, OLD + PROFILE, *(SPLIT + v for v in FORMS[:4]), PLAIN]),
    ("TN", (1024, 1024, 1024), [PROFILE, NOSLOT + PROFILE, _m(128, 64, 16, 8, 4),
                                _m(64, 64, 16, 4, 3), _m(128, 64, 16, 8, 3)]),
    ("NN", (1024, 1024, 1024), [PROFILE, NOSLOT + PROFILE]),
    ("NT", (1024, 1024, 1024), [PROFILE, NOSLOT + PROFILE]),
]


def _flags(full: str) -> tuple[str, bool, bool]:
    """(the row's text without the codegen prefixes, vector stores, slot pointers); codegen
    set so in this process."""
    from liftkit.codegen import cuda_mma

    vec, slot = not full.startswith(SCALAR), NOSLOT not in full
    cuda_mma.VECTOR_STORES, cuda_mma.SLOT_POINTERS = vec, slot
    return full.removeprefix(SCALAR).removeprefix(NOSLOT), vec, slot


def _jobs() -> list[tuple[str, str]]:
    out = [("NN", E0), ("NN", OLD + E0), ("NN", NOSLOT + E0), ("NN", PLAIN), ("NN", OLD + PLAIN)]
    out += [("NN", v) for v in FORMS]
    for lay, _, vs in ROWS[2:]:
        out += [(lay, SHIPPED[lay]), (lay, NOSLOT + SHIPPED[lay])]
        out += [(lay, v) for v in vs if PROFILE not in v]
    return list(dict.fromkeys(out))


def _build(job: tuple[str, str, str]) -> dict[str, Any]:
    """In a worker process: one variant's CUDA C, NVRTC's cubin and ptxas's report."""
    from liftkit.backends.cuda.nvrtc import compile_cuda
    from liftkit.blas.codelets import Kind, derive, lookup_variant
    from liftkit.codegen import CompileOptions, compile_program

    lay, full, arch = job
    try:
        text = _flags(full)[0]
        kind = Kind("mm", "float64", lay)
        (k,) = compile_program(derive(kind, lookup_variant(kind, text)).final,
                               CompileOptions(dialect="cuda")).kernels
        o = compile_cuda(k.source, arch, [*k.build_options, "--ptxas-options=-v"], name="k.cu")
        regs = re.findall(r"Used (\d+) registers", o.log or "")
        spill = re.findall(r"(\d+) bytes spill stores", o.log or "")
        return {"job": (lay, full), "source": k.source, "options": list(k.build_options),
                "cubin": o.cubin, "regs": int(regs[0]) if regs else -1,
                "spill": int(spill[0]) if spill else -1}
    except Exception as err:  # noqa: BLE001 - reported, the session builds it again
        return {"job": (lay, full), "error": f"{type(err).__name__}: {err}"[:300]}


def _prebuild(jobs: list[tuple[str, str]], arch: str, cache: Any
              ) -> dict[tuple[str, str], tuple[int, int]]:
    """Every kernel built by NVRTC in spawned workers; with `cache` (ModuleCache, device) each
    cubin stored under the key the session's kernel store looks up. (registers, spill bytes)."""
    import concurrent.futures as cf
    import multiprocessing

    out = {}
    with cf.ProcessPoolExecutor(min(len(jobs), max(1, (os.cpu_count() or 2) - 2)),
                                mp_context=multiprocessing.get_context("spawn")) as pool:
        for r in pool.map(_build, [(lay, t, arch) for lay, t in jobs]):
            if "error" in r:
                print(f"prebuild {r['job']}: {r['error']}", flush=True)
                continue
            if cache is not None:
                cache[0].put(cache[1], r["source"], r["options"], r["cubin"])
            out[r["job"]] = (r["regs"], r["spill"])
    return out


def force(s: Any, lay: str, sizes: dict[str, int], body: str) -> None:
    """The session's profile as shipped, with the row's entries at its sizes (the docstring)."""
    from liftkit.blas.codelets import Kind, Variant, lookup_variant
    from liftkit.blas.profile import Entry, size_class

    kind = Kind("mm", "float64", lay)
    shipped = s.h9_shipped
    s.profile.entries = list(shipped)
    if body != PROFILE:
        drop = (dict(sizes), INTERIOR)
        s.profile.entries = [e for e in shipped if not (e.kind == kind and dict(e.sizes) in drop)]
        new = []
        if body.startswith(SPLIT):
            new.append(Entry(kind, size_class("mm", sizes), dict(sizes), Variant.of("split", w=64),
                             1.0, 1e9, via="split"))
            v, at = lookup_variant(kind, body.removeprefix(SPLIT)), INTERIOR
        else:
            v, at = lookup_variant(kind, body), sizes
        new.append(Entry(kind, size_class("mm", at), dict(at), v, 1.0, 1e9))
        s.profile.add(new)
    s.forget_choices()


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--jsonl", default=os.path.join(os.environ.get("OUT", "."), "fp64_25b.jsonl"))
    p.add_argument("--dry", action="store_true", help="derive and NVRTC-compile every kernel "
                   "here (no GPU), print registers and spills, and stop")
    a = p.parse_args(argv)
    if a.dry:
        for (klay, text), (regs, spill) in _prebuild(_jobs(), "sm_90a", None).items():
            print(f"{klay} {text:90s} regs {regs} spill {spill}", flush=True)
        return 0

    import cupy as cp

    from blas_cuda import _kernel_and_host, _rand_gpu, _time
    from liftkit.backends.cuda import ModuleCache, list_devices
    from liftkit.backends.cuda.nvrtc import arch_for
    from liftkit.blas import Session
    from liftkit.blas.kernels import KernelStore

    device = list_devices()[0]
    t0 = time.time()
    attrs = _prebuild(_jobs(), arch_for(device.compute_capability), (ModuleCache(), device))
    print(f"built {len(attrs)} kernels in {time.time() - t0:.1f} s", flush=True)
    from liftkit.blas.codelets import Kind, lookup_variant

    canon = {(lay, full[:len(full) - len(_flags(full)[0])],
              str(lookup_variant(Kind("mm", "float64", lay), _flags(full)[0]))): ra
             for (lay, full), ra in attrs.items()}  # (layout, prefix, variant as planned)
    busy = cp.ones((6144, 6144), cp.float32)  # about 8 ms of SGEMM: holds the stream
    s = Session("gpu", warn=False)
    if s.profile is None:  # another card (an H200): the shipped H100 profile's entries
        from liftkit.blas.profile import Profile

        s.profile = Profile.load(next(
            f for f in (Path(__import__("liftkit.blas").blas.__file__).parent / "profiles").glob("*.json")
            if "cuda|NVIDIA H100" in f.read_text()[:400]))
        print(f"no profile for {s.device.label}: the H100 profile's entries", flush=True)
    s.h9_shipped = list(s.profile.entries)
    print(f"liftkit.blas on {s.device.label} ({s.backend})", flush=True)
    stores = {(True, True): s.store}  # one kernel store per codegen setting
    out = open(a.jsonl, "a")
    table = []
    for lay, (m, n, k), variants in ROWS:
        ta, tb = lay[0] == "T", lay[1] == "T"
        sizes = {"M": m, "N": n, "K": k}
        A = _rand_gpu(cp, (k, m) if ta else (m, k), np.dtype(np.float64))
        B = _rand_gpu(cp, (n, k) if tb else (k, n), np.dtype(np.float64))
        opA, opB = (A.T if ta else A), (B.T if tb else B)
        C, ref = cp.full((m, n), np.nan), cp.empty((m, n))
        cp.matmul(opA, opB, out=ref)
        scale = float(cp.max(cp.abs(ref)))
        size = f"{lay} {m}x{n}x{k}"
        for full in variants:
            body, vec, slot = _flags(full)
            if (vec, slot) not in stores:
                stores[vec, slot] = KernelStore(s.q, s.device)
            s.store = stores[vec, slot]
            force(s, lay, sizes, body)

            def check() -> float:
                C.fill(np.nan)
                s.gemm(A, B, C, trans_a=ta, trans_b=tb).result()
                return float(cp.max(cp.abs(C - ref))) / scale

            try:
                err = check()
                gp = s.plan_gemm(A.shape, B.shape, np.float64, trans_a=ta, trans_b=tb)
            except Exception as e:  # noqa: BLE001 - report and go on
                print(f"{size} {full}: {type(e).__name__}: {e}"[:400], flush=True)
                continue
            ran = str(gp.built.variant) + (" (split w=64, interior)" if hasattr(gp, "edge") else "")
            if not err < TOL:
                print(f"{size} {full} ran {ran}: WRONG (max rel error {err:.1e})", flush=True)
                table.append((size, full, ran, None))
                continue
            call = lambda: s.gemm(A, B, C, trans_a=ta, trans_b=tb)  # noqa: E731
            blas = lambda: cp.matmul(opA, opB, out=C)  # noqa: E731
            pairs = [(_time(cp, blas, 20, 5), _time(cp, call, 20, 5)) for _ in range(a.rounds)]
            t_k, t_h = _kernel_and_host(cp, s, call, 20, busy)
            err2 = check()
            ratios = sorted(r / lk for r, lk in pairs)
            prefix = full[:len(full) - len(body)]
            regs, spill = canon.get((lay, prefix, str(gp.built.variant)), (-1, -1))
            row = {"layout": lay, "size": [m, n, k], "variant": full, "ran": ran, "err": err,
                   "err_after": err2, "pairs_s": pairs, "ratio_median": statistics.median(ratios),
                   "ratio_min": ratios[0], "ratio_max": ratios[-1],
                   "cublas_median_s": statistics.median(q[0] for q in pairs),
                   "call_median_s": statistics.median(q[1] for q in pairs), "kernel_s": t_k,
                   "host_us": t_h * 1e6, "regs": regs, "spill": spill, "device": s.device.label}
            row["kernel_ratio"] = row["cublas_median_s"] / t_k
            out.write(json.dumps(row) + "\n")
            out.flush()
            table.append((size, full, ran, row))
            print(f"  {size} {full} [{ran}]: x{row['ratio_median']:.3f} ({row['ratio_min']:.3f}-"
                  f"{row['ratio_max']:.3f}) cuBLAS {row['cublas_median_s'] * 1e6:.1f} us liftkit "
                  f"{row['call_median_s'] * 1e6:.1f} us device {t_k * 1e6:.1f} us "
                  f"x{row['kernel_ratio']:.3f} regs {regs} spill {spill} err {err:.1e}/{err2:.1e}",
                  flush=True)
        del A, B, C, ref, opA, opB
        cp.get_default_memory_pool().free_all_blocks()
    out.close()
    print(f"\ndevice: {s.device.label}; {a.rounds} alternating rounds (cuBLAS, liftkit), per call: "
          "x cuBLAS (spread), cuBLAS us, liftkit us, device us, regs, spill")
    for size, full, ran, r in table:
        if r is None:
            print(f"{size:18} WRONG {full} [{ran}]")
            continue
        print(f"{size:18} {r['ratio_median']:6.3f} {r['ratio_min']:.3f}-{r['ratio_max']:.3f} "
              f"{r['cublas_median_s'] * 1e6:7.1f} {r['call_median_s'] * 1e6:7.1f} "
              f"{r['kernel_s'] * 1e6:7.1f} {r['regs']:>4} {r['spill']:>4}  {full} [{ran}]")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
