"""Bundled programs from the seeds, each with input generation and a NumPy reference."""

from liftkit.programs import apps, blas, lowlevel
from liftkit.programs.registry import ProgramSpec, Registry

PROGRAMS = Registry(blas.SPECS + apps.SPECS + lowlevel.SPECS)

__all__ = ["PROGRAMS", "ProgramSpec", "Registry"]
