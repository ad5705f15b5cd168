"""Element types and argument directions, coerced to the wire codes of WIRE.md.

The enums and the DataType table (names and element widths by code) are the wire layer's, bound
from its C++ headers (``simpler.kernel.DataType`` / ``ArgDirection``, ``DATA_TYPE_NAMES`` /
``DATA_TYPE_BITS``); nothing here repeats them. Every entry point accepts the enum, its integer
code, its name (``"FLOAT32"``, ``"fp32"``, ``"float32"``), a numpy dtype, or any enum whose
member name is one of those (such as ``pypto.ir.DataType.FP32``).
"""

from __future__ import annotations

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


_wire = _native.kernel
DataType: Any = _wire.DataType
ArgDirection: Any = _wire.ArgDirection

# The binding's DataType table (simpler/wire/data_type.hpp), indexed by wire code.
_NAMES: tuple[str, ...] = tuple(_wire.DATA_TYPE_NAMES)
_BITS: tuple[int, ...] = tuple(_wire.DATA_TYPE_BITS)
_CODES: dict[str, int] = {name: code for code, name in enumerate(_NAMES)}
# Spellings other than the wire names, as numpy, torch and pypto-ir write them.
_ALIASES: dict[str, int] = {
    alias: _CODES[name]
    for alias, name in {
        "FP32": "FLOAT32", "FLOAT": "FLOAT32", "F32": "FLOAT32",
        "FP16": "FLOAT16", "HALF": "FLOAT16", "F16": "FLOAT16",
        "BF16": "BFLOAT16",
        "I32": "INT32", "I16": "INT16", "I8": "INT8", "U8": "UINT8", "I64": "INT64", "U64": "UINT64",
        "U16": "UINT16", "U32": "UINT32",
        "BOOL_": "BOOL",  # numpy's name of its bool dtype
    }.items()
}  # fmt: skip
_DIRECTIONS: dict[str, int] = {m.name.upper(): m.value for m in ArgDirection}


def _int_code(value: object, count: int, kind: str, what: str) -> int | None:
    """``value`` when it is a wire code of ``kind`` (an int in 0..count-1), None when it is not
    an int; ValueError naming ``what`` for a bool or an int out of range."""
    article = "an" if kind[0] in "AEIOU" else "a"
    if isinstance(value, bool):
        raise ValueError(f"{what}: expected {article} {kind}, got {value!r}")
    if not isinstance(value, int):
        return None
    if 0 <= value < count:
        return int(value)
    raise ValueError(f"{what}: expected {article} {kind} code in 0..{count - 1}, got {value}")


def dtype_code(value: object, *, what: str = "dtype") -> int:
    """Wire code of ``value``; ValueError naming ``what`` when it is not a known dtype."""
    code = _int_code(value, len(_NAMES), "DataType", what)
    if code is not None:
        return code
    name = getattr(value, "name", None)
    if not isinstance(name, str):
        name = str(value)  # numpy dtype, plain string
    if isinstance(value, DataType):
        return dtype_code(value.value, what=what)
    key = name.upper().replace("TORCH.", "")
    code = _CODES.get(key)
    if code is None:
        code = _ALIASES.get(key)
    if code is not None:
        return code
    raise ValueError(f"{what}: expected a DataType (e.g. FLOAT32, FLOAT16, INT32), got {value!r}")


def dtype_name(code: int) -> str:
    return _NAMES[code]


def dtype_itemsize_bits(code: int) -> int:
    return _BITS[code]


def arg_direction_code(value: object, *, what: str = "direction") -> int:
    """Wire code of an ArgDirection (Scalar=0, In=1, Out=2, InOut=3)."""
    code = _int_code(value, len(_DIRECTIONS), "ArgDirection", what)
    if code is not None:
        return code
    if isinstance(value, ArgDirection):
        return arg_direction_code(value.value, what=what)
    name = getattr(value, "name", None)
    key = (name if isinstance(name, str) else str(value)).upper().replace("_", "")
    if key in _DIRECTIONS:
        return _DIRECTIONS[key]
    raise ValueError(f"{what}: expected an ArgDirection (In, Out, InOut, Scalar), got {value!r}")
