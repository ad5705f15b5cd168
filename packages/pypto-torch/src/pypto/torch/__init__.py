"""PyTorch interop for PyPTO: PyPTO kernels as PyTorch operators (kernel mode).

- :func:`register` turns a ``@pl.jit`` function into ``torch.ops.<ns>.<name>``, which runs
  the compiled kernel on the caller's tensors (eager, ``torch.compile``, ``opcheck``).
- :func:`init` sets up kernel mode for the process (done on first use with the defaults);
  :func:`shutdown` drains and closes it; :func:`state` reads the lifecycle state.
- :class:`Stream`, :class:`Event`, :func:`stream`, :func:`current_stream` and
  :func:`synchronize` order the host after kernel launches as ``torch.npu``'s do (the
  simulator's streams; what ``init(asynchronous=True)`` needs).
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

try:
    import torch  # noqa: F401  (first, so that a broken device backend is explained)
except RuntimeError as _exc:  # torch's backend autoload: an installed torch_npu without CANN
    from pypto._npu_advice import explain_torch_import_failure

    _advice = explain_torch_import_failure(_exc)
    if _advice is None:
        raise
    raise ImportError(f"pypto.torch: {_advice}") from _exc

from pypto.ir import DEFAULT_RUNTIME
from pypto.torch._kernel import context as _context
from pypto.torch._kernel import ordering as _ordering
from pypto.torch._kernel.callable import RegistrationError
from pypto.torch._kernel.context import (
    KernelClosedError,
    KernelInfo,
    KernelInitError,
    KernelState,
    state,
)
from pypto.torch._kernel.context import shutdown as _shutdown
from pypto.torch._native_describe import build_native
from pypto.torch._platform.simulator import SimulatorEvent as Event
from pypto.torch._platform.simulator import SimulatorStream as Stream
from pypto.torch._platform.simulator import current_stream
from pypto.torch._platform.simulator import use_stream as stream
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
    "Event",
    "FunctionalOperator",
    "KernelClosedError",
    "KernelInfo",
    "KernelInitError",
    "KernelState",
    "Operator",
    "RegistrationError",
    "RegistrationSignature",
    "Stream",
    "__version__",
    "build_native",
    "current_stream",
    "init",
    "register",
    "shutdown",
    "state",
    "stream",
    "synchronize",
]


def init(
    device: Any = None,
    *,
    platform: str | None = None,
    runtime: str = DEFAULT_RUNTIME,
    config: Any = None,
    asynchronous: bool = False,
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
        asynchronous: False (default): on a simulator an operator call returns after its kernel
            finished, so the next torch operation sees the result. True: device-like; a call
            enqueues the launch on the current stream and returns at once; read the results
            only after a synchronisation point (:func:`synchronize`, ``Stream.synchronize``,
            ``Event.synchronize``), which also reports a failed run. On an NPU launches are
            always asynchronous (ordered on torch_npu's current stream).

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
    return _context.current().init(device, platform, runtime, config, asynchronous)


def shutdown(timeout: float | None = None) -> None:
    """Drain kernel mode and close it for good: wait for every launched run, release the
    borrowed tensors, close the Worker. Runs at interpreter exit too (before the framework's
    own exit hooks). A no-op before init and after a shutdown.

    Args:
        timeout: Seconds to wait for each run in flight (None: no limit). A run still going
            then raises TimeoutError and keeps its tensors and the Worker (state FAILED).
    """
    _shutdown(timeout)


def synchronize(timeout: float | None = None) -> None:
    """Wait for every kernel launched in this process, on every stream (``torch.npu.synchronize``);
    retire them (their tensors are released) and raise the first error of a failed run that no
    synchronisation point reported yet (each failed run is reported once). A no-op before
    ``init`` and after ``shutdown``.

    Raises:
        TimeoutError: A run did not finish within ``timeout`` seconds.
        simpler.DeviceError: A covered run failed.
    """
    manager = _context.current()
    platform = manager.platform
    if platform is not None and not platform.is_simulator and manager.info is not None:
        platform.synchronize(manager.info.device_index)
    _ordering.synchronize_device(manager, timeout)
