"""Bundled programs from the seeds, each with input generation and a NumPy reference."""

from liftkit.programs import apps, blas, clblast, gpu, lowlevel, parboil, rodinia, vendor
from liftkit.programs.registry import ProgramSpec, Registry

# seed 002's programs, the OpenCL-level ones of the code generator's issue, then the seed 000
# Table 1 benchmarks (Rodinia, Parboil, CLBlast, and the NVIDIA/AMD-style kernels)
PROGRAMS = Registry(blas.SPECS + apps.SPECS + lowlevel.SPECS + gpu.SPECS + rodinia.SPECS
                    + parboil.SPECS + clblast.SPECS + vendor.SPECS)

__all__ = ["PROGRAMS", "ProgramSpec", "Registry"]
