"""The thesis' Python benchmarks, now in liftkit.bench.jit_programs (kept importable here for
the scripts of this folder)."""

from liftkit.bench.jit_programs import (PARALLEL, fft, growcut, julia, lud, pagerank,  # noqa: F401
                                        pairwise, spmv, srad)
