"""`liftkit blas`: tune a device for liftkit.blas, manage device profiles, run the BLAS benchmark.

    liftkit blas tune --device gpu|cpu|NAME [--backend auto|opencl|cuda] [--ops mm,gemv] [--dtypes float32] [--layouts NN]
                      [--classes large] [--fresh] [--no-progress] [--jobs N]
                      [--peaks full|quick|none] [--seed PROFILE [--seed-top K]] [--timing auto|launch|batch]
    liftkit blas profile show [--device SPEC | FILE]
    liftkit blas profile export FILE [--device SPEC]
    liftkit blas profile import FILE
    liftkit blas bench [--device SPEC] [--sizes 256,512,1024] [--ops gemm,gemv,...]
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path
from typing import Any, Optional, TextIO

from liftkit.cli.resolve import CliError


def _csv(choices: tuple[str, ...], what: str) -> Any:
    def parse(text: str) -> list[str]:
        items = [t.strip() for t in text.split(",") if t.strip()]
        bad = [t for t in items if t not in choices]
        if not items or bad:
            raise argparse.ArgumentTypeError(
                f"unknown {what} {', '.join(bad) or '(none given)'} (known: {', '.join(choices)})")
        return items
    return parse


def _backend_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", choices=("auto", "opencl", "cuda"), default="auto",
                   help="auto (default): CUDA for --device gpu where a CUDA GPU is present, "
                        "OpenCL otherwise; each backend's device has its own profile")


def configure_blas_parser(p: argparse.ArgumentParser) -> None:
    from liftkit.blas.codelets import OPS
    from liftkit.blas.tune import CLASSES, DTYPES

    sub = p.add_subparsers(dest="blas_command", metavar="ACTION", parser_class=type(p))
    sub.required = True
    t = sub.add_parser("tune", help="measure every derivation of every operation on a device and "
                                    "write its profile (resumable)")
    t.add_argument("--device", metavar="SPEC", default=None,
                   help="gpu, cpu, or part of the platform/device name (default: a GPU if any)")
    _backend_arg(t)
    t.add_argument("--ops", type=_csv(OPS, "operation"), default=list(OPS),
                   help=f"operations (default all: {','.join(OPS)})")
    t.add_argument("--dtypes", type=_csv(DTYPES, "dtype"), default=list(DTYPES))
    t.add_argument("--layouts", type=_csv(("NN", "NT", "TN", "N", "T"), "layout"), default=None,
                   help="GEMM layouts NN,NT,TN and GEMV layouts N,T (default all)")
    t.add_argument("--classes", type=_csv(CLASSES, "size class"), default=None,
                   help="size classes (default: small,medium,large; huge too on a GPU)")
    t.add_argument("--max-variants", type=int, default=None, help=argparse.SUPPRESS)
    t.add_argument("--fresh", action="store_true",
                   help="start a new profile instead of resuming the saved one")
    t.add_argument("--out", metavar="FILE", default=None,
                   help="write the profile here (default: the profile directory, where "
                        "liftkit.blas finds it)")
    t.add_argument("--no-progress", action="store_true", help="no progress bar")
    t.add_argument("--rounds", type=int, default=1,
                   help="time each (operation, size)'s variants this many times in turn and keep "
                        "each one's best (fair on a device other work shares; default 1)")
    t.add_argument("--edges", choices=("auto", "on", "off"), default="auto",
                   help="after each GEMM class, time its guarded forms at an odd size against "
                        "its choice padded (auto: on GPUs)")
    t.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="kernels compiled at once ahead of the measurements on CUDA (default: "
                        "the cores but two, at most 8; 0: each when it is measured)")
    t.add_argument("--peaks", choices=("full", "quick", "none"), default="full",
                   help="the peak-rate micro-benchmarks (seed 003 §7.4.1; measured once per "
                        "profile): full (default), quick (small launches), none")
    t.add_argument("--seed", metavar="PROFILE", default=None,
                   help="another device's profile (a file, or part of a stored profile's device "
                        "name, e.g. H100): each size class it measured explores only its "
                        "fastest variants, re-measured here (the rest: everything)")
    t.add_argument("--timing", choices=("auto", "launch", "batch"), default="auto",
                   help="batch: runs under 1 ms timed back to back, as a stream of calls runs "
                        "them (the host's launch time is not counted); launch: each timed run one "
                        "launch between two events; auto (default): batch on GPUs, except for a "
                        "size class the profile holds launch-timed entries of, launch on CPUs")
    t.add_argument("--seed-top", type=int, default=None, metavar="K",
                   help="with --seed: how many of the seed's fastest variants per operation, "
                        "dtype, layout and size class (default 4)")

    pr = sub.add_parser("profile", help="show, export or import device profiles")
    psub = pr.add_subparsers(dest="profile_command", metavar="ACTION", parser_class=type(p))
    psub.required = True
    s = psub.add_parser("show", help="the best derivation per operation, dtype, layout, size")
    s.add_argument("file", metavar="FILE", nargs="?", help="a profile file (default: the device's)")
    s.add_argument("--device", metavar="SPEC", default=None)
    _backend_arg(s)
    e = psub.add_parser("export", help="copy a device's profile to FILE")
    e.add_argument("file", metavar="FILE")
    e.add_argument("--device", metavar="SPEC", default=None)
    _backend_arg(e)
    i = psub.add_parser("import", help="install a profile file for its device")
    i.add_argument("file", metavar="FILE")

    b = sub.add_parser("bench", help="GFLOP/s vs size beside NumPy's BLAS (CPU) or cuBLAS (GPU)")
    from liftkit.blas.bench import configure_bench_parser

    configure_bench_parser(b)


def cmd_blas(args: argparse.Namespace, out: TextIO) -> int:
    if args.blas_command == "tune":
        return _tune(args, out)
    if args.blas_command == "bench":
        from liftkit.blas.bench import run_from_args

        return run_from_args(args, out)
    return {"show": _show, "export": _export, "import": _import}[args.profile_command](args, out)


def _device(spec: Optional[str], backend: str = "auto") -> Any:
    """The device liftkit.blas would run on for `spec` and `backend` (OpenCL or CUDA)."""
    from liftkit.blas.session import _resolve_backend

    if _resolve_backend(backend, spec, None) == "cuda":
        from liftkit.backends.cuda import select_device as cuda_device

        key = (spec or "").strip().lower()
        return cuda_device(None if key in ("", "gpu", "cuda") else spec)
    from liftkit.backends.opencl.devices import select_device

    return select_device(spec)


def _tune(args: argparse.Namespace, out: TextIO) -> int:
    from liftkit.blas.profile import Profile, file_name, find_profile, profile_dir
    from liftkit.blas.session import Session
    from liftkit.blas.tune import BATCH, kinds, tune

    if args.jobs is not None and args.jobs < 0:
        raise CliError(f"--jobs must be 0 or more, not {args.jobs}")
    if args.seed_top is not None and (args.seed is None or args.seed_top < 1):
        raise CliError("--seed-top needs --seed and a count of 1 or more")
    session = Session(_device(args.device, args.backend), warn=False)
    dev = session.device
    seed = None
    if args.seed is not None:
        from liftkit.blas.profile import ProfileError
        from liftkit.blas.seed import SEED_TOP, find_seed

        try:
            seed = find_seed(args.seed, session.backend, session.device_kind)
        except ProfileError as err:
            raise CliError(str(err)) from None
    print(f"tuning {dev.label} on the {session.backend} backend", file=out, flush=True)
    if seed is not None:
        print(f"seeded by the profile of {seed.label}: its {args.seed_top or SEED_TOP} fastest "
              f"variants per size class it measured, re-measured here", file=out, flush=True)
    target = Path(args.out) if args.out else profile_dir() / file_name(dev.fingerprint)
    from liftkit.cli.common import check_writable

    check_writable(str(target), "--out" if args.out else "the profile", make_parents=True)
    profile = None
    if not args.fresh:
        profile = Profile.load(target) if target.is_file() else find_profile(dev.fingerprint)
        if profile is not None and profile.fingerprint != dev.fingerprint:
            raise CliError(f"{target} is the profile of {profile.label or profile.fingerprint}, "
                           f"not of {dev.label}; use --fresh or another --out")
        if profile is not None and not target.is_file():  # the shipped one (or the user's)
            print(f"resuming the profile liftkit has for {dev.label} ({len(profile.entries)} "
                  f"entries, written to {target}); --fresh measures everything on this "
                  f"device", file=out, flush=True)
    if profile is None:
        profile = Profile(dev.fingerprint, dev.label, session.device_kind)
    started = time.perf_counter()
    before = sum(profile.notes.get("tuning_seconds", {}).values()) if isinstance(
        profile.notes.get("tuning_seconds"), dict) else 0.0

    def save(p: Profile) -> None:
        p.notes["tuning_seconds"] = {"total": before + time.perf_counter() - started}
        p.save(target)

    from liftkit.blas.peak import TINY, PeakSettings

    ks = kinds(args.ops, args.dtypes, args.layouts)
    settings = {"full": PeakSettings(), "quick": TINY, "none": None}[args.peaks]
    from liftkit.blas.tune import trial_line

    trials = [0]  # this run's measurements (the profile keeps one entry per winner and class)

    def log(trial: Any) -> None:  # without the bar, a line per trial (what a log file keeps)
        trials[0] += 1
        if args.no_progress:
            print(trial_line(trial, time.perf_counter() - started), file=out, flush=True)

    profile = tune(session, ks, args.classes, profile, save, progress=not args.no_progress,
                   max_variants=args.max_variants, peaks=settings, on_trial=log,
                   rounds=args.rounds, edges={"auto": None, "on": True, "off": False}[args.edges],
                   workers=args.jobs, seed=seed,
                   batch={"auto": None, "batch": BATCH, "launch": 0.0}[args.timing],
                   **({"seed_top": args.seed_top} if args.seed_top else {}))
    save(profile)
    print(f"profile of {dev.label}: {len(profile.entries)} entries, {trials[0]} measurements "
          f"in {time.perf_counter() - started:.0f} s this run -> {target}", file=out)
    _print_peaks(profile, out)
    _print_best(profile, out)
    return 0


def _print_peaks(profile: Any, out: TextIO) -> None:
    p = profile.peaks
    if p is None:
        print("peak rates: not measured (`liftkit blas tune --fresh` measures them)", file=out)
        return
    for dt, r in p.flops.items():
        fma = p.fma(dt)
        print(f"peak {dt}: " + ", ".join(f"{op} {v:.1f}" for op, v in r.items())
              + f" GFLOP/s (fma {'faster than' if fma else 'no faster than'} mul+add)", file=out)
    print(f"copy bandwidth: {p.copy:.1f} GB/s", file=out)
    q = profile.notes.get("queues")
    if isinstance(q, dict) and "queues" in q:
        times = ", ".join(f"{n}: {t * 1e3:.2f} ms" for n, t in q.get("seconds", {}).items())
        print(f"compute queues: {q['queues']} ({q.get('kernels')} small kernels on 1/2/4 queues: "
              f"{times})", file=out)
    elif isinstance(q, dict) and "error" in q:
        print(f"compute queues: not measured ({q['error']})", file=out)


def _print_best(profile: Any, out: TextIO) -> None:
    from rich.console import Console
    from rich.table import Table

    best: dict[Any, Any] = {}
    for e in profile.entries:
        if _at_sizes(e):  # guarded, padded and split forms: timed at odd sizes only
            continue
        # a complex plan's own real kernel (`via`) apart from the plans measured for the kind
        key = (f"{e.kind} ({e.via} kernel)" if e.via else str(e.kind), e.size_class)
        if key not in best or e.rate > best[key].rate:
            best[key] = e
    table = Table(title=f"best derivations on {profile.label}")
    for col in ("kind", "class", "size", "derivation", "rate"):
        table.add_column(col, justify="right" if col == "rate" else "left")
    from liftkit.blas.profile import CLASS_ORDER

    order = {c: i for i, c in enumerate(CLASS_ORDER)}
    for (kind, cls), e in sorted(best.items(), key=lambda kv: (kv[0][0], order.get(kv[0][1], 3))):
        size = "×".join(str(v) for v in e.sizes.values())
        table.add_row(kind, cls, size, str(e.variant), f"{e.rate:.2f} {e.unit}")
    Console(file=out, width=120).print(table)
    _print_very_sizes(profile, out)


# entries that serve one call's very sizes rather than a size class: guarded forms timed at odd
# sizes, split plans and entries tagged via "here"/"padded"/"split" (blas.gemm_choice)
_AT_SIZES = ("here", "padded", "split")


def _at_sizes(e: Any) -> bool:
    return e.variant.codelet.startswith("edge-") or e.variant.codelet == "split" \
        or e.via in _AT_SIZES


def _print_very_sizes(profile: Any, out: TextIO) -> None:
    """The fastest entry measured at each odd size (what `plan_gemm` runs there), which the
    class table leaves out."""
    from rich.console import Console
    from rich.table import Table

    best: dict[Any, Any] = {}
    for e in profile.entries:
        if not _at_sizes(e):
            continue
        key = (str(e.kind), tuple(e.sizes.values()))
        if key not in best or e.rate > best[key].rate:
            best[key] = e
    if not best:
        return
    table = Table(title="measured at their very sizes (odd sizes: guarded, padded, split)")
    for col in ("kind", "size", "derivation", "rate"):
        table.add_column(col, justify="right" if col == "rate" else "left")
    for (kind, size), e in sorted(best.items()):
        table.add_row(kind, "×".join(map(str, size)), str(e.variant)
                      + (f" via {e.via}" if e.via else ""), f"{e.rate:.2f} {e.unit}")
    Console(file=out, width=120).print(table)


def _show(args: argparse.Namespace, out: TextIO) -> int:
    from liftkit.blas.profile import Profile, find_profile

    if args.file:
        profile = Profile.load(args.file)
    else:
        dev = _device(args.device, args.backend)
        profile = find_profile(dev.fingerprint)
        if profile is None:
            raise CliError(f"no profile for {dev.label}; create one with `liftkit blas tune "
                           f"--device {args.device or ('gpu' if dev.is_gpu else 'cpu')}`")
    backend = "cuda" if profile.fingerprint.startswith("cuda|") else "opencl"
    print(f"device: {profile.label} ({profile.device_type}, {backend} backend)\n"
          f"fingerprint: {profile.fingerprint}"
          f"\ncreated: {profile.created}", file=out)
    secs = profile.notes.get("tuning_seconds", {})
    if isinstance(secs, dict) and "total" in secs:
        print(f"tuning time: {secs['total']:.0f} s", file=out)
    _print_peaks(profile, out)
    _print_best(profile, out)
    return 0


def _export(args: argparse.Namespace, out: TextIO) -> int:
    from liftkit.blas.profile import find_profile

    dev = _device(args.device, args.backend)
    profile = find_profile(dev.fingerprint)
    if profile is None:
        raise CliError(f"no profile for {dev.label} to export; tune it first")
    path = profile.save(args.file)
    print(f"exported the profile of {dev.label} to {path}", file=out)
    return 0


def _import(args: argparse.Namespace, out: TextIO) -> int:
    from liftkit.blas.profile import Profile, file_name, profile_dir

    profile = Profile.load(args.file)  # validates
    target = profile_dir() / file_name(profile.fingerprint)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(args.file, target)
    print(f"installed the profile of {profile.label} ({len(profile.entries)} measurements) as "
          f"{target}", file=out)
    return 0
