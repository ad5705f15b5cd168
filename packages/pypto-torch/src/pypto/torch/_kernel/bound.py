"""Bound launches: a registered kernel's common call as one native call.

A bound launch (``launch`` in ``_native_describe.cpp``) is :meth:`_Manager.launch` with
``wait`` in one native call: describe the arguments (the native describe_call's checks), pin
their storages, ``kernel_launch`` with waits (on an idle chip the run happens on the calling
thread), and retire the run. The manager builds the plan once per registration, after the
registration's first launch went through the general path (which also checked the directions
against the callable), and only where every call it takes would be waited for on the caller's
thread with nothing recorded beside it:

- the native extension is loaded and pins are taken natively;
- a simulator platform, synchronous mode (``init(asynchronous=False)``);
- a kernel whose scalar parameters are integers, BOOL or FP32 (FP16/BF16 rounding stays in
  Python);
- the Worker's run settings write no diagnostics (swimlane, dependency graph).

Per call the native side declines, before any side effect, what it does not take: a call its
describe declines (any argument outside the common case, a torch function mode, autograd), a
stream entered with ``use_stream`` (not the default stream), a closed gate (shutdown began,
or a forked child), a storage moved between the check and its pin. The caller then takes the
general path, which alone decides and reports errors. A run that did not finish on the caller
(queued behind other launches) or that failed goes to :func:`finish`, the general path's tail.

The gate (one per manager) stands in for the manager's ``enqueuing`` count: a bound launch
counts itself in before it reads the gate's flag, and shutdown closes the flag, then waits
until none is inside, so the Worker never closes under one.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, NamedTuple

from pypto.ir import DataType
from pypto.torch._kernel.pending import PendingTicket
from pypto.torch._kernel.pins import _native

if TYPE_CHECKING:
    from pypto.torch._kernel.callable import KernelCallable

# how ``launch`` encodes a scalar parameter's bits, by dtype (see scalar_bits in the C++)
_SCALAR_KINDS = {
    **dict.fromkeys(
        (
            DataType.INT8,
            DataType.INT16,
            DataType.INT32,
            DataType.INT64,
            DataType.UINT8,
            DataType.UINT16,
            DataType.UINT32,
            DataType.UINT64,
        ),
        0,
    ),
    DataType.BOOL: 1,
    DataType.FP32: 2,
}

__all__ = ["Tail", "bind", "close_gate", "finish", "inside", "unbind_all"]


def bind(manager: Any, kc: KernelCallable) -> Any:
    """``launch`` bound to its plan (layout in ``_native_describe.cpp``): called with a call's
    argument tuple, it returns None (done) or False (declined); ``()`` where a
    bound launch never applies to ``kc`` (see the module docstring); None while the native
    extension is not in use (the next general launch asks again)."""
    from pypto.torch._platform import simulator

    plat = manager.platform
    worker = manager.worker
    if (
        plat is None
        or not plat.is_simulator
        or plat.cpu_device_index is None
        or manager.asynchronous
        or worker is None
    ):
        return ()
    kinds = tuple(_SCALAR_KINDS.get(p.dtype, -1) for p in kc.artifact.params if p.is_scalar)
    if -1 in kinds:  # FP16/BF16 scalars: their rounding stays in Python (simpler's encode_scalar)
        return ()
    target = worker.launch_target()
    if target is None:  # closed, or its default config writes diagnostics
        return ()
    kernel_launch, settings = target
    module = _native()
    if module is None:  # not built yet (or pins are taken in Python): asked again next call
        return None
    cpu = plat.cpu_device_index
    with manager.lock:
        if not manager._admits() or manager.forked_from is not None:
            return ()
        if manager.gate is None:
            manager.gate = (module, module.launch_gate())
        gate = manager.gate[1]
    stream = manager.stream_for(simulator.DEFAULT_STREAM)
    # What holds the Worker (its chip, a stream) is in a cell that shutdown empties: a bound
    # launch an Operator keeps for the rest of the process does not keep the Worker alive.
    cell = [
        kernel_launch,
        kc.handle.slot,
        settings,
        functools.partial(finish, Tail(manager, kc, stream, simulator.DEFAULT_STREAM)),
    ]
    with manager.lock:
        if not manager._admits():
            return ()
        manager.bound_cells.append(cell)
    plan = (kc.signature._native_plan(cpu), gate, kc._tensor_codes, simulator._local, cell, kinds)
    return functools.partial(module.launch, plan)


class Tail(NamedTuple):
    """What :func:`finish` needs of one registration's bound launches."""

    manager: Any
    kc: KernelCallable
    stream: Any  # the Worker stream of the default framework stream
    framework_stream: Any


def finish(tail: Tail, native_run: Any, args: Any, pins: Any) -> None:
    """The tail of a bound launch whose run did not finish on the caller's thread, or failed:
    recorded on the Worker stream and waited for as the general path does (a pending ticket
    that synchronisation points see while it runs), unpinned, its error raised."""
    manager, kc, stream, framework_stream = tail
    run = manager.simpler.RunHandle(native_run, args, kc.handle)
    stream._enqueued(run)
    ticket = PendingTicket(kc, args, pins, framework_stream)
    ticket.publish(run)
    if not run.done:
        with manager.lock:
            manager.pending.append(ticket)
        manager.retire_waited(ticket)
        return
    error = ticket.retire(0)
    if error is not None:
        ticket.reported = True
        raise error


def close_gate(manager: Any) -> None:
    """Refuse bound launches of ``manager`` from now on."""
    gate = manager.gate
    if gate is not None:
        gate[0].close_gate(gate[1])


def inside(manager: Any) -> int:
    """How many bound launches of ``manager`` are between admission and retirement."""
    gate = manager.gate
    return 0 if gate is None else int(gate[0].gate_inflight(gate[1]))


def unbind_all(manager: Any) -> None:
    """Empty every bound launch's cell (after the gate closed and none is inside): what they
    held of the Worker goes with it, and a later call declines to the general path."""
    cells, manager.bound_cells = manager.bound_cells, []
    for cell in cells:
        cell.clear()
