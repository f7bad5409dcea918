"""Each public module imports first in a fresh interpreter (no circular-import surprises that
depend on what happened to be imported before)."""

from __future__ import annotations

import subprocess
import sys

import pytest

MODULES = ["liftkit.arith", "liftkit.types", "liftkit.ir.typecheck", "liftkit.ir.patterns",
           "liftkit.ir.printer", "liftkit.ir.parser", "liftkit.semantics", "liftkit.dsl",
           "liftkit.programs", "liftkit.codegen", "liftkit.backends.opencl", "liftkit.rewrite",
           "liftkit.cli.main", "liftkit.usercode", "liftkit.jit"]


@pytest.mark.parametrize("module", MODULES)
def test_imports_first(module):
    r = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
