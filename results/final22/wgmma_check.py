"""Each cp.async / pair warpgroup variant of tests/codegen/test_cuda_wgmma_async.py's GPU test on
its own (the test stops at its first failure): one line per variant and check, so a failing
variant is named and the others are still checked."""
import sys
import time

import numpy as np

sys.path.insert(0, "tests/codegen")
from test_cuda_wgmma_async import CUDA, ROUND, low  # noqa: E402

from liftkit.backends import cuda  # noqa: E402
from liftkit.codegen import compile_program  # noqa: E402

runner = cuda.CUDARunner(cuda.list_devices()[0], cuda.ModuleCache(disk=False))
rng = np.random.default_rng(10)
variants = [("tf32z", (256, 128, 32, 8, 4)), ("tf32", (256, 128, 32, 8, 3)), ("tf32z", (128, 256, 32, 8, 4)),
            ("tf32", (128, 256, 32, 8, 4)), ("tf32", (256, 128, 32, 8, 4)), ("tf32z", (128, 128, 32, 4, 3)),
            ("tf32z", (128, 128, 32, 8, 6)), ("tf32z", (256, 64, 32, 4, 3)), ("tf32z", (64, 128, 64, 4, 3)),
            ("tf32z", (128, 256, 32, 8, 3), "pair"), ("tf32", (128, 256, 32, 8, 4), "pair"),
            ("tf32z", (128, 128, 32, 4, 3), "pair")]
t0 = time.time()
for kind, tiles, *copy in variants:
    copy = (copy or ["cp.async"])[0]
    name = f"{kind} {tiles} {copy}"
    try:
        compiled = compile_program(low(kind, *tiles, copy=copy), CUDA)
        bad = []
        for m, n, k in ((256, 256, tiles[2]), (256, 512, 2 * tiles[2]), (512, 256, 320)):
            A = rng.integers(-8, 9, (m, k)).astype(np.float32)
            B = rng.integers(-8, 9, (k, n)).astype(np.float32)
            got = runner.run(compiled, A, B)
            if not np.array_equal(got, A @ B):
                bad.append(f"int {m}x{n}x{k}: {int((got != A @ B).sum())} wrong")
        A = rng.standard_normal((256, 256)).astype(np.float32)
        eye = np.eye(256, dtype=np.float32)
        if not np.array_equal(runner.run(compiled, A, eye), ROUND[kind](A)):
            bad.append("B = I")
        if not np.array_equal(runner.run(compiled, eye, A), ROUND[kind](A)):
            bad.append("A = I")
        print(f"{name}: {'OK' if not bad else 'WRONG ' + '; '.join(bad)}  ({time.time() - t0:.0f} s)",
              flush=True)
    except Exception as e:  # noqa: BLE001
        print(f"{name}: ERROR {type(e).__name__}: {str(e)[:200]}", flush=True)
