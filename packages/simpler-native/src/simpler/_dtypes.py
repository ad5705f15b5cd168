"""Element types and argument directions, coerced to the wire codes of WIRE.md.

The enums are the wire layer's (``simpler.kernel.DataType`` / ``ArgDirection``) when its binding
provides them; otherwise equivalents with the same codes are defined here. Every entry point
accepts the enum, its integer code, its name (``"FLOAT32"``, ``"fp32"``, ``"float32"``), a numpy
dtype, or any enum whose member name is one of those (such as ``pypto.ir.DataType.FP32``).
"""

from __future__ import annotations

import enum
from typing import Any

from simpler import _native

__all__ = [
    "ArgDirection",
    "DataType",
    "arg_direction_code",
    "dtype_code",
    "dtype_itemsize_bits",
    "dtype_name",
]


class _DataType(enum.IntEnum):
    FLOAT32 = 0
    FLOAT16 = 1
    INT32 = 2
    INT16 = 3
    INT8 = 4
    UINT8 = 5
    BFLOAT16 = 6
    INT64 = 7
    UINT64 = 8
    UINT16 = 9
    UINT32 = 10
    BOOL = 11
    FP8E4M3FN = 12
    FP8E8M0 = 13
    FP4E2M1 = 14


class _ArgDirection(enum.IntEnum):
    Scalar = 0
    In = 1
    Out = 2
    InOut = 3


_wire = getattr(_native, "kernel", None)
DataType: Any = getattr(_wire, "DataType", None) or _DataType
ArgDirection: Any = getattr(_wire, "ArgDirection", None) or _ArgDirection

_NAMES = [m.name for m in _DataType]
_BITS = [32, 16, 32, 16, 8, 8, 16, 64, 64, 16, 32, 8, 8, 8, 4]
_ALIASES = {
    "FP32": 0, "FLOAT": 0, "F32": 0,
    "FP16": 1, "HALF": 1, "F16": 1,
    "BF16": 6,
    "I32": 2, "I16": 3, "I8": 4, "U8": 5, "I64": 7, "U64": 8, "U16": 9, "U32": 10,
}  # fmt: skip
_DIRECTIONS = {"SCALAR": 0, "IN": 1, "OUT": 2, "INOUT": 3}


def dtype_code(value: object, *, what: str = "dtype") -> int:
    """Wire code (0..14) of ``value``; ValueError naming ``what`` when it is not a known dtype."""
    if isinstance(value, bool):
        raise ValueError(f"{what}: expected a DataType, got {value!r}")
    if isinstance(value, int):
        if 0 <= value < len(_NAMES):
            return int(value)
        raise ValueError(f"{what}: expected a DataType code in 0..{len(_NAMES) - 1}, got {value}")
    name = getattr(value, "name", None)
    if not isinstance(name, str):
        name = str(value)  # numpy dtype, plain string
    if isinstance(value, (DataType, _DataType)):
        return dtype_code(value.value, what=what)
    key = name.upper().replace("TORCH.", "")
    if key in _NAMES:
        return _NAMES.index(key)
    if key in _ALIASES:
        return _ALIASES[key]
    if key == "BOOL_":
        return 11
    raise ValueError(f"{what}: expected a DataType (e.g. FLOAT32, FLOAT16, INT32), got {value!r}")


def dtype_name(code: int) -> str:
    return _NAMES[code]


def dtype_itemsize_bits(code: int) -> int:
    return _BITS[code]


def arg_direction_code(value: object, *, what: str = "direction") -> int:
    """Wire code of an ArgDirection (Scalar=0, In=1, Out=2, InOut=3)."""
    if isinstance(value, bool):
        raise ValueError(f"{what}: expected an ArgDirection, got {value!r}")
    if isinstance(value, int):
        if 0 <= value <= 3:
            return int(value)
        raise ValueError(f"{what}: expected an ArgDirection code in 0..3, got {value}")
    if isinstance(value, (ArgDirection, _ArgDirection)):
        return arg_direction_code(value.value, what=what)
    name = getattr(value, "name", None)
    key = (name if isinstance(name, str) else str(value)).upper().replace("_", "")
    if key in _DIRECTIONS:
        return _DIRECTIONS[key]
    raise ValueError(f"{what}: expected an ArgDirection (In, Out, InOut, Scalar), got {value!r}")
