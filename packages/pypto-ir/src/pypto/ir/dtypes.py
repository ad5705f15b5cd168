"""Element types of the PyPTO stack, with their wire codes and storage sizes.

The wire codes are those of simpler's ``DataType`` (see WIRE.md); pypto-ir does not import
simpler, so the table is pinned here and a cross-package test compares the two.
"""

from __future__ import annotations

import enum


class DataType(enum.Enum):
    """An element type. ``value`` is the canonical name used in metadata JSON."""

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
        return _WIRE_CODE[self]

    @property
    def bits(self) -> int:
        """Bits per element (4 for packed FP4)."""
        return _BITS[self]

    @property
    def itemsize(self) -> int:
        """Bytes per element of the carrier (one byte holds two FP4 values)."""
        return max(1, self.bits // 8)

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
        return _ARRAY_NAME[self]

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


_WIRE_CODE = {
    DataType.FP32: 0,
    DataType.FP16: 1,
    DataType.INT32: 2,
    DataType.INT16: 3,
    DataType.INT8: 4,
    DataType.UINT8: 5,
    DataType.BF16: 6,
    DataType.INT64: 7,
    DataType.UINT64: 8,
    DataType.UINT16: 9,
    DataType.UINT32: 10,
    DataType.BOOL: 11,
    DataType.FP8E4M3FN: 12,
    DataType.FP8E8M0: 13,
    DataType.FP4E2M1: 14,
}
_BITS = {
    DataType.FP32: 32,
    DataType.FP16: 16,
    DataType.BF16: 16,
    DataType.INT8: 8,
    DataType.INT16: 16,
    DataType.INT32: 32,
    DataType.INT64: 64,
    DataType.UINT8: 8,
    DataType.UINT16: 16,
    DataType.UINT32: 32,
    DataType.UINT64: 64,
    DataType.BOOL: 8,
    DataType.FP8E4M3FN: 8,
    DataType.FP8E8M0: 8,
    DataType.FP4E2M1: 4,
}
_ARRAY_NAME = {
    DataType.FP32: "float32",
    DataType.FP16: "float16",
    DataType.BF16: "bfloat16",
    DataType.INT8: "int8",
    DataType.INT16: "int16",
    DataType.INT32: "int32",
    DataType.INT64: "int64",
    DataType.UINT8: "uint8",
    DataType.UINT16: "uint16",
    DataType.UINT32: "uint32",
    DataType.UINT64: "uint64",
    DataType.BOOL: "bool",
    DataType.FP8E4M3FN: "float8_e4m3fn",
    DataType.FP8E8M0: "float8_e8m0fnu",
    DataType.FP4E2M1: "float4_e2m1fn_x2",
}
# torch's short aliases (torch.half is torch.float16, torch.int is torch.int32, ...)
_FROM_ARRAY_NAME = {
    **{name: dt for dt, name in _ARRAY_NAME.items()},
    "float": DataType.FP32,
    "half": DataType.FP16,
    "short": DataType.INT16,
    "int": DataType.INT32,
    "long": DataType.INT64,
}
_FLOATS = frozenset(
    {DataType.FP32, DataType.FP16, DataType.BF16, DataType.FP8E4M3FN, DataType.FP8E8M0, DataType.FP4E2M1}
)
assert set(_WIRE_CODE) == set(DataType) == set(_BITS) == set(_ARRAY_NAME), (
    "every DataType needs a wire code, a width and an array name"
)
