"""`liftkit run`: inputs from files or from the program's spec, one backend run, a short report.

The report compares against the spec's independent NumPy reference, because a run whose result
nobody checks is not worth much; the exit status says whether it matched.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, TextIO

import numpy as np

from liftkit.cli.resolve import CliError, Resolved, one_line
from liftkit.ir.nodes import Lambda
from liftkit.ir.printer import show_type
from liftkit.types import ArrayType, TupleType, Type, VectorType

BACKENDS = ("auto", "interpreter", "opencl", "cuda", "any")  # any: as auto (with --tuned: the winner)


@dataclass(frozen=True)
class RunOptions:
    sizes: Mapping[str, int]
    inputs: Mapping[str, str]  # parameter name -> file
    output: Optional[str]
    seed: int
    backend: str  # "auto": compiled for OpenCL-level programs, the interpreter otherwise
    device: Optional[str] = None
    compile_options: Any = None  # liftkit.codegen.CompileOptions
    repeat: int = 1
    cast: bool = False  # convert input files of another dtype (else they are refused)


@dataclass(frozen=True)
class Comparison:
    ok: bool
    max_abs_err: float
    note: str = ""


# ---------------------------------------------------------------------------------------------
# inputs


def _bare_dims(t: Type) -> list[tuple[Any, int]]:
    """(length, axis) for the array dimensions of a parameter type, outermost first."""
    out = []
    axis = 0
    while isinstance(t, ArrayType):
        out.append((t.length, axis))
        t = t.elem
        axis += 1
    return out


def sizes_from_files(program: Lambda, given: Mapping[str, Any], explicit: Mapping[str, int]
                     ) -> dict[str, int]:
    """Size variables read off the shapes of file inputs, so that generated companions of a
    file input get matching shapes. Explicit --size values win (a conflict is then reported
    by the interpreter in the program's own terms)."""
    from liftkit.arith import Var

    found: dict[str, int] = {}
    for p in program.params:
        if p.name not in given or p.type is None:
            continue
        shape = np.shape(given[p.name]) if isinstance(given[p.name], np.ndarray) else ()
        for length, axis in _bare_dims(p.type):
            if isinstance(length, Var) and length.name not in explicit and axis < len(shape):
                found.setdefault(length.name, int(shape[axis]))
    return found


@dataclass(frozen=True)
class Inputs:
    """What `run` runs with: values in parameter order, the bound sizes, where each value came
    from, and notes for stderr (conversions made with --cast)."""

    values: list[Any]
    sizes: dict[str, int]
    origin: list[str]
    notes: list[str]


def gather_inputs(res: Resolved, opts: RunOptions, result_type: Optional[Type] = None) -> Inputs:
    """All inputs in parameter order, the sizes to run with, and where each input came from.

    Sizes are checked before any input is generated: names, divisibility facts, memory."""
    from liftkit.cli.inputs import conform, load_array
    from liftkit.cli.sizes import check_memory, check_size_facts, check_size_names, size_facts
    from liftkit.semantics import bind_sizes

    program = res.program
    names = [p.name for p in program.params]
    unknown = [n for n in opts.inputs if n not in names]
    if unknown:
        raise CliError(f"--input {unknown[0]}: the program has no parameter {unknown[0]!r} "
                       f"(parameters: {', '.join(names) or 'none'})")
    if len(set(names)) != len(names):
        raise CliError(f"the program's parameters have repeated names ({', '.join(names)}); "
                       f"--input cannot tell them apart")
    check_size_names(res, opts.sizes)
    types = {p.name: p.type for p in program.params}
    notes: list[str] = []
    given = {n: conform(load_array(f, n), types[n], n, f, opts.cast, notes)  # type: ignore[arg-type]
             for n, f in opts.inputs.items()}
    missing = [n for n in names if n not in given]
    if missing and res.spec is None:
        raise CliError(f"{res.name} is not a bundled program, so every input must be given with "
                       f"--input NAME=FILE.npy (missing: {', '.join(missing)})")
    sizes = sizes_from_files(program, given, opts.sizes) | dict(opts.sizes)
    if res.spec is not None:
        sizes = dict(res.spec.sizes) | sizes
    facts = size_facts(program, result_type)
    rule = getattr(res.spec, "size_rule", "") if res.spec is not None else ""
    check_size_facts(facts, sizes, res.name, rule)
    check_memory(program, result_type, sizes, missing, res.name)
    generated: list[Any] = []
    if missing:
        try:
            generated = list(res.spec.inputs(sizes, opts.seed))  # type: ignore[union-attr]
        except MemoryError:
            raise CliError(f"{res.name}: not enough memory to generate inputs at "
                           f"{_size_text(sizes)}; use smaller --size values") from None
        except Exception as err:  # noqa: BLE001 - a spec's input maker is user code
            raise CliError(f"{res.name}: its input maker failed at {_size_text(sizes)} "
                           f"({type(err).__name__}: {one_line(err)})") from err
        if len(generated) != len(names):
            raise CliError(f"the spec of {res.name} makes {len(generated)} input(s) for "
                           f"{len(names)} parameter(s)")
    values = [given[n] if n in given else generated[i] for i, n in enumerate(names)]
    origin = [f"{opts.inputs[n]}" if n in given else f"generated (seed {opts.seed})" for n in names]
    bound = bind_sizes(program, values, sizes)
    check_size_facts(facts, bound, res.name, rule)
    return Inputs(values, bound, origin, notes)


def _size_text(sizes: Mapping[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(sizes.items())) or "no sizes"


# ---------------------------------------------------------------------------------------------
# running and comparing


def choose_backend(program: Lambda, backend: str, device: Optional[str] = None) -> str:
    """`auto`: compiled for programs the code generator accepts (OpenCL-level ones), on CUDA
    for `--device gpu` where CUDA is available, else on OpenCL; the interpreter otherwise
    (`any` is `auto` for a program `--tuned` has not already put on its winning backend)."""
    if backend not in ("auto", "any"):
        return backend
    from liftkit.backends.choose import resolve_backend
    from liftkit.ir.typecheck import is_low_level

    return resolve_backend("auto", device) if is_low_level(program) else "interpreter"


def execute(program: Lambda, inputs: Sequence[Any], sizes: Mapping[str, int], opts: RunOptions,
            name: str) -> tuple[Any, list[str]]:
    """Run on the chosen backend; returns the result and report lines about the run."""
    backend = choose_backend(program, opts.backend, opts.device)
    if backend == "interpreter":
        from liftkit.semantics import interpret

        return interpret(program, *inputs, sizes=sizes), []
    from dataclasses import replace

    from liftkit.backends.choose import make_runner
    from liftkit.codegen import CompileOptions, compile_program

    if not program_is_low_level(program):
        raise CliError(f"{name} is a high-level program: the {backend} backend needs an "
                       "OpenCL-level program (mapGlb/mapWrg/mapLcl, reduceSeq, ...); use "
                       "--backend interpreter")
    compiled = compile_program(program, replace(opts.compile_options or CompileOptions(),
                                                dialect=backend))
    runner = make_runner(backend, opts.device)
    result, info = runner.run_with_info(compiled, *inputs, sizes=sizes, timing=opts.repeat > 1,
                                        repeat=opts.repeat, name=name)
    lines = [f"device:    {runner.device.label}",
             f"compiled:  {len(compiled.kernels)} kernel(s) in {compiled.compile_seconds * 1e3:.1f} ms "
             f"(liftkit), built in {info.build_seconds * 1e3:.0f} ms (driver or cache)"]
    for launch, t in zip(info.launches, info.kernel_times):
        ls = "driver's choice" if launch.local_size is None else launch.local_size
        timing = f"{t * 1e3:.3f} ms" + (f" (median of {info.repeat})" if info.repeat > 1 else "")
        lines.append(f"kernel:    {launch.kernel} global {launch.global_size} local {ls}: {timing}")
    return result, lines


def program_is_low_level(program: Lambda) -> bool:
    from liftkit.ir.typecheck import is_low_level

    return is_low_level(program)


def compare(out: Any, ref: Any, rtol: float, atol: float) -> Comparison:
    """np.allclose, component by component for tuples and structured arrays, plus the largest
    absolute error (inf where shapes differ or values are not finite where the reference is)."""
    if isinstance(out, tuple) or isinstance(ref, tuple):
        if not (isinstance(out, tuple) and isinstance(ref, tuple)) or len(out) != len(ref):
            return Comparison(False, float("inf"), "the output and the reference differ in structure")
        parts = [compare(o, r, rtol, atol) for o, r in zip(out, ref)]
        notes = [p.note for p in parts if p.note]
        return Comparison(all(p.ok for p in parts), max((p.max_abs_err for p in parts), default=0.0),
                          notes[0] if notes else "")
    o, r = np.asarray(out), np.asarray(ref)
    if o.dtype.names or r.dtype.names:
        if o.dtype.names is None or r.dtype.names is None or len(o.dtype.names) != len(r.dtype.names):
            return Comparison(False, float("inf"), "the output and the reference differ in structure")
        return compare(tuple(o[n] for n in o.dtype.names), tuple(r[n] for n in r.dtype.names),
                       rtol, atol)
    if o.shape != r.shape:
        if o.size != r.size:
            return Comparison(False, float("inf"),
                              f"output shape {o.shape} but reference shape {r.shape}")
        r = r.reshape(o.shape)
    if o.size == 0:
        return Comparison(True, 0.0)
    of, rf = o.astype(np.float64), r.astype(np.float64)
    ok = bool(np.allclose(of, rf, rtol=rtol, atol=atol, equal_nan=True))
    with np.errstate(invalid="ignore"):
        diff = np.abs(of - rf)
    both_nan = np.isnan(of) & np.isnan(rf)
    diff = np.where(both_nan, 0.0, diff)
    err = float(np.max(diff)) if not np.isnan(diff).any() else float("inf")
    return Comparison(ok, err)


# ---------------------------------------------------------------------------------------------
# saving and reporting


def _flatten(out: Any, prefix: str) -> dict[str, np.ndarray]:
    if isinstance(out, tuple):
        flat: dict[str, np.ndarray] = {}
        for k, x in enumerate(out):
            flat |= _flatten(x, f"{prefix}{k}" if prefix == "out" else f"{prefix}_{k}")
        return flat
    return {prefix: np.asarray(out)}


def save_output(out: Any, path: str) -> str:
    """np.save for arrays (structured arrays as they are), np.savez with out0, out1, ... for
    tuples; returns the file name NumPy actually wrote."""
    p = Path(path)
    if isinstance(out, tuple):
        target = p if p.suffix == ".npz" else p.with_name(p.name + ".npz")
        np.savez(target, **_flatten(out, "out"))
    else:
        target = p if p.suffix == ".npy" else p.with_name(p.name + ".npy")
        np.save(target, np.asarray(out))
    return str(target)


def _dtype_text(dt: np.dtype) -> str:
    if dt.names:
        return "(" + ", ".join(_dtype_text(dt[n]) for n in dt.names) + ")"
    if dt.subdtype is not None:
        base, shape = dt.subdtype
        return f"{base}[{','.join(map(str, shape))}]"
    return str(dt)


def describe(x: Any) -> str:
    """`float32 (1024,)`-style summary of an input or output (tuples component-wise; arrays of
    tuples as `(float32, float32) (N,)`)."""
    if isinstance(x, tuple):
        return "(" + ", ".join(describe(c) for c in x) + ")"
    a = np.asarray(x)
    return f"{_dtype_text(a.dtype)} {a.shape}"


def _scalar_text(v: Any) -> str:
    if isinstance(v, (float, np.floating)):
        return np.format_float_positional(v, precision=6, trim="-")
    return str(v)


def _value_text(v: Any) -> str:
    """One element: a number, a vector's lanes `<a, b>` or a record `(a, b)`."""
    if isinstance(v, np.void) and v.dtype.names:
        return "(" + ", ".join(_value_text(v[n]) for n in v.dtype.names) + ")"
    if isinstance(v, np.ndarray):
        return "<" + ", ".join(_value_text(e) for e in v.reshape(-1).tolist()) + ">"
    return _scalar_text(v)


def preview(x: Any, t: Optional[Type] = None, count: int = 4) -> str:
    """The first few elements, flattened over the outer dimensions (vectors of the Lift type `t`
    kept whole); enough to eyeball a result."""
    if isinstance(x, tuple):
        elems = t.elems if isinstance(t, TupleType) else [None] * len(x)
        return "(" + ", ".join(preview(c, et, count) for c, et in zip(x, elems)) + ")"
    a = np.asarray(x)
    while isinstance(t, ArrayType):
        t = t.elem
    if isinstance(t, VectorType) and a.ndim >= 1 and a.shape[-1] == t.width and not a.dtype.names:
        flat = a.reshape(-1, t.width)
        vals = [_value_text(v) for v in flat[:count]]
        return "[" + ", ".join(vals) + (", …" if len(flat) > count else "") + "]"
    flat = a.reshape(-1)
    if a.dtype.names:
        count = max(1, count // 2)
    vals = [_value_text(v) for v in flat[:count]]
    more = ", …" if flat.size > count else ""
    return "[" + ", ".join(vals) + more + "]"


def run_command(res: Resolved, opts: RunOptions, out: TextIO, err: Optional[TextIO] = None) -> int:
    """The whole `run` command; returns the exit status (1 when the reference disagrees)."""
    from liftkit.cli.common import check_writable
    from liftkit.ir.typecheck import check_program

    out_type = check_program(res.program)  # type errors first, before inputs are made
    if opts.output:  # before the run, not after it
        check_writable(opts.output, "--output")
    got = gather_inputs(res, opts, out_type)
    for note in got.notes:
        print(f"liftkit: note: {note}", file=err if err is not None else sys.stderr)
    inputs, bound, origin = got.values, got.sizes, got.origin
    backend = choose_backend(res.program, opts.backend, opts.device)
    result, run_lines = execute(res.program, inputs, bound, opts, res.name)
    size_text = ", ".join(f"{k}={v}" for k, v in sorted(bound.items())) or "none"
    print(f"program:   {res.name}  (backend: {backend})", file=out)
    for line in run_lines:
        print(line, file=out)
    print(f"sizes:     {size_text}", file=out)
    for p, x, src in zip(res.program.params, inputs, origin):
        ptype = show_type(p.type) if p.type is not None else "?"
        print(f"input:     {p.name} : {ptype} = {describe(x)}  [{src}]", file=out)
    print(f"output:    {show_type(out_type)} = {describe(result)}", file=out)
    print(f"values:    {preview(result, out_type)}", file=out)
    status = 0
    if res.spec is not None:
        try:
            ref = res.spec.reference(*inputs)
        except Exception as err:  # noqa: BLE001 - a spec's reference is user code
            raise CliError(f"{res.name}: its NumPy reference failed ({type(err).__name__}: "
                           f"{one_line(err)})") from err
        cmp = compare(result, ref, res.spec.rtol, res.spec.atol)
        verdict = "matches" if cmp.ok else "DOES NOT MATCH"
        extra = f"; {cmp.note}" if cmp.note else ""
        print(f"reference: {verdict} the NumPy reference (max abs error {cmp.max_abs_err:.3g}, "
              f"rtol={res.spec.rtol:g}, atol={res.spec.atol:g}{extra})", file=out)
        status = 0 if cmp.ok else 1
    else:
        print("reference: none (not a bundled program)", file=out)
    if opts.output:
        print(f"saved:     {save_output(result, opts.output)}", file=out)
    return status
