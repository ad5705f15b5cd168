"""Upstream compatibility (``pypto.runtime.upstream``): upstream's module name for the
multi-chip runtime, ``DistributedWorker`` and the conversion a SubWorker callback uses on its
arguments.

A runtime-bound SubWorker (``prepare(callbacks={name: fn})``) is called as ``fn(args)``: one
entry per argument of the host orchestrator's call, a :class:`ContinuousTensor` for a tensor
(a view of the dispatch's memory) and the value for a scalar. ``_tensor_from_continuous(arg)``
is a torch tensor viewing the same memory (writes reach the caller's tensor). torch is imported
only when that is called.
"""

from __future__ import annotations

from typing import Any

from pypto.runtime.distributed.worker import (
    ContinuousTensor,
    DistributedRegistrationHandle,
    DistributedRunHandle,
    DistributedWorker,
)

__all__ = [
    "ContinuousTensor",
    "DistributedRegistrationHandle",
    "DistributedRunHandle",
    "DistributedWorker",
    "_tensor_from_continuous",
]


def _tensor_from_continuous(arg: Any) -> Any:
    """A torch tensor viewing the memory of a SubWorker callback's tensor argument (no copy).

    Raises:
        TypeError: ``arg`` is not a :class:`ContinuousTensor`, or its dtype has no torch dtype.
    """
    import torch

    if not isinstance(arg, ContinuousTensor):
        raise TypeError(
            f"_tensor_from_continuous(arg): expected a SubWorker callback's tensor argument "
            f"(ContinuousTensor), got {type(arg).__name__}"
        )
    torch_dtype = getattr(torch, arg.dtype.array_name, None)
    if not isinstance(torch_dtype, torch.dtype):
        raise TypeError(f"_tensor_from_continuous(arg): dtype {arg.dtype.value} has no torch dtype")
    span = (
        1 + sum((d - 1) * s for d, s in zip(arg.shapes, arg.strides, strict=True)) if all(arg.shapes) else 0
    )
    flat = (
        torch.frombuffer(arg.buffer, dtype=torch_dtype, count=span)
        if span
        else torch.empty(0, dtype=torch_dtype)
    )
    return torch.as_strided(flat, size=arg.shapes, stride=arg.strides)
