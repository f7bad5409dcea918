"""liftkit.blas rates vs size beside NumPy's BLAS (CPU device) or cuBLAS through CuPy (GPU),
results checked before timing. The same as `liftkit blas bench`:

    python benchmarks/blas_bench.py --device cpu --sizes 256,512,1024
    python benchmarks/blas_bench.py --device gpu --ops gemm --dtypes float32,float64
"""

from __future__ import annotations

import argparse
import sys

from liftkit.blas.bench import configure_bench_parser, run_from_args

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    configure_bench_parser(parser)
    raise SystemExit(run_from_args(parser.parse_args(), sys.stdout))
