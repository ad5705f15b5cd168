"""PyPTO runtime: compiled products, the artifact store, program mode and the mode gate.

Importing this package installs the ``@pl.jit`` executor, so calling a jit function runs it
in program mode: ``fn(a, b, c, config=RunConfig())``. Nothing here claims a process mode or
creates a Worker at import time.
"""

from __future__ import annotations

from pypto.ir import set_host_compiler, set_jit_compiler, set_jit_executor
from pypto.runtime.api import compile, compile_artifact, jit_compiler, jit_executor, load_cached, run
from pypto.runtime.artifact_runtime import ArtifactRuntime
from pypto.runtime.chip_worker import ChipWorker, DeviceTensor, RegistrationHandle
from pypto.runtime.compiled import CompiledArtifact, CompiledProgram
from pypto.runtime.distributed.program import DistributedCompiledProgram
from pypto.runtime.distributed.program import compile_host as _compile_host
from pypto.runtime.distributed.tensors import SharedDeviceTensor, StackedDeviceTensor
from pypto.runtime.distributed.worker import DistributedRunHandle, DistributedWorker
from pypto.runtime.errors import DeviceBuildUnavailable, PyptoRuntimeError
from pypto.runtime.mode_gate import ModeConflictError, ProcessMode
from pypto.runtime.runner import RunConfig
from pypto.runtime.tensor_spec import TensorSpec

__version__ = "0.1.0"

__all__ = [
    "ArtifactRuntime",
    "ChipWorker",
    "CompiledArtifact",
    "CompiledProgram",
    "DeviceBuildUnavailable",
    "DeviceTensor",
    "DistributedCompiledProgram",
    "DistributedRunHandle",
    "DistributedWorker",
    "ModeConflictError",
    "ProcessMode",
    "PyptoRuntimeError",
    "RegistrationHandle",
    "RunConfig",
    "SharedDeviceTensor",
    "StackedDeviceTensor",
    "TensorSpec",
    "__version__",
    "compile",
    "compile_artifact",
    "load_cached",
    "run",
]

set_jit_executor(jit_executor)
set_jit_compiler(jit_compiler)
set_host_compiler(_compile_host)
