"""Checks shared by call description and the Fake kernel: scalars and logical tensor facts.

A scalar is accepted as a Python value of the declared kind, or as a ctypes value of the
declared width and signedness (copied, so later changes to a mutable ctypes object do not
reach a frame). Integers must fit their type; floats are never truncated into integer
parameters; a finite float too large for its type is rejected (inf and nan pass as they
are). Symbolic integers (``torch.SymInt``) are accepted where allowed and never forced to
concrete values.
"""

from __future__ import annotations

import ctypes
import math
import numbers
import operator
import struct
from collections.abc import Callable
from typing import Any

import torch
from pypto.ir import DataType, ParamInfo, SignatureError

__all__ = ["ArgumentError", "check_scalar", "check_tensor_signature", "describe_param"]


class ArgumentError(SignatureError):
    """One argument of a call breaks its parameter's contract (type, dtype, shape, storage...)."""


def describe_param(index: int, param: ParamInfo) -> str:
    return f"parameter {param.name!r} (#{index}, {param.direction.value} {param.dtype.value})"


_INT_KIND = {
    "b": True,
    "h": True,
    "i": True,
    "l": True,
    "q": True,
    "B": False,
    "H": False,
    "I": False,
    "L": False,
    "Q": False,
}
_BF16_OVERFLOW = (2.0 - 2.0**-8) * 2.0**127  # the smallest magnitude that rounds to inf in BF16


def _int_range(dtype: DataType) -> tuple[int, int]:
    bits = dtype.bits
    if dtype.is_signed_int:
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def _from_ctypes(
    value: ctypes._SimpleCData[Any], dtype: DataType, where: Callable[[], str]
) -> int | float | bool:
    code = getattr(type(value), "_type_", "")
    width = ctypes.sizeof(value)
    if dtype is DataType.BOOL:
        ok = code == "?"
    elif dtype.is_float:
        ok = code in ("f", "d")
    elif code in _INT_KIND:
        ok = _INT_KIND[code] == dtype.is_signed_int and width * 8 == dtype.bits
    else:
        ok = False
    if not ok:
        raise ArgumentError(
            f"{where()}: ctypes.{type(value).__name__} does not carry {dtype.value}; "
            "pass a Python value or a ctypes value of the declared width and signedness"
        )
    copied: int | float | bool = value.value
    return copied


def _check_symint_range(value: Any, dtype: DataType, where: Callable[[], str]) -> None:
    """Range-check a SymInt without reading a symbol's value: a constant is checked at once;
    a symbol narrower than 64 bits gets ``torch._check`` bounds (an inequality requirement,
    never an equality guard); every SymInt already fits INT64."""
    lo, hi = _int_range(dtype)
    constant = value.node.maybe_as_int()
    if constant is not None:
        if not lo <= constant <= hi:
            raise ArgumentError(f"{where()}: {constant} is outside the {dtype.value} range [{lo}, {hi}]")
        return
    if dtype is not DataType.INT64:
        torch._check(value >= lo, lambda: f"{where()}: the value must be >= {lo} ({dtype.value})")
        torch._check(value <= hi, lambda: f"{where()}: the value must be <= {hi} ({dtype.value})")


def check_scalar(index: int, param: ParamInfo, value: object, *, caller: str, symbolic: bool = False) -> Any:
    """Validate one scalar argument and return its Python value (a copy for ctypes input).

    With ``symbolic=True``, ``torch.SymInt``/``SymFloat``/``SymBool`` values are accepted for
    their kinds and returned unchanged: no range check forces a symbol to a concrete value.
    """
    dtype = param.dtype

    def where() -> str:  # formatted only when an error needs it
        return f"{caller}: {describe_param(index, param)}"

    if symbolic and isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        expected = (
            torch.SymBool if dtype is DataType.BOOL else torch.SymFloat if dtype.is_float else torch.SymInt
        )
        if isinstance(value, torch.SymInt) and expected is torch.SymInt:
            _check_symint_range(value, dtype, where)
            return value
        if isinstance(value, expected) or (expected is torch.SymFloat and isinstance(value, torch.SymInt)):
            return value
        raise ArgumentError(f"{where()}: expected a {dtype.value} scalar, got {type(value).__name__}")
    if isinstance(value, ctypes._SimpleCData):
        value = _from_ctypes(value, dtype, where)
    if dtype is DataType.BOOL:
        if isinstance(value, bool):
            return value
        raise ArgumentError(f"{where()}: expected a bool, got {type(value).__name__} {value!r}")
    if isinstance(value, bool):
        raise ArgumentError(f"{where()}: expected a {dtype.value} number, got bool {value!r}")
    if dtype.is_signed_int or dtype.is_unsigned_int:
        if type(value) is int:  # the common case skips the ABC checks below
            ivalue = value
        elif isinstance(value, float) or (
            isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral)
        ):
            raise ArgumentError(
                f"{where()}: expected an integer, got {type(value).__name__} {value!r}; "
                "floats are not truncated into integers"
            )
        else:
            try:
                ivalue = operator.index(value)  # type: ignore[arg-type]
            except TypeError:
                raise ArgumentError(
                    f"{where()}: expected an integer, got {type(value).__name__} {value!r}"
                ) from None
        lo, hi = _int_range(dtype)
        if not lo <= ivalue <= hi:
            raise ArgumentError(f"{where()}: {ivalue} is outside the {dtype.value} range [{lo}, {hi}]")
        return ivalue
    if dtype in (DataType.FP32, DataType.FP16, DataType.BF16):
        if type(value) is float:
            fvalue = value
        elif not isinstance(value, numbers.Real):
            raise ArgumentError(f"{where()}: expected a float, got {type(value).__name__} {value!r}")
        else:
            try:
                fvalue = float(value)
            except OverflowError:
                raise ArgumentError(f"{where()}: {value!r} overflows {dtype.value}") from None
        if math.isfinite(fvalue):
            overflow = False
            if dtype is DataType.BF16:
                overflow = abs(fvalue) >= _BF16_OVERFLOW
            else:
                try:
                    struct.pack("<f" if dtype is DataType.FP32 else "<e", fvalue)
                except OverflowError:
                    overflow = True
            if overflow:
                raise ArgumentError(f"{where()}: finite value {fvalue!r} overflows {dtype.value}")
        return fvalue
    raise ArgumentError(f"{where()}: {dtype.value} has no scalar argument type")


def check_tensor_signature(
    index: int, param: ParamInfo, tensor: Any, torch_dtype: Any, *, caller: str
) -> None:
    """Check dtype, rank and static dimensions of ``tensor`` against ``param``.

    Dynamic (-1) dimensions take the tensor's extent. A symbolic extent facing a static
    dimension is checked with ``torch._check``, which records the requirement instead of
    reading the symbol's value.
    """
    if tensor.dtype != torch_dtype:
        raise ArgumentError(
            f"{caller}: {describe_param(index, param)}: expected dtype {torch_dtype}, got {tensor.dtype}"
        )
    shape = param.shape
    assert shape is not None  # a tensor parameter (callers dispatch on is_tensor)
    sizes = tensor.shape
    if len(sizes) != len(shape):
        raise ArgumentError(
            f"{caller}: {describe_param(index, param)}: expected rank {len(shape)} (shape {list(shape)}), "
            f"got rank {len(sizes)} (shape {list(sizes)})"
        )
    for axis, (want, got) in enumerate(zip(shape, sizes, strict=True)):
        if want < 0:
            continue
        if isinstance(got, int):
            if got != want:
                raise ArgumentError(
                    f"{caller}: {describe_param(index, param)}: dimension {axis} must be {want} "
                    f"(shape {list(shape)}), got {got} (shape {list(sizes)})"
                )
        else:
            torch._check(
                got == want,
                lambda axis=axis, want=want: (
                    f"{caller}: {describe_param(index, param)}: dimension {axis} must be {want}"
                ),
            )
