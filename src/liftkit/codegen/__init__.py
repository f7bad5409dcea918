"""The Lift compiler: low-level programs to OpenCL kernels (seed 000 §5)."""

from liftkit.codegen.compiler import compile_program, split_stages
from liftkit.codegen.kernel import Buffer, CompiledProgram, CompileOptions, Kernel, KernelArg, NDRange
from liftkit.codegen.views import CodegenError

__all__ = ["compile_program", "split_stages", "Buffer", "CompiledProgram", "CompileOptions", "Kernel",
           "KernelArg", "NDRange", "CodegenError"]
