"""What differs between OpenCL C and CUDA C, in one table per language.

The generator and the emitter build one C statement tree for both languages; each place where
the two spell something differently asks the kernel's `Dialect`: address-space qualifiers of
pointers and declarations, the work-group barrier, thread and group ids, vector and tuple
literals, the kernel signature and what a translation unit starts with. CUDA C gets OpenCL C's
vector types (with `.x`/`.s0` lanes and element-wise operators), `vloadN`/`vstoreN` and the
OpenCL built-ins user functions use from a small prelude (`cuda_prelude.py`), so user functions
are written once, in OpenCL C, and their bodies carry over unchanged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Literal, Mapping, Optional, Sequence

DialectName = Literal["opencl", "cuda"]
DIALECTS: tuple[DialectName, ...] = ("opencl", "cuda")
IdKind = Literal["glb", "wrg", "lcl"]  # global (work-item), work-group, local (in its group)

_AXES = "xyz"
# OpenCL vector literals in user-function bodies, `(float4)(a, b)`: C++ reads them as a cast of a
# comma expression, so the CUDA dialect turns them into constructor calls, `float4(a, b)`
_VECTOR_CAST = re.compile(
    r"\(\s*((?:u?(?:char|short|int|long))|float|double|uchar|ushort|uint|ulong)(2|3|4|8|16)\s*\)\s*\(")
# C99 compound literals of tuples in user-function bodies, `return (Tuple){a, b};`: C++ has none,
# so the CUDA dialect writes them as aggregate initialisation, `Tuple{a, b}` (only where an
# expression starts: after return, `=`, `(`, `,`, `?` or `:`, so `if (TupleOk) {` stays)
_TUPLE_LITERAL = re.compile(r"(\breturn\b|[=(,?:])(\s*)\(\s*(Tuple\w*)\s*\)\s*\{")


def _cu_user_body(body: str) -> str:
    """A user function's OpenCL C body as CUDA C: vector literals as constructor calls, tuple
    compound literals as aggregate initialisation."""
    body = _VECTOR_CAST.sub(lambda m: f"{m.group(1)}{m.group(2)}(", body)
    return _TUPLE_LITERAL.sub(lambda m: f"{m.group(1)}{m.group(2)}{m.group(3)}{{", body)


@dataclass(frozen=True)
class Dialect:
    """One C dialect's spellings (see the module docstring)."""

    name: DialectName
    title: str  # for messages: "OpenCL C", "CUDA C"
    space_qualifier: Mapping[str, str]  # a pointer's address space as written before its type
    restrict: str  # the no-alias qualifier of input pointers
    kernel_prefix: str  # what precedes the kernel's name
    user_fun_prefix: str  # what precedes a user function's return type
    ids: Callable[[IdKind, int], str]  # the C expression (an int) of a thread/group id
    counts: Callable[[IdKind, int], str]  # the number of those along a dimension
    barrier_text: Callable[[frozenset[str]], str]  # a work-group barrier with OpenCL's fences
    local_decl: Callable[[str, str, int, int], str]  # (elem ctype, name, count, align) -> line
    preamble: Callable[[bool, bool], list[str]]  # (uses double, uses vectors) -> leading lines
    vector_literal: Callable[[str, Sequence[str]], str]  # (vector ctype, lanes or one broadcast)
    tuple_literal: Callable[[str, Sequence[str]], str]  # (struct ctype, fields)
    user_body: Callable[[str], str]  # a user function's OpenCL C body in this dialect
    # (complex ctype, real ctype) -> the complex type's declaration and its constructor
    # `<ctype>_new(re, im)`; the arithmetic helpers on top are shared (`liftkit.codegen.complex`)
    complex_type: Callable[[str, str], list[str]]
    # work-groups meeting in global memory (lastWrg): a fence after which the work-item's
    # global writes are seen by every work-group, and (int lvalue) -> its atomic increment,
    # the old value
    global_fence: str
    atomic_inc: Callable[[str], str]
    # a complex number in volatile memory is read and written field by field (CUDA's struct
    # has no volatile copy; OpenCL's float2 / double2 vectors do)
    volatile_complex_fields: bool
    # (work-items per group, resident groups per multiprocessor) -> the kernel attribute that
    # builds it for that many (a register cap); None where the dialect has none (OpenCL C)
    occupancy: Optional[Callable[[int, int], str]] = None
    # thread-block clusters (lastWrg c = 1: a block's parts meet in distributed shared
    # memory): (x, y, z) -> the kernel attribute launching clusters of that shape; the
    # cluster-wide barrier (release/acquire); (C uint lvalue, local word pointer, rank) -> the
    # statement reading that 32-bit word of the cluster block `rank`'s local memory. None: no
    # clusters (OpenCL C): the parts meet in global memory
    cluster_dims: Optional[Callable[[int, int, int], str]] = None
    cluster_sync: str = ""
    cluster_word: Optional[Callable[[str, str, str], str]] = None
    # what patterns beyond OpenCL may use (`CudaPattern.feature`): "warp-shuffle", "mma", ...
    features: frozenset[str] = frozenset()
    # (C value, lane offset) -> the value of the lane `offset` away by xor, from a full warp
    shuffle_xor: Optional[Callable[[str, int], str]] = None
    # local memory beyond `static_local_limit` bytes: the declaration of the launch's dynamic
    # local memory, and (elem ctype, name, byte offset) -> a local array carved from it
    dynamic_local_head: str = ""
    dynamic_local: Optional[Callable[[str, str, int], str]] = None
    static_local_limit: int = 0
    # a read-once load (the `streamed` pattern): (the value's address, its scalar C type,
    # vector width or 0 for a scalar) -> the C expression loading it evict-first, or None where
    # the dialect has none for that type (then a plain read: OpenCL C has no cache hints), and
    # the definitions those expressions call (once in a kernel that uses one)
    streamed_load: Optional[Callable[[str, str, int], Optional[str]]] = None
    streamed_helpers: Callable[[Sequence[tuple[str, int]]], str] = lambda types: ""

    def pointer(self, space: str, elem: str, const: bool = False, volatile: bool = False) -> str:
        """`global float*`, `const local int*`, `float*` (CUDA); `volatile`: every access goes
        to memory (what other work-groups wrote, not a cached line)."""
        qual = self.space_qualifier[space]
        words = ((["const"] if const else []) + (["volatile"] if volatile else [])
                 + ([qual] if qual else []) + [f"{elem}*"])
        return " ".join(words)

    def input_pointer(self, elem: str) -> str:
        """A read-only kernel input that aliases nothing the kernel writes."""
        return f"{self.pointer('global', elem, const=True)} {self.restrict}"


# ---------------------------------------------------------------------------------------------
# OpenCL C


_CL_IDS = {"glb": ("get_global_id", "get_global_size"), "wrg": ("get_group_id", "get_num_groups"),
           "lcl": ("get_local_id", "get_local_size")}


def _cl_local_decl(elem: str, name: str, count: int, align: int) -> str:
    attr = f" __attribute__((aligned({align})))" if align else ""
    return f"local {elem} {name}[{count}]{attr};"


def _cl_preamble(uses_double: bool, uses_vectors: bool) -> list[str]:
    return ["#pragma OPENCL EXTENSION cl_khr_fp64 : enable"] if uses_double else []


OPENCL = Dialect(
    name="opencl",
    title="OpenCL C",
    space_qualifier={"global": "global", "local": "local", "private": "private"},
    restrict="restrict",
    kernel_prefix="kernel void",
    user_fun_prefix="",
    ids=lambda kind, dim: f"{_CL_IDS[kind][0]}({dim})",
    counts=lambda kind, dim: f"{_CL_IDS[kind][1]}({dim})",
    barrier_text=lambda fences: f"barrier({' | '.join(sorted(fences, reverse=True))});",
    local_decl=_cl_local_decl,
    preamble=_cl_preamble,
    vector_literal=lambda t, parts: f"({t})(" + ", ".join(parts) + ")",
    tuple_literal=lambda t, parts: f"({t}){{" + ", ".join(parts) + "}",
    user_body=lambda body: body,
    # OpenCL's float2/double2: NumPy's complex layout and alignment, with .x/.y as re/im
    complex_type=lambda c, r: [f"typedef {r}2 {c};",
                               f"{c} {c}_new({r} re, {r} im) {{ return ({r}2)(re, im); }}"],
    global_fence="mem_fence(CLK_GLOBAL_MEM_FENCE);",
    atomic_inc=lambda lv: f"atomic_inc(&{lv})",
    volatile_complex_fields=False,
)


# ---------------------------------------------------------------------------------------------
# CUDA C


def _cu_ids(kind: IdKind, dim: int) -> str:
    a = _AXES[dim]
    return {"glb": f"(int)(blockIdx.{a} * blockDim.{a} + threadIdx.{a})",
            "wrg": f"(int)blockIdx.{a}", "lcl": f"(int)threadIdx.{a}"}[kind]


def _cu_counts(kind: IdKind, dim: int) -> str:
    a = _AXES[dim]
    return {"glb": f"(int)(gridDim.{a} * blockDim.{a})", "wrg": f"(int)gridDim.{a}",
            "lcl": f"(int)blockDim.{a}"}[kind]


def _cu_local_decl(elem: str, name: str, count: int, align: int) -> str:
    attr = f" __align__({align})" if align else ""
    return f"__shared__{attr} {elem} {name}[{count}];"


def _cu_preamble(uses_double: bool, uses_vectors: bool) -> list[str]:
    from liftkit.codegen.cuda_prelude import prelude

    return [prelude(uses_vectors)]


# PTX type, asm constraint and lanes of a 16-byte load of each scalar type with evict-first loads
_CU_LANES = {"float": ("f32", "f", 4), "double": ("f64", "d", 2)}


def _cu_streamed_load(addr: str, scalar: str, width: int) -> Optional[str]:
    """`lk_ldcs` (below) on a float or double or a vector of 2-16 of them; other types get a
    plain read."""
    return f"lk_ldcs({addr})" if scalar in _CU_LANES and width in (0, 2, 4, 8, 16) else None


def _cu_streamed_helpers(types: Sequence[tuple[str, int]]) -> str:
    """`lk_ldcs(p)` for each (scalar, width): inline PTX `ld.global.cs` (cached streaming,
    evict first), 16 bytes a load. Not volatile, so the compiler may batch and move the loads
    as it does plain reads of a const restrict input (the kernel reads only those: see
    `Emitter.streamed_load`); CUDA's `__ldcs` on ulonglong2 words built the float32 GEMV T
    kernel with 64 registers where plain reads (and these) take 120."""
    out = []
    for scalar, width in types:
        ptx, con, per = _CU_LANES[scalar]
        if not width:
            out.append(f"__device__ inline {scalar} lk_ldcs(const {scalar}* p) {{ {scalar} r; "
                       f'asm("ld.global.cs.{ptx} %0, [%1];" : "={con}"(r) : "l"(p)); return r; }}')
            continue
        vt, step = f"{scalar}{width}", min(per, width)
        loads = []
        for c in range(0, width, step):
            regs = ", ".join(f"%{k}" for k in range(step))
            outs = ", ".join(f'"={con}"(r.s[{c + k}])' for k in range(step))
            at = f"[%{step}+{c // step * 16}]" if c else f"[%{step}]"
            loads.append(f'  asm("ld.global.cs.v{step}.{ptx} {{{regs}}}, {at};" : {outs} : "l"(p));')
        out.append(f"__device__ inline {vt} lk_ldcs(const {vt}* p) {{\n  {vt} r;\n"
                   + "\n".join(loads) + "\n  return r;\n}")
    return "\n".join(out)


CUDA = Dialect(
    name="cuda",
    title="CUDA C",
    space_qualifier={"global": "", "local": "", "private": ""},
    restrict="__restrict__",
    kernel_prefix='extern "C" __global__ void',
    user_fun_prefix="__device__ inline ",
    ids=_cu_ids,
    counts=_cu_counts,
    # __syncthreads orders shared and global memory among the block's threads: every OpenCL
    # fence combination is one call
    barrier_text=lambda fences: "__syncthreads();",
    local_decl=_cu_local_decl,
    preamble=_cu_preamble,
    vector_literal=lambda t, parts: f"{t}(" + ", ".join(parts) + ")",
    tuple_literal=lambda t, parts: f"{t}{{" + ", ".join(parts) + "}",
    user_body=_cu_user_body,
    # a struct of its own (the prelude's float2 may be the OpenCL-like vector), aligned as
    # OpenCL's float2/double2 and NumPy's complex arrays' elements
    complex_type=lambda c, r: [
        f"struct __align__({2 * (4 if r == 'float' else 8)}) {c} {{ {r} x, y; }};",
        f"__device__ inline {c} {c}_new({r} re, {r} im) {{ {c} z; z.x = re; z.y = im; return z; }}"],
    # acq_rel, not __threadfence's sequentially consistent fence, which waits longer (NVRTC
    # builds for compute capability 7.5 and newer, which all have it)
    global_fence='asm volatile("fence.acq_rel.gpu;" ::: "memory");',
    atomic_inc=lambda lv: f"atomicAdd((int*)&{lv}, 1)",
    volatile_complex_fields=True,
    occupancy=lambda threads, groups: f"__launch_bounds__({threads}, {groups})",
    cluster_dims=lambda x, y, z: f"__cluster_dims__({x}, {y}, {z})",
    cluster_sync=('asm volatile("barrier.cluster.arrive.release.aligned;\\n'
                  'barrier.cluster.wait.acquire.aligned;" ::: "memory");'),
    cluster_word=lambda dest, ptr, rank: (
        f'asm volatile("{{\\n.reg .u32 lk_a;\\nmapa.shared::cluster.u32 lk_a, %1, %2;\\n'
        f'ld.shared::cluster.u32 %0, [lk_a];\\n}}" : "=r"({dest}) : '
        f'"r"((unsigned)__cvta_generic_to_shared({ptr})), "r"((unsigned)({rank})) : "memory");'),
    features=frozenset({"warp-shuffle", "mma", "cp.async", "wgmma"}),
    shuffle_xor=lambda value, offset: f"__shfl_xor_sync(0xffffffffu, {value}, {offset})",
    # a block declares at most 48 KB statically; more comes at launch (opted in per kernel)
    dynamic_local_head="extern __shared__ __align__(16) unsigned char lk_dynamic_shared[];",
    dynamic_local=lambda elem, name, off: f"{elem}* {name} = ({elem}*)(lk_dynamic_shared + {off});",
    static_local_limit=48 * 1024,
    streamed_load=_cu_streamed_load,
    streamed_helpers=_cu_streamed_helpers,
)


_BY_NAME: dict[str, Dialect] = {"opencl": OPENCL, "cuda": CUDA}


def dialect_named(name: str) -> Dialect:
    """The dialect called `name` ("opencl" or "cuda")."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown C dialect {name!r}: choose one of {', '.join(DIALECTS)}") from None
