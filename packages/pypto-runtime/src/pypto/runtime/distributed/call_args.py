"""The host arguments of a multi-chip call: checked against the plan (:func:`bind_host_args`),
and the host tensors the caller does not pass.

``compiled(a, b)`` may leave out ``pl.Out`` tensor parameters: each is allocated (zero, torch
when a tensor argument is torch, else numpy) and the call returns it (one, or a tuple in
parameter order). Tensors the host body creates (``pl.create_tensor``) are parameters of the
plan after the caller's (``PlannedParam.local``): every dispatch gives them fresh zeros.
"""

from __future__ import annotations

from typing import Any

from pypto.ir import DataType, ParamDirection
from pypto.language.interface import dtype_of, is_tensor, shape_of
from pypto.runtime.distributed.plan import DistributedPlan, placeholder
from pypto.runtime.host_tensors import allocate_like

__all__ = ["bind_host_args", "created_tensors", "with_outputs"]


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


def bind_host_args(plan: DistributedPlan, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    """A call's arguments in the host function's parameter order, checked against the plan:
    tensors of the compiled shapes and dtypes, scalars equal to the values compiled in; then a
    zero tensor for each tensor the body creates (``pl.create_tensor``)."""
    params = plan.caller_params
    name = plan.name
    if len(args) > len(params):
        raise TypeError(f"{name}(): takes {len(params)} arguments, got {len(args)}")
    bound: list[Any] = list(args) + [None] * (len(params) - len(args))
    index = {p.name: i for i, p in enumerate(params)}
    for k, v in kwargs.items():
        if k not in index:
            raise TypeError(f"{name}(): unexpected keyword argument {k!r}")
        if index[k] < len(args):
            raise TypeError(f"{name}(): got multiple values for argument {k!r}")
        bound[index[k]] = v
    for p, v in zip(params, bound, strict=True):
        what = f"{name}(): parameter {p.name!r}"
        if p.kind == "scalar":
            if v is None:  # omitted: its default, which the host body ran with
                continue
            if v != p.value or type(v) is not type(p.value):
                raise ValueError(
                    f"{what}: this program was compiled with {p.name}={p.value!r} (the host body ran "
                    f"with it), got {v!r}; compile again for another value"
                )
            continue
        if v is None or not is_tensor(v):
            raise TypeError(
                f"{what}: expected a tensor of shape {list(p.shape)} {p.dtype}, got {type(v).__name__}"
            )
        shape, dtype = shape_of(v, what), dtype_of(v, what)
        if shape != p.shape or dtype.value != p.dtype:
            raise TypeError(
                f"{what}: this program was compiled for shape {list(p.shape)} {p.dtype}, got "
                f"{list(shape)} {dtype.value}; compile again for other shapes"
            )
    return bound + created_tensors(plan)
