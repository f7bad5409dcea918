"""Bundled programs from the seeds, each with input generation and a NumPy reference."""

from liftkit.programs import apps, blas, gpu, lowlevel
from liftkit.programs.registry import ProgramSpec, Registry

PROGRAMS = Registry(blas.SPECS + apps.SPECS + lowlevel.SPECS + gpu.SPECS)

__all__ = ["PROGRAMS", "ProgramSpec", "Registry"]
