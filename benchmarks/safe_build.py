"""What crash-safe builds cost on the CPU device: the first build of a kernel not yet known to
build (built in a forked child, its binary loaded here) against a plain build in this process,
for every kernel of the bundled OpenCL-level programs; and a build once the key is known good.

Each kernel's source gets a fresh comment per measurement, so neither liftkit's cache nor
pyopencl's own binary cache answers; the order of the two builds alternates per kernel.

    python benchmarks/safe_build.py [--device cpu] [--programs 12]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
import warnings
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    from liftkit.backends.opencl import KernelCache, OpenCLRunner
    from liftkit.backends.opencl.cache import build_from_source
    from liftkit.codegen import compile_program
    from liftkit.programs import PROGRAMS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--programs", type=int, default=12, help="bundled low-level programs to use")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    runner = OpenCLRunner(args.device, KernelCache(disk=False))
    ctx, dev = runner.context, runner.device
    marks = Path(tempfile.mkdtemp(prefix="liftkit-known-good-"))
    sources = []
    for spec in PROGRAMS:
        if spec.level != "low":
            continue
        try:
            sources += [(spec.name, k.source, k.build_options) for k in compile_program(spec.program).kernels]
        except Exception:  # noqa: BLE001 - a program this dialect refuses
            continue
        if len({n for n, _, _ in sources}) >= args.programs:
            break
    plain, safe, first, known = [], [], [], []
    shared = KernelCache(disk=False, safe_builds=True)  # its build server stays up
    shared.known_good.directory = marks
    for i, (name, src, opts) in enumerate(sources):
        def fresh() -> str:
            return f"// {uuid.uuid4().hex}\n{src}"

        def time_plain() -> None:
            t0 = time.perf_counter()
            build_from_source(ctx, dev, fresh(), opts)
            plain.append(time.perf_counter() - t0)

        def time_safe() -> None:
            s = fresh()
            t0 = time.perf_counter()
            shared.get(ctx, dev, s, opts)
            safe.append(time.perf_counter() - t0)
            cache = KernelCache(disk=False, safe_builds=True)  # a new server: forked first
            cache.known_good.directory = marks
            t0 = time.perf_counter()
            cache.get(ctx, dev, fresh(), opts)
            first.append(time.perf_counter() - t0)
            assert cache.stats().probes == 1
            cache.close()
            again = KernelCache(disk=False, safe_builds=True)
            again.known_good.directory = marks
            t0 = time.perf_counter()
            again.get(ctx, dev, s, opts)  # known good: built here, no child
            known.append(time.perf_counter() - t0)
            assert again.stats().probes == 0

        for f in ((time_plain, time_safe) if i % 2 == 0 else (time_safe, time_plain)):
            f()
    assert shared.stats().probes == len(sources)
    extra = [s - p for s, p in zip(safe, plain)]
    print(f"device: {dev.label}; {len(sources)} kernels of {args.programs} bundled programs")
    print("| build | median ms | max ms |")
    print("|---|---|---|")
    for label, xs in (("in this process (no probe)", plain),
                      ("not known good: in the build server, binary loaded here", safe),
                      ("  the same, the process's first (the server forked)", first),
                      ("known good: in this process", known),
                      ("added by the server (per kernel)", extra)):
        print(f"| {label} | {statistics.median(xs) * 1e3:.1f} | {max(xs) * 1e3:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
