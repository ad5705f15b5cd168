"""ParamInfo: the immutable snapshot of one parameter, shared by every layer.

Program execution, torch call validation, registration metadata and the assembly ABI check
all read the same ParamInfo signature. Shapes are tuples (``-1`` marks a dynamic dimension,
``None`` marks a scalar); JSON keeps them as arrays.

Pool capacity limits (how many tensors a single chip accepts) are not checked here: the
single-chip runtime checks them at its boundary, so distributed metadata is not bound by
them.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pypto.ir.dtypes import DataType

__all__ = [
    "DYNAMIC",
    "NZ_BLOCK_BYTES",
    "NZ_BLOCK_ROWS",
    "Layout",
    "ParamDirection",
    "ParamInfo",
    "SignatureError",
    "bind_complete_args",
    "blocked_shape",
    "nz_block_shape",
    "validate_param_names",
    "validate_return_aliases",
]

DYNAMIC = -1
"""A dimension whose extent is taken from the call."""


class SignatureError(ValueError):
    """A signature, an alias list or a call's arguments break the parameter contract."""


class ParamDirection(enum.Enum):
    """How a kernel uses a tensor parameter. Scalars are always ``IN``."""

    # members are singletons compared by identity: hash them by identity too (C-level; Enum's
    # own __hash__ is a Python call, paid on every dict or set lookup the compiler makes)
    __hash__ = object.__hash__

    IN = "In"
    OUT = "Out"
    INOUT = "InOut"

    @property
    def writes(self) -> bool:
        return self is not ParamDirection.IN


class Layout(enum.Enum):
    """Storage layout of a tensor parameter: row-major ND, or the fractal NZ form."""

    # members are singletons compared by identity: hash them by identity too (C-level; Enum's
    # own __hash__ is a Python call, paid on every dict or set lookup the compiler makes)
    __hash__ = object.__hash__

    ND = "ND"
    NZ = "NZ"


NZ_BLOCK_ROWS = 16
"""Rows of one fractal NZ block, for every dtype."""

NZ_BLOCK_BYTES = 32
"""Bytes in one row of a fractal NZ block (Ascend's C0 is this many bytes of elements)."""


def nz_block_shape(dtype: DataType | str) -> tuple[int, int]:
    """The ``(rows, C0)`` shape of one fractal NZ block of ``dtype``, in element units.

    Ascend's fractal NZ format (torch_npu storage format 29) cuts a logical ``[R, C]`` matrix
    into blocks of 16 rows by ``C0 = 32 / itemsize`` columns, one 32-byte block row: C0 is 16
    for FP16/BF16, 32 for 1-byte types, 8 for FP32. Packed FP4 counts in its one-byte carrier.

    Example:
        >>> nz_block_shape("FP16"), nz_block_shape("INT8"), nz_block_shape("FP32")
        ((16, 16), (16, 32), (16, 8))
    """
    dt = DataType.parse(dtype, what="nz_block_shape(dtype)")
    return (NZ_BLOCK_ROWS, NZ_BLOCK_BYTES // dt.itemsize)


def blocked_shape(shape: Sequence[int], dtype: DataType | str, name: str = "tensor") -> tuple[int, ...]:
    """The blocked NZ shape (element units) of a logical ``[R, C]`` or ``[B, R, C]`` shape.

    Example:
        >>> blocked_shape((32, 64), "INT8"), blocked_shape((-1, 32, 64), "FP32")
        ((2, 2, 16, 32), (-1, 8, 2, 16, 8))
    """
    dims = tuple(shape)
    if len(dims) not in (2, 3):
        raise ValueError(f"{name}: NZ needs a logical [R, C] or [B, R, C] shape, got {list(dims)}")
    rows, c0 = nz_block_shape(dtype)
    *batch, r, c = dims
    for what, d, unit in (("rows", r, rows), ("cols", c, c0)):
        if d != DYNAMIC and d % unit:
            raise ValueError(
                f"{name}: NZ {what} must be a multiple of {unit} for {DataType.parse(dtype).value} "
                f"(unpadded blocked form, blocks of {rows} x {c0}), got {d} in {list(dims)}"
            )
    cb = DYNAMIC if c == DYNAMIC else c // c0
    rb = DYNAMIC if r == DYNAMIC else r // rows
    return (*batch, cb, rb, rows, c0)


def _is_blocked_nz(dims: tuple[int, ...], dtype: DataType) -> bool:
    return len(dims) in (4, 5) and dims[-2:] == nz_block_shape(dtype)


def _parse_enum(cls: type[enum.Enum], value: object, what: str) -> Any:
    if isinstance(value, cls):
        return value
    for member in cls:
        if value == member.value or (isinstance(value, str) and value.upper() == member.name):
            return member
    allowed = ", ".join(str(m.value) for m in cls)
    raise SignatureError(f"{what}: expected one of {allowed}, got {value!r}")


@dataclass(frozen=True)
class ParamInfo:
    """One parameter: name, direction, shape, dtype, layout.

    Args:
        name: A Python identifier, unique in its signature.
        direction: ``ParamDirection`` (or its name/value, e.g. ``"Out"``).
        shape: Tuple of extents (``-1`` = dynamic) for a tensor; ``None`` for a scalar.
            A list is accepted and stored as a tuple.
        dtype: ``DataType`` (or its name, e.g. ``"FP32"``).
        layout: ``Layout.ND`` (default) or ``Layout.NZ``; scalars are ND.

    Example:
        >>> p = ParamInfo("x", "In", [-1, 128], "FP16")
        >>> p.shape, p.is_dynamic
        ((-1, 128), True)
        >>> ParamInfo.from_json(p.to_json()) == p
        True
    """

    name: str
    direction: ParamDirection
    shape: tuple[int, ...] | None
    dtype: DataType
    layout: Layout = Layout.ND

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise SignatureError(f"ParamInfo.name: expected a Python identifier, got {self.name!r}")
        where = f"parameter {self.name!r}"
        object.__setattr__(
            self, "direction", _parse_enum(ParamDirection, self.direction, f"{where}: direction")
        )
        object.__setattr__(self, "layout", _parse_enum(Layout, self.layout, f"{where}: layout"))
        try:
            object.__setattr__(self, "dtype", DataType.parse(self.dtype, what=f"{where}: dtype"))
        except ValueError as exc:
            raise SignatureError(str(exc)) from None
        shape: object = self.shape  # callers may pass any sequence; it is stored as a tuple
        if shape is None:
            if self.direction is not ParamDirection.IN:
                raise SignatureError(f"{where}: a scalar must be In, got {self.direction.value}")
            if self.layout is not Layout.ND:
                raise SignatureError(f"{where}: a scalar has no NZ layout")
            return
        if isinstance(shape, (str, bytes)) or not isinstance(shape, Iterable):
            raise SignatureError(f"{where}: shape must be a sequence of ints or None, got {shape!r}")
        dims = tuple(shape)
        for d in dims:
            if isinstance(d, bool) or not isinstance(d, int) or d < DYNAMIC:
                raise SignatureError(
                    f"{where}: shape entries must be ints >= 0 or -1 (dynamic), got {d!r} in {dims}"
                )
        if not dims:
            raise SignatureError(f"{where}: a tensor needs rank >= 1, got shape ()")
        if self.layout is Layout.NZ and len(dims) not in (2, 3) and not _is_blocked_nz(dims, self.dtype):
            rows, c0 = nz_block_shape(self.dtype)
            raise SignatureError(
                f"{where}: NZ layout needs a logical [R, C] or [B, R, C] shape (or a lowered blocked "
                f"[.., C/{c0}, R/{rows}, {rows}, {c0}] shape for {self.dtype.value}), got {dims}"
            )
        object.__setattr__(self, "shape", dims)

    @property
    def is_scalar(self) -> bool:
        return self.shape is None

    @property
    def is_tensor(self) -> bool:
        return self.shape is not None

    @property
    def rank(self) -> int:
        return 0 if self.shape is None else len(self.shape)

    @property
    def is_blocked(self) -> bool:
        """True for a lowered NZ parameter in blocked form (never a logical shape)."""
        return self.layout is Layout.NZ and self.shape is not None and _is_blocked_nz(self.shape, self.dtype)

    @property
    def is_dynamic(self) -> bool:
        return self.shape is not None and DYNAMIC in self.shape

    def to_json(self) -> dict[str, Any]:
        """Plain JSON data; shapes become arrays."""
        return {
            "name": self.name,
            "direction": self.direction.value,
            "shape": None if self.shape is None else list(self.shape),
            "dtype": self.dtype.value,
            "layout": self.layout.value,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ParamInfo:
        """Inverse of :meth:`to_json`; every field is validated, unknown keys rejected."""
        if not isinstance(data, Mapping):
            raise SignatureError(f"ParamInfo JSON: expected an object, got {type(data).__name__}")
        required = {"name", "direction", "shape", "dtype"}
        missing = required - data.keys()
        if missing:
            raise SignatureError(f"ParamInfo JSON: missing field(s) {sorted(missing)} in {dict(data)!r}")
        extra = data.keys() - required - {"layout"}
        if extra:
            raise SignatureError(f"ParamInfo JSON: unknown field(s) {sorted(extra)}")
        shape = data["shape"]
        if shape is not None and not isinstance(shape, list):
            raise SignatureError(f"ParamInfo JSON: shape must be an array or null, got {shape!r}")
        return cls(
            data["name"],
            data["direction"],
            None if shape is None else tuple(shape),
            data["dtype"],
            data.get("layout", "ND"),
        )


def validate_param_names(params: Sequence[ParamInfo]) -> None:
    """Reject signatures whose parameter names repeat."""
    seen: dict[str, int] = {}
    for i, p in enumerate(params):
        if not isinstance(p, ParamInfo):
            raise SignatureError(f"params[{i}]: expected ParamInfo, got {type(p).__name__}")
        if p.name in seen:
            raise SignatureError(f"params[{i}]: name {p.name!r} repeats params[{seen[p.name]}]")
        seen[p.name] = i


def validate_return_aliases(params: Sequence[ParamInfo], aliases: Iterable[int]) -> tuple[int, ...]:
    """Check external return aliases: indices into the complete signature (scalar slots
    included) that name tensor parameters. Aliases may repeat.

    Returns the aliases as a tuple.
    """
    result = tuple(aliases)
    for k, index in enumerate(result):
        if isinstance(index, bool) or not isinstance(index, int):
            raise SignatureError(f"return_aliases[{k}]: expected an int, got {index!r}")
        if not 0 <= index < len(params):
            raise SignatureError(
                f"return_aliases[{k}]: index {index} is outside the signature of {len(params)} parameters"
            )
        if params[index].is_scalar:
            raise SignatureError(
                f"return_aliases[{k}]: index {index} names scalar {params[index].name!r}; "
                "a return must alias a tensor parameter"
            )
    return result


def bind_complete_args(
    params: Sequence[ParamInfo], args: Sequence[object]
) -> tuple[tuple[ParamInfo, object], ...]:
    """Pair each parameter with its argument; every parameter, Out/InOut included, is supplied.

    Raises SignatureError naming the first missing parameter.
    """
    validate_param_names(params)
    if len(args) != len(params):
        names = ", ".join(f"{p.name}:{p.direction.value}" for p in params)
        missing = list(params[len(args) :])
        hint = ""
        if missing:
            first = missing[0]
            hint = f"; parameter {first.name!r} is {first.direction.value} but was not supplied"
        raise SignatureError(f"expected {len(params)} arguments ({names}), got {len(args)}{hint}")
    for p, a in zip(params, args, strict=True):
        if a is None:
            raise SignatureError(
                f"parameter {p.name!r} ({p.direction.value}) was passed None; every argument must be supplied"
            )
    return tuple(zip(params, args, strict=True))
