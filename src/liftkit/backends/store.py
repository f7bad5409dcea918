"""What every backend's build cache shares: where entries live, how keys are made, and how an
entry is written so that processes sharing the directory never see half of one."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Sequence

ENV_DIR = "LIFTKIT_CACHE_DIR"


def default_cache_dir() -> Path:
    """`$LIFTKIT_CACHE_DIR`, else `~/.cache/liftkit/kernels`."""
    env = os.environ.get(ENV_DIR)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "liftkit" / "kernels"


def user_dir(env_var: str, name: str) -> Path:
    """Where liftkit keeps a kind of per-user data (`name`: profiles of the BLAS, of the
    runtime): `$env_var` if set, else `$XDG_CACHE_HOME/liftkit/name` (`~/.cache/liftkit/name`)."""
    env = os.environ.get(env_var)
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "liftkit" / name


def hash_key(parts: Sequence[str]) -> str:
    """sha256 over the parts with separators: ("ab", "c") and ("a", "bc") differ."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def atomic_write(path: Path, data: bytes) -> None:
    """Write to a temporary file in the same directory, then rename it into place: readers see
    the old entry or the new one. Raises OSError (callers decide whether that matters)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem[:16]}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)  # mkstemp makes it private; entries are shareable
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
