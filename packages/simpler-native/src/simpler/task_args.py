"""Address-free task arguments and their materialised form.

:class:`TaskArgs` holds :class:`~simpler.Tensor` views with their directions, then typed
scalars. simpler owns the scalar encoding: each scalar becomes the raw 64-bit bits that the
kernel ABI passes (WIRE.md: f32/f16/bf16 in the low bits, integers sign- or zero-extended),
range-checked, never truncating a float to an integer. :meth:`TaskArgs.materialize` gives the
:class:`ChipStorageTaskArgs` the chip receives (descriptors + u64 scalars).
"""

from __future__ import annotations

import math
import operator
import struct
from dataclasses import dataclass
from typing import Any

from simpler._dtypes import ArgDirection, arg_direction_code, dtype_code, dtype_name
from simpler.buffers import Tensor

__all__ = ["ChipStorageTaskArgs", "TaskArgs", "encode_scalar"]

_INT_RANGES = {
    2: (-(1 << 31), (1 << 31) - 1),  # INT32
    3: (-(1 << 15), (1 << 15) - 1),  # INT16
    4: (-(1 << 7), (1 << 7) - 1),  # INT8
    5: (0, 255),  # UINT8
    7: (-(1 << 63), (1 << 63) - 1),  # INT64
    8: (0, (1 << 64) - 1),  # UINT64
    9: (0, (1 << 16) - 1),  # UINT16
    10: (0, (1 << 32) - 1),  # UINT32
}
_MASK64 = (1 << 64) - 1


def encode_scalar(value: Any, dtype: Any) -> int:
    """Raw u64 bits of ``value`` as a ``dtype`` scalar; ValueError when it does not fit exactly."""
    code = dtype_code(dtype, what="add_scalar(dtype)")
    name = dtype_name(code)
    if code in _INT_RANGES:
        if isinstance(value, (bool, float)) or not hasattr(value, "__index__"):
            raise ValueError(
                f"add_scalar(value): expected an int for {name}, got {value!r} ({type(value).__name__})"
            )
        v = operator.index(value)
        lo, hi = _INT_RANGES[code]
        if not lo <= v <= hi:
            raise ValueError(f"add_scalar(value): {v} is out of range for {name} [{lo}, {hi}]")
        return v & _MASK64
    if code == 11:  # BOOL
        if not isinstance(value, bool) and value not in (0, 1):
            raise ValueError(f"add_scalar(value): expected a bool for BOOL, got {value!r}")
        return int(bool(value))
    if code in (0, 1, 6):  # FLOAT32, FLOAT16, BFLOAT16
        if isinstance(value, bool) or (
            not isinstance(value, (int, float)) and not hasattr(value, "__float__")
        ):
            raise ValueError(f"add_scalar(value): expected a real number for {name}, got {value!r}")
        f = float(value)
        if code == 0:
            try:
                return int.from_bytes(struct.pack("<f", f), "little")
            except OverflowError:
                raise ValueError(f"add_scalar(value): {f} is out of range for FLOAT32") from None
        if code == 1:
            try:
                return int.from_bytes(struct.pack("<e", f), "little")
            except OverflowError:
                raise ValueError(f"add_scalar(value): {f} is out of range for FLOAT16") from None
        try:
            bits = int.from_bytes(struct.pack("<f", f), "little")
        except OverflowError:
            raise ValueError(f"add_scalar(value): {f} is out of range for BFLOAT16") from None
        if math.isnan(f):
            return 0x7FC0
        rounded = bits + 0x7FFF + ((bits >> 16) & 1)  # round to nearest even
        if (rounded >> 16) & 0x7F80 == 0x7F80 and not math.isinf(f):
            raise ValueError(f"add_scalar(value): {f} is out of range for BFLOAT16")
        return (rounded >> 16) & 0xFFFF
    raise ValueError(f"add_scalar(dtype): {name} scalars are not supported; use a float or integer type")


@dataclass(frozen=True)
class ChipStorageTaskArgs:
    """Materialised arguments: ChipTensor fields per tensor and raw u64 bits per scalar."""

    tensors: tuple[tuple[int, int, int, tuple[int, ...], tuple[int, ...], int], ...]
    directions: tuple[int, ...]
    scalars: tuple[int, ...]

    @property
    def tensor_count(self) -> int:
        return len(self.tensors)

    @property
    def scalar_count(self) -> int:
        return len(self.scalars)


class TaskArgs:
    """Arguments of one submission: tensors (with directions) first, then typed scalars.

    Example::

        args = TaskArgs()
        args.add_tensor(a, ArgDirection.In)
        args.add_tensor(out, ArgDirection.Out)
        args.add_scalar(2.0, DataType.FLOAT32)
    """

    __slots__ = ("_scalars", "_tensors")

    def __init__(self) -> None:
        self._tensors: list[tuple[Tensor, int]] = []
        self._scalars: list[tuple[Any, int, int]] = []

    def add_tensor(self, tensor: Tensor, direction: Any = None) -> TaskArgs:
        """Append a tensor argument (direction In, Out or InOut; default In)."""
        if not isinstance(tensor, Tensor):
            raise TypeError(f"add_tensor(tensor): expected a simpler.Tensor, got {type(tensor).__name__}")
        if self._scalars:
            raise ValueError(
                f"add_tensor: tensors must come before scalars, but {len(self._scalars)} scalar(s) were already added"
            )
        d = arg_direction_code(
            ArgDirection.In if direction is None else direction, what="add_tensor(direction)"
        )
        if d == 0:
            raise ValueError("add_tensor(direction): expected In, Out or InOut for a tensor, got Scalar")
        self._tensors.append((tensor, d))
        return self

    def add_scalar(self, value: Any, dtype: Any) -> TaskArgs:
        """Append a scalar of ``dtype``; range-checked and encoded now."""
        code = dtype_code(dtype, what="add_scalar(dtype)")
        bits = encode_scalar(value, code)
        self._scalars.append((value, code, bits))
        return self

    @property
    def tensor_count(self) -> int:
        return len(self._tensors)

    @property
    def scalar_count(self) -> int:
        return len(self._scalars)

    @property
    def tensors(self) -> tuple[tuple[Tensor, int], ...]:
        return tuple(self._tensors)

    @property
    def scalars(self) -> tuple[tuple[Any, int, int], ...]:
        """(value, dtype code, u64 bits) per scalar."""
        return tuple(self._scalars)

    def materialize(self) -> ChipStorageTaskArgs:
        return ChipStorageTaskArgs(
            tensors=tuple(t.descriptor() for t, _ in self._tensors),
            directions=tuple(d for _, d in self._tensors),
            scalars=tuple(bits for _, _, bits in self._scalars),
        )

    def __repr__(self) -> str:
        return f"TaskArgs(tensors={len(self._tensors)}, scalars={len(self._scalars)})"
