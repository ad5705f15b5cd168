"""Simpler: the chip runtime of the PyPTO stack.

The native core lives in the private extension ``simpler._native``; this package owns the
public names: :class:`Worker` (register callables, submit runs), :class:`ChipCallable` /
:class:`CoreCallable` (orchestration and kernel binaries), :class:`TaskArgs`,
:class:`Buffer` / :class:`Tensor`, :class:`CallConfig`, :class:`CallPlan` (a program call's
native fill-submit-wait path), :class:`BoundCall` (one bound to a chip) and :class:`DirectCall`
(a bound call called as a function), and :mod:`simpler.toolchain` to build binaries against
:func:`get_include`.
"""

from __future__ import annotations

from pathlib import Path

from simpler._dtypes import ArgDirection, DataType
from simpler._native import SANITIZED, BoundCall, CallPlan, DirectCall, __version__
from simpler.buffers import Buffer, Tensor
from simpler.callables import CallableHandle, ChipCallable, CoreCallable, CoreType
from simpler.config import CallConfig
from simpler.errors import DeviceError, SimplerError, UnsupportedPlatformError, WorkerClosedError
from simpler.streams import Event, Stream
from simpler.task_args import ChipStorageTaskArgs, TaskArgs
from simpler.worker import MAX_CALLABLES, RUNTIMES, RunHandle, Worker

__all__ = [
    "MAX_CALLABLES",
    "RUNTIMES",
    "SANITIZED",
    "ArgDirection",
    "BoundCall",
    "Buffer",
    "CallConfig",
    "CallPlan",
    "CallableHandle",
    "ChipCallable",
    "ChipStorageTaskArgs",
    "CoreCallable",
    "CoreType",
    "DataType",
    "DeviceError",
    "DirectCall",
    "Event",
    "RunHandle",
    "SimplerError",
    "Stream",
    "TaskArgs",
    "Tensor",
    "UnsupportedPlatformError",
    "Worker",
    "WorkerClosedError",
    "__version__",
    "get_include",
    "get_pto_include",
]


def get_include() -> str:
    """Return the directory of the C++ headers that simpler installs.

    Generated kernels and orchestrations, and standalone tools such as the CANN probe,
    compile against these headers (``-I$(python -c 'import simpler; print(simpler.get_include())')``).
    """
    return str(Path(__file__).with_name("include"))


def get_pto_include() -> str:
    """Return the include root of simpler's CPU implementation of the PTO-ISA subset.

    The root holds only ``pto/`` (entry header ``pto/pto-inst.hpp``), so that a checkout of the
    official headers (``PTO_ISA_ROOT/include``) can replace it wholesale. Kernels compiled
    against it also need :func:`get_include` (``simpler/kernel_abi.hpp``, ``simpler/kernel_args.hpp``
    and the element types of ``simpler/dtype.hpp``).
    """
    return str(Path(__file__).with_name("include_pto"))
