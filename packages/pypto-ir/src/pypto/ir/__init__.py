"""PyPTO compiler: IR, passes, C++ code generation and compiled metadata.

The names below are pypto-ir's face to the layers above it (pypto-runtime, pypto-torch,
tools): import them from ``pypto.ir``. Everything else in the package's modules is internal
to pypto-ir and may change with it; ``testing/tests/test_cross_package.py`` checks that the
layers above import only these names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pypto.ir.lazy_face import lazy_getattr

__version__ = "0.1.0"

if TYPE_CHECKING:  # the same names, for type checkers and IDEs
    from pypto.ir.artifact_key import (
        ArtifactKey,
        ToolchainIdentity,
        binary_key,
        digest_of,
        plan_key,
        program_key,
        program_material,
        tree_digest,
    )
    from pypto.ir.compile import CompileResult, compile, compile_to_files
    from pypto.ir.contract import Contract, DeviceKind, device_kind, parse_platform
    from pypto.ir.distributed_compiled_program import (
        DATA_PATHS,
        DistributedCompiledProgram,
        DistributedConfig,
    )
    from pypto.ir.dtypes import DataType
    from pypto.ir.errors import CodegenError, KernelError, PyptoCompileError
    from pypto.ir.execution import (
        DECLINED,
        clear_executor_plans,
        get_jit_compiler,
        get_jit_executor,
        set_executor_plan,
        set_host_compiler,
        set_jit_compiler,
        set_jit_executor,
    )
    from pypto.ir.files import atomic_write
    from pypto.ir.host_function import HostLevelFunction
    from pypto.ir.metadata import META_FILE, ArtifactMetadata, KernelInfo, MetadataError, read_metadata
    from pypto.ir.nodes import Function, Program
    from pypto.ir.param_info import (
        DYNAMIC,
        NZ_BLOCK_BYTES,
        NZ_BLOCK_ROWS,
        Layout,
        ParamDirection,
        ParamInfo,
        SignatureError,
        bind_complete_args,
        validate_param_names,
        validate_return_aliases,
    )
    from pypto.ir.pass_manager import OptimizationStrategy, PassDumpLevel, check_dump_passes, check_strategy
    from pypto.ir.platforms import (
        DEFAULT_PLATFORM,
        DEFAULT_RUNTIME,
        NPU_PLATFORMS,
        PLATFORM_TABLE,
        PLATFORMS,
        RUNTIMES,
        SIMULATOR_PLATFORMS,
        BackendType,
        check_backend,
        get_platform,
    )
    from pypto.ir.python_printer import python_print
    from pypto.ir.serialization import deserialize, serialize
    from pypto.ir.storage_rules import Span as ViewSpan
    from pypto.ir.storage_rules import partial_overlap, strided_alias_conflict, view_bounds_problem
    from pypto.ir.types import FunctionType, Role

# name -> (module, name in that module); imported on first use, so that importing one
# pypto.ir module (dtypes, param_info) does not load the whole compiler
_FACE: dict[str, tuple[str, str]] = {
    "ArtifactKey": ("pypto.ir.artifact_key", "ArtifactKey"),
    "binary_key": ("pypto.ir.artifact_key", "binary_key"),
    "digest_of": ("pypto.ir.artifact_key", "digest_of"),
    "plan_key": ("pypto.ir.artifact_key", "plan_key"),
    "program_key": ("pypto.ir.artifact_key", "program_key"),
    "program_material": ("pypto.ir.artifact_key", "program_material"),
    "tree_digest": ("pypto.ir.artifact_key", "tree_digest"),
    "ArtifactMetadata": ("pypto.ir.metadata", "ArtifactMetadata"),
    "BackendType": ("pypto.ir.platforms", "BackendType"),
    "CodegenError": ("pypto.ir.errors", "CodegenError"),
    "CompileResult": ("pypto.ir.compile", "CompileResult"),
    "Contract": ("pypto.ir.contract", "Contract"),
    "DYNAMIC": ("pypto.ir.param_info", "DYNAMIC"),
    "DataType": ("pypto.ir.dtypes", "DataType"),
    "DEFAULT_PLATFORM": ("pypto.ir.platforms", "DEFAULT_PLATFORM"),
    "DEFAULT_RUNTIME": ("pypto.ir.platforms", "DEFAULT_RUNTIME"),
    "DeviceKind": ("pypto.ir.contract", "DeviceKind"),
    "Function": ("pypto.ir.nodes", "Function"),
    "FunctionType": ("pypto.ir.types", "FunctionType"),
    "KernelError": ("pypto.ir.errors", "KernelError"),
    "KernelInfo": ("pypto.ir.metadata", "KernelInfo"),
    "Layout": ("pypto.ir.param_info", "Layout"),
    "META_FILE": ("pypto.ir.metadata", "META_FILE"),
    "MetadataError": ("pypto.ir.metadata", "MetadataError"),
    "NPU_PLATFORMS": ("pypto.ir.platforms", "NPU_PLATFORMS"),
    "NZ_BLOCK_BYTES": ("pypto.ir.param_info", "NZ_BLOCK_BYTES"),
    "NZ_BLOCK_ROWS": ("pypto.ir.param_info", "NZ_BLOCK_ROWS"),
    "OptimizationStrategy": ("pypto.ir.pass_manager", "OptimizationStrategy"),
    "PassDumpLevel": ("pypto.ir.pass_manager", "PassDumpLevel"),
    "PLATFORMS": ("pypto.ir.platforms", "PLATFORMS"),
    "PLATFORM_TABLE": ("pypto.ir.platforms", "PLATFORM_TABLE"),
    "PyptoCompileError": ("pypto.ir.errors", "PyptoCompileError"),
    "ParamDirection": ("pypto.ir.param_info", "ParamDirection"),
    "ParamInfo": ("pypto.ir.param_info", "ParamInfo"),
    "Program": ("pypto.ir.nodes", "Program"),
    "python_print": ("pypto.ir.python_printer", "python_print"),
    "RUNTIMES": ("pypto.ir.platforms", "RUNTIMES"),
    "SIMULATOR_PLATFORMS": ("pypto.ir.platforms", "SIMULATOR_PLATFORMS"),
    "SignatureError": ("pypto.ir.param_info", "SignatureError"),
    "ToolchainIdentity": ("pypto.ir.artifact_key", "ToolchainIdentity"),
    "ViewSpan": ("pypto.ir.storage_rules", "Span"),
    "bind_complete_args": ("pypto.ir.param_info", "bind_complete_args"),
    "atomic_write": ("pypto.ir.files", "atomic_write"),
    "check_backend": ("pypto.ir.platforms", "check_backend"),
    "check_dump_passes": ("pypto.ir.pass_manager", "check_dump_passes"),
    "check_strategy": ("pypto.ir.pass_manager", "check_strategy"),
    "compile": ("pypto.ir.compile", "compile"),
    "compile_to_files": ("pypto.ir.compile", "compile_to_files"),
    "deserialize": ("pypto.ir.serialization", "deserialize"),
    "device_kind": ("pypto.ir.contract", "device_kind"),
    "DECLINED": ("pypto.ir.execution", "DECLINED"),
    "clear_executor_plans": ("pypto.ir.execution", "clear_executor_plans"),
    "get_jit_compiler": ("pypto.ir.execution", "get_jit_compiler"),
    "get_jit_executor": ("pypto.ir.execution", "get_jit_executor"),
    "get_platform": ("pypto.ir.platforms", "get_platform"),
    "parse_platform": ("pypto.ir.contract", "parse_platform"),
    "partial_overlap": ("pypto.ir.storage_rules", "partial_overlap"),
    "read_metadata": ("pypto.ir.metadata", "read_metadata"),
    "serialize": ("pypto.ir.serialization", "serialize"),
    "set_jit_compiler": ("pypto.ir.execution", "set_jit_compiler"),
    "set_host_compiler": ("pypto.ir.execution", "set_host_compiler"),
    "set_executor_plan": ("pypto.ir.execution", "set_executor_plan"),
    "set_jit_executor": ("pypto.ir.execution", "set_jit_executor"),
    "DATA_PATHS": ("pypto.ir.distributed_compiled_program", "DATA_PATHS"),
    "DistributedConfig": ("pypto.ir.distributed_compiled_program", "DistributedConfig"),
    "DistributedCompiledProgram": ("pypto.ir.distributed_compiled_program", "DistributedCompiledProgram"),
    "HostLevelFunction": ("pypto.ir.host_function", "HostLevelFunction"),
    "Role": ("pypto.ir.types", "Role"),
    "strided_alias_conflict": ("pypto.ir.storage_rules", "strided_alias_conflict"),
    "validate_param_names": ("pypto.ir.param_info", "validate_param_names"),
    "validate_return_aliases": ("pypto.ir.param_info", "validate_return_aliases"),
    "view_bounds_problem": ("pypto.ir.storage_rules", "view_bounds_problem"),
    "lazy_getattr": ("pypto.ir.lazy_face", "lazy_getattr"),
}

__all__ = [
    "DATA_PATHS",
    "DECLINED",
    "DEFAULT_PLATFORM",
    "DEFAULT_RUNTIME",
    "DYNAMIC",
    "META_FILE",
    "NPU_PLATFORMS",
    "NZ_BLOCK_BYTES",
    "NZ_BLOCK_ROWS",
    "PLATFORMS",
    "PLATFORM_TABLE",
    "RUNTIMES",
    "SIMULATOR_PLATFORMS",
    "ArtifactKey",
    "ArtifactMetadata",
    "BackendType",
    "CodegenError",
    "CompileResult",
    "Contract",
    "DataType",
    "DeviceKind",
    "DistributedCompiledProgram",
    "DistributedConfig",
    "Function",
    "FunctionType",
    "HostLevelFunction",
    "KernelError",
    "KernelInfo",
    "Layout",
    "MetadataError",
    "OptimizationStrategy",
    "ParamDirection",
    "ParamInfo",
    "PassDumpLevel",
    "Program",
    "PyptoCompileError",
    "Role",
    "SignatureError",
    "ToolchainIdentity",
    "ViewSpan",
    "__version__",
    "atomic_write",
    "binary_key",
    "bind_complete_args",
    "check_backend",
    "check_dump_passes",
    "check_strategy",
    "clear_executor_plans",
    "compile",
    "compile_to_files",
    "deserialize",
    "device_kind",
    "digest_of",
    "get_jit_compiler",
    "get_jit_executor",
    "get_platform",
    "lazy_getattr",
    "parse_platform",
    "partial_overlap",
    "plan_key",
    "program_key",
    "program_material",
    "python_print",
    "read_metadata",
    "serialize",
    "set_executor_plan",
    "set_host_compiler",
    "set_jit_compiler",
    "set_jit_executor",
    "strided_alias_conflict",
    "tree_digest",
    "validate_param_names",
    "validate_return_aliases",
    "view_bounds_problem",
]


__getattr__ = lazy_getattr(__name__, _FACE, globals())


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
