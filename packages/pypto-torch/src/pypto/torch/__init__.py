"""PyTorch interop for PyPTO: PyPTO kernels as PyTorch operators (kernel mode).

- :func:`register` turns a ``@pl.jit`` function into ``torch.ops.<ns>.<name>``, which runs
  the compiled kernel on the caller's tensors (eager, ``torch.compile``, ``opcheck``).
- :func:`init` sets up kernel mode for the process (done on first use with the defaults);
  :func:`shutdown` drains and closes it; :func:`state` reads the lifecycle state.
- :mod:`pypto.torch.interop` (call frames) and :mod:`pypto.torch.registration` (schema and
  Fake helpers) are the layers below; their public classes (``CallSignature``,
  ``CallFrame``, ``RegistrationSignature``, ``ArgumentError``) are exported here too.
- :func:`build_native` builds (once, cached by torch) and switches on the native fast path of
  ``CallSignature.describe_call`` on the simulators; without it the Python fast path is used.

``__all__`` is the package's face: what code outside pypto-torch imports.

Importing this package never imports torch_npu, simpler or a native launch extension.
"""

from __future__ import annotations

from typing import Any

from pypto.ir import DEFAULT_RUNTIME
from pypto.torch._kernel.callable import RegistrationError
from pypto.torch._kernel.context import (
    KernelClosedError,
    KernelInfo,
    KernelInitError,
    KernelState,
    state,
)
from pypto.torch._kernel.context import init as _init
from pypto.torch._kernel.context import shutdown as _shutdown
from pypto.torch._native_describe import build_native
from pypto.torch._validation import ArgumentError
from pypto.torch.functional import FunctionalOperator
from pypto.torch.interop import CallFrame, CallSignature
from pypto.torch.library import Operator, register
from pypto.torch.registration import RegistrationSignature

__version__ = "0.1.0"

__all__ = [
    "ArgumentError",
    "CallFrame",
    "CallSignature",
    "FunctionalOperator",
    "KernelClosedError",
    "KernelInfo",
    "KernelInitError",
    "KernelState",
    "Operator",
    "RegistrationError",
    "RegistrationSignature",
    "__version__",
    "build_native",
    "init",
    "register",
    "shutdown",
    "state",
]


def init(
    device: Any = None,
    *,
    platform: str | None = None,
    runtime: str = DEFAULT_RUNTIME,
    config: Any = None,
) -> KernelInfo:
    """Initialise kernel mode for this process: claim KERNEL mode and start its Worker.

    Registered operators call this with the defaults on first use; call it yourself to choose
    the platform, runtime or configuration, or to fail early.

    Args:
        device: The device to use; it must be the framework's current device (PyPTO never
            selects one). None: the current device. An int, ``"npu:0"`` or a torch.device.
        platform: ``"a2a3sim"``/``"a5sim"`` (the simulated chip: CPU tensors are its memory)
            or ``"a2a3"``/``"a5"`` (Ascend NPU through torch_npu). None: the configured
            platform (``PYPTO_PLATFORM``), else ``"a2a3sim"``.
        runtime: ``"tensormap_and_ringbuffer"`` (TMR, default) or ``"host_build_graph"`` (HBG: the
            kernel's orchestration builds its whole task graph on the launching host thread); every
            platform provides both. An operator's artifact is compiled for this runtime.
        config: A ``simpler.CallConfig`` or a mapping of its fields (AICPU threads,
            swimlane/dep_graph with output_prefix, ring task_window/heap/dep_pool as one value
            or four, workspace_budget_bytes >= 1024 excluding borrowed storage).

    Returns:
        A :class:`KernelInfo`. A second call with the same arguments returns the same info;
        concurrent calls share one initialisation.

    Raises:
        ValueError / TypeError: Invalid arguments or configuration (before anything is claimed).
        NotImplementedError: Called while the current stream is capturing a graph.
        pypto.runtime.ModeConflictError: The process already runs program-mode work.
        KernelInitError: A conflicting or recursive init, an earlier failure, or a process
            forked after init (use the 'spawn' start method).
        KernelClosedError: Kernel mode was shut down in this process (closing is terminal).
    """
    return _init(device, platform=platform, runtime=runtime, config=config)


def shutdown(timeout: float | None = None) -> None:
    """Drain kernel mode and close it for good: wait for every launched run, release the
    borrowed tensors, close the Worker. Runs at interpreter exit too (before the framework's
    own exit hooks). A no-op before init and after a shutdown.

    Args:
        timeout: Seconds to wait for each run in flight (None: no limit). A run still going
            then raises TimeoutError and keeps its tensors and the Worker (state FAILED).
    """
    _shutdown(timeout)
