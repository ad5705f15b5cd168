"""The host tensors of a multi-chip call that the caller does not pass.

``compiled(a, b)`` may leave out ``pl.Out`` tensor parameters: each is allocated (zero, torch
when a tensor argument is torch, else numpy) and the call returns it (one, or a tuple in
parameter order). Tensors the host body creates (``pl.create_tensor``) are parameters of the
plan after the caller's (``PlannedParam.local``): every dispatch gives them fresh zeros.
"""

from __future__ import annotations

from typing import Any

from pypto.ir import DataType, ParamDirection
from pypto.language.binding import is_tensor
from pypto.runtime.distributed.plan import DistributedPlan, placeholder
from pypto.runtime.host_tensors import allocate_like

__all__ = ["created_tensors", "with_outputs"]


def created_tensors(plan: DistributedPlan) -> list[Any]:
    """Zero tensors for the plan's ``local`` parameters, in order."""
    return [
        placeholder(p.shape, DataType(p.dtype), f"{plan.name}(): {p.name}") for p in plan.params if p.local
    ]


def with_outputs(
    plan: DistributedPlan, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[dict[str, Any], Any]:
    """``kwargs`` with every omitted ``pl.Out`` tensor parameter allocated (zeros), and what the
    call returns: None when none was omitted, else the allocated tensor (one) or a tuple."""
    params = plan.caller_params
    missing = [
        p
        for i, p in enumerate(params)
        if i >= len(args)
        and p.name not in kwargs
        and p.kind == "tensor"
        and ParamDirection(p.direction) is ParamDirection.OUT
    ]
    if not missing:
        return kwargs, None
    like = [a for a in (*args, *kwargs.values()) if is_tensor(a)]
    made = {}
    for p in missing:
        t: Any = allocate_like(p.shape, DataType(p.dtype), like)
        t[...] = 0  # what no launch writes reads as zero
        made[p.name] = t
    outs = tuple(made.values())
    return {**kwargs, **made}, outs[0] if len(outs) == 1 else outs
