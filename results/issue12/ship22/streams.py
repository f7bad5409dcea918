"""The shipped split-tail SGEMM kernel (reduceSplitTail: flags and partial sums in kernel
parameters) launched on two CUDA streams at once, checked exactly against NumPy.

1. Raw: liftkit.blas's SGEMM NN kernel of the shipped H100 profile (t4@396b3), built once (one
   module, one function: what static arrays would have shared), launched alternately on two
   streams without waiting, each stream with its own zero-filled flags and workspace; shapes
   whose every tile is split (1024x1024x4096: 128 tiles < 396 slots) and 4096^3 (the 68-tile
   tail). Inputs are small integers, so every sum is exact in float32 whatever the order of the
   parts: the check is equality with NumPy's product. After the launches the flags are zero
   again (the next launch on the stream may reuse them).
2. liftkit.blas: two Sessions (two streams), SGEMM calls issued on both before either is
   waited on, checked the same way.
`--dry`: no GPU: derive, generate and NVRTC-compile the kernel, print the launch.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time

import numpy as np


def kernel(n: int):  # type: ignore[no-untyped-def]
    from liftkit.blas.codelets import Kind, derive, multiples
    from liftkit.blas.profile import SHIPPED, Profile, file_name
    from liftkit.codegen import CompileOptions, compile_program

    prof = Profile.load(SHIPPED / file_name("cuda|NVIDIA H100 80GB HBM3|sm9.0|driver13000"))
    kind = Kind("mm", "float32", "NN")
    v = prof.choose(kind, {"M": n, "N": n, "K": n}, multiples)
    assert v is not None and v.kw.get("split"), f"the shipped profile runs {v}"
    c = compile_program(derive(kind, v).final, CompileOptions(dialect="cuda"))
    (k,) = c.kernels
    return v, c, k


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--dry", action="store_true")
    p.add_argument("--rounds", type=int, default=6)
    args = p.parse_args(argv)
    from liftkit.backends.cuda import compile_cuda

    v, c, k = kernel(4096)
    names = [a.name for a in k.args]
    temps = {b.name: b for b in c.buffers if b.role == "temporary"}
    zeroed = [a.name for a in k.args if a.kind == "buffer" and a.buffer in temps and temps[a.buffer].zeroed]
    print(f"split kernel {v}: args {names}, zero-filled {zeroed}, block {k.ndrange.local_size}, "
          f"grid z {k.ndrange.global_size[2]}", flush=True)
    assert names[:5] == ["X", "Y", "out", "sk_flags", "sk_ws"] and zeroed == ["sk_flags"]
    flag_n = int(temps[k.args[3].buffer].nbytes.eval({})) // 4
    ws_n = int(temps[k.args[4].buffer].nbytes.eval({})) // 4
    t0 = time.perf_counter()
    out = compile_cuda(k.source, "sm_90a", k.build_options, name="split.cu")
    print(f"NVRTC sm_90a: cubin {len(out.cubin)} bytes in {time.perf_counter() - t0:.1f} s", flush=True)
    shapes = [(1024, 1024, 4096), (4096, 4096, 4096)]
    if args.dry:
        for m, n, kk in shapes:
            print(f"  {m}x{n}x{kk}: grid {(n // 64, m // 128, int(k.ndrange.global_size[2].eval({})))}, "
                  f"flags {flag_n} int32, workspace {ws_n} float32 per stream")
        return 0

    import cupy as cp

    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(out.cubin)
        f.flush()
        fn = cp.RawModule(path=f.name).get_function(k.function)
    if k.dynamic_shared:
        fn.max_dynamic_shared_size_bytes = k.dynamic_shared
    parts = int(k.ndrange.global_size[2].eval({}))
    ok = True
    streams = [cp.cuda.Stream(non_blocking=True) for _ in range(2)]
    flags = [cp.zeros(flag_n, cp.int32) for _ in streams]
    ws = [cp.empty(ws_n, cp.float32) for _ in streams]
    rng = np.random.default_rng(7)
    for m, n, kk in shapes:
        ins = [(rng.integers(-8, 9, (m, kk)).astype(np.float32), rng.integers(-8, 9, (kk, n)).astype(np.float32))
               for _ in streams]
        dev = [(cp.asarray(a), cp.asarray(b)) for a, b in ins]
        outs = [[cp.full((m, n), np.nan, cp.float32) for _ in range(args.rounds)] for _ in streams]
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        for r in range(args.rounds):  # alternate: launches of one function overlap on two streams
            for i, s in enumerate(streams):
                with s:  # a RawKernel launches on the current stream
                    fn((n // 64, m // 128, parts), tuple(k.ndrange.local_size), (
                        dev[i][0], dev[i][1], outs[i][r], flags[i], ws[i],
                        np.int32(kk), np.int32(m), np.int32(n)), shared_mem=k.dynamic_shared)
        for s in streams:
            s.synchronize()
        dt = time.perf_counter() - t0
        for i, (a, b) in enumerate(ins):
            want = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
            for r in range(args.rounds):
                same = bool(np.array_equal(cp.asnumpy(outs[i][r]), want))
                ok &= same
                if not same:
                    print(f"  {m}x{n}x{kk} stream {i} launch {r}: WRONG "
                          f"({int(np.sum(cp.asnumpy(outs[i][r]) != want))} elements differ)", flush=True)
            zero = int(cp.count_nonzero(flags[i]).get()) == 0
            ok &= zero
            print(f"  {m}x{n}x{kk} stream {i}: {args.rounds} launches checked, all exact so far: {ok}, "
                  f"flags back at zero: {zero}", flush=True)
        print(f"  {m}x{n}x{kk}: {2 * args.rounds} launches on 2 streams in {dt * 1e3:.1f} ms", flush=True)

    from liftkit.blas import Session
    from liftkit.blas.codelets import Kind

    sessions = [Session("gpu"), Session("gpu")]
    m = n = kk = 4096
    ins = [(rng.integers(-8, 9, (m, kk)).astype(np.float32), rng.integers(-8, 9, (kk, n)).astype(np.float32))
           for _ in sessions]
    dev = [(cp.asarray(a), cp.asarray(b)) for a, b in ins]
    outs = [cp.full((m, n), np.nan, cp.float32) for _ in sessions]
    cp.cuda.Device().synchronize()
    futs = []
    for r in range(3):
        for s, (a, b), o in zip(sessions, dev, outs):
            futs.append(s.gemm(a, b, o))
    for f in futs:
        f.result()
    print(f"  liftkit.blas SGEMM NN 4096 runs {sessions[0].choose(Kind('mm', 'float32', 'NN'), {'M': m, 'N': n, 'K': kk})}")
    for i, ((a, b), o) in enumerate(zip(ins, outs)):
        want = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
        same = bool(np.array_equal(cp.asnumpy(o), want))
        ok &= same
        print(f"  liftkit.blas session {i} (its own stream), 3 SGEMM 4096 calls interleaved with the "
              f"other session's: {'exact' if same else 'WRONG'}", flush=True)
    print("streams check:", "PASS" if ok else "FAIL", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
