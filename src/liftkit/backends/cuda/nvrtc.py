"""CUDA C to PTX and cubin with NVRTC (cuda-python's `cuda.bindings.nvrtc`, the library from the
`nvidia-cuda-nvrtc` wheel): no GPU and no driver needed, so CI checks every generated kernel.

Kernels are built for the device's own architecture (`sm_90a` on Hopper: the arch-specific
target that keeps Hopper-only instructions available) as a cubin, which the driver loads
without a JIT step; a newer NVRTC than the driver is then no problem (a PTX would need a driver
that reads its PTX version). `--ptx` output and the device-less checks use PTX.

NVRTC runs in a compile server of its own (`nvrtc_worker.py`), never in liftkit's process:
loaded beside NVIDIA's OpenCL compiler it makes every later OpenCL build fail. Built modules
are cached in this process (`cache.py`), so a cache hit never asks the server.
"""

from __future__ import annotations

import atexit
import functools
import os
import re
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Optional, Sequence

from liftkit.backends.cuda.nvrtc_worker import read_frame, write_frame
from liftkit.backends.errors import BackendError

# warnings that generated code triggers by design: a declared but unused variable (a work-item
# id the simplified body no longer reads, a buffer an unrolled loop does not touch)
QUIET = ("-diag-suppress=177,550",)
STD = "-std=c++17"


class CUDAError(BackendError):
    """A failure of the CUDA backend: no CUDA device or driver, a launch the device cannot run,
    an input array of the wrong type, shape or device."""


class NVRTCError(CUDAError):
    """NVRTC rejected a kernel; the message carries its log."""


@dataclass(frozen=True)
class NVRTCOutput:
    ptx: str
    cubin: Optional[bytes]  # None when compiled for a virtual architecture (compute_XX)
    log: str


class CompileServer:
    """The client of one NVRTC compile server (`nvrtc_worker.py`), a helper process started on
    the first request: NVRTC never loads into liftkit's process, where it breaks NVIDIA's
    OpenCL compiler. Requests are serialized (thread-safe); a server that dies is restarted once
    per request, and a second death is one CUDAError. `close()` (also run at exit) stops it."""

    def __init__(self, python: str = sys.executable) -> None:
        self.python = python
        self._proc: Optional[subprocess.Popen[bytes]] = None
        self._stderr: Optional[IO[bytes]] = None
        self._pid = 0  # the process that started the server: a forked child starts its own
        self._lock = threading.Lock()
        self._atexit = False

    def request(self, *message: object) -> object:
        """The value the server answers `message` with; NVRTCError or CUDAError otherwise."""
        with self._lock:
            try:
                answer = self._exchange(message)
            except _ServerGone:
                self._stop()
                try:
                    answer = self._exchange(message)
                except _ServerGone as gone:
                    self._stop()
                    raise CUDAError(f"the NVRTC compile server stopped twice ({gone})") from None
        if answer[0] == "ok":
            return answer[1]
        kind, text = answer[1], answer[2]
        raise (NVRTCError if kind == "nvrtc" else CUDAError)(text)

    def close(self) -> None:
        with self._lock:
            self._stop()

    @property
    def running(self) -> bool:
        return self._proc is not None and self._pid == os.getpid() and self._proc.poll() is None

    def _exchange(self, message: tuple) -> tuple:  # type: ignore[type-arg]
        proc = self._started()
        assert proc.stdin is not None and proc.stdout is not None
        try:
            write_frame(proc.stdin, message)
            answer = read_frame(proc.stdout)
        except (OSError, ValueError) as err:
            raise _ServerGone(self._why(f"{type(err).__name__}: {err}")) from None
        if answer is None:
            raise _ServerGone(self._why("no answer"))
        return answer  # type: ignore[no-any-return]

    def _started(self) -> subprocess.Popen[bytes]:
        if self._proc is not None and self._pid != os.getpid():
            self._proc = self._stderr = None  # the parent's server: leave its pipes alone
        if self._proc is None:
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
            self._stderr = tempfile.TemporaryFile()
            self._proc = subprocess.Popen(
                [self.python, "-P", str(Path(__file__).with_name("nvrtc_worker.py"))],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, env=env)
            self._pid = os.getpid()
            if not self._atexit:
                atexit.register(self.close)
                self._atexit = True
        return self._proc

    def _why(self, what: str) -> str:
        proc, err = self._proc, self._stderr
        code = None
        if proc is not None:
            try:
                code = proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                pass
        tail = ""
        if err is not None:
            try:
                err.seek(0)
                lines = err.read().decode(errors="replace").strip().splitlines()
                tail = f": {lines[-1]}" if lines else ""
            except OSError:
                pass
        return f"{what}, exit code {code}{tail}"

    def _stop(self) -> None:
        proc, err = self._proc, self._stderr
        self._proc = self._stderr = None
        if proc is None or self._pid != os.getpid():
            return
        try:
            if proc.poll() is None and proc.stdin is not None:
                write_frame(proc.stdin, ("exit",))
            proc.wait(timeout=5)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()
        for stream in (proc.stdin, proc.stdout, err):
            if stream is not None:
                try:
                    stream.close()
                except OSError:  # unsent bytes to a server that died
                    pass


class _ServerGone(Exception):
    """The compile server died or stopped answering."""


@functools.cache
def compile_server() -> CompileServer:
    """The process's one compile server (started on its first request)."""
    return CompileServer()


@functools.cache
def nvrtc_version() -> tuple[int, int]:
    """(major, minor) of the NVRTC library in use; raises CUDAError when there is none."""
    major, minor = compile_server().request("version")  # type: ignore[misc]
    return int(major), int(minor)


@functools.cache
def supported_archs() -> tuple[int, ...]:
    """The real architectures this NVRTC can build for, e.g. (75, 80, ..., 90, 100, 120)."""
    return tuple(compile_server().request("archs"))  # type: ignore[arg-type]


def arch_for(compute_capability: tuple[int, int]) -> str:
    """The `-arch` for a device: `sm_90a` for 9.0 (arch-specific features from Hopper on),
    `sm_86` for 8.6; a device newer than NVRTC knows gets NVRTC's newest PTX target, which the
    driver compiles."""
    cc = compute_capability[0] * 10 + compute_capability[1]
    archs = supported_archs()
    if cc in archs:
        return f"sm_{cc}a" if compute_capability[0] >= 9 else f"sm_{cc}"
    older = [a for a in archs if a <= cc]
    if not older:
        raise CUDAError(f"NVRTC {'.'.join(map(str, nvrtc_version()))} cannot build for compute "
                        f"capability {compute_capability[0]}.{compute_capability[1]} (it knows "
                        f"{', '.join(map(str, archs))})")
    return f"compute_{max(older)}"


def compile_cuda(source: str, arch: str, options: Sequence[str] = (), name: str = "kernel.cu",
                 server: Optional[CompileServer] = None) -> NVRTCOutput:
    """Compile one translation unit (in the compile server, or `server`: one of several that
    compile at once); `arch` as `sm_90a` (PTX and cubin) or `compute_90a` (PTX only). An NVRTC
    error raises NVRTCError with NVRTC's log (which quotes the offending lines)."""
    try:
        ptx, cubin, log = (server or compile_server()).request(  # type: ignore[misc]
            "compile", source, arch, [STD, *QUIET, *options], name)
    except NVRTCError as err:
        log = str(err)
        # a kernel's own #error (a pattern refusing this target) is the whole story: one line
        said = re.search(r'#error directive: "([^"\n]*)"', log)
        if said:
            raise NVRTCError(f"{name} for {arch}: {said.group(1)}") from None
        raise NVRTCError(f"NVRTC could not compile {name} for {arch}:\n{log or '(no log)'}"
                         ) from None
    return NVRTCOutput(ptx, cubin, log)
