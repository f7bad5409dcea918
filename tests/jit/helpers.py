"""Build @jit functions from source text (written to a real file so inspect can read it)."""

from __future__ import annotations

import importlib.util
import itertools
import sys
import tempfile
import textwrap
from pathlib import Path

from liftkit.jit import JitFunction, jit

_COUNTER = itertools.count()
_DIR = Path(tempfile.mkdtemp(prefix="lkjit-src-"))


def compile_source(src: str, name: str = "f", **options):
    """The @jit-wrapped function ``name`` defined by ``src`` (import numpy as np is added)."""
    k = next(_COUNTER)
    path = _DIR / f"lkjit_case_{k}.py"
    path.write_text("import numpy as np\nimport math\nfrom liftkit.jit import prange, PAR, Domain\n"
                    + textwrap.dedent(src))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = mod
    spec.loader.exec_module(mod)
    options.setdefault("cache", False)
    fn = getattr(mod, name)
    return fn if isinstance(fn, JitFunction) else jit(fn, **options)


def left_behind(rt, *fns, before=()) -> dict:
    """The runtime's buffers a call left behind: neither there ``before`` it nor an error-flag
    buffer the functions' GPU sections keep cleared for their next call (gpu_host.ErrorFlags)."""
    kept = set()
    for f in fns:
        for c in f.specs.values():
            if c.gpu is not None:
                kept |= c.gpu.flags.held()
    return {i: b for i, b in rt.buffers.items()
            if i not in before and (not b.vars or not b.vars <= kept)}


def held_flags(f) -> set:
    """Ids of the cleared error-flag variables ``f``'s GPU sections keep."""
    return set().union(*(c.gpu.flags.held() for c in f.specs.values() if c.gpu is not None))
