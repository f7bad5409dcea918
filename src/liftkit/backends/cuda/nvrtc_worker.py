"""The NVRTC compile server: the only process that loads NVRTC.

NVRTC and NVIDIA's OpenCL compiler cannot share a process (once NVRTC has compiled, every
later NVIDIA OpenCL build fails with "Don't understand command line argument "sm_90"", seen on
an H100 with driver 580 and NVRTC 13; PoCL's LLVM has crashed beside it too), so liftkit asks
this helper, started once per process by `liftkit.backends.cuda.nvrtc.CompileServer`.

It is run as a script (`python -P nvrtc_worker.py`) and imports only the standard library and
cuda-python, never liftkit. Protocol on stdin/stdout: frames of an 8-byte little-endian length
and a pickle. Requests: ("version",), ("archs",), ("compile", source, arch, options, name),
("exit",). Answers: ("ok", value) or ("error", kind, message) with kind "missing" (no NVRTC),
"nvrtc" (the kernel does not compile; the message is NVRTC's log) or "failed" (an NVRTC call
failed). A compile's value is (ptx, cubin or None, log).
"""

from __future__ import annotations

import os
import pickle
import struct
import sys
from typing import Any, BinaryIO, Optional

HEADER = struct.Struct("<Q")


def read_frame(stream: BinaryIO) -> Optional[Any]:
    """The next message, or None at the end of the stream (the other side has gone)."""
    head = stream.read(HEADER.size)
    if len(head) < HEADER.size:
        return None
    (size,) = HEADER.unpack(head)
    body = stream.read(size)
    if len(body) < size:
        return None
    return pickle.loads(body)


def write_frame(stream: BinaryIO, message: Any) -> None:
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(HEADER.pack(len(body)) + body)
    stream.flush()


class Failure(Exception):
    """An answer of kind `kind` ("missing", "nvrtc", "failed")."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _nvrtc() -> Any:
    try:
        from cuda.bindings import nvrtc
    except ImportError as err:
        raise Failure("missing", f"the CUDA backend needs cuda-python and NVRTC: pip install "
                                 f"cuda-python nvidia-cuda-nvrtc ({err})") from None
    return nvrtc


def _check(result: tuple, what: str) -> tuple:  # type: ignore[type-arg]
    if result[0] != _nvrtc().nvrtcResult.NVRTC_SUCCESS:
        raise Failure("failed", f"NVRTC {what} failed: {result[0].name}")
    return result[1:]


def version() -> tuple[int, int]:
    try:
        major, minor = _check(_nvrtc().nvrtcVersion(), "version query")
    except Failure:
        raise
    except Exception as err:  # noqa: BLE001 - the library itself is missing: say so
        raise Failure("missing", f"NVRTC is not installed (pip install nvidia-cuda-nvrtc): "
                                 f"{err}") from None
    return int(major), int(minor)


def archs() -> tuple[int, ...]:
    version()
    (found,) = _check(_nvrtc().nvrtcGetSupportedArchs(), "architecture query")
    return tuple(int(a) for a in found)


def compile_program(source: str, arch: str, options: list[str], name: str
                    ) -> tuple[str, Optional[bytes], str]:
    """(PTX, cubin for an `sm_` arch or None, log) of one translation unit."""
    version()
    nvrtc = _nvrtc()
    (prog,) = _check(nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], []),
                     "program creation")
    try:
        opts = [f"-arch={arch}", *options]
        result = nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
        (size,) = _check(nvrtc.nvrtcGetProgramLogSize(prog), "log query")
        log_buf = b" " * size
        _check(nvrtc.nvrtcGetProgramLog(prog, log_buf), "log query")
        log = log_buf.rstrip(b"\0 ").decode(errors="replace").strip()
        if result[0] != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise Failure("nvrtc", log)
        (size,) = _check(nvrtc.nvrtcGetPTXSize(prog), "PTX query")
        ptx = b" " * size
        _check(nvrtc.nvrtcGetPTX(prog, ptx), "PTX query")
        cubin: Optional[bytes] = None
        if arch.startswith("sm_"):
            (size,) = _check(nvrtc.nvrtcGetCUBINSize(prog), "cubin query")
            buf = b" " * size
            _check(nvrtc.nvrtcGetCUBIN(prog, buf), "cubin query")
            cubin = bytes(buf)
        return ptx.rstrip(b"\0").decode(), cubin, log
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def answer(request: tuple) -> tuple:  # type: ignore[type-arg]
    try:
        if request[0] == "version":
            return ("ok", version())
        if request[0] == "archs":
            return ("ok", archs())
        if request[0] == "compile":
            return ("ok", compile_program(*request[1:]))
        return ("error", "failed", f"unknown request {request[0]!r}")
    except Failure as err:
        return ("error", err.kind, str(err))
    except Exception as err:  # noqa: BLE001 - any other failure is the caller's one error line
        return ("error", "failed", f"{type(err).__name__}: {err}")


def serve() -> None:
    """Answer requests until ("exit",) or the end of stdin. Anything the libraries print goes
    to stderr: stdout carries only frames."""
    requests = sys.stdin.buffer
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    while True:
        request = read_frame(requests)
        if request is None or request[0] == "exit":
            return
        write_frame(answers, answer(request))


if __name__ == "__main__":
    serve()
