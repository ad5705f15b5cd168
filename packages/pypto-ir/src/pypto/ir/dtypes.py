"""Element types of the PyPTO stack: the one dtype table of the layers above simpler.

Per type, one row of :data:`_TABLE`: its wire code and name (those of simpler's ``DataType``,
see WIRE.md), its width, the name numpy and torch give it, its C++ type in generated code and
its numpy type code. Codegen's C++ and wire-name maps and the runtime's numpy typestrs are
derived from these rows. pypto-ir does not import simpler, so the wire columns are pinned here
and a cross-package test (``testing/tests/test_cross_package.py``) compares them with simpler's.
"""

from __future__ import annotations

import enum
from typing import NamedTuple


class DataType(enum.Enum):
    """An element type. ``value`` is the canonical name used in metadata JSON."""

    # members are singletons compared by identity: hash them by identity too (C-level; Enum's
    # own __hash__ is a Python call, paid on every dict or set lookup the compiler makes)
    __hash__ = object.__hash__

    FP32 = "FP32"
    FP16 = "FP16"
    BF16 = "BF16"
    INT8 = "INT8"
    INT16 = "INT16"
    INT32 = "INT32"
    INT64 = "INT64"
    UINT8 = "UINT8"
    UINT16 = "UINT16"
    UINT32 = "UINT32"
    UINT64 = "UINT64"
    BOOL = "BOOL"
    FP8E4M3FN = "FP8E4M3FN"
    FP8E8M0 = "FP8E8M0"
    FP4E2M1 = "FP4E2M1"

    @property
    def wire_code(self) -> int:
        """The u8 code of this type in a ChipTensor descriptor."""
        return _TABLE[self].wire_code

    @property
    def wire_name(self) -> str:
        """simpler's name of this type (``simpler::DataType::FLOAT32``, ``simpler.DataType.FLOAT32``)."""
        return _TABLE[self].wire_name

    @property
    def bits(self) -> int:
        """Bits per element (4 for packed FP4)."""
        return _TABLE[self].bits

    @property
    def cpp_type(self) -> str | None:
        """The C++ element type generated code declares (None: codegen has no scalar type for it)."""
        return _TABLE[self].cpp_type

    @property
    def numpy_code(self) -> str | None:
        """numpy's kind letter and itemsize (``"f4"``, ``"i1"``, the typestr without its byte
        order), or None: numpy has no such type (BF16, FP8, FP4)."""
        return _TABLE[self].numpy_code

    @property
    def itemsize(self) -> int:
        """Bytes per element of the carrier (one byte holds two FP4 values)."""
        return max(1, self.bits // 8)

    def get_byte(self) -> int:
        """Bytes per element (``itemsize``; upstream's spelling, as in
        ``pld.alloc_window_buffer(n * pl.FP32.get_byte())``)."""
        return self.itemsize

    @property
    def is_float(self) -> bool:
        return self in _FLOATS

    @property
    def is_signed_int(self) -> bool:
        return self in (DataType.INT8, DataType.INT16, DataType.INT32, DataType.INT64)

    @property
    def is_unsigned_int(self) -> bool:
        return self in (DataType.UINT8, DataType.UINT16, DataType.UINT32, DataType.UINT64)

    @property
    def array_name(self) -> str:
        """The name numpy and torch give this type: ``"float32"``, ``"bfloat16"``, ...

        Array libraries are duck-typed by this name everywhere in the stack, so no layer
        needs to import numpy or torch to recognise a tensor's element type.
        """
        return _TABLE[self].array_name

    @classmethod
    def from_array_name(cls, name: str) -> DataType | None:
        """The DataType of a numpy/torch dtype name (``torch.`` prefix and torch's aliases
        such as ``half`` or ``long`` accepted), or None if the stack has no such type."""
        key = name.removeprefix("torch.").lower()
        return _FROM_ARRAY_NAME.get(key)

    @classmethod
    def parse(cls, value: object, *, what: str = "dtype") -> DataType:
        """Accept a DataType or its canonical name; raise ValueError naming ``what`` otherwise."""
        if isinstance(value, DataType):
            return value
        if isinstance(value, str):
            try:
                return cls(value.upper())
            except ValueError:
                pass
        names = ", ".join(m.value for m in cls)
        raise ValueError(f"{what}: expected one of {names}, got {value!r}")

    def __repr__(self) -> str:
        return f"pl.{self.value}"


class _Row(NamedTuple):
    wire_code: int
    wire_name: str
    bits: int
    array_name: str
    cpp_type: str | None
    numpy_code: str | None


# fmt: off
_TABLE: dict[DataType, _Row] = {
    #                    wire  simpler name  bits  numpy/torch name    C++ type in generated code  numpy
    DataType.FP32:      _Row(0, "FLOAT32",    32, "float32",          "float",                    "f4"),
    DataType.FP16:      _Row(1, "FLOAT16",    16, "float16",          "simpler::half",            "f2"),
    DataType.BF16:      _Row(6, "BFLOAT16",   16, "bfloat16",         "simpler::bfloat16",        None),
    DataType.INT8:      _Row(4, "INT8",        8, "int8",             "std::int8_t",              "i1"),
    DataType.INT16:     _Row(3, "INT16",      16, "int16",            "std::int16_t",             "i2"),
    DataType.INT32:     _Row(2, "INT32",      32, "int32",            "std::int32_t",             "i4"),
    DataType.INT64:     _Row(7, "INT64",      64, "int64",            "std::int64_t",             "i8"),
    DataType.UINT8:     _Row(5, "UINT8",       8, "uint8",            "std::uint8_t",             "u1"),
    DataType.UINT16:    _Row(9, "UINT16",     16, "uint16",           "std::uint16_t",            "u2"),
    DataType.UINT32:    _Row(10, "UINT32",    32, "uint32",           "std::uint32_t",            "u4"),
    DataType.UINT64:    _Row(8, "UINT64",     64, "uint64",           "std::uint64_t",            "u8"),
    DataType.BOOL:      _Row(11, "BOOL",       8, "bool",             "bool",                     "b1"),
    DataType.FP8E4M3FN: _Row(12, "FP8E4M3FN",  8, "float8_e4m3fn",    None,                       None),
    DataType.FP8E8M0:   _Row(13, "FP8E8M0",    8, "float8_e8m0fnu",   None,                       None),
    DataType.FP4E2M1:   _Row(14, "FP4E2M1",    4, "float4_e2m1fn_x2", None,                       None),
}
# fmt: on
# torch's short aliases (torch.half is torch.float16, torch.int is torch.int32, ...)
_FROM_ARRAY_NAME = {
    **{row.array_name: dt for dt, row in _TABLE.items()},
    "float": DataType.FP32,
    "half": DataType.FP16,
    "short": DataType.INT16,
    "int": DataType.INT32,
    "long": DataType.INT64,
}
_FLOATS = frozenset(
    {DataType.FP32, DataType.FP16, DataType.BF16, DataType.FP8E4M3FN, DataType.FP8E8M0, DataType.FP4E2M1}
)
assert set(_TABLE) == set(DataType), "every DataType needs a row in _TABLE"
