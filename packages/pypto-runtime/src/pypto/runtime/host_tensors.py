"""Host tensors from numpy or torch (CPU), described without importing either library.

Program mode on the simulator passes the caller's own storage to the chip: a tensor is read
through ``__array_interface__`` (numpy and anything like it) or ``data_ptr()`` / ``stride()`` /
``element_size()`` (torch CPU tensors), and wrapped without a copy. Output allocation follows
the caller's library: torch-like inputs get ``new_empty`` outputs, everything else numpy arrays.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.param_info import DYNAMIC, ParamInfo

__all__ = ["HostTensor", "TensorBindingError", "allocate_like", "describe", "is_tensor"]


class TensorBindingError(TypeError):
    """An argument is not a usable host tensor, or does not match its parameter."""


# numpy typestr (kind + itemsize, byte order stripped) -> DataType
_NUMPY_CODES = {
    "f4": DataType.FP32,
    "f2": DataType.FP16,
    "i1": DataType.INT8,
    "i2": DataType.INT16,
    "i4": DataType.INT32,
    "i8": DataType.INT64,
    "u1": DataType.UINT8,
    "u2": DataType.UINT16,
    "u4": DataType.UINT32,
    "u8": DataType.UINT64,
    "b1": DataType.BOOL,
}
# numpy has no BF16/FP8/FP4: outputs of those types are allocated only as torch tensors.
_NUMPY_ALLOCATABLE = frozenset(_NUMPY_CODES.values())


@dataclass(frozen=True)
class HostTensor:
    """A strided view of host memory: element strides, the byte span it touches, its owner."""

    ptr: int  # address of element [0, ..., 0]
    span_bytes: int  # bytes from ptr to one past the last accessed element (0 if empty)
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # in elements
    dtype: DataType
    owner: object
    readonly: bool = False

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def is_contiguous(self) -> bool:
        expected, acc = [], 1
        for d in reversed(self.shape):
            expected.append(acc)
            acc *= max(d, 1)
        return self.numel == 0 or all(
            s == e for s, e, d in zip(self.strides, reversed(expected), self.shape, strict=True) if d != 1
        )


def is_tensor(obj: object) -> bool:
    return hasattr(obj, "__array_interface__") or (hasattr(obj, "data_ptr") and hasattr(obj, "stride"))


def _span(shape: Sequence[int], strides: Sequence[int], itemsize: int) -> int:
    if any(d == 0 for d in shape):
        return 0
    return (1 + sum((d - 1) * s for d, s in zip(shape, strides, strict=True))) * itemsize


def describe(obj: object, *, what: str) -> HostTensor:
    """Describe a numpy array or a torch CPU tensor without copying it.

    Raises:
        TensorBindingError: not a host tensor, a device tensor, an unsupported dtype, or a
            view with negative/unaligned strides.
    """
    if hasattr(obj, "data_ptr") and hasattr(obj, "stride") and hasattr(obj, "element_size"):
        return _describe_torch(obj, what)
    iface = getattr(obj, "__array_interface__", None)
    if isinstance(iface, dict):
        return _describe_array_interface(obj, iface, what)
    raise TensorBindingError(
        f"{what}: expected a host tensor (numpy array or CPU torch tensor), got {type(obj).__name__}"
    )


def _describe_array_interface(obj: object, iface: dict[str, Any], what: str) -> HostTensor:
    typestr = str(iface["typestr"])
    dtype = _NUMPY_CODES.get(typestr[1:])
    if dtype is None or typestr[0] == ">":
        raise TensorBindingError(f"{what}: unsupported element type {typestr!r} (numpy dtype)")
    itemsize = int(typestr[2:])
    shape = tuple(int(d) for d in iface["shape"])
    ptr, readonly = iface["data"]
    raw = iface.get("strides")
    if raw is None:
        strides, acc = [], 1
        for d in reversed(shape):
            strides.append(acc)
            acc *= max(d, 1)
        elem_strides = tuple(reversed(strides))
    else:
        if any(s < 0 or s % itemsize for s in raw):
            raise TensorBindingError(
                f"{what}: strides {tuple(raw)} bytes are negative or not multiples of the "
                f"{itemsize}-byte element; pass a contiguous copy (numpy.ascontiguousarray)"
            )
        elem_strides = tuple(int(s) // itemsize for s in raw)
    if not shape:
        raise TensorBindingError(f"{what}: a 0-d array is not a tensor argument; pass a Python scalar")
    return HostTensor(
        int(ptr), _span(shape, elem_strides, itemsize), shape, elem_strides, dtype, obj, bool(readonly)
    )


def _describe_torch(obj: Any, what: str) -> HostTensor:
    device = getattr(obj, "device", None)
    if getattr(device, "type", "cpu") != "cpu":
        raise TensorBindingError(
            f"{what}: program mode on the simulator takes CPU tensors, got one on {device}; "
            "move it with .cpu() (device tensors belong to kernel mode, pypto.torch)"
        )
    if getattr(obj, "requires_grad", False):
        raise TensorBindingError(f"{what}: tensor requires grad; pass .detach() (no autograd support)")
    dtype = DataType.from_array_name(str(obj.dtype))
    if dtype is None:
        raise TensorBindingError(f"{what}: unsupported torch dtype {obj.dtype}")
    shape = tuple(int(d) for d in obj.shape)
    strides = tuple(int(s) for s in obj.stride())
    if any(s < 0 for s in strides):
        raise TensorBindingError(f"{what}: negative strides {strides}; pass .contiguous()")
    if getattr(obj, "is_conj", lambda: False)() or getattr(obj, "is_neg", lambda: False)():
        raise TensorBindingError(f"{what}: unresolved conj/neg view; call .resolve_conj()/.resolve_neg()")
    if not shape:
        raise TensorBindingError(f"{what}: a 0-d tensor is not a tensor argument; pass .item()")
    return HostTensor(
        int(obj.data_ptr()), _span(shape, strides, int(obj.element_size())), shape, strides, dtype, obj
    )


def check_against(view: HostTensor, param: ParamInfo, bound: dict[str, int], *, what: str) -> None:
    """Check dtype, rank and static dims of ``view`` against ``param``; record dynamic extents
    in ``bound`` (keyed ``"<param>.<dim>"``)."""
    assert param.shape is not None
    if view.dtype is not param.dtype:
        raise TensorBindingError(f"{what}: expected dtype {param.dtype.value}, got {view.dtype.value}")
    if len(view.shape) != len(param.shape):
        raise TensorBindingError(
            f"{what}: expected rank {len(param.shape)} (shape {list(param.shape)}), got shape {list(view.shape)}"
        )
    for i, (want, got) in enumerate(zip(param.shape, view.shape, strict=True)):
        if want == DYNAMIC:
            bound[f"{param.name}.{i}"] = got
        elif want != got:
            raise TensorBindingError(
                f"{what}: dimension {i} must be {want} (shape {list(param.shape)}), got shape {list(view.shape)}"
            )
    if param.direction.writes and view.readonly:
        raise TensorBindingError(f"{what}: is {param.direction.value} but the array is read-only")


def allocate_like(shape: Sequence[int], dtype: DataType, like: Sequence[object]) -> object:
    """A new, uninitialised host tensor: torch if any of ``like`` is a torch tensor, else numpy."""
    for obj in like:
        if hasattr(obj, "new_empty") and hasattr(obj, "data_ptr"):
            torch = sys.modules.get(type(obj).__module__.split(".", 1)[0])
            if torch is not None and hasattr(torch, dtype.array_name):
                return obj.new_empty(tuple(shape), dtype=getattr(torch, dtype.array_name))
    if dtype not in _NUMPY_ALLOCATABLE:
        raise TensorBindingError(
            f"cannot allocate a {dtype.value} output as a numpy array; pass it as a torch tensor argument"
        )
    try:
        import numpy
    except ImportError:
        raise TensorBindingError(
            "output allocation needs numpy (or torch tensors among the arguments); pip install numpy"
        ) from None
    return numpy.empty(tuple(shape), dtype=dtype.array_name)
