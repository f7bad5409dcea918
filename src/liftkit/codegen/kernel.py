"""What the compiler hands to a runtime: kernels, their arguments and launch geometry.

Everything here is plain data with sizes as arithmetic over the program's size variables, so the
runtime (pyopencl, or CUDA through cuda-python) evaluates them once the inputs' shapes bind the variables.
A program compiles to a *pipeline*: one or more kernels run in order, connected through named
buffers (the papers' two-kernel reductions: partial sums, then a final reduction).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Optional

from liftkit.arith import ArithExpr
from liftkit.ir.nodes import Lambda
from liftkit.types import Type

ArgKind = Literal["buffer", "scalar", "size", "tensormap"]


@dataclass(frozen=True)
class CompileOptions:
    """Switches for each code-generator optimisation (seed 000 Fig. 8 ablation) and launch hints.

    local_size: work-group size per dimension; None lets the compiler choose from the program
    (the constant lengths of its mapLcl patterns). Known local sizes give thread ids ranges,
    which index simplification and control-flow simplification use.
    dialect: the C the kernels are written in, "opencl" (OpenCL C) or "cuda" (CUDA C); the
    statements are the same, only their spelling differs.
    quirks: workarounds for the defects of one device's compiler (`liftkit.codegen.quirks`),
    set by the backend that found them; empty for correct compilers.
    """

    simplify_indices: bool = True
    eliminate_barriers: bool = True
    simplify_control_flow: bool = True
    unroll: bool = True
    local_size: Optional[tuple[int, ...]] = None
    kernel_name: str = "KERNEL"
    dialect: str = "opencl"
    quirks: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        from liftkit.codegen.dialect import dialect_named
        from liftkit.codegen.quirks import check_quirks

        dialect_named(self.dialect)  # an unknown dialect is refused here, in words
        check_quirks(self.quirks)

    def key(self) -> str:
        """The options that change the generated code (OpenCL keys predate the dialect)."""
        key = (f"si={int(self.simplify_indices)},be={int(self.eliminate_barriers)},"
               f"cf={int(self.simplify_control_flow)},un={int(self.unroll)},ls={self.local_size}")
        key += "".join(f",quirk={q}" for q in sorted(self.quirks))
        return key if self.dialect == "opencl" else key + f",dialect={self.dialect}"


@dataclass(frozen=True)
class Buffer:
    """A device buffer the host allocates (or fills from an input).

    name: unique in the pipeline; `input:x` buffers are filled from program parameter x.
    type: the Lift type of the data it holds (array types; tuples stored as C structs).
    nbytes: its size in bytes over size variables.
    """

    name: str
    type: Type
    nbytes: ArithExpr
    role: Literal["input", "output", "temporary", "intermediate"]
    param_index: Optional[int] = None  # for inputs: position among the program's parameters
    # temporaries: the kernel needs it zero-filled when it starts and leaves it zero when it
    # ends (reduceSplitTail's flags): zero it when it is allocated; launches in order on one
    # stream may reuse it, launches that may overlap (other streams) need one each
    zeroed: bool = False


@dataclass(frozen=True)
class TensorMap:
    """A CUDA tensor map (CUtensorMap, what the bulk tensor copy engine reads) that the host
    encodes for each launch over a float32 buffer seen as rows of `row` elements (the inner
    dimension and the row stride; `elements` / `row` rows): boxes of `box` = (elements along a
    row, rows) land in shared memory with the `swizzle` (0 or 128 bytes) the kernel reads them with."""

    row: ArithExpr
    elements: ArithExpr
    box: tuple[int, int]
    swizzle: int = 0


TENSOR_MAP_CTYPE = "const __grid_constant__ lk_tensor_map"  # 128 opaque bytes, passed by value


@dataclass(frozen=True)
class KernelArg:
    """One kernel parameter, in order: a buffer (by name), a scalar program input, a size, or a
    tensor map (CUDA) over a buffer (`buffer`, its shape in `tensor_map`)."""

    kind: ArgKind
    name: str  # the C parameter name
    ctype: str  # e.g. "const global float* restrict", "float", "int"
    buffer: Optional[str] = None  # for kind == "buffer"
    param_index: Optional[int] = None  # for kind == "scalar": which program parameter
    size: Optional[ArithExpr] = None  # for kind == "size": the value (usually a size variable)
    tensor_map: Optional[TensorMap] = None  # for kind == "tensormap"


@dataclass(frozen=True)
class NDRange:
    """Global and local sizes per dimension; global sizes are arithmetic over size variables."""

    global_size: tuple[ArithExpr, ...]
    local_size: Optional[tuple[int, ...]]  # None: let the driver choose

    @property
    def dims(self) -> int:
        return len(self.global_size)


@dataclass(frozen=True)
class Kernel:
    """One launch of the pipeline. `entry` names the C function when it is another kernel's:
    the steps of an iterate that runs as one kernel per step share one source, built once."""

    name: str
    source: str  # complete OpenCL C or CUDA C translation unit
    args: tuple[KernelArg, ...]
    ndrange: NDRange
    build_options: tuple[str, ...] = ()
    entry: str = ""
    # CUDA: bytes of local (shared) memory carved from the launch's dynamic shared memory, for
    # kernels needing more than the 48 KB a block may declare statically (0: none)
    dynamic_shared: int = 0
    # CUDA: one block per work-group, no grid-stride loop: the launch must not cap the grid
    whole_grid: bool = False

    @property
    def function(self) -> str:
        """The C function to launch."""
        return self.entry or self.name


@dataclass(frozen=True)
class CompiledProgram:
    """A program compiled to a pipeline of kernels.

    result: the buffer(s) holding the program's result, in the order of a tuple result (one
    entry for an array result); result_type is the program's Lift result type.
    """

    program: Lambda
    kernels: tuple[Kernel, ...]
    buffers: tuple[Buffer, ...]
    result: tuple[str, ...]
    result_type: Type
    options: CompileOptions = field(default_factory=CompileOptions)
    compile_seconds: float = 0.0  # host-side (our Python) time, without the driver's build

    def buffer(self, name: str) -> Buffer:
        for b in self.buffers:
            if b.name == name:
                return b
        raise KeyError(name)

    @property
    def source(self) -> str:
        """All kernels' sources (each shared one once), for printing (`liftkit compile`)."""
        return "\n\n".join(dict.fromkeys(k.source for k in self.kernels))
