#!/bin/bash
# Issue 14, H100 run 7 (<= 120 s wall): the GPU tests of tests/jit and tests/runtime, the host
# overhead of calls and launches with the 20-kernel chain, single driver calls and A @ B 4096^2
# (overhead.py --driver --matmul: jitted calls back to back against cuBLAS and against the
# Lift kernel's own GPU time), then the whole JIT suite against Numba's CUDA target and CuPy
# (each row printed as measured). Every reference runs in the same process as what it is
# compared with. With base.tgz in the tree (git archive REV src benchmarks/jit | gzip), the
# overhead rows of those sources run too, twice, interleaved with two of ours (+45 s).
#   source .device-kit/setup.sh && OUT=... bash results/issue14/h100-run7.sh
# Limits: tests 36 s (baseline 22: 26 s for tests/jit's two), overhead 22 s, the suite in two
# processes of 36 s and 26 s (baseline 22: 6 of 8 rows in 36 s in one, --repeat 3; first calls'
# builds dominate): the launch-bound rows first, the combined table and geomeans at the end.
set -o pipefail
export PYTHONUNBUFFERED=1
OUT="${OUT:-/tmp}"
python3 -m pip install -q --no-index --no-deps --target /tmp/device-site .device-extra/*.whl 2>&1 \
    | grep -v "root" | tail -2
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== GPU tests (tests/jit, tests/runtime; marker gpu)"
timeout 36 python3 -m pytest -q -p no:randomly -p no:cacheprovider -m gpu tests/jit \
    tests/runtime 2>&1 | tail -20
if [ -f base.tgz ]; then
    echo "== host overhead, before (sources of base.tgz)"
    mkdir -p /tmp/base && tar -xzf base.tgz -C /tmp/base
    (cd /tmp/base && env PYTHONPATH="/tmp/base/src:$PYTHONPATH" timeout 15 python3 \
        benchmarks/jit/overhead.py --device gpu --backend cuda --repeat 5 \
        --json "$OUT/overhead_before.json" 2>&1 | tail -16)
fi
echo "== host overhead, chain, driver calls, A @ B (benchmarks/jit/overhead.py)"
timeout 22 python3 benchmarks/jit/overhead.py --device gpu --backend cuda --repeat 5 --driver \
    --matmul --json "$OUT/overhead.json" 2>&1 | tail -36
if [ -f base.tgz ]; then  # processes of one host differ by 10-30 %: before and after again
    echo "== host overhead, before, second process"
    (cd /tmp/base && env PYTHONPATH="/tmp/base/src:$PYTHONPATH" timeout 15 python3 \
        benchmarks/jit/overhead.py --device gpu --backend cuda --repeat 5 \
        --json "$OUT/overhead_before2.json" 2>&1 | tail -16)
    echo "== host overhead, after, second process (and our Python alone: the stubbed driver)"
    timeout 15 python3 benchmarks/jit/overhead.py --device gpu --backend cuda --repeat 5 \
        --driver --json "$OUT/overhead2.json" 2>&1 | tail -24
    timeout 8 python3 benchmarks/jit/overhead.py --stub-cuda --repeat 5 --driver 2>&1 | tail -15
fi
echo "== JIT suite vs Numba CUDA and CuPy (benchmarks/jit/gpu.py): launch-bound rows, then the rest"
timeout 36 python3 benchmarks/jit/gpu.py --repeat 3 --skip runtime overhead matmul pressure \
    --only julia fft spmv pairwise growcut --json "$OUT/suite_a.json" 2>&1 \
    | grep -e "^\[" -e "Error" -e "Traceback" | head -30
timeout 26 python3 benchmarks/jit/gpu.py --repeat 3 --skip runtime overhead matmul pressure \
    --only lud srad pagerank --json "$OUT/suite_b.json" 2>&1 \
    | grep -e "^\[" -e "Error" -e "Traceback" | head -30
python3 - "$OUT/suite_a.json" "$OUT/suite_b.json" <<'PY'
import json, math, sys
rows = []
for path in sys.argv[1:]:
    try:
        rows += json.load(open(path))["rows"]
    except (OSError, ValueError, KeyError):
        print(f"({path}: not written, its part was cut)")
print("| bench | ok | jit 1st s | jit resident ms | Numba ms | vs Numba | CuPy resident ms | vs CuPy |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
f = lambda x, p=2: "-" if x is None else f"{x:.{p}f}"
for r in rows:
    g = r.get
    print(f"| {r['bench']} | {g('ok')} | {f(g('first_call_s'), 3)} | {f(g('jit_resident_ms'))} | "
          f"{f(g('numba_resident_ms'))} | {f(g('vs_numba'))} | {f(g('cupy_resident_ms'))} | "
          f"{f(g('vs_cupy_resident'))} |")
for k in ("vs_numba", "vs_cupy_resident", "vs_cupy_e2e"):
    xs = [r[k] for r in rows if r.get(k)]
    if xs:
        print(f"geomean {k}: {math.exp(sum(map(math.log, xs)) / len(xs)):.3f}x over {len(xs)} rows")
PY
