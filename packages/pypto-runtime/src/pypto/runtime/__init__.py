"""PyPTO runtime: compiled products, the artifact store, program mode and the mode gate.

Importing this package installs the ``@pl.jit`` executor, so calling a jit function runs it
in program mode: ``fn(a, b, c, config=RunConfig())``. Nothing here claims a process mode or
creates a Worker at import time.

The multi-chip runtime (:mod:`pypto.runtime.distributed`, torch declared by the
``pypto-runtime[distributed]`` extra) loads only when used: its names here
(``DistributedWorker``, ``DistributedCompiledProgram``, ...) import it on first access, and the
``@pl.jit.host`` compiler installed below imports it on its first call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pypto.ir import lazy_getattr, set_host_compiler, set_jit_compiler, set_jit_executor
from pypto.runtime.api import compile, compile_artifact, jit_compiler, jit_executor, load_cached, run
from pypto.runtime.artifact_runtime import ArtifactRuntime
from pypto.runtime.chip_worker import ChipWorker, DeviceTensor, RegistrationHandle
from pypto.runtime.compiled import CompiledArtifact, CompiledProgram
from pypto.runtime.errors import DeviceBuildUnavailable, PyptoRuntimeError
from pypto.runtime.mode_gate import ModeConflictError, ProcessMode
from pypto.runtime.runner import RunConfig
from pypto.runtime.tensor_spec import TensorSpec

if TYPE_CHECKING:
    from pypto.runtime.distributed.program import DistributedCompiledProgram
    from pypto.runtime.distributed.tensors import SharedDeviceTensor, StackedDeviceTensor
    from pypto.runtime.distributed.worker import DistributedRunHandle, DistributedWorker

__version__ = "0.1.0"

# name -> the module of pypto.runtime.distributed that defines it, imported on first access
_DISTRIBUTED_NAMES = {
    "DistributedCompiledProgram": "pypto.runtime.distributed.program",
    "DistributedRunHandle": "pypto.runtime.distributed.handles",
    "DistributedWorker": "pypto.runtime.distributed.worker",
    "SharedDeviceTensor": "pypto.runtime.distributed.tensors",
    "StackedDeviceTensor": "pypto.runtime.distributed.tensors",
}

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


__getattr__ = lazy_getattr(__name__, {n: (m, n) for n, m in _DISTRIBUTED_NAMES.items()}, globals())


def _compile_host(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], config: Any) -> Any:
    """The ``@pl.jit.host`` compiler: :func:`pypto.runtime.distributed.program.compile_host`,
    imported on the first call."""
    from pypto.runtime.distributed.program import compile_host

    return compile_host(fn, args, kwargs, config)


set_jit_executor(jit_executor)
set_jit_compiler(jit_compiler)
set_host_compiler(_compile_host)
