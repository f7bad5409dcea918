"""Runtime device profiles (seed 003 §7.4): how many compute queues pay off on a device for
small independent kernels, measured by ``liftkit runtime calibrate`` and read by ``Runtime``.

A profile is a small JSON file keyed by the device's fingerprint (like ``liftkit.blas``'s), in
``$LIFTKIT_RUNTIME_PROFILES`` or ``~/.cache/liftkit/runtime``.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from liftkit.backends.store import user_dir

from .tables import Kernel

FORMAT = "liftkit-runtime-profile/1"
GAIN = 1.10  # more queues are chosen only if they make the batch at least 10% faster

SMALL = Kernel("lk_calib_small", {
    "opencl": """kernel void lk_calib_small(global float* y, long yo, long n) {
        long i = get_global_id(0); float s = y[yo + i];
        for (long k = 0; k < n; k++) s = s * 0.9999f + 1.0f;
        y[yo + i] = s; }""",
    "cuda": """extern "C" __global__ void lk_calib_small(float* y, long yo, long n) {
        long i = blockIdx.x * (long)blockDim.x + threadIdx.x; float s = y[yo + i];
        for (long k = 0; k < n; k++) s = s * 0.9999f + 1.0f;
        y[yo + i] = s; }"""})


class RuntimeProfileError(ValueError):
    """A runtime profile that cannot be read."""


def profile_dir() -> Path:
    return user_dir("LIFTKIT_RUNTIME_PROFILES", "runtime")


def profile_path(fingerprint: str, directory: Optional[Path] = None) -> Path:
    name = "runtime-" + hashlib.sha256(fingerprint.encode()).hexdigest()[:16] + ".json"
    return (directory if directory is not None else profile_dir()) / name


def load_profile(fingerprint: str, directory: Optional[Path] = None) -> Optional[dict]:
    """The device's profile, or None when it was never calibrated."""
    p = profile_path(fingerprint, directory)
    if not p.is_file():
        return None
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise RuntimeProfileError(f"cannot read the runtime profile {p}: {err}") from None
    if data.get("format") != FORMAT or data.get("device", {}).get("fingerprint") != fingerprint:
        raise RuntimeProfileError(f"{p} is not a runtime profile of this device")
    return data


def queues_for(dev: Any, directory: Optional[Path] = None) -> int:
    """Compute queues for a device: its profile's choice, else 1."""
    fp = getattr(dev, "fingerprint", None)
    if fp is None:
        return 1
    data = load_profile(fp, directory)
    return max(1, int(data["queues"])) if data else 1


def calibrate(backend: str = "auto", device: Optional[str] = None,
              candidates: Sequence[int] = (1, 2, 4), kernels: int = 32, items: int = 64,
              work: int = 2000, repeats: int = 3, directory: Optional[Path] = None,
              save: bool = True) -> dict:
    """Time ``kernels`` independent small kernels (``items`` work-items, ``work`` iterations
    each) on 1 and N compute queues, best of ``repeats``; check each result; choose the
    fewest queues within ``GAIN`` of the fastest and write the profile."""
    from .core import Runtime
    from .devices import open_device
    if not candidates or 1 not in candidates or min(candidates) < 1:
        raise ValueError("the queue counts to measure must include 1 (e.g. 1,2,4)")
    dev = open_device(backend, device)
    fp, label = dev.fingerprint, dev.label
    want = np.ones(items, np.float32)
    for _ in range(work):
        want = want * np.float32(0.9999) + np.float32(1.0)
    seconds: dict[int, float] = {}
    for n in sorted(set(int(c) for c in candidates)):
        rt = Runtime(dev=open_device(backend, device), queues=n)
        try:
            vs = [rt.empty((items,), np.float32) for _ in range(kernels)]
            best = float("inf")
            for r in range(repeats + 1):  # the first round builds the kernel and allocates
                for v in vs:
                    rt.write(v, np.ones(items, np.float32))
                rt.wait_all(sync=False)
                t0 = time.perf_counter()
                for v in vs:
                    rt.launch(SMALL, (items,), [v, np.int64(work)], writes=[v])
                rt.wait_all(sync=False)
                if r:
                    best = min(best, time.perf_counter() - t0)
            for v in vs:
                np.testing.assert_allclose(rt.read(v), want, rtol=1e-4)
        finally:
            rt.close()
        seconds[n] = best
    fastest = min(seconds.values())
    chosen = min(n for n, t in seconds.items() if t <= fastest * GAIN)
    if seconds[chosen] * GAIN > seconds[1]:
        chosen = 1  # more queues must beat one queue clearly, not by noise
    data = {"format": FORMAT, "device": {"fingerprint": fp, "label": label},
            "queues": chosen, "seconds": {str(n): t for n, t in seconds.items()},
            "kernels": kernels, "items": items, "work": work,
            "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if save:
        p = profile_path(fp, directory)
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        tmp.replace(p)
        data["path"] = str(p)
    return data
