"""Bundled programs from the seeds, each with input generation and a NumPy reference."""

from liftkit.programs import apps, blas
from liftkit.programs.registry import ProgramSpec, Registry

PROGRAMS = Registry(blas.SPECS + apps.SPECS)

__all__ = ["PROGRAMS", "ProgramSpec", "Registry"]
