"""The benchmark suite (issue 5): the seeds' 18 programs on the GPU and the CPU, checked before
they are timed, against cuBLAS/CuPy/PyTorch (GPU) or NumPy (CPU), with the device ceilings
measured in the same run. `liftkit bench` is the command; docs/benchmarks.md the guide."""

from liftkit.bench.harness import BenchConfig, BenchResult, EntryResult, RefResult, run_bench
from liftkit.bench.suite import ENTRIES, SUITE, Entry

__all__ = ["BenchConfig", "BenchResult", "EntryResult", "RefResult", "run_bench", "ENTRIES",
           "SUITE", "Entry"]
