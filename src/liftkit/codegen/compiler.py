"""The compilation pipeline: a low-level Lift program to a pipeline of OpenCL C or CUDA C kernels.

Stages: type analysis; kernel splitting (computation outside the parallel maps that consumes
their results — the papers' final reduction — becomes its own kernel); barrier analysis
(seed 000 §5.4); then per kernel the generator (memory allocation with Algorithm 1, views,
index simplification, control-flow simplification, unrolling) and the host-side description
(buffers, arguments, NDRange).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Iterator, Mapping, Optional, Sequence

from liftkit.arith import ArithExpr, cst
from liftkit.codegen import views as V
from liftkit.codegen.constraints import size_multiples
from liftkit.codegen.complex import complex_definitions
from liftkit.codegen.dialect import Dialect, dialect_named
from liftkit.codegen.emit import Emitter, Names
from liftkit.codegen.generator import Ctx, Generator, user_fun_definition
from liftkit.codegen.kernel import (TENSOR_MAP_CTYPE, Buffer, CompiledProgram, CompileOptions, Kernel,
                                   KernelArg, NDRange)
from liftkit.codegen.cuda_schedule import split_parts
from liftkit.codegen.memory import (Memory, bytes_of, c_layout, ctype, element_count, storage_elem,
                                    struct_definition)
from liftkit.codegen.stages import (  # noqa: F401 - re-exported: the compiler's vocabulary
    Stage, check_no_unsynchronised_reads, is_layout, kernel_structure_error, split_stages,
)
from liftkit.codegen.views import CodegenError, View
from liftkit.ir import patterns as P
from liftkit.ir.nodes import Expr, FunCall, FunDecl, Lambda, Param, substitute, walk
from liftkit.ir.patterns.wrg import CAPPED_ITEMS
from liftkit.ir.typecheck import TypeChecker, check_program
from liftkit.types import ArrayType, ScalarType, TupleType, Type, size_vars_of

DEFAULT_LOCAL_SIZE = 128  # for mapLcl over symbolic lengths (they keep their loop)
# inferred work-groups stay within this many work-items (ir/patterns/wrg.py says why), larger
# mapLcl lengths keep a loop; wrgItems n lifts it to n for its work-groups,
# CompileOptions.local_size overrides, and the runner refuses in words what a device or a
# kernel does not allow
MAX_LOCAL_ITEMS = CAPPED_ITEMS
# ---------------------------------------------------------------------------------------------
# analyses


def _is_lcl(f: FunDecl) -> bool:
    while isinstance(f, P.AddressSpaceWrapper):
        f = f.f
    return isinstance(f, P.MapLcl)


def _lcl_of(f: FunDecl) -> P.MapLcl:
    while isinstance(f, P.AddressSpaceWrapper):
        f = f.f
    assert isinstance(f, P.MapLcl)
    return f


def _one_thread_per_element(f: FunDecl) -> bool:
    """A mapLcl whose function contains no further parallel map: each element is produced (or
    consumed) entirely by the one thread that handles it."""
    return not any(isinstance(n, P.ParallelMap) for n in walk(_lcl_of(f).f))


def barrier_free_maps(body: Expr) -> set[int]:
    """mapLcl calls whose barrier is not needed (seed 000 §5.4): their result is read only by
    another mapLcl of the same dimension over the same elements, and both handle each element
    in one thread (no nested mapLcl: then each thread reads exactly what it wrote). The
    branches of a zip and the arguments of a let share one barrier instead (merged as they
    are generated: Generator.gen_independent)."""
    free: set[int] = set()
    for n in walk(body):
        if not isinstance(n, FunCall):
            continue
        if _is_lcl(n.f) and _one_thread_per_element(n.f):
            for a in n.args:
                if (isinstance(a, FunCall) and _is_lcl(a.f) and _one_thread_per_element(a.f)
                        and _lcl_of(a.f).dim == _lcl_of(n.f).dim):
                    free.add(id(a))
    return free


def final_maps(body: Expr) -> set[int]:
    """mapLcl calls whose result is the result of their work-group (through data-layout patterns
    only): no thread of the group reads it afterwards, so only local-memory reuse by the next
    work-group iteration could need their barrier."""
    out: set[int] = set()

    def result_of(e: Expr) -> None:
        while isinstance(e, FunCall) and is_layout(e.f) and len(e.args) == 1:
            e = e.args[0]
        if isinstance(e, FunCall) and _is_lcl(e.f):
            out.add(id(e))

    for n in walk(body):
        if isinstance(n, P.MapWrg) and isinstance(n.f, Lambda):
            result_of(n.f.body)
    return out


class _Recorder(TypeChecker):
    """Type checker that notes the lengths every parallel map runs over."""

    def __init__(self) -> None:
        super().__init__()
        self.maps: list[tuple[P.ParallelMap, ArithExpr, tuple[P.Pattern, ...]]] = []
        self.required = 0  # threads a CUDA pattern or wrgItems asks of a work-group (may pass the cap)

    def apply(self, f, arg_types, env, enclosing):  # type: ignore[no-untyped-def]
        out = super().apply(f, arg_types, env, enclosing)
        if isinstance(f, P.ParallelMap) and isinstance(out, ArrayType):
            self.maps.append((f, out.length, enclosing))
        if isinstance(f, P.CudaPattern) and (n := f.threads(arg_types)) is not None:
            self.maps.append((P.MapLcl(f.f, 0), n, enclosing))  # runs on n threads of dimension 0
            self.required = max(self.required, n.value if n.is_constant else 0)
        if (parts := split_parts(f)) is not None:  # reduceSplitTail: its parts along the grid's z
            self.maps.append((P.MapWrg(f.f, 2), cst(parts), enclosing))
        if isinstance(f, P.WrgItems):  # work-groups of up to n work-items, beyond the cap
            self.required = max(self.required, f.count())
        if isinstance(f, P.LastWrg):  # its blocks along dimension 0, their parts along 1
            xs = arg_types[0]
            self.maps += [(P.MapWrg(f.f, 0), xs.length, enclosing),  # type: ignore[attr-defined]
                          (P.MapWrg(f.f, 1), xs.elem.length, enclosing)]  # type: ignore[attr-defined]
        return out


def launch_geometry(body: Expr, env: Mapping[Param, Type], options: CompileOptions
                    ) -> tuple[NDRange, Optional[tuple[int, ...]]]:
    """NDRange from the outermost parallel maps, and the local size the code is generated for."""
    rec = _Recorder()
    rec.expr(body, dict(env))
    maps = rec.maps
    if not maps:
        return NDRange((cst(1),), (1,)), (1,)
    dims = max(m.dim for m, _, _ in maps) + 1
    has_wrg = any(isinstance(m, P.MapWrg) for m, _, _ in maps)
    if options.local_size is not None:
        local = tuple(options.local_size) + (1,) * max(0, dims - len(options.local_size))
    elif has_wrg:
        sizes = []
        for d in range(dims):
            lens = [n.value for m, n, _ in maps if isinstance(m, P.MapLcl) and m.dim == d and n.is_constant]
            any_lcl = any(isinstance(m, P.MapLcl) and m.dim == d for m, _, _ in maps)
            sizes.append(max(lens) if lens else (DEFAULT_LOCAL_SIZE if any_lcl else 1))
        while _product(sizes) > max(MAX_LOCAL_ITEMS, rec.required):  # halve the largest dimension
            k = sizes.index(max(sizes))
            sizes[k] = (sizes[k] + 1) // 2
        local = tuple(sizes)
    else:
        local = None
    glob: list[ArithExpr] = []
    for d in range(dims):
        outer = [(m, n) for m, n, enc in maps if m.dim == d and isinstance(m, (P.MapWrg, P.MapGlb))
                 and not any(isinstance(e, type(m)) and e.dim == d for e in enc)]  # type: ignore[attr-defined]
        if not outer:
            glob.append(cst(local[d] if local else 1))
            continue
        # a mapWrg fixes the dimension's global size (groups × local size); a mapGlb beside it in
        # the same kernel loops with the global stride, so it runs right under any global size
        # (rounded up to a multiple of the local size where a mapLcl elsewhere sets one)
        m, n = next(((m, n) for m, n in outer if isinstance(m, P.MapWrg)), outer[0])
        if isinstance(m, P.MapWrg) and local:
            n = n * local[d]
        elif local and local[d] > 1:
            n = (n + (local[d] - 1)) // local[d] * local[d]
        glob.append(n)
    return NDRange(tuple(glob), local), local


# ---------------------------------------------------------------------------------------------
# one kernel


def _input_memory(p: Param, t: Type) -> tuple[View, Optional[Memory]]:
    if isinstance(t, ArrayType):
        m = Memory(p.name, "global", storage_elem(t, "global"), element_count(t, "global"), "param",
                   readonly=True)
        return V.MemoryView(m, t), m
    return V.ValueView(p.name, t), None


def compile_kernel(params: Sequence[Param], body: Expr, out_names: Sequence[str],
                   options: CompileOptions, name: str, buffer_of: Mapping[Param, str],
                   size_names: Sequence[str], multiples: Optional[Mapping[str, int]] = None
                   ) -> tuple[Kernel, list[Buffer], Type]:
    """Generate one kernel computing `body` into buffers named `out_names`; `multiples`: size
    variables the runtime's checks guarantee to be multiples of a constant."""
    env_types = {p: p.type for p in params}
    out_t = TypeChecker().expr(body, env_types)  # type: ignore[arg-type]
    ndrange, local = launch_geometry(body, env_types, options)  # type: ignore[arg-type]
    ar = V.Arith(options.simplify_indices)
    taken = {p.name for p in params} | set(size_names) | {name}
    dialect = dialect_named(options.dialect)
    em = Emitter(ar, Names(taken), dict(multiples or {}), dialect)
    gen = Generator(options, em, local, barrier_free_maps(body), final_maps(body))
    gen.whole_grid = any(getattr(n, "whole_grid", False) for n in walk(body))

    env: dict[Param, View] = {}
    args: list[KernelArg] = []
    for p in params:
        view, mem = _input_memory(p, p.type)  # type: ignore[arg-type]
        env[p] = view
        em.note_type(p.type)  # type: ignore[arg-type]
        if mem is not None:
            args.append(KernelArg("buffer", p.name, dialect.input_pointer(ctype(mem.elem)),
                                  buffer=buffer_of[p]))
        else:
            if isinstance(p.type, ScalarType) and p.type.name == "bool":
                raise CodegenError(f"parameter {p.name}: bool is not allowed as a kernel argument")
            args.append(KernelArg("scalar", p.name, ctype(p.type), param_index=None))  # type: ignore[arg-type]

    outs = result_leaves(out_t)
    if len(outs) != len(out_names):
        raise CodegenError(f"an intermediate result must be an array, got {out_t}")
    out_views: list[View] = []
    out_buffers: list[Buffer] = []
    for oname, ot in zip(out_names, outs):
        if not isinstance(ot, ArrayType):
            raise CodegenError(f"a kernel's result must be an array or a tuple of arrays (of any "
                               f"nesting), got {ot} in {out_t}")
        m = Memory(em.names.fresh("out" if len(outs) == 1 else oname), "global",
                   storage_elem(ot, "global"), element_count(ot, "global"), "param")
        em.note_type(ot)
        out_views.append(V.MemoryView(m, ot))
        args.append(KernelArg("buffer", m.name, dialect.pointer("global", ctype(m.elem)), buffer=oname))
        out_buffers.append(Buffer(oname, ot, bytes_of(ot), "output"))
    dest = _nested(iter(out_views), out_t)

    result = gen.gen(body, env, Ctx(), dest)
    if result is not dest:
        raise CodegenError("the program's result is not computed by the kernel")

    buffers = list(out_buffers)
    for k, tmp in enumerate(gen.temps):
        _check_temp_size(tmp.type, size_names, body)
        bname = f"{name}:{tmp.memory.name}"
        args.append(KernelArg("buffer", tmp.memory.name, dialect.pointer(
            "global", ctype(tmp.memory.elem), volatile=tmp.memory.volatile), buffer=bname))
        buffers.append(Buffer(bname, tmp.type, bytes_of(tmp.type), "temporary", zeroed=tmp.zeroed))
    for s in size_names:
        args.append(KernelArg("size", s, "int", size=_var(s)))
    by_name = {a.name: a.buffer for a in args if a.kind == "buffer"}
    for tname, over, spec in em.tensor_maps:  # CUDA tensor maps over input buffers (TMA)
        args.append(KernelArg("tensormap", tname, TENSOR_MAP_CTYPE, buffer=by_name[over],
                              tensor_map=spec))  # type: ignore[arg-type]
    source, dynamic = _assemble(em, name, args)
    return Kernel(name, source, tuple(args), ndrange, dynamic_shared=dynamic,
                  whole_grid=gen.whole_grid), buffers, out_t


def _check_temp_size(t: Type, size_names: Sequence[str], body: Expr) -> None:
    """A global temporary is allocated by the host before the kernel runs, so its length must
    be known from the input sizes: one that depends on a value only the kernel knows (an
    iterate's current length) is refused in pattern words, not left to fail at run time."""
    inner = sorted({v.name for v in bytes_of(t).free_vars()} - set(size_names))
    if not inner:
        return
    if any(isinstance(n, P.Iterate) for n in walk(body)):
        raise CodegenError(
            f"iterate: its step writes a global temporary ({t}) whose length changes from one "
            f"iteration to the next ({', '.join(inner)}), but global memory is allocated before "
            f"the kernel runs; move the iterate out of the mapWrg/mapGlb (each step is then a "
            f"kernel of its own, its temporaries allocated per step), or keep the step's "
            f"intermediate results out of global memory")
    raise CodegenError(f"a global temporary ({t}) has a length known only inside the kernel "
                       f"({', '.join(inner)}); global memory is allocated before the kernel runs")


def result_leaves(t: Type) -> list[Type]:
    """The parts of a result that get an output buffer each, depth first: the result itself, or
    every array of a tuple result of any nesting."""
    if isinstance(t, TupleType):
        return [leaf for e in t.elems for leaf in result_leaves(e)]
    return [t]


def _nested(views: Iterator[View], t: Type) -> View:
    """The output buffers' views in the nesting of the result type."""
    if isinstance(t, TupleType):
        return V.TupleView(tuple(_nested(views, e) for e in t.elems), t)
    return next(views)


def _product(xs: Sequence[int]) -> int:
    out = 1
    for x in xs:
        out *= x
    return out


def _var(name: str) -> ArithExpr:
    from liftkit.arith import size_var

    return size_var(name)


# the CUtensorMap a kernel takes by value (cuda.h's layout: 128 bytes, 64-byte aligned)
TENSOR_MAP_STRUCT = "struct __align__(64) lk_tensor_map { unsigned long long opaque[16]; };"


def _assemble(em: Emitter, name: str, args: Sequence[KernelArg]) -> tuple[str, int]:
    """The kernel's source, and the bytes of dynamic local memory its launch must provide."""
    d: Dialect = em.dialect
    lines: list[str] = d.preamble(em.uses_double, em.uses_vectors)
    if em.streamed_types:
        lines.append(d.streamed_helpers(sorted(em.streamed_types)))
    for ct in em.complex_types:
        lines += complex_definitions(ct, d)
    for t in em.tuple_types:
        lines.append(struct_definition(t))
    for f in em.user_funs.values():
        lines.append(user_fun_definition(f, d))
    if any(a.kind == "tensormap" for a in args):
        lines.append(TENSOR_MAP_STRUCT)
    if lines:
        lines.append("")
    params = ",\n    ".join(f"{a.ctype} {a.name}" for a in args)
    attrs = "".join(f"{a} " for a in dict.fromkeys(em.kernel_attributes))
    lines.append(f"{d.kernel_prefix} {attrs}{name}(\n    {params}) {{")
    local, dynamic = _local_lines(em)
    lines += local
    lines += em.finish()
    lines.append("}")
    return "\n".join(lines) + "\n", dynamic


def _local_lines(em: Emitter) -> tuple[list[str], int]:
    """The local arrays' declarations: static ones, or, where they need more than the dialect
    lets a kernel declare statically, pointers into the launch's dynamic local memory (each at
    a 16-byte boundary) and its size in bytes."""
    d: Dialect = em.dialect
    sizes = [m.count.value * c_layout(m.elem)[0] for m in em.local_decls]
    if d.dynamic_local is None or sum(sizes) <= d.static_local_limit:
        return ["  " + d.local_decl(ctype(m.elem), m.name, m.count.value, m.vector_align)
                for m in em.local_decls], 0
    lines, off = ["  " + d.dynamic_local_head], 0
    for m, size in zip(em.local_decls, sizes):
        lines.append("  " + d.dynamic_local(ctype(m.elem), m.name, off))
        off += -(-size // 16) * 16
    return lines, off


# ---------------------------------------------------------------------------------------------
# whole programs


def compile_program(program: Lambda, options: Optional[CompileOptions] = None) -> CompiledProgram:
    """Compile a low-level program to a pipeline of kernels in `options.dialect` (OpenCL C by
    default, or CUDA C)."""
    options = options or CompileOptions()
    t0 = time.perf_counter()
    result_type = check_program(program)
    sizes: set = set()
    for p in program.params:
        sizes |= size_vars_of(p.type)  # type: ignore[arg-type]
    sizes |= size_vars_of(result_type)  # (a size only the result has: pad's, crop's amounts)
    size_names = sorted(v.name for v in sizes)
    stages = split_stages(program)
    multiples = size_multiples(program)
    buffers: list[Buffer] = []
    buffer_of: dict[Param, str] = {}
    for k, p in enumerate(program.params):
        if isinstance(p.type, ArrayType):
            buffer_of[p] = f"input:{p.name}"
            buffers.append(Buffer(f"input:{p.name}", p.type, bytes_of(p.type), "input", k))
    kernels: list[Kernel] = []
    available = list(program.params)
    result_names: tuple[str, ...] = ()
    steps: list[Kernel] = []
    for k, st in enumerate(stages):
        check_no_unsynchronised_reads(st.body)
        body = st.body
        used = [p for p in available if any(n is p for n in walk(body))]
        if st.step:  # one name for a step's input (a previous step's output): equal sources
            inner = [p for p in used if p not in program.params]
            renamed = {p: Param(f"step_in{j}" if len(inner) > 1 else "step_in", p.type)
                       for j, p in enumerate(inner)}
            for old, new in renamed.items():
                buffer_of[new] = buffer_of[old]
            body = substitute(body, renamed)  # type: ignore[arg-type]
            used = [renamed.get(p, p) for p in used]
        kname = options.kernel_name if len(stages) == 1 else f"{options.kernel_name}_{k}"
        if st.param is None:
            rt = result_type
            names = ([f"output{j}" for j in range(len(result_leaves(rt)))]
                     if isinstance(rt, TupleType) else ["output"])
            result_names = tuple(names)
        else:
            names = [st.param.name]
            buffer_of[st.param] = st.param.name
        kernel, bufs, _ = compile_kernel(used, body, names, options, kname, buffer_of, size_names,
                                         multiples)
        kernel = _with_scalar_indices(kernel, program)
        if st.step:
            kernel = _shared_step(kernel, steps)
            steps.append(kernel)
        kernels.append(kernel)
        for b in bufs:
            if st.param is not None and b.role == "output":
                b = Buffer(b.name, b.type, b.nbytes, "intermediate")
            buffers.append(b)
        if st.param is not None:
            available.append(st.param)
    return CompiledProgram(program, tuple(kernels), tuple(buffers), result_names, result_type,
                           options, time.perf_counter() - t0)


def _shared_step(kernel: Kernel, steps: Sequence[Kernel]) -> Kernel:
    """The kernel launching an earlier step's function when their sources differ only in the
    function's name: an iterate of k steps builds one program, not k."""
    for q in steps:
        if kernel.source.replace(f" {kernel.name}(\n", f" {q.function}(\n", 1) == q.source:
            return replace(kernel, source=q.source, entry=q.function)
    return kernel


def _with_scalar_indices(kernel: Kernel, program: Lambda) -> Kernel:
    index = {p.name: k for k, p in enumerate(program.params)}
    args = tuple(KernelArg(a.kind, a.name, a.ctype, a.buffer, index.get(a.name), a.size)
                 if a.kind == "scalar" else a for a in kernel.args)
    return replace(kernel, args=args)
