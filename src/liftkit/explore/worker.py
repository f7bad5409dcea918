"""Building and running candidates in a worker process, so a crashing driver costs one candidate.

A search compiles and launches thousands of generated kernels. OpenCL drivers are not robust
against all of them: PoCL's LLVM aborts on some 16-wide vector code ("Cannot emit physreg copy
instruction"), a wrong index can segfault a CPU device, a kernel can loop forever. In the
search's own process any of these ends the whole search. So `CandidateWorker` keeps one
persistent child process per device that builds and runs candidates (the common path costs one
pipe round trip, no process start); when the child dies or a job exceeds its time limit, the
child is killed, the job fails with a `WorkerCrash` naming the signal, the phase (building or
running) and the driver's last words, and the next job starts a fresh child.

Protocol: length-prefixed pickles over the child's stdin/stdout. Inputs are shipped once per
input set (the search reuses the real-size inputs and the check inputs for every candidate)
and referred to by a token afterwards. The child's own stdout and stderr go to a log file, so
driver noise never reaches the terminal; a crash's reason quotes its tail.
"""

from __future__ import annotations

import dataclasses
import io
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import tempfile
import time
import weakref
from collections import OrderedDict
from pathlib import Path
from typing import Any, BinaryIO, Mapping, Optional, Sequence, Union

from liftkit.backends.opencl.devices import Device, OpenCLError, list_devices, select_device
from liftkit.ir.nodes import UserFun

DEFAULT_TIMEOUT_S = 60.0  # per job: build + run of one candidate
START_TIMEOUT_S = 120.0  # importing pyopencl and opening the device
MAX_INPUT_SETS = 4  # input sets a child keeps (the search uses two or three)
_HEADER = struct.Struct("<Q")


class WorkerCrash(OpenCLError):
    """The worker died (signal, exit) or hung past its time limit while building or running a
    candidate. `validity` is how the tuning database records it."""

    def __init__(self, message: str, validity: str = "runtime-error") -> None:
        super().__init__(message)
        self.validity = validity

    def __reduce__(self) -> Any:
        return (WorkerCrash, (str(self), self.validity))


class RemoteError(OpenCLError):
    """An exception raised in the worker that could not be sent back as itself."""


# ---------------------------------------------------------------------------------------------
# the wire format


def _no_impl(*_args: Any) -> Any:
    raise OpenCLError("a user function's NumPy implementation is not available in the worker")


def _user_fun(fields: tuple[tuple[str, Any], ...]) -> UserFun:
    return UserFun(**dict(fields))


class _Pickler(pickle.Pickler):
    """Pickles programs whose user functions carry lambdas: the worker builds and runs kernels
    from their OpenCL C bodies and never calls the NumPy twin, so it is left behind."""

    def reducer_override(self, obj: Any) -> Any:
        if type(obj) is UserFun:
            fields = tuple((f.name, _no_impl if f.name == "impl" else getattr(obj, f.name))
                           for f in dataclasses.fields(obj))
            return (_user_fun, (fields,))
        return NotImplemented


def _dumps(obj: Any) -> bytes:
    buf = io.BytesIO()
    _Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return buf.getvalue()


def _write(f: BinaryIO, obj: Any) -> None:
    data = _dumps(obj)
    f.write(_HEADER.pack(len(data)))
    f.write(data)
    f.flush()


def _read_exact(f: BinaryIO, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = f.read(left)
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _read(f: BinaryIO) -> Any:
    (n,) = _HEADER.unpack(_read_exact(f, _HEADER.size))
    return pickle.loads(_read_exact(f, n))


class _Reader:
    """Reads frames from a pipe with a deadline (select on the raw descriptor)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buf = bytearray()

    def read(self, deadline: float) -> Any:
        """The next message; EOFError when the child closed the pipe, TimeoutError past the
        deadline."""
        need = _HEADER.size
        size: Optional[int] = None
        while True:
            if size is None and len(self.buf) >= need:
                (size,) = _HEADER.unpack(self.buf[:need])
                need += size
            if size is not None and len(self.buf) >= need:
                data = bytes(self.buf[_HEADER.size:need])
                del self.buf[:need]
                return pickle.loads(data)
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                raise TimeoutError
            chunk = os.read(self.fd, max(1 << 16, need - len(self.buf)))
            if not chunk:
                raise EOFError
            self.buf += chunk


# ---------------------------------------------------------------------------------------------
# the parent's side


def _device_index(device: Device) -> int:
    """The device's position among all devices (what the child opens), or -1."""
    for i, d in enumerate(list_devices()):
        if d.fingerprint == device.fingerprint and d.cl_device == device.cl_device:
            return i
    return -1


def _signal_name(code: int) -> str:
    if code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    return f"exit status {code}"


def _kill(proc: subprocess.Popen, log: Any) -> None:  # type: ignore[type-arg]
    """Finalizer: the child must not outlive its CandidateWorker."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    for f in (proc.stdin, proc.stdout, log):
        try:
            if f is not None:
                f.close()
        except OSError:
            pass


class CandidateWorker:
    """Runs compiled programs on one device inside a persistent child process.

    `run` and `run_with_info` behave like `OpenCLRunner`'s; `time` returns only the RunInfo (the
    result of a real-size run is not shipped back). A job that crashes the child or runs past
    `timeout` seconds raises `WorkerCrash`; the next job starts a new child (`restarts` counts
    them). Use as a context manager, or call `close()`.
    """

    def __init__(self, device_spec: Union[str, Device, None] = None, *,
                 cache_dir: Union[str, Path, None] = None, timeout: float = DEFAULT_TIMEOUT_S,
                 log_path: Union[str, Path, None] = None) -> None:
        if timeout <= 0:
            raise ValueError(f"the worker's time limit must be positive, got {timeout}")
        self.device = device_spec if isinstance(device_spec, Device) else select_device(device_spec)
        self.cache_dir = None if cache_dir is None else str(cache_dir)
        self.timeout = float(timeout)
        self.log_path = Path(log_path) if log_path is not None else None
        self.restarts = 0
        self._index = _device_index(self.device)
        self._proc: Optional[subprocess.Popen] = None  # type: ignore[type-arg]
        self._reader: Optional[_Reader] = None
        self._log: Optional[BinaryIO] = None
        self._finalizer: Optional[weakref.finalize] = None
        self._shipped: OrderedDict[tuple[int, ...], tuple[int, tuple[Any, ...]]] = OrderedDict()
        self._tokens = 0
        self._started = 0

    def __repr__(self) -> str:
        return f"CandidateWorker({self.device.label!r})"

    def __enter__(self) -> "CandidateWorker":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- public entry points ----------------------------------------------------------------------

    def run(self, compiled: Any, *inputs: Any, sizes: Optional[Mapping[str, int]] = None,
            timing: bool = False, repeat: int = 1, name: Optional[str] = None) -> Any:
        return self.run_with_info(compiled, *inputs, sizes=sizes, timing=timing, repeat=repeat,
                                  name=name)[0]

    def run_with_info(self, compiled: Any, *inputs: Any, sizes: Optional[Mapping[str, int]] = None,
                      timing: bool = False, repeat: int = 1, name: Optional[str] = None
                      ) -> tuple[Any, Any]:
        return self._job(compiled, inputs, sizes, timing, repeat, name, True)

    def time(self, compiled: Any, *inputs: Any, sizes: Optional[Mapping[str, int]] = None,
             repeat: int = 1, name: Optional[str] = None) -> Any:
        """The RunInfo of a timed run (with a warm-up), without shipping the result back."""
        return self._job(compiled, inputs, sizes, True, repeat, name, False)[1]

    def build(self, compiled: Any) -> None:
        """Build the kernels in the child (a driver crash or hang raises WorkerCrash): the
        search's build stage, timed apart from the check that follows."""
        self._job(compiled, (), None, False, 1, None, False, kind="build")

    def bandwidth_gbs(self, nbytes: int, repeat: int = 10) -> float:
        """The device's copy bandwidth (GB/s, bytes read plus written) at `nbytes`."""
        return float(self._job(None, (), None, False, repeat, None, True, kind=("bandwidth", nbytes))[0])

    def clone(self) -> "CandidateWorker":
        """A new, not yet started worker for the same device and settings. Makes no OpenCL
        call, so a process forked from this one (the search's host stages) can use it."""
        twin = object.__new__(CandidateWorker)
        twin.__dict__.update(self.__dict__)
        twin.restarts, twin._proc, twin._reader, twin._log, twin._finalizer = 0, None, None, None, None
        twin._shipped, twin._tokens, twin._started = OrderedDict(), 0, 0
        return twin

    def close(self) -> None:
        """Stop the child (politely, then by force)."""
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            try:
                _write(proc.stdin, ("exit",))  # type: ignore[arg-type]
                proc.wait(timeout=5)
            except (OSError, ValueError, subprocess.TimeoutExpired):
                pass
        if self._finalizer is not None:
            self._finalizer()
        self._proc = self._reader = self._log = self._finalizer = None
        self._shipped.clear()

    # -- the child --------------------------------------------------------------------------------

    def _start(self) -> None:
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            log: BinaryIO = open(self.log_path, "ab")
        else:
            log = tempfile.TemporaryFile()  # noqa: SIM115 - closed by the finalizer
        env = dict(os.environ)
        # the child imports the same liftkit (and the same user modules) as this process
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        args = [sys.executable, "-m", "liftkit.explore.worker", str(self._index),
                self.device.fingerprint, self.cache_dir or ""]
        proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                env=env, close_fds=True)
        self._proc, self._log = proc, log
        self._reader = _Reader(proc.stdout.fileno())  # type: ignore[union-attr]
        self._finalizer = weakref.finalize(self, _kill, proc, log)
        self._shipped.clear()
        self._started += 1
        if self._started > 1:
            self.restarts += 1
        start = self._log_offset()
        try:
            msg = self._reader.read(time.monotonic() + max(START_TIMEOUT_S, self.timeout))
        except (EOFError, TimeoutError):
            why = self._died("starting", start, timed_out=proc.poll() is None)
            raise OpenCLError(f"the OpenCL worker process could not start: {why}") from None
        if msg[0] != "ready":
            self.close()
            raise OpenCLError(f"the OpenCL worker process could not open the device: {msg[1]}")

    def _log_offset(self) -> int:
        try:
            return os.fstat(self._log.fileno()).st_size if self._log is not None else 0
        except OSError:
            return 0

    def _log_tail(self, start: int) -> str:
        """The driver's last words since `start` (one line, at most 300 characters)."""
        if self._log is None:
            return ""
        try:
            self._log.flush()
            fd = self._log.fileno()
            size = os.fstat(fd).st_size
            text = os.pread(fd, max(0, size - start), start).decode("utf-8", "replace")
        except OSError:
            return ""
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        tail = "; ".join(lines[-3:])
        return tail if len(tail) <= 300 else "..." + tail[-297:]

    def _died(self, phase: str, start: int, timed_out: bool) -> str:
        """Kill what is left of the child and say what happened."""
        proc = self._proc
        assert proc is not None
        if timed_out:
            proc.kill()
        try:
            code = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - a process that ignores SIGKILL
            code = -signal.SIGKILL
        what = (f"timed out after {self.timeout:g} s while {phase}" if timed_out
                else f"the worker process died ({_signal_name(code)}) while {phase}")
        tail = self._log_tail(start)
        self.close()
        return f"{what}: {tail}" if tail else what

    # -- jobs -------------------------------------------------------------------------------------

    def _token(self, inputs: Sequence[Any]) -> int:
        """The child's token for this input set, shipping it first if needed (by identity: the
        search passes the same arrays for every candidate, and the references kept here keep
        the ids unique)."""
        key = tuple(id(x) for x in inputs)
        hit = self._shipped.get(key)
        if hit is not None:
            self._shipped.move_to_end(key)
            return hit[0]
        self._tokens += 1
        token = self._tokens
        while len(self._shipped) >= MAX_INPUT_SETS:
            _, (old, _) = self._shipped.popitem(last=False)
            _write(self._proc.stdin, ("drop", old))  # type: ignore[union-attr, arg-type]
        _write(self._proc.stdin, ("inputs", token, list(inputs)))  # type: ignore[union-attr, arg-type]
        self._shipped[key] = (token, tuple(inputs))
        return token

    def _job(self, compiled: Any, inputs: Sequence[Any], sizes: Optional[Mapping[str, int]],
             timing: bool, repeat: int, name: Optional[str], want: bool, kind: Any = "run"
             ) -> tuple[Any, Any]:
        if self._proc is None or self._proc.poll() is not None:
            if self._proc is not None:
                self.close()
            self._start()
        start = self._log_offset()
        phase = "sending the inputs"
        try:
            if isinstance(kind, tuple):  # ("bandwidth", nbytes)
                _write(self._proc.stdin, (kind[0], kind[1], repeat))  # type: ignore[union-attr, arg-type]
            elif kind == "build":
                _write(self._proc.stdin, ("build", compiled))  # type: ignore[union-attr, arg-type]
            else:
                token = self._token(inputs)
                _write(self._proc.stdin,  # type: ignore[union-attr, arg-type]
                       ("run", compiled, token, dict(sizes) if sizes is not None else None, timing,
                        repeat, name, want))
            deadline = time.monotonic() + self.timeout
            phase = "waiting for the worker"
            while True:
                msg = self._reader.read(deadline)  # type: ignore[union-attr]
                if msg[0] == "phase":
                    phase = msg[1]
                    continue
                break
        except (EOFError, BrokenPipeError, ConnectionResetError):
            raise WorkerCrash(self._died(phase, start, timed_out=False), _validity(phase)) from None
        except TimeoutError:
            raise WorkerCrash(self._died(phase, start, timed_out=True), _validity(phase)) from None
        if msg[0] == "error":
            raise msg[1]
        _, result, info = msg
        if info is not None:
            info = dataclasses.replace(info, device=self.device)
        return result, info


def _validity(phase: str) -> str:
    return "compile-error" if phase.startswith("building") else "runtime-error"


# ---------------------------------------------------------------------------------------------
# the child's side


def _sendable(err: BaseException) -> BaseException:
    """The exception itself when it survives pickling, else a RemoteError with its text."""
    try:
        pickle.loads(_dumps(err))
        return err
    except Exception:  # noqa: BLE001 - any pickling failure
        return RemoteError(f"{type(err).__name__}: {err}")


def _copy_gbs(runner: Any, nbytes: int, repeat: int) -> float:
    """Device-to-device copy bandwidth (bytes read plus written over the median copy time,
    profiling events), as `liftkit bench` measures its roofline."""
    import statistics

    import pyopencl as cl

    ctx, q = runner.context, runner.queue
    a = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, nbytes)
    b = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, nbytes)
    cl.enqueue_copy(q, b, a).wait()
    times = []
    for _ in range(max(1, repeat)):
        ev = cl.enqueue_copy(q, b, a)
        ev.wait()
        times.append((ev.profile.end - ev.profile.start) * 1e-9)
    t = statistics.median(times)
    return 2 * nbytes / t / 1e9 if t > 0 else float("nan")


def serve(index: int, fingerprint: str, cache_dir: str, inp: BinaryIO, out: BinaryIO) -> None:
    """The child's loop: open the device, then answer jobs until told to exit."""
    from liftkit.backends.opencl import OpenCLRunner
    from liftkit.backends.opencl.cache import KernelCache

    try:
        devices = list_devices()
        if not 0 <= index < len(devices) or devices[index].fingerprint != fingerprint:
            matches = [d for d in devices if d.fingerprint == fingerprint]
            if not matches:
                raise OpenCLError(f"no device {fingerprint!r} in this process")
            device = matches[0]
        else:
            device = devices[index]
        # this child is the crash isolation already: no build probe in a grandchild
        runner = OpenCLRunner(device, KernelCache(cache_dir, safe_builds=False) if cache_dir
                              else KernelCache(safe_builds=False))
    except Exception as err:  # noqa: BLE001 - reported to the parent
        _write(out, ("failed", f"{type(err).__name__}: {err}"))
        return
    _write(out, ("ready", device.fingerprint))
    inputs: dict[int, list[Any]] = {}
    while True:
        try:
            msg = _read(inp)
        except EOFError:
            return
        kind = msg[0]
        if kind == "exit":
            return
        if kind == "inputs":
            inputs[msg[1]] = msg[2]
            continue
        if kind == "drop":
            inputs.pop(msg[1], None)
            continue
        if kind == "bandwidth":
            try:
                _write(out, ("done", _copy_gbs(runner, msg[1], msg[2]), None))
            except Exception as err:  # noqa: BLE001 - every failure goes back to the parent
                _write(out, ("error", _sendable(err)))
            continue
        if kind == "build":
            try:
                _write(out, ("phase", "building the kernels"))
                for k in msg[1].kernels:
                    runner.cache.get(runner.context, runner.device, k.source, k.build_options)
                _write(out, ("done", None, None))
            except Exception as err:  # noqa: BLE001 - every failure goes back to the parent
                _write(out, ("error", _sendable(err)))
            continue
        _, compiled, token, sizes, timing, repeat, name, want = msg
        try:
            _write(out, ("phase", "building the kernels"))
            for k in compiled.kernels:
                runner.cache.get(runner.context, runner.device, k.source, k.build_options)
            _write(out, ("phase", "running the kernels"))
            result, info = runner.run_with_info(compiled, *inputs[token], sizes=sizes,
                                                timing=timing, repeat=repeat, name=name)
            info = dataclasses.replace(info, device=dataclasses.replace(info.device, cl_device=None))
            _write(out, ("done", result if want else None, info))
        except Exception as err:  # noqa: BLE001 - every failure goes back to the parent
            _write(out, ("error", _sendable(err)))


def main() -> None:
    """`python -m liftkit.explore.worker INDEX FINGERPRINT CACHE_DIR`: the protocol on the
    original stdout; everything else printed (by Python or a driver) goes to stderr."""
    import warnings

    # pyopencl's "non-empty compiler output" warnings would crowd the driver's last words out
    warnings.simplefilter("ignore")
    os.environ["LIFTKIT_DRIVER_STDERR"] = "keep"  # builds leave fd 2 (our log) as it is
    proto_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    serve(int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.stdin.buffer, proto_out)


if __name__ == "__main__":
    # run the imported module's main, so the exceptions it sends back (RemoteError) pickle as
    # liftkit.explore.worker.RemoteError, not as __main__.RemoteError the parent cannot find
    from liftkit.explore.worker import main as _main

    _main()
