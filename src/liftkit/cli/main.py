"""Entry point of the `liftkit` command (and `python -m liftkit`).

Subcommands: `list`, `check PROGRAM`, `show PROGRAM [--pretty]`,
`run PROGRAM [--size N=1024 ...] [--input x=FILE.npy ...] [--output FILE] [--seed S] [--backend B]`,
`compile`, `explore` and `bench` (the benchmark suite, liftkit.cli.bench).

User errors are reported as one line `liftkit: error: ...` on stderr (exit 2 for bad usage, 1
otherwise); `--debug` re-raises them so a developer gets the traceback. `--verbose` shows the log
(kernel cache, compiler output); a reader that closes the pipe early (`| head`) ends it quietly.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import Any, NoReturn, Optional, Sequence, TextIO

from liftkit import __version__
from liftkit.cli.common import check_common_values, quiet_broken_pipe, verbose_log
from liftkit.cli.resolve import CliError, Resolved, bundled_registry, one_line, resolve
from liftkit.cli.run import BACKENDS, RunOptions, run_command
from liftkit.cli.sizes import check_size_names

PROG = "liftkit"


class UsageError(Exception):
    """Bad command-line syntax (exit code 2)."""


class _Parser(argparse.ArgumentParser):
    """argparse prints usage plus the message; we want exactly one line, the same for every
    subcommand, so errors are raised and reported by `main`."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see `{self.prog} --help`)")


# ---------------------------------------------------------------------------------------------
# argument syntax


def _assignment(kind: str, text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    name, value = name.strip(), value.strip()
    if not sep or not name or not value or not name.isidentifier():
        hint = " (PROGRAM goes before the options)" if not sep and name.isidentifier() else ""
        raise argparse.ArgumentTypeError(f"expected {kind}, got {text!r}{hint}")
    return name, value


def size_arg(text: str) -> tuple[str, int]:
    """`N=1024` -> ("N", 1024); sizes are positive integers."""
    name, value = _assignment("NAME=INT (e.g. N=1024)", text)
    try:
        n = int(value, 0) if value.lower().startswith(("0x", "0b", "0o")) else int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"size {name} must be an integer, got {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"size {name} must be at least 1, got {n}")
    return name, n


def input_arg(text: str) -> tuple[str, str]:
    """`x=data.npy` -> ("x", "data.npy")."""
    return _assignment("NAME=FILE.npy (e.g. x=x.npy)", text)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="Lift programs: list, type-check, print and run them.")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    parser.add_argument("--verbose", "-v", action="store_true",
                        help="show liftkit's log on stderr (kernel cache, compiler output)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    program_help = ("a bundled program name (see `liftkit list`), module:attribute or "
                    "path/to/file.py:attribute naming a Lambda or a ProgramSpec")

    def add(name: str, help_: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_, description=help_)
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="show tracebacks for errors")
        p.add_argument("--verbose", "-v", action="store_true", default=argparse.SUPPRESS,
                       help="show liftkit's log on stderr (kernel cache, compiler output)")
        return p

    add("list", "list the bundled programs")
    p = add("check", "type-check a program and print its type")
    p.add_argument("program", metavar="PROGRAM", help=program_help)
    p = add("show", "print a program in the papers' notation")
    p.add_argument("program", metavar="PROGRAM", help=program_help)
    p.add_argument("--pretty", action="store_true", help="multi-line layout")
    p = add("run", "run a program and compare it with its NumPy reference")
    p.add_argument("program", metavar="PROGRAM", help=program_help)
    p.add_argument("--size", dest="sizes", metavar="NAME=INT", type=size_arg, nargs="+",
                   action="extend", default=[], help="a size variable, e.g. N=1048576")
    p.add_argument("--input", dest="inputs", metavar="NAME=FILE", type=input_arg, nargs="+",
                   action="extend", default=[],
                   help="an input from a .npy file (.npz for tuples); others are generated")
    p.add_argument("--output", metavar="FILE", help="save the result (.npy, or .npz for tuples)")
    p.add_argument("--cast", action="store_true",
                   help="convert input files whose dtype differs from the parameter's (e.g. "
                        "float64 to float32; noted on stderr); without it they are refused")
    p.add_argument("--seed", type=int, default=0, help="seed for generated inputs (default 0)")
    p.add_argument("--backend", choices=BACKENDS, default="auto",
                   help="where to run: opencl or cuda (compiled), interpreter, or auto (default): "
                        "compiled for OpenCL-level programs (on CUDA for --device gpu where CUDA "
                        "is available, else OpenCL), interpreted for high-level ones; with "
                        "--tuned, auto and any run the derivation on the backend it won on")
    p.add_argument("--device", metavar="SPEC", default=None,
                   help="device: cpu, gpu, or part of its name (OpenCL: platform/device name; "
                        "CUDA: name or ordinal); default: an OpenCL GPU if present, else the CPU")
    p.add_argument("--repeat", type=int, default=1, help="time this many runs (median)")
    _compile_switches(p)
    _tuned_switches(p)
    p = add("compile", "compile an OpenCL-level program and print its kernels")
    p.add_argument("program", metavar="PROGRAM", help=program_help)
    p.add_argument("--backend", choices=("opencl", "cuda", "any"), default="opencl",
                   help="the kernels' language: OpenCL C (default) or CUDA C; with --tuned, any: "
                        "the language of the backend the derivation won on (said on stderr)")
    p.add_argument("--ptx", action="store_true",
                   help="with --backend cuda: print NVRTC's PTX instead of the CUDA C (for the "
                        "CUDA GPU if one is present, else for Hopper, compute_90a)")
    _compile_switches(p)
    p.add_argument("--size", dest="sizes", metavar="NAME=INT", type=size_arg, nargs="+",
                   action="extend", default=[], help="sizes the tuned derivation was found for")
    p.add_argument("--device", metavar="SPEC", default=None,
                   help="device the tuned derivation was found for (with --tuned)")
    _tuned_switches(p)
    p = add("explore", "search for a fast derivation of a high-level program on a device "
                       "(seed 002 §6)")
    from liftkit.cli.explore import configure_explore_parser

    configure_explore_parser(p)
    p = add("tune-suite", "tune many programs for many devices in one tuning database; "
                          "resumes an interrupted run")
    from liftkit.cli.explore import configure_tune_suite_parser

    configure_tune_suite_parser(p)
    p = add("bench", "benchmark the seeds' programs against cuBLAS/CuPy/NumPy, with the "
                     "ceilings measured in the same run (docs/benchmarks.md)")
    from liftkit.cli.bench import configure_bench_parser

    configure_bench_parser(p)
    p = add("blas", "liftkit.blas: tune a device, manage its profile, benchmark (seed 003 ch. 8)")
    from liftkit.cli.blas import configure_blas_parser

    configure_blas_parser(p)
    p = add("runtime", "liftkit.runtime: calibrate the task runtime's queues for a device")
    from liftkit.cli.runtime import configure_runtime_parser

    configure_runtime_parser(p)
    return parser


def _tuned_switches(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tuned", action="store_true",
                   help="use the best derivation `liftkit explore` stored for these sizes and device")
    p.add_argument("--db", metavar="PATH", default=None, help="tuning database (with --tuned)")


def _tuned(args: argparse.Namespace, res: Resolved, sizes: dict[str, int]) -> Resolved:
    """The program itself, or with --tuned the best low-level program found for it."""
    if not getattr(args, "tuned", False):
        return res
    from liftkit.cli.explore import tuned_choice

    found = tuned_choice(res, sizes, args.device, args.db, getattr(args, "backend", "auto"))
    if getattr(args, "backend", "") in ("auto", "any"):
        args.backend = found.backend  # run it on the backend it won on
    return Resolved(res.name, found.program, res.spec)


def _compile_switches(p: argparse.ArgumentParser) -> None:
    """The code generator's optimisation switches (seed 000 Fig. 8 ablation) and launch hints."""
    p.add_argument("--no-simplify-indices", action="store_true", help="emit array indices unsimplified")
    p.add_argument("--no-barrier-elimination", action="store_true", help="keep every barrier")
    p.add_argument("--no-control-flow-simplification", action="store_true",
                   help="emit a loop for every map")
    p.add_argument("--no-unroll", action="store_true", help="keep the loops of *Unroll patterns")
    p.add_argument("--local-size", metavar="L0[,L1[,L2]]", default=None,
                   help="work-group size the kernels are generated for")


def compile_options(args: argparse.Namespace) -> Any:
    from liftkit.codegen import CompileOptions

    local = None
    if args.local_size:
        try:
            local = tuple(int(v) for v in args.local_size.split(","))
        except ValueError:
            raise UsageError(f"argument --local-size: expected integers like 64 or 16,16, got "
                             f"{args.local_size!r}") from None
        if not 1 <= len(local) <= 3 or min(local) < 1:
            raise UsageError("argument --local-size: one to three positive integers")
    return CompileOptions(simplify_indices=not args.no_simplify_indices,
                          eliminate_barriers=not args.no_barrier_elimination,
                          simplify_control_flow=not args.no_control_flow_simplification,
                          unroll=not args.no_unroll, local_size=local)


# ---------------------------------------------------------------------------------------------
# commands


def cmd_list(out: TextIO) -> int:
    """A rich table on a terminal; otherwise one tab-separated line per program
    (name, level, source, summary) so scripts and tests can read it."""
    specs = list(bundled_registry())
    rows = [(s.name, s.level, s.source, (s.summary.strip().splitlines() or [""])[0])
            for s in specs]
    if out.isatty():
        try:
            from rich.console import Console
            from rich.table import Table
        except ImportError:
            pass
        else:
            table = Table(title=f"{len(rows)} bundled programs")
            for col in ("name", "level", "source", "summary"):
                table.add_column(col, no_wrap=col == "name")
            for row in rows:
                table.add_row(*row)
            Console(file=out).print(table)
            return 0
    for row in rows:
        print("\t".join(row), file=out)
    return 0


def signature(res: Resolved) -> str:
    """`NAME : (param types) -> result type`; raises the type error when there is one."""
    from liftkit.ir.printer import show_type
    from liftkit.ir.typecheck import check_program

    result = check_program(res.program)
    params = ", ".join(show_type(p.type) for p in res.program.params)  # type: ignore[arg-type]
    return f"{res.name} : ({params}) -> {show_type(result)}"


def cmd_check(args: argparse.Namespace, out: TextIO) -> int:
    print(signature(resolve(args.program)), file=out)
    return 0


def cmd_show(args: argparse.Namespace, out: TextIO) -> int:
    from liftkit.ir.printer import pretty, show

    program = resolve(args.program).program
    print(pretty(program) if args.pretty else show(program), file=out)
    return 0


def cmd_run(args: argparse.Namespace, out: TextIO) -> int:
    sizes: dict[str, int] = {}
    for name, n in args.sizes:
        if name in sizes and sizes[name] != n:
            raise UsageError(f"argument --size: {name} is given twice ({sizes[name]} and {n})")
        sizes[name] = n
    inputs: dict[str, str] = {}
    for name, path in args.inputs:
        if name in inputs:
            raise UsageError(f"argument --input: {name} is given twice")
        inputs[name] = path
    if args.repeat < 1:
        raise UsageError("argument --repeat: must be at least 1")
    res = resolve(args.program)
    check_size_names(res, sizes)
    res = _tuned(args, res, sizes)
    opts = RunOptions(sizes, inputs, args.output, args.seed, args.backend, args.device,
                      compile_options(args), args.repeat, cast=args.cast)
    status = run_command(res, opts, out)
    out.flush()
    if status:
        raise CliError(f"{res.name}: the {args.backend} result does not match the NumPy reference")
    return status


def cmd_compile(args: argparse.Namespace, out: TextIO) -> int:
    """Print every kernel of the program with its launch geometry and buffers."""
    from liftkit.codegen import compile_program

    res = resolve(args.program)
    sizes = dict(args.sizes)
    check_size_names(res, sizes)
    if args.backend == "any" and not args.tuned:
        raise UsageError("argument --backend: any means the backend a tuned derivation won on; "
                         "add --tuned, or name opencl or cuda")
    asked = args.backend
    res = _tuned(args, res, sizes)
    if args.ptx and args.backend != "cuda":
        raise UsageError("argument --ptx: PTX comes from the CUDA backend; " + (
            f"the tuned derivation won on {args.backend}: use --backend cuda for its CUDA "
            "derivation" if asked == "any" else "add --backend cuda"))
    compiled = compile_program(res.program, replace(compile_options(args), dialect=args.backend))
    print(f"// {res.name}: {len(compiled.kernels)} kernel(s) in {compiled.options.dialect}, "
          f"generated in {compiled.compile_seconds * 1e3:.1f} ms", file=out)
    for b in compiled.buffers:
        print(f"// buffer {b.name}: {b.role}, {b.type}, {b.nbytes} bytes", file=out)
    printed: dict[str, str] = {}  # source -> the first kernel printed with it (iterate steps share one)
    for k in compiled.kernels:
        glob = ", ".join(str(g) for g in k.ndrange.global_size)
        local = k.ndrange.local_size or "driver's choice"
        print(f"\n// kernel {k.name}: global ({glob}), local {local}", file=out)
        if k.source in printed:
            print(f"// the same source as kernel {printed[k.source]}", file=out)
            continue
        printed[k.source] = k.name
        print(_ptx(k) if args.ptx else k.source, file=out, end="")
    return 0


def _ptx(kernel: Any) -> str:
    """NVRTC's PTX of one CUDA C kernel, for the CUDA GPU present or else for Hopper."""
    from liftkit.backends.cuda import arch_for, compile_cuda, list_devices, nvrtc_version

    devices = list_devices()
    arch = arch_for(devices[0].compute_capability) if devices else "compute_90a"
    ptx = compile_cuda(kernel.source, arch, kernel.build_options, name=f"{kernel.name}.cu").ptx
    version = ".".join(map(str, nvrtc_version()))
    return f"// PTX from NVRTC {version} for {arch}\n{ptx}"


def cmd_explore(args: argparse.Namespace, out: TextIO) -> int:
    from liftkit.cli.explore import cmd_explore as run_explore

    return run_explore(args, out)


def cmd_tune_suite(args: argparse.Namespace, out: TextIO) -> int:
    from liftkit.cli.explore import cmd_tune_suite as run_tune_suite

    return run_tune_suite(args, out)


def cmd_bench(args: argparse.Namespace, out: TextIO) -> int:
    from liftkit.cli.bench import cmd_bench as run_bench

    return run_bench(args, out)


def cmd_blas(args: argparse.Namespace, out: TextIO) -> int:
    from liftkit.cli.blas import cmd_blas as run_blas

    return run_blas(args, out)


def cmd_runtime(args: argparse.Namespace, out: TextIO) -> int:
    from liftkit.cli.runtime import cmd_runtime as run_runtime

    return run_runtime(args, out)


COMMANDS: dict[str, Any] = {"runtime": cmd_runtime, "check": cmd_check, "show": cmd_show, "run": cmd_run,
                            "compile": cmd_compile, "explore": cmd_explore, "bench": cmd_bench,
                            "blas": cmd_blas, "tune-suite": cmd_tune_suite}


# ---------------------------------------------------------------------------------------------
# error handling


def _user_errors() -> tuple[type[BaseException], ...]:
    """The exception types that mean "the user asked for something wrong" rather than a bug."""
    from liftkit.arith import ArithError
    from liftkit.semantics import EvaluationError
    from liftkit.types import LiftTypeError

    return (CliError, LiftTypeError, ArithError, EvaluationError, OSError, ValueError)


def _report(message: str, err: TextIO) -> None:
    print(f"{PROG}: error: {message}", file=err)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the CLI; returns the exit status (the console script passes it to sys.exit)."""
    out, err = sys.stdout, sys.stderr
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(argv)
    except UsageError as e:
        _report(str(e), err)
        return 2
    debug = bool(getattr(args, "debug", False))
    try:
        with verbose_log(bool(getattr(args, "verbose", False)), err):
            check_common_values(args)
            if args.command == "list":
                status = cmd_list(out)
            else:
                status = int(COMMANDS[args.command](args, out))
            out.flush()  # here, where a closed pipe is caught, not at the interpreter's exit
            return status
    except BrokenPipeError:
        return quiet_broken_pipe(out)
    except UsageError as e:
        if debug:
            raise
        _report(str(e), err)
        return 2
    except _user_errors() as e:
        if debug:
            raise
        try:
            out.flush()  # what the command printed before it failed, then the error
        except BrokenPipeError:
            quiet_broken_pipe(out)
        _report(_message(e), err)
        return 1
    except KeyboardInterrupt:
        if debug:
            raise
        _report("interrupted", err)
        return 130


def _message(e: BaseException) -> str:
    if isinstance(e, FileNotFoundError) and e.filename:
        return f"no such file: {e.filename}"
    if isinstance(e, OSError) and e.strerror and e.filename:
        return f"{e.filename}: {e.strerror}"
    return one_line(e)


if __name__ == "__main__":
    raise SystemExit(main())
