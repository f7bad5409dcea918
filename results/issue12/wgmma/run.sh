#!/bin/bash
# One device run: GPU tests of the warpgroup-MMA pattern, then 4096³ TF32 variants checked
# (integers exact, B = I bit for bit, float64 within 2e-3) and timed beside cuBLAS TF32 (torch,
# allow_tf32) and the best mma.sync derivation, CUDA events, medians; the SASS of one kernel.
#   run(command="bash results/issue12/wgmma/run.sh", carry=[".device-kit"])
set -o pipefail
source .device-kit/setup.sh >/dev/null || exit 1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv | tee "$OUT/gpu.txt"
python3 -m pytest -q -m gpu -p no:randomly -p no:cacheprovider tests/codegen/test_cuda_wgmma.py 2>&1 | tail -40 | tee "$OUT/gpu_tests.log"
TILES=${TILES:-tf32z:128x256x32w8s3G,tf32z:128x256x32w8s2G,tf32z:128x256x32w8s4G,tf32:128x256x32w8s3G,tf32z:128x128x32w8s3G,tf32z:128x128x32w4s3G,tf32z:128x128x64w8s2G,tf32:128x128x32w4s3L}
python3 benchmarks/cuda_patterns.py mma --repeat 30 --tiles "$TILES" --json "$OUT/wgmma.json" 2>&1 | tee "$OUT/bench.log"
python3 - <<'PY' 2>&1 | tee "$OUT/sass.log"
import os, shutil, subprocess
from liftkit.codegen import CompileOptions, compile_program
from liftkit.backends.cuda import compile_cuda
from liftkit.rewrite.rules.cuda import tensor_core_mm
k = compile_program(tensor_core_mm("tf32z", 128, 256, 32, 8, 3, wgmma=True).final, CompileOptions(dialect="cuda")).kernels[0]
out = compile_cuda(k.source, "sm_90a", ["-Xptxas=-v", *k.build_options], name="wgmma.cu")
path = os.path.join(os.environ.get("OUT", "/tmp"), "wgmma_128x256x32_s3.cubin")
open(path, "wb").write(out.cubin)
tool = shutil.which("cuobjdump") or next((p for p in ("/usr/local/cuda/bin/cuobjdump",) if os.path.exists(p)), None)
if tool:
    sass = subprocess.run([tool, "-sass", path], capture_output=True, text=True).stdout
    open(path + ".sass", "w").write(sass)
    for op in ("HGMMA", "LDG.E.128", "STS.128", "BAR.SYNC", "WARPGROUP", "MEMBAR", "LDL", "STL"):
        print(op, sum(op in l for l in sass.splitlines()))
else:
    print("no cuobjdump on the device")
PY
