"""What every subcommand shares beyond argument syntax: option values checked once, the log
shown only with --verbose, and a closed output pipe (`liftkit list | head -1`) ending quietly.
"""

from __future__ import annotations

import argparse
import logging
import os
from contextlib import contextmanager
from typing import Iterator, Sequence, TextIO


def check_common_values(args: argparse.Namespace) -> None:
    """Values argparse's types let through but no command can use: a negative --seed (NumPy's
    generators take none) and an empty --device (it would match every device's name)."""
    from liftkit.cli.main import UsageError

    seed = getattr(args, "seed", None)
    if isinstance(seed, int) and seed < 0:
        raise UsageError(f"argument --seed: must be at least 0, got {seed}")
    device = getattr(args, "device", None)
    if isinstance(device, str) and not device.strip():
        raise UsageError("argument --device: empty; give cpu, gpu or part of a device's name "
                         "(omit --device for the default)")


@contextmanager
def verbose_log(verbose: bool, err: TextIO) -> Iterator[None]:
    """With --verbose, liftkit's log (kernel cache, compiler and driver output) on `err` for the
    duration of the command; without it the log stays off the terminal."""
    if not verbose:
        yield
        return
    logger = logging.getLogger("liftkit")
    handler = logging.StreamHandler(err)
    handler.setFormatter(logging.Formatter("liftkit: %(levelname)s: %(name)s: %(message)s"))
    old = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)


def quiet_broken_pipe(out: TextIO) -> int:
    """The reader of stdout went away (`| head -1`): what it read is all it wanted, so end with
    status 0 and no message. Stdout is pointed at /dev/null so the interpreter's final flush
    does not complain either."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, out.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a real file (tests capture stdout)
        pass
    return 0


def check_writable(path: str, what: str, directory: bool = False,
                   make_parents: bool = False) -> None:
    """Fail now, before minutes of work, when `path` cannot be written: a file (its directory
    must exist unless `make_parents`) or, with `directory`, a directory that may not exist yet.
    Tried for real (a temporary file made and removed): permission bits do not tell for root
    or for file systems such as /proc."""
    import tempfile
    from pathlib import Path

    from liftkit.cli.resolve import CliError

    p = Path(path).expanduser()
    if p.exists():
        if directory != p.is_dir():
            raise CliError(f"{what} {path}: " + ("exists and is not a directory" if directory
                                                 else "is a directory"))
        base = p if directory else p.parent
    else:
        base = p.parent
        if directory or make_parents:
            while not base.exists() and base != base.parent:
                base = base.parent
        if not base.exists():
            raise CliError(f"{what} {path}: no such directory {base}")
        if not base.is_dir():
            raise CliError(f"{what} {path}: cannot be created ({base} is not a directory)")
    try:
        if p.exists() and not directory:
            with open(p, "ab"):
                pass
        else:
            with tempfile.TemporaryFile(dir=base):
                pass
    except OSError as err:
        raise CliError(f"{what} {path}: cannot be written ({err.strerror or err})") from None


def refuse_options(suite: str, given: Sequence[tuple[str, bool]], why: str = "") -> None:
    """One usage error for the first option that means nothing to a `bench --suite`."""
    from liftkit.cli.main import UsageError

    for flag, on in given:
        if on:
            raise UsageError(f"argument {flag}: does not apply to --suite {suite}{why}")


def check_report_options(args: argparse.Namespace) -> None:
    """`--repeat` and `--out` of a benchmark report, checked before the first run (every suite:
    a report's medians need enough runs, and its directory must be writable)."""
    from pathlib import Path

    from liftkit.bench.harness import MIN_REPORT_REPEAT
    from liftkit.cli.main import UsageError

    if args.repeat < 1 or (args.repeat < MIN_REPORT_REPEAT and not args.allow_few_runs):
        raise UsageError(f"argument --repeat: at least {MIN_REPORT_REPEAT} runs for a report "
                         f"(medians of ≥ {MIN_REPORT_REPEAT}), got {args.repeat}")
    out_dir = Path(args.out)
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"argument --out: {out_dir} exists and is not a directory")
    check_writable(args.out, "--out", directory=True)  # before the runs, not after them
