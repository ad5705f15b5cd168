"""C++ code generation: one kernel source per InCore function, one orchestration source.

Both are strict 1:1 translations of the lowered IR; every decision (directions, aliasing,
lowering) was made by a pass before.
"""

from pypto.ir.codegen.kernel import KernelSource, abi_params, core_type_of, generate_kernel
from pypto.ir.codegen.orchestration import OrchestrationSource, generate_orchestration

__all__ = [
    "KernelSource",
    "OrchestrationSource",
    "abi_params",
    "core_type_of",
    "generate_kernel",
    "generate_orchestration",
]
