"""Making OpenCL runtimes installed from pip visible to pyopencl's ICD loader.

pyopencl's wheel bundles PoCL built on LLVM 14, which cannot name CPUs newer than it (AMD Zen 5,
for one): it then asks clang for the CPU "generic" and every build fails ("unknown target CPU
'generic'"). Intel's CPU runtime (`intel-opencl-rt`, also from pip) compiles for such CPUs, but
installs no ICD file the loader would find. The loader reads its list of runtimes from the
directory `OCL_ICD_VENDORS` names (instead of /etc/OpenCL/vendors), so before the first platform
query we point it at a directory holding the system's ICD files plus one for each pip runtime.
A user who set `OCL_ICD_VENDORS` keeps their setting.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Optional

SYSTEM_VENDORS = Path("/etc/OpenCL/vendors")

# distribution -> the runtime library it installs
PIP_RUNTIMES = {"intel-opencl-rt": "libintelocl.so"}


def pip_runtime_libraries() -> list[Path]:
    """Absolute paths of the OpenCL runtime libraries installed as Python distributions."""
    found: list[Path] = []
    for dist_name, lib in PIP_RUNTIMES.items():
        try:
            dist = metadata.distribution(dist_name)
        except metadata.PackageNotFoundError:
            continue
        for f in dist.files or ():
            if f.name == lib:
                path = Path(str(dist.locate_file(f))).resolve()
                if path.is_file():
                    found.append(path)
                    break
    return found


def vendors_directory(libraries: list[Path], system: Path = SYSTEM_VENDORS,
                      root: Optional[Path] = None) -> Path:
    """A directory with the system's ICD files and one file per library; its name depends on
    the contents, so concurrent processes agree and a stale directory is never reused."""
    entries: dict[str, str] = {}
    if system.is_dir():
        for icd in sorted(system.glob("*.icd")):
            try:
                entries[icd.name] = icd.read_text()
            except OSError:
                continue
    for lib in libraries:
        entries[f"liftkit-{lib.stem}.icd"] = f"{lib}\n"
    digest = hashlib.sha256(repr(sorted(entries.items())).encode()).hexdigest()[:16]
    base = root or Path(tempfile.gettempdir()) / f"liftkit-icd-{os.getuid()}"
    target = base / digest
    if not target.is_dir():
        staging = Path(tempfile.mkdtemp(prefix="staging-", dir=_mkdir(base)))
        for name, text in entries.items():
            (staging / name).write_text(text)
        try:
            staging.rename(target)
        except OSError:  # another process got there first: its copy has the same contents
            for f in staging.iterdir():
                f.unlink()
            staging.rmdir()
    return target


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def register_pip_runtimes(environ: "os._Environ[str] | dict[str, str]" = os.environ) -> Optional[Path]:
    """Point the ICD loader at the system's runtimes plus those installed from pip. Call before
    the first platform query. Returns the directory used, or None when nothing was changed."""
    if environ.get("OCL_ICD_VENDORS"):
        return None
    libraries = pip_runtime_libraries()
    if not libraries:
        return None
    try:
        directory = vendors_directory(libraries)
    except OSError:  # an unwritable temporary directory: the runtimes stay invisible
        return None
    environ["OCL_ICD_VENDORS"] = str(directory)
    return directory
