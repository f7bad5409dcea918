"""MRI-Q on the CPU device: why the derived kernel (add2(acc, qTerm(..))) runs ~0.82x of
mriq_low (computeQ(.., acc)). The same loop in four spellings, each built twice: as liftkit
emits it, and with `#pragma clang fp contract(fast)`. Raw OpenCL on liftkit's CPU device,
X=16384 K=1024 (the suite's cpu sizes); interleaved rounds, minimum and median of the event
times, and each result's largest difference from computeQ's (0: bit-identical).

Finding (results/issue10/cpu-gaps/mriq_contract.log): only computeQ as written is fast, and its
result differs from every other spelling by ~3e-5: `acc.x + k.w * cos(e)` in ONE expression is
contracted to a fused multiply-add. Splitting the products into statements, add2 o qTerm (the
high-level program's user functions, inlined) and even one fused function adding a vector
constructor all run 0.82-0.83x with the unfused result; the pragma does not fuse them, it takes
computeQ's fma away instead.

    python results/issue10/cpu-gaps/mriq_contract.py [rounds]
"""
import statistics
import sys

import numpy as np
import pyopencl as cl

import liftkit.backends.opencl  # noqa: F401  (registers the pip-installed CPU runtime)
from liftkit.backends.choose import make_runner

P = "6.2831853071795864769252867665590058f"
FUNS = f"""
float2 qTerm(float sX, float sY, float sZ, float4 k) {{
  const float expArg = {P} * (k.x * sX + k.y * sY + k.z * sZ);
  return (float2)(k.w * cos(expArg), k.w * sin(expArg));
}}
float2 add2(float2 x, float2 y) {{ return x + y; }}
float2 computeQ(float sX, float sY, float sZ, float4 k, float2 acc) {{
  const float expArg = {P} * (k.x * sX + k.y * sY + k.z * sZ);
  return (float2)(acc.x + k.w * cos(expArg), acc.y + k.w * sin(expArg));
}}
float2 computeQsplit(float sX, float sY, float sZ, float4 k, float2 acc) {{
  const float expArg = {P} * (k.x * sX + k.y * sY + k.z * sZ);
  const float c = k.w * cos(expArg), s = k.w * sin(expArg);
  return (float2)(acc.x + c, acc.y + s);
}}
float2 fused(float2 acc, float sX, float sY, float sZ, float4 k) {{
  const float expArg = {P} * (k.x * sX + k.y * sY + k.z * sZ);
  return acc + (float2)(k.w * cos(expArg), k.w * sin(expArg));
}}
"""
BODIES = {
    "computeQ (mriq_low)": "acc = computeQ(sx, sy, sz, kv[i], acc);",
    "add2(acc, qTerm) (derived)": "acc = add2(acc, qTerm(sx, sy, sz, kv[i]));",
    "computeQ, products apart": "acc = computeQsplit(sx, sy, sz, kv[i], acc);",
    "add2 o qTerm as one function": "acc = fused(acc, sx, sy, sz, kv[i]);",
}
KERNEL = """
kernel void K(const global float* restrict x, const global float* restrict y,
              const global float* restrict z, const global float4* restrict kv,
              global float2* out, int K, int X) {
  for (int g = get_global_id(0); g < X; g += get_global_size(0)) {
    const float sx = x[g], sy = y[g], sz = z[g];
    float2 acc = (float2)(0.0f, 0.0f);
    for (int i = 0; i < K; i += 1) { %s }
    out[g] = acc;
  }
}"""


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    ctx = cl.Context([make_runner("opencl", "cpu").device.cl_device])
    q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    X, K = 16384, 1024
    rng = np.random.default_rng(0)
    x, y, z = (rng.uniform(-0.5, 0.5, X).astype(np.float32) for _ in range(3))
    kv = np.concatenate([rng.uniform(-8, 8, (K, 3)), rng.uniform(0, 1, (K, 1))], 1).astype(np.float32)
    mf = cl.mem_flags
    bufs = [cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a) for a in (x, y, z, kv)]
    out = cl.Buffer(ctx, mf.WRITE_ONLY, X * 8)
    progs = {}
    for pragma in ("", "#pragma clang fp contract(fast)\n"):
        for name, body in BODIES.items():
            label = name + (" + contract(fast)" if pragma else "")
            progs[label] = cl.Program(ctx, pragma + FUNS + KERNEL % body).build().K
    times = {n: [] for n in progs}
    res = {}
    for _ in range(rounds):
        for n, k in progs.items():
            for _ in range(5):
                e = k(q, (X,), None, *bufs, out, np.int32(K), np.int32(X))
                e.wait()
                times[n].append((e.profile.end - e.profile.start) * 1e-6)
            h = np.empty(2 * X, np.float32)
            cl.enqueue_copy(q, h, out)
            res[n] = h
    base = min(times["computeQ (mriq_low)"])
    ref = res["computeQ (mriq_low)"]
    print(f"device: {ctx.devices[0].name}; {rounds} rounds x 5 runs; ratio = min(computeQ) / min(this)")
    for n, t in times.items():
        print(f"{n:45s} min {min(t):6.3f} ms  median {statistics.median(t):6.3f} ms  "
              f"ratio {base / min(t):.2f}  max |diff| {np.abs(res[n] - ref).max():.1e}")


if __name__ == "__main__":
    main()
