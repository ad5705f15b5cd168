"""The mapping between torch dtypes and PyPTO's DataType.

Packed FP4 travels in torch's ``float4_e2m1fn_x2`` carrier (one byte, two values), whose
shape is already the carrier shape that ParamInfo records; nothing here expands it.
Dtypes that an older torch lacks are simply absent from the table.
"""

from __future__ import annotations

from typing import Any

import torch
from pypto.ir import DataType

__all__ = ["from_torch_dtype", "to_torch_dtype"]


_TO_TORCH: dict[DataType, Any] = {
    dt: getattr(torch, dt.array_name) for dt in DataType if hasattr(torch, dt.array_name)
}
_FROM_TORCH: dict[Any, DataType] = {v: k for k, v in _TO_TORCH.items()}


def to_torch_dtype(dtype: DataType, *, what: str = "dtype") -> Any:
    """The torch dtype that carries ``dtype``; ValueError naming ``what`` if this torch has none."""
    try:
        return _TO_TORCH[dtype]
    except KeyError:
        raise ValueError(
            f"{what}: torch {torch.__version__} has no dtype torch.{dtype.array_name} for {dtype.value}"
        ) from None


def from_torch_dtype(dtype: Any, *, what: str = "dtype") -> DataType:
    """The DataType of a torch dtype; ValueError naming ``what`` if PyPTO has no such type."""
    try:
        return _FROM_TORCH[dtype]
    except (KeyError, TypeError):
        known = ", ".join(str(d) for d in _FROM_TORCH)
        raise ValueError(f"{what}: expected one of {known}, got {dtype!r}") from None
