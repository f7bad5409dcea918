"""LLVM back end: the host target machine, the O3 pipeline (loop and SLP vectorisers on),
object code, and loading it into an MCJIT engine. Compiled objects are cached on disk by a key
of source, signature, specialisation, llvmlite version, host CPU and the code generator's own
source (an upgraded liftkit never loads objects an older one compiled); an unreadable or
corrupt entry is rebuilt."""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import llvmlite
import llvmlite.binding as llvm

_FORMAT = b"LKJIT1\n"


@functools.lru_cache(maxsize=1)
def generator_digest() -> str:
    """Digest of liftkit.jit's sources (a pure function of the installed files, memoised)."""
    h = hashlib.sha256()
    for f in sorted(Path(__file__).parent.rglob("*.py")):
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()


@dataclass
class Target:
    """The host's LLVM target machine (explicit object: no module-level state)."""
    tm: Any = None

    def __post_init__(self) -> None:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        self.cpu = llvm.get_host_cpu_name()
        self.features = llvm.get_host_cpu_features().flatten()
        self.tm = self.machine()
        self.triple = llvm.get_process_triple()
        self.data_layout = str(self.tm.target_data)
        self._pb: Any = None
        self._pto: Any = None

    def machine(self) -> Any:
        """A new host target machine (an execution engine owns and frees the one it gets)."""
        t = llvm.Target.from_default_triple()
        return t.create_target_machine(cpu=self.cpu, features=self.features, opt=3,
                                       reloc="static", codemodel="jitdefault")

    def optimise(self, ir_text: str) -> llvm.ModuleRef:
        mod = llvm.parse_assembly(ir_text)
        mod.verify()
        if self._pb is None:
            # one tuning-options/pass-builder pair per target, kept alive with it
            self._pto = llvm.create_pipeline_tuning_options(speed_level=3)
            self._pto.loop_vectorization = True
            self._pto.slp_vectorization = True
            self._pto.loop_unrolling = True
            self._pb = llvm.create_pass_builder(self.tm, self._pto)
        mpm = self._pb.getModulePassManager()
        mpm.run(mod, self._pb)
        return mod

    def emit_object(self, mod: llvm.ModuleRef) -> bytes:
        return self.tm.emit_object(mod)


@dataclass
class Loaded:
    """Machine code loaded into an engine (kept alive while its functions may be called)."""
    engine: Any
    addresses: dict[str, int] = field(default_factory=dict)


def load_object(target: Target, obj: bytes, names: tuple[str, ...]) -> Loaded:
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), target.machine())
    engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
    engine.finalize_object()
    out = Loaded(engine)
    for n in names:
        addr = engine.get_function_address(n)
        if not addr:
            raise RuntimeError(f"symbol {n} missing from compiled object")
        out.addresses[n] = addr
    return out


class DiskCache:
    """Object code by key under a directory (``LIFTKIT_JIT_CACHE`` or ~/.cache/liftkit/jit);
    writes are atomic (temporary file then rename); a bad entry reads as a miss."""

    def __init__(self, directory: str | os.PathLike | None = None, enabled: bool = True) -> None:
        d = directory or os.environ.get("LIFTKIT_JIT_CACHE") or \
            Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "liftkit" / "jit"
        self.dir = Path(d)
        self.enabled = enabled and os.environ.get("LIFTKIT_JIT_CACHE") != "off"

    @staticmethod
    def key(*parts: object) -> str:
        h = hashlib.sha256()
        for p in (llvmlite.__version__, llvm.llvm_version_info, _FORMAT, generator_digest()) + parts:
            h.update(repr(p).encode())
            h.update(b"\0")
        return h.hexdigest()

    def path(self, key: str) -> Path:
        return self.dir / key[:2] / (key + ".o")

    def get(self, key: str) -> bytes | None:
        if not self.enabled:
            return None
        try:
            blob = self.path(key).read_bytes()
        except OSError:
            return None
        if not blob.startswith(_FORMAT) or len(blob) < len(_FORMAT) + 32:
            return None
        digest, body = blob[len(_FORMAT):len(_FORMAT) + 32], blob[len(_FORMAT) + 32:]
        if hashlib.sha256(body).digest() != digest:
            return None
        return body

    def put(self, key: str, obj: bytes) -> None:
        if not self.enabled:
            return
        p = self.path(key)
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=p.parent, suffix=".tmp")
            with os.fdopen(fd, "wb") as f:
                f.write(_FORMAT + hashlib.sha256(obj).digest() + obj)
            os.replace(tmp, p)
        except OSError:
            pass  # a read-only cache directory only costs recompilation
