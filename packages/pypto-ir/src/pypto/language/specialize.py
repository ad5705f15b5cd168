"""Specialisation of a call: the tensor shapes/dtypes and scalar values it depends on.

Tensors are duck-typed (anything with ``.shape`` and ``.dtype``: torch CPU tensors, numpy
arrays) so that pypto-ir never imports torch or numpy. A dtype is recognised by its name
(``torch.float32`` and numpy's ``float32`` both give FP32).
"""

from __future__ import annotations

from typing import Any

from pypto.ir.dtypes import DataType

__all__ = ["dtype_of", "is_tensor_like", "scalar_of", "shape_of"]


def is_tensor_like(obj: Any) -> bool:
    return hasattr(obj, "shape") and hasattr(obj, "dtype") and not isinstance(obj, (int, float, bool))


def dtype_of(obj: Any, what: str = "argument") -> DataType:
    """The DataType of a tensor-like object's ``.dtype`` (or of a dtype object itself)."""
    dt = getattr(obj, "dtype", obj)
    if isinstance(dt, DataType):
        return dt
    name = str(getattr(dt, "name", None) or dt)
    name = name.removeprefix("torch.").removeprefix("dtype(").strip("'\")").lower()
    found = DataType.from_array_name(name)
    if found is None:
        known = ", ".join(d.array_name for d in DataType)
        raise TypeError(f"{what}: dtype {dt!r} has no PyPTO equivalent; expected one of {known}")
    return found


def shape_of(obj: Any, what: str = "argument") -> tuple[int, ...]:
    try:
        dims = tuple(int(d) for d in obj.shape)
    except (TypeError, ValueError):
        raise TypeError(f"{what}: .shape must be a sequence of ints, got {obj.shape!r}") from None
    if any(d < 0 for d in dims):
        raise TypeError(f"{what}: negative extent in shape {dims}")
    return dims


def scalar_of(value: Any, what: str = "argument") -> int | float | bool:
    """A Python scalar (numpy/torch 0-d values through ``.item()``)."""
    if isinstance(value, (bool, int, float)):
        return value
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "shape", ()) in ((), None):
        v = item()
        if isinstance(v, (bool, int, float)):
            return v
    raise TypeError(f"{what}: expected a Python int, float or bool scalar, got {type(value).__name__}")
