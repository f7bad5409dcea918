"""A cache of built CUDA modules, in memory and on disk, with the OpenCL cache's rules.

Entries are keyed by sha256 of (source, device fingerprint — GPU, compute capability, driver —,
NVRTC options, NVRTC version), so another device, driver or compiler never gets a stale cubin.
A disk entry is the cubin behind a header holding its own sha256: an entry that is truncated,
corrupted or unloadable is rebuilt from source and overwritten, never used.
"""

from __future__ import annotations

import hashlib
import logging
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence, Union

from liftkit.backends.cuda.devices import Device
from liftkit.backends.cuda.nvrtc import CUDAError, arch_for, compile_cuda, nvrtc_version
from liftkit.backends.store import atomic_write, default_cache_dir, hash_key

log = logging.getLogger("liftkit.cache")

MAGIC = b"LIFTKIT-CUBIN-1\n"


def cuda_options(device: Device, extra: Sequence[str] = ()) -> tuple[str, ...]:
    """NVRTC options for a device: its architecture, then the kernel's own options."""
    return (f"-arch={arch_for(device.compute_capability)}", *extra)


def module_key(source: str, device: Device, options: Sequence[str]) -> str:
    version = ".".join(map(str, nvrtc_version()))
    return hash_key((source, device.fingerprint, " ".join(options), f"nvrtc {version}"))


@dataclass(frozen=True)
class CacheStats:
    hits: int  # served from memory
    disk_hits: int  # loaded from a cubin on disk
    misses: int  # compiled by NVRTC

    def as_dict(self) -> dict[str, int]:
        return {"hits": self.hits, "disk_hits": self.disk_hits, "misses": self.misses}


def _load(image: bytes, ptx: bool, name: str) -> Any:
    try:
        from cuda.core import ObjectCode
    except ImportError:  # cuda-core before 0.4 kept its API under `experimental`
        from cuda.core.experimental import ObjectCode
    return ObjectCode.from_ptx(image, name=name) if ptx else ObjectCode.from_cubin(image, name=name)


class ModuleCache:
    """Loaded modules (cuda.core ObjectCode) by key. `directory=None` uses the default cache
    directory; `disk=False` keeps the cache in memory only; the least recently used beyond
    `max_memory` are dropped."""

    def __init__(self, directory: Union[str, Path, None] = None, disk: bool = True,
                 max_memory: int = 512) -> None:
        self.directory: Optional[Path] = (Path(directory) if directory is not None
                                          else default_cache_dir()) if disk else None
        self.max_memory = max_memory
        self._memory: OrderedDict[str, Any] = OrderedDict()
        self._hits = self._disk_hits = self._misses = 0

    def stats(self) -> CacheStats:
        return CacheStats(self._hits, self._disk_hits, self._misses)

    def clear_memory(self) -> None:
        self._memory.clear()

    def path_for(self, key: str) -> Optional[Path]:
        return None if self.directory is None else self.directory / f"{key}.cubin"

    def get(self, device: Device, source: str, options: Sequence[str] = (), name: str = "kernel") -> Any:
        """The loaded module of `source` for `device`, from memory, disk or NVRTC."""
        opts = cuda_options(device, options)
        key = module_key(source, device, opts)
        mod = self._memory.get(key)
        if mod is not None:
            self._memory.move_to_end(key)
            self._hits += 1
            return mod
        mod = self._from_disk(key, name)
        if mod is not None:
            self._disk_hits += 1
            log.info("kernel cache hit (disk) %s", key[:16])
        else:
            self._misses += 1
            log.info("kernel cache miss %s: compiling with NVRTC", key[:16])
            arch = opts[0].split("=", 1)[1]
            out = compile_cuda(source, arch, opts[1:], name=f"{name}.cu")
            image = out.cubin if out.cubin is not None else out.ptx.encode()
            mod = _load(image, out.cubin is None, name)
            if out.cubin is not None:
                self._store(key, out.cubin)
        self._memory[key] = mod
        while len(self._memory) > max(self.max_memory, 1):
            self._memory.popitem(last=False)
        return mod

    def put(self, device: Device, source: str, options: Sequence[str], cubin: bytes) -> None:
        """Store a cubin built elsewhere (a pool of NVRTC processes) for `source`, so a later
        `get` of the same source, options and device loads it from disk instead of compiling."""
        self._store(module_key(source, device, cuda_options(device, options)), cubin)

    # -- disk ------------------------------------------------------------------------------------

    def _from_disk(self, key: str, name: str) -> Any:
        path = self.path_for(key)
        if path is None or not path.is_file():
            return None
        try:
            cubin = unwrap_entry(path.read_bytes(), key)
            mod = _load(cubin, False, name)
            mod.get_kernel(name)  # loading is lazy: make the driver read it now
            return mod
        except (OSError, ValueError, CUDAError, RuntimeError) as err:
            log.warning("kernel cache: cannot use %s (%s); rebuilding from source", path,
                        str(err).splitlines()[0] if str(err) else type(err).__name__)
            return None
        except Exception as err:  # noqa: BLE001 - a driver error of cuda.core's own type
            log.warning("kernel cache: cannot load %s (%s); rebuilding from source", path,
                        type(err).__name__)
            return None

    def _store(self, key: str, cubin: bytes) -> None:
        path = self.path_for(key)
        if path is None:
            return
        try:
            atomic_write(path, wrap_entry(cubin, key))
        except OSError as err:  # a read-only or full disk must not fail the run
            log.warning("kernel cache: cannot write %s (%s)", path, err)


def wrap_entry(cubin: bytes, key: str) -> bytes:
    """A disk entry: MAGIC, its key, the cubin's sha256, the cubin. The key makes an entry
    copied over another's file a miss, not a module with the wrong kernels."""
    return MAGIC + key.encode() + b"\n" + hashlib.sha256(cubin).digest() + cubin


def unwrap_entry(data: bytes, key: str) -> bytes:
    """The cubin of an entry written for `key`; ValueError saying why not otherwise."""
    head = MAGIC + key.encode() + b"\n"
    if not data.startswith(MAGIC):
        raise ValueError("not a liftkit cubin entry")
    if not data.startswith(head):
        raise ValueError("the entry of another kernel (or an older liftkit)")
    digest, cubin = data[len(head):len(head) + 32], data[len(head) + 32:]
    if not cubin or hashlib.sha256(cubin).digest() != digest:
        raise ValueError("checksum mismatch (corrupted)")
    return cubin
