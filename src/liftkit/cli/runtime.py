"""`liftkit runtime calibrate`: measure how many compute queues pay off for small independent
kernels on a device and write its runtime profile (seed 003 §7.4), which ``liftkit.runtime``
reads.

    liftkit runtime calibrate [--backend auto|opencl|cuda] [--device gpu|cpu|NAME]
                              [--queues 1,2,4] [--kernels 32] [--dir DIR] [--dry-run]
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from liftkit.cli.resolve import CliError


def _counts(text: str) -> list[int]:
    try:
        out = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        out = []
    if not out or 1 not in out or min(out) < 1 or max(out) > 16:
        raise argparse.ArgumentTypeError(f"queue counts must be integers 1..16 including 1, "
                                         f"like 1,2,4 (got {text!r})")
    return out


def configure_runtime_parser(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="runtime_command", metavar="ACTION", parser_class=type(p))
    sub.required = True
    c = sub.add_parser("calibrate", help="time small independent kernels on 1 and N queues and "
                                         "write the device's runtime profile")
    c.add_argument("--backend", choices=("auto", "opencl", "cuda"), default="auto")
    c.add_argument("--device", default=None, help="gpu, cpu or part of a device name")
    c.add_argument("--queues", type=_counts, default=[1, 2, 4],
                   help="queue counts to measure (default 1,2,4)")
    c.add_argument("--kernels", type=int, default=32,
                   help="independent kernels per batch (default 32)")
    c.add_argument("--dir", type=Path, default=None,
                   help="profile directory (default $LIFTKIT_RUNTIME_PROFILES or "
                        "~/.cache/liftkit/runtime)")
    c.add_argument("--dry-run", action="store_true", help="measure and print, write nothing")


def cmd_runtime(args: argparse.Namespace, out: TextIO) -> int:
    from liftkit.backends.errors import BackendError
    from liftkit.runtime.profile import calibrate

    if args.kernels < 1:
        raise CliError(f"--kernels must be at least 1, got {args.kernels}")
    try:
        data = calibrate(args.backend, args.device, args.queues, kernels=args.kernels,
                         directory=args.dir, save=not args.dry_run)
    except BackendError as err:
        raise CliError(str(err)) from None
    out.write(f"device: {data['device']['label']}\n")
    out.write(f"{'queues':>6}  {'batch of ' + str(data['kernels']) + ' kernels':>22}\n")
    for n, t in data["seconds"].items():
        out.write(f"{n:>6}  {t * 1e3:>19.2f} ms\n")
    out.write(f"chosen: {data['queues']} compute queue{'s' if data['queues'] > 1 else ''}\n")
    if "path" in data:
        out.write(f"profile: {data['path']}\n")
    return 0
