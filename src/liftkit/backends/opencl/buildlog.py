"""Compiler and driver output of OpenCL builds goes to the log, not the terminal.

pyopencl turns every non-empty build log into a `CompilerWarning` (printed by Python's warnings
machinery), and some drivers print to the process's stderr themselves (clang's "1 warning
generated." from PoCL, for one). Neither is the user's business unless asked for: both are
logged on the `liftkit.opencl.build` logger (shown by `liftkit --verbose`), and setting
`PYOPENCL_COMPILER_OUTPUT` lets everything through as pyopencl intends.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import threading
import warnings
from contextlib import contextmanager, nullcontext
from typing import Any, Iterator

import pyopencl as cl

log = logging.getLogger("liftkit.opencl.build")

ENV_SHOW = "PYOPENCL_COMPILER_OUTPUT"
# "keep": leave fd 2 alone during builds. For processes whose stderr is a log someone reads,
# such as the search's worker: a driver that crashes mid-build leaves its last words there
# instead of in a capture file that dies with the process.
ENV_KEEP_STDERR = "LIFTKIT_DRIVER_STDERR"

# fd 2 is one per process: redirections by two threads at once would restore each other's
# stand-in, so builds that capture it take turns (a process-wide resource, hence process-wide)
_STDERR_LOCK = threading.Lock()


def compiler_output_requested() -> bool:
    """The user asked to see compiler output (pyopencl's own switch)."""
    return os.environ.get(ENV_SHOW, "").strip() not in ("", "0")


@contextmanager
def _stderr_captured() -> Iterator[list[str]]:
    """What native code writes to fd 2 inside the block, as one string in the yielded list."""
    captured: list[str] = []
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    with _STDERR_LOCK, tempfile.TemporaryFile() as tmp:
        try:
            saved = os.dup(2)
        except OSError:  # no fd 2 (a daemon): nothing can reach a terminal anyway
            yield captured
            return
        try:
            os.dup2(tmp.fileno(), 2)
            yield captured
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            captured.append(tmp.read().decode(errors="replace"))


@contextmanager
def quiet_build(what: str) -> Iterator[None]:
    """Run an OpenCL build with its compiler warnings and driver prints logged instead of shown
    (unless PYOPENCL_COMPILER_OUTPUT is set). Errors still propagate as exceptions."""
    if compiler_output_requested():
        yield
        return
    keep = os.environ.get(ENV_KEEP_STDERR, "") == "keep"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with (nullcontext([]) if keep else _stderr_captured()) as driver:
            yield
    for w in caught:
        if issubclass(w.category, cl.CompilerWarning):
            log.debug("%s: %s", what, str(w.message).strip())
        else:  # not ours to silence
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    text = "".join(driver).strip()
    if text:
        log.info("%s: driver output: %s", what, text)


def log_build_log(prog: Any, device: Any, what: str) -> None:
    """The build log of a successful build (the driver's warnings, if any)."""
    try:
        text = str(prog.get_build_info(device, cl.program_build_info.LOG)).strip()
    except cl.Error:
        return
    if text:
        log.info("%s: build log:\n%s", what, text)
