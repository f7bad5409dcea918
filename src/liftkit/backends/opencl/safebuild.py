"""Builds that a crashing device compiler cannot take the user's process down with.

Intel's CPU OpenCL compiler segfaults on some kernels (one-work-item abs-sum loops with constant
trip counts 95, 96 or 288: results/issue11/intel_vplan_crash.cl), and a segfault in the
driver ends the process that called clBuildProgram — a user's `liftkit run`, a notebook. So a
kernel not yet known to build on a device is built first in a child forked from this process
(`BuildServer`: the same context, no interpreter start, no device set-up; forked once and kept
for the next builds), which sends the program's binary back; this process then loads the
binary, which costs about a millisecond, so a normal build is not paid twice. A child that dies
(signal, exit) or hangs past its time limit becomes one `CompilerCrash` naming the kernel, the
signal, the compiler's last words and the way around it, and the next build forks a new one.

Known-good keys (sha256 of source, device and driver, options: the kernel cache's key) are
remembered on disk, one empty file each under `known-good/` of the cache directory (in memory
for a cache without disk), so a kernel built once is built in this process afterwards (and a
disk-cached binary never needs a build at all). Only CPU devices are probed: a forked child cannot use GPU drivers (CUDA
contexts, NVIDIA's included under OpenCL, do not survive fork); there builds run in process
as before. `LIFTKIT_SAFE_BUILD=0` turns the probe off.
"""

from __future__ import annotations

import os
import pickle
import re
import select
import signal
import tempfile
import struct
import threading
import time
import warnings
import weakref
from pathlib import Path
from typing import Any, Optional, Sequence

import pyopencl as cl  # here, not in the server: a forked child must not need the import lock

ENV_SAFE = "LIFTKIT_SAFE_BUILD"
DEFAULT_TIMEOUT_S = 300.0  # a build taking longer is a hung compiler
# one build probe at a time per process: a fork while another thread is inside the driver
# could copy a lock that thread holds, and the child would wait on it forever
_FORK_LOCK = threading.Lock()


def safe_builds_wanted() -> bool:
    """Whether builds not known to be good are probed in a child (LIFTKIT_SAFE_BUILD=0: off)."""
    return os.environ.get(ENV_SAFE, "").strip().lower() not in ("0", "no", "off", "false")


def probe_applies(device: Any) -> bool:
    """A forked child can build for CPU devices only (GPU drivers do not survive fork)."""
    return getattr(device, "type", "") == "cpu" and hasattr(os, "fork")


class KnownGood:
    """Keys of (source, device and driver, options) known to build, as empty files under
    `directory` (`None`: remembered in memory only)."""

    def __init__(self, directory: Optional[Path]) -> None:
        self.directory = directory
        self._seen: set[str] = set()

    def __contains__(self, key: str) -> bool:
        if key in self._seen:
            return True
        if self.directory is not None and (self.directory / key).exists():
            self._seen.add(key)
            return True
        return False

    def add(self, key: str) -> None:
        self._seen.add(key)
        if self.directory is None:
            return
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            (self.directory / key).touch()
        except OSError:  # a read-only cache directory: remembered for this process only
            pass


class ProbeOutcome:
    """What the child reported: the binary and build log, or the compiler's error text."""

    def __init__(self, binary: Optional[bytes] = None, log: str = "", error: str = "") -> None:
        self.binary, self.log, self.error = binary, log, error


class ChildDied(Exception):
    """The child building the kernel died or hung: (how, its last words)."""

    def __init__(self, how: str, last_words: str) -> None:
        super().__init__(how)
        self.how, self.last_words = how, last_words


class BuildServer:
    """A child forked from this process that builds kernels for one OpenCL context (its copy of
    it: no interpreter start, no device set-up) and sends the binaries back; forked on the first
    build, kept for the next ones (a fork per build costs the copy-on-write faults of a warm
    compiler every time), forked again after it died. It exits when this process closes the
    request pipe (or exits itself)."""

    def __init__(self, context: Any) -> None:
        self.context = context
        self._pid = 0
        self._owner = 0
        self._to: Optional[int] = None
        self._from: Optional[int] = None
        self._stderr: Any = None
        self._finalizer: Optional[weakref.finalize] = None

    def build(self, cl_device: Any, source: str, options: Sequence[str],
              timeout: float = DEFAULT_TIMEOUT_S) -> ProbeOutcome:
        """Build in the server: the binary and log, or the compiler's error; ChildDied when the
        server crashed or hung on it (the next build forks a new one)."""
        with _FORK_LOCK:
            if self._pid == 0 or self._owner != os.getpid():
                self._start()
            assert self._to is not None and self._from is not None
            self._stderr.seek(0)
            self._stderr.truncate()
            try:
                index = list(self.context.devices).index(cl_device)
                _send(self._to, pickle.dumps((index, source, list(options))))
                data, timed_out = _receive(self._from, time.monotonic() + timeout)
            except OSError:  # the pipe broke: the server is gone
                data, timed_out = None, False
            if data is not None:
                kind, payload, log = pickle.loads(data)
                return ProbeOutcome(binary=payload, log=log) if kind == "ok" else \
                    ProbeOutcome(error=payload, log=log)
            last = _last_words(self._stderr)
            how = self._stop(kill=timed_out)
        raise ChildDied(f"did not finish within {timeout:g} s" if timed_out else how, last)

    def close(self) -> None:
        with _FORK_LOCK:
            if self._pid and self._owner == os.getpid():
                self._stop(kill=False)

    def _start(self) -> None:
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        stderr_file = tempfile.TemporaryFile()  # noqa: SIM115 - closed by _stop
        with warnings.catch_warnings():  # Python 3.12 warns about fork with threads running
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # the server: serve, then exit without running the parent's cleanup
            code = 0
            try:
                os.close(req_w)
                os.close(rep_r)
                os.dup2(stderr_file.fileno(), 2)
                _serve(self.context, req_r, rep_w)
            except BaseException:  # noqa: BLE001 - whatever happens, the child exits here
                code = 70
            finally:
                os._exit(code)
        os.close(req_r)
        os.close(rep_w)
        self._pid, self._owner, self._to, self._from = pid, os.getpid(), req_w, rep_r
        self._stderr = stderr_file
        self._finalizer = weakref.finalize(self, _reap, pid, req_w, rep_r, stderr_file)

    def _stop(self, kill: bool) -> str:
        """End the server (closing its pipe lets it exit; `kill` for a hung one): how it ended."""
        pid = self._pid
        if kill:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self._finalizer is not None:
            self._finalizer.detach()
        status = _reap(pid, self._to, self._from, self._stderr)
        self._pid, self._to, self._from, self._stderr, self._finalizer = 0, None, None, None, None
        if os.WIFSIGNALED(status):
            return f"crashed ({_signal_name(os.WTERMSIG(status))})"
        return f"ended with exit status {os.WEXITSTATUS(status) if os.WIFEXITED(status) else status}"


def _reap(pid: int, to_fd: Optional[int], from_fd: Optional[int], stderr_file: Any) -> int:
    """Close our ends of the server's pipes and wait for it (killed if it does not exit)."""
    for fd in (to_fd, from_fd):
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass
    status = 0
    for _ in range(100):  # up to a second for an idle server to see EOF and exit
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            break
        if done:
            break
        time.sleep(0.01)
    else:
        try:
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
    if stderr_file is not None:
        stderr_file.close()
    return status


def _serve(context: Any, req: int, rep: int) -> None:
    """The server's loop: a request is (the device's index in the context, source, options);
    the answer is its build."""
    devices = list(context.devices)
    while True:
        data, _ = _receive(req, None)
        if data is None:
            return
        index, source, options = pickle.loads(data)
        _send(rep, _child_build(context, devices[index], source, options))


_HEADER = struct.Struct("<Q")


def _send(fd: int, data: bytes) -> None:
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view):]


def _receive(fd: int, deadline: Optional[float]) -> tuple[Optional[bytes], bool]:
    """One message: (its bytes, False), (None, False) at end of file, (None, True) past the
    deadline."""
    buf = bytearray()
    need = _HEADER.size
    size: Optional[int] = None
    while True:
        if size is None and len(buf) >= need:
            (size,) = _HEADER.unpack(bytes(buf[:need]))
            need += size
        if size is not None and len(buf) >= need:
            return bytes(buf[_HEADER.size:need]), False
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None, True
        chunk = os.read(fd, max(1 << 16, need - len(buf)))
        if not chunk:
            return None, False
        buf += chunk


def _child_build(context: Any, cl_device: Any, source: str, options: Sequence[str]) -> bytes:
    warnings.simplefilter("ignore")
    prog = cl.Program(context, source)
    try:
        prog.build(options=list(options), devices=[cl_device])
    except cl.Error as err:
        return pickle.dumps(("error", str(err), ""))
    try:
        log = str(prog.get_build_info(cl_device, cl.program_build_info.LOG)).strip()
    except cl.Error:
        log = ""
    binaries = prog.get_info(cl.program_info.BINARIES)
    devices = prog.get_info(cl.program_info.DEVICES)
    binary = next((b for d, b in zip(devices, binaries) if d == cl_device),
                  binaries[0] if binaries else b"")
    return pickle.dumps(("ok", bytes(binary), log))


def _last_words(f: Any) -> str:
    """The child's last lines on stderr (one line, at most 300 characters)."""
    try:
        f.seek(0)
        text = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    tail = re.sub(r"^\d+\.\s*", "", lines[-1]) if lines else ""  # LLVM numbers its stack dump
    return tail if len(tail) <= 300 else "..." + tail[-297:]


def _signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"
