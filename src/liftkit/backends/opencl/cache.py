"""A cache of built OpenCL programs, in memory and on disk.

Building is the slow part of running a small kernel (about a second on PoCL, per kernel, per
process), and benchmark sweeps and test suites rebuild the same sources over and over. Entries
are keyed by sha256 of (source, device fingerprint, build options), so a driver update or a
different device never gets a stale binary. Disk entries are the device binaries; a binary that
fails to load is rebuilt from source and overwritten. Writes go to a temporary file first and
are renamed into place, so processes sharing the directory never see half an entry.

A source not known to build on a CPU device is built first in a forked child (`safebuild.py`):
a compiler that crashes on it becomes a `CompilerCrash` instead of the end of the process.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import pyopencl as cl

from liftkit.backends.opencl.buildlog import log_build_log, quiet_build
from liftkit.backends.opencl.devices import Device, OpenCLError
from liftkit.backends.opencl.safebuild import (
    DEFAULT_TIMEOUT_S, BuildServer, ChildDied, KnownGood, probe_applies, safe_builds_wanted,
)
from liftkit.backends.store import ENV_DIR, atomic_write, default_cache_dir, hash_key  # noqa: F401

log = logging.getLogger("liftkit.cache")

def cache_key(source: str, device: Device, options: Sequence[str] = ()) -> str:
    return hash_key((source, device.fingerprint, " ".join(options)))


@dataclass(frozen=True)
class CacheStats:
    hits: int  # served from memory
    disk_hits: int  # loaded from a binary on disk
    misses: int  # built from source
    probes: int = 0  # of the misses, first built in a child (not yet known to build)

    def as_dict(self) -> dict[str, int]:
        return {"hits": self.hits, "disk_hits": self.disk_hits, "misses": self.misses}


class BuildError(OpenCLError):
    """The OpenCL compiler rejected a kernel: the message names its errors, `log` holds the
    whole build log (also logged on `liftkit.cache`)."""

    log: str = ""


class CompilerCrash(BuildError):
    """The device's compiler crashed (or hung) building a kernel, in the child that tried it
    first: the driver's defect, reported in one line with the way around it. The runner puts
    the program's name in front (`with_program`)."""

    def __init__(self, message: str, program: str = "") -> None:
        super().__init__(f"{program}: {message}" if program else message)
        self.message, self.program = message, program
        self.validity = "compile-error"  # how the tuning database records it

    @property
    def needs_program(self) -> bool:
        return not self.program

    def with_program(self, program: str) -> "CompilerCrash":
        return CompilerCrash(self.message, program)

    def __reduce__(self) -> Any:
        return (CompilerCrash, (self.message, self.program))


def crash_message(device: Device, source: str, how: str, last_words: str) -> str:
    """What a user reads when the compiler crashed on a kernel of theirs."""
    m = re.search(r"\bkernel\s+void\s+(\w+)", source)
    kernel = f"kernel {m.group(1)}" if m else "a kernel"
    said = f" (its last words: {last_words})" if last_words else ""
    return (f"the OpenCL compiler of {device.label} {how} building {kernel}: the driver's "
            f"defect, not the program's{said}; way around it: other sizes (this kind of crash "
            f"hits loops of some constant trip counts, e.g. 95, 96 or 288 on Intel's CPU "
            f"runtime: results/issue11/intel_vplan_crash.cl) or another device (--device)")


class KernelCache:
    """Built programs by key. `directory=None` uses `default_cache_dir()`; `disk=False` keeps
    the cache in memory only. Memory entries are per OpenCL context (a program belongs to the
    context it was built in); the least recently used beyond `max_memory` are dropped, so a
    search over thousands of kernel variants does not hold every program alive."""

    def __init__(self, directory: Union[str, Path, None] = None, disk: bool = True,
                 max_memory: int = 512, safe_builds: Optional[bool] = None,
                 probe_timeout: float = DEFAULT_TIMEOUT_S) -> None:
        base = Path(directory) if directory is not None else default_cache_dir()
        self.directory: Optional[Path] = base if disk else None
        self.max_memory = max_memory
        self._memory: OrderedDict[tuple[str, int], Any] = OrderedDict()
        self._hits = self._disk_hits = self._misses = self._probes = 0
        # sources not yet known to build on a CPU device are built in a child first (None:
        # unless LIFTKIT_SAFE_BUILD=0); the keys known to build are kept beside the binaries
        # (a memory-only cache writes nothing: it remembers them for this process)
        self.safe_builds = safe_builds_wanted() if safe_builds is None else safe_builds
        self.probe_timeout = probe_timeout
        self.known_good = KnownGood(base / "known-good" if disk else None)
        self._servers: dict[int, BuildServer] = {}  # by context: the child that builds first

    def stats(self) -> CacheStats:
        return CacheStats(self._hits, self._disk_hits, self._misses, self._probes)

    def clear_memory(self) -> None:
        self._memory.clear()

    def close(self) -> None:
        """Stop the build servers (they also stop with this object or the process)."""
        for server in self._servers.values():
            server.close()
        self._servers.clear()

    def path_for(self, key: str) -> Optional[Path]:
        return None if self.directory is None else self.directory / f"{key}.bin"

    def get(self, context: Any, device: Device, source: str, options: Sequence[str] = ()) -> Any:
        """The built `cl.Program` for `source` on `device`, from memory, disk or a fresh build."""
        key = cache_key(source, device, options)
        mkey = (key, int(context.int_ptr))
        prog = self._memory.get(mkey)
        if prog is not None:
            self._memory.move_to_end(mkey)
            self._hits += 1
            log.debug("kernel cache hit (memory) %s", key[:16])
            return prog
        prog = self._load(context, device, key, options)
        if prog is not None:
            self._disk_hits += 1
            log.info("kernel cache hit (disk) %s", key[:16])
        else:
            self._misses += 1
            log.info("kernel cache miss %s: building from source", key[:16])
            prog = self._build(context, device, key, source, options)
            self._store(prog, device, key)
        self._memory[mkey] = prog
        while len(self._memory) > max(self.max_memory, 1):
            self._memory.popitem(last=False)
        return prog

    def _build(self, context: Any, device: Device, key: str, source: str,
               options: Sequence[str]) -> Any:
        """Build from source: in this process when the key is known to build (or probing does
        not apply), else first in a forked child whose binary this process then loads."""
        if not (self.safe_builds and probe_applies(device)) or key in self.known_good:
            prog = build_from_source(context, device, source, options)
        else:
            self._probes += 1
            try:
                server = self._servers.get(int(context.int_ptr))
                if server is None or server.context is not context:
                    server = self._servers[int(context.int_ptr)] = BuildServer(context)
                out = server.build(device.cl_device, source, options, self.probe_timeout)
            except ChildDied as died:
                log.info("OpenCL compiler crash on %s: %s; %s", device.label, died.how, died.last_words)
                raise CompilerCrash(crash_message(device, source, died.how, died.last_words)) from None
            if out.error:
                raise build_error(device, out.error)
            if out.log:
                _child_build_log(device, out.log)
            prog = _from_binary(context, device, out.binary or b"", options)
            if prog is None:  # the binary did not load: the compiler builds it here (it did there)
                prog = build_from_source(context, device, source, options)
        self.known_good.add(key)
        return prog

    # -- disk ------------------------------------------------------------------------------------

    def _load(self, context: Any, device: Device, key: str, options: Sequence[str]) -> Any:
        path = self.path_for(key)
        if path is None or not path.is_file():
            return None
        try:
            binary = _unwrap(path.read_bytes(), key)
            if binary is None:
                log.info("kernel cache: %s is not this kernel's entry (renamed, copied over, "
                         "truncated or from an older liftkit); rebuilding from source", path)
                return None
            prog = cl.Program(context, [device.cl_device], [binary])
            with quiet_build(f"loading {path.name}"):
                prog.build(options=list(options), devices=[device.cl_device])
            return prog
        except (OSError, cl.Error) as err:
            log.warning("kernel cache: cannot load %s (%s); rebuilding from source",
                        path, str(err).splitlines()[0] if str(err) else type(err).__name__)
            return None

    def _store(self, prog: Any, device: Device, key: str) -> None:
        path = self.path_for(key)
        if path is None:
            return
        try:
            binaries = prog.get_info(cl.program_info.BINARIES)
            devices = prog.get_info(cl.program_info.DEVICES)
            binary = next((b for d, b in zip(devices, binaries) if d == device.cl_device),
                          binaries[0] if binaries else b"")
            if not binary:
                return
            atomic_write(path, _wrap(binary, key))
        except (OSError, cl.Error) as err:  # a read-only or full disk must not fail the run
            log.warning("kernel cache: cannot write %s (%s)", path, err)


# A disk entry is MAGIC, its key, the sha256 of the binary, then the binary: an entry copied
# over another's file, or cut short, is rebuilt instead of launched with the wrong arguments.
ENTRY_MAGIC = b"liftkit-cl-entry-1\n"


def _wrap(binary: bytes, key: str) -> bytes:
    return ENTRY_MAGIC + key.encode() + b"\n" + hashlib.sha256(binary).digest() + binary


def _unwrap(data: bytes, key: str) -> Optional[bytes]:
    """The binary of an entry written for `key`, or None for anything else."""
    head = ENTRY_MAGIC + key.encode() + b"\n"
    if not data.startswith(head):
        return None
    digest, binary = data[len(head):len(head) + 32], data[len(head) + 32:]
    return binary if binary and hashlib.sha256(binary).digest() == digest else None


def build_from_source(context: Any, device: Device, source: str, options: Sequence[str] = ()) -> Any:
    """Build `source` for one device, turning a compiler error into a BuildError with the log."""
    prog = cl.Program(context, source)
    try:
        with quiet_build(f"build on {device.label}"):
            prog.build(options=list(options), devices=[device.cl_device])
    except cl.Error as err:
        raise build_error(device, str(err)) from None
    log_build_log(prog, device.cl_device, f"build on {device.label}")
    return prog


def build_error(device: Device, full: str) -> BuildError:
    """The BuildError of a compiler's error text (its error lines; the whole text in `log`)."""
    log.info("OpenCL build failed on %s:\n%s", device.label, full)
    error = BuildError(f"OpenCL build failed on {device.label}: {compiler_errors(full)}")
    error.log = full
    return error


def _child_build_log(device: Device, text: str) -> None:
    """The build log of a build in the server, where this process's would go: the log (shown
    with `liftkit --verbose`), or a CompilerWarning when PYOPENCL_COMPILER_OUTPUT asks for it."""
    import warnings

    from liftkit.backends.opencl.buildlog import compiler_output_requested
    from liftkit.backends.opencl.buildlog import log as build_log

    if compiler_output_requested():
        warnings.warn(f"build on {device.label}: {text}", cl.CompilerWarning, stacklevel=3)
    else:
        build_log.info("build on %s: build log:\n%s", device.label, text)


def _from_binary(context: Any, device: Device, binary: bytes, options: Sequence[str]) -> Any:
    """A program loaded from the device binary a child built, or None if it does not load."""
    if not binary:
        return None
    try:
        prog = cl.Program(context, [device.cl_device], [binary])
        with quiet_build("loading the binary built in a child"):
            prog.build(options=list(options), devices=[device.cl_device])
        return prog
    except cl.Error as err:
        log.info("the binary built in a child does not load on %s (%s); building here",
                 device.label, str(err).splitlines()[0] if str(err) else type(err).__name__)
        return None


_CARET = re.compile(r"^[\s^~]*$")
_EXCERPT = re.compile(r"^\s*\d+\s*\|\s?")
_SUMMARY = re.compile(r"^(\d+ (errors?|warnings?)( and \d+ \w+)? generated|compilation failed)",
                      re.IGNORECASE)


def compiler_errors(log_text: str, at_most: int = 2) -> str:
    """The compiler's error lines with the source line each points at (`2:13: error: expected
    expression (at `return x +;`)`), not the whole log pyopencl wraps around them; the whole
    text when no line says error."""
    lines = log_text.splitlines()
    found: list[str] = []
    for k, line in enumerate(lines):
        text = line.strip()
        if not re.search(r"\berror\b", text, re.IGNORECASE) or text.startswith("clBuildProgram"):
            continue
        nxt = _EXCERPT.sub("", lines[k + 1]).strip() if k + 1 < len(lines) else ""
        looks_like_source = (nxt and not _CARET.match(nxt) and not re.search(r"\d+:\d+:", nxt)
                             and not _SUMMARY.match(nxt))
        found.append(f"{text} (at `{nxt}`)" if looks_like_source else text)
        if len(found) == at_most:
            break
    if not found:
        return "; ".join(ln.strip() for ln in lines if ln.strip())
    return "; ".join(found)
