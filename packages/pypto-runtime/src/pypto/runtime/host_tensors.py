"""Host tensors from numpy, torch (CPU) or the buffer protocol, described without importing
numpy or torch.

Program mode on the simulator passes the caller's own storage to the chip, without a copy.
Accepted: numpy arrays (``numpy.ndarray``, read through their ``__array_interface__``), torch
CPU tensors (``data_ptr()``, ``stride()``, ``untyped_storage()``) and objects with the buffer
protocol (anything ``memoryview`` accepts: ``bytearray``, ``array.array``, ``mmap``, ...). A
bare ``__array_interface__`` on any other object is a raw pointer nobody vouches for and is
refused. Each view is described together with the storage it lies in (a torch tensor's
``untyped_storage()``, a numpy array's base array, a buffer's exporter) and checked against it
with :mod:`pypto.ir.storage_rules`, the implementation describe_call uses too. Output
allocation follows the caller's library: torch-like inputs get ``new_empty`` outputs,
everything else numpy arrays.
"""

from __future__ import annotations

import ctypes
import math
import sys
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from pypto.ir import DYNAMIC, DataType, ParamInfo, view_bounds_problem
from pypto.language.interface import tensor_library
from pypto.runtime.errors import PyptoRuntimeError

__all__ = [
    "HostTensor",
    "TensorBindingError",
    "allocate_like",
    "describe",
    "numpy_typestr",
    "resident_view",
    "tensor_nbytes",
]


class TensorBindingError(PyptoRuntimeError, TypeError):
    """An argument is not a usable host tensor, or does not match its parameter. A user error
    (``pypto.language.tracebacks``): a call shows it without pypto's frames."""

    pypto_user_error = True


# numpy typestr (kind + itemsize, byte order stripped) -> DataType, from the dtype table
_NUMPY_CODES = {dt.numpy_code: dt for dt in DataType if dt.numpy_code is not None}
_NUMPY_TYPESTRS = {dt: ("|" if int(code[1:]) == 1 else "<") + code for code, dt in _NUMPY_CODES.items()}


def numpy_typestr(dtype: DataType) -> str | None:
    """The ``__array_interface__`` type string of a native-order numpy array of ``dtype``
    (``"<f4"``, ``"|i1"``), or None (no numpy type, or a big-endian host)."""
    return _NUMPY_TYPESTRS.get(dtype) if sys.byteorder == "little" else None


# numpy has no BF16/FP8/FP4: outputs of those types are allocated only as torch tensors.
_NUMPY_ALLOCATABLE = frozenset(_NUMPY_CODES.values())
# struct-module format characters (the buffer protocol) -> numpy kind letter
_BUFFER_KINDS = {
    **dict.fromkeys("bhilqn", "i"),
    **dict.fromkeys("BHILQN", "u"),
    "e": "f",
    "f": "f",
    "?": "b",
}


@dataclass(frozen=True)
class HostTensor:
    """A strided view of host memory: element strides, the byte span it touches, its owner,
    and the storage it lies in (``storage_ptr``, ``storage_nbytes``; the view starts
    ``offset_bytes`` into it)."""

    ptr: int  # address of element [0, ..., 0]
    span_bytes: int  # bytes from ptr to one past the last accessed element (0 if empty)
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # in elements
    dtype: DataType
    owner: object
    readonly: bool = False
    storage_ptr: int = 0  # first byte of the storage the view lies in
    storage_nbytes: int = 0  # its capacity in bytes

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def offset_bytes(self) -> int:
        """Where the view's first element is in its storage (a multiple of the itemsize)."""
        return self.ptr - self.storage_ptr

    @property
    def is_contiguous(self) -> bool:
        expected, acc = [], 1
        for d in reversed(self.shape):
            expected.append(acc)
            acc *= max(d, 1)
        return self.numel == 0 or all(
            s == e for s, e, d in zip(self.strides, reversed(expected), self.shape, strict=True) if d != 1
        )

    @property
    def layout(self) -> Hashable | None:
        """None for a contiguous view, else (itemsize, shape, byte strides) without the
        dimensions of extent 1: what makes two views with one byte span the same elements
        (``storage_rules.strided_alias_conflict``)."""
        if self.is_contiguous:
            return None
        size = self.dtype.itemsize
        return size, tuple((d, s * size) for d, s in zip(self.shape, self.strides, strict=True) if d != 1)


def _module_type(module: str, name: str) -> type | None:
    """``module.name`` if that module is already imported (never imports it)."""
    mod = sys.modules.get(module)
    found = getattr(mod, name, None) if mod is not None else None
    return found if isinstance(found, type) else None


def _span(shape: Sequence[int], strides: Sequence[int], itemsize: int) -> int:
    if any(d == 0 for d in shape):
        return 0
    return (1 + sum((d - 1) * s for d, s in zip(shape, strides, strict=True))) * itemsize


def describe(obj: object, *, what: str) -> HostTensor:
    """Describe a numpy array, a torch CPU tensor or a buffer-protocol object without copying
    it, and check that the view lies inside its storage.

    Raises:
        TensorBindingError: not one of those, a device tensor, an unsupported dtype, a view
            with negative/unaligned strides, or a view reaching outside its storage.
    """
    own = getattr(type(obj), "__pypto_host_tensor__", None)
    if own is not None:  # a tensor that describes itself (pypto.runtime.DeviceTensor)
        view = own(obj, what)
        return _check_bounds(view, view.dtype.itemsize, what)
    torch_tensor = _module_type("torch", "Tensor")
    if torch_tensor is not None and isinstance(obj, torch_tensor):
        return _describe_torch(obj, what)
    ndarray = _module_type("numpy", "ndarray")
    if ndarray is not None and isinstance(obj, ndarray):
        return _describe_numpy(obj, ndarray, what)
    try:
        view = memoryview(obj)  # type: ignore[arg-type]
    except TypeError:
        pass
    else:
        return _describe_buffer(obj, view, what)
    if hasattr(obj, "__array_interface__"):
        raise TensorBindingError(
            f"{what}: got a {type(obj).__name__} that exposes only __array_interface__, a raw "
            "address nothing vouches for; pass a numpy array (numpy.asarray(x)), a CPU torch tensor "
            "or an object with the buffer protocol"
        )
    raise TensorBindingError(
        f"{what}: expected a host tensor (numpy array, CPU torch tensor or buffer-protocol object), "
        f"got {type(obj).__name__}"
    )


def _row_major(shape: Sequence[int]) -> tuple[int, ...]:
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= max(d, 1)
    return tuple(reversed(strides))


def tensor_nbytes(shape: Sequence[int], dtype: DataType) -> int:
    """The bytes a row-major tensor of ``shape`` and ``dtype`` takes."""
    return math.prod(shape) * dtype.itemsize


def resident_view(ptr: int, shape: tuple[int, ...], dtype: DataType, owner: object) -> HostTensor:
    """The view a call binds of a worker-resident tensor (``ChipWorker``'s ``DeviceTensor``, a
    ``DistributedWorker``'s ``SharedDeviceTensor``): row-major at ``ptr``, its own whole storage."""
    nbytes = tensor_nbytes(shape, dtype)
    return HostTensor(ptr, nbytes, shape, _row_major(shape), dtype, owner, False, ptr, nbytes)


def _element_strides(raw: Sequence[int], itemsize: int, what: str) -> tuple[int, ...]:
    if any(s < 0 or s % itemsize for s in raw):
        raise TensorBindingError(
            f"{what}: strides {tuple(raw)} bytes are negative or not multiples of the "
            f"{itemsize}-byte element; pass a contiguous copy (numpy.ascontiguousarray)"
        )
    return tuple(int(s) // itemsize for s in raw)


def _byte_range(
    ptr: int, shape: Sequence[int], byte_strides: Sequence[int], itemsize: int
) -> tuple[int, int]:
    """[lo, hi) of the bytes a view of any stride signs touches (empty: (ptr, ptr))."""
    if any(d == 0 for d in shape):
        return ptr, ptr
    lo = hi = ptr
    for d, s in zip(shape, byte_strides, strict=True):
        if s < 0:
            lo += (d - 1) * s
        else:
            hi += (d - 1) * s
    return lo, hi + itemsize


def _within(ptr: int, span: int, itemsize: int, storage: tuple[int, int] | None) -> tuple[int, int]:
    """(storage_ptr, storage_nbytes) of a view found inside ``storage`` (start, end), moved up
    so that the view's offset is a whole number of elements; the view's own span otherwise."""
    if storage is None or not (storage[0] <= ptr and ptr + span <= storage[1]):
        return ptr, span
    start = storage[0] + (ptr - storage[0]) % itemsize
    return start, storage[1] - start


def _check_bounds(view: HostTensor, itemsize: int, what: str, hint: str = "") -> HostTensor:
    for axis, (extent, stride) in enumerate(zip(view.shape, view.strides, strict=True)):
        if stride == 0 and extent > 1:
            raise TensorBindingError(
                f"{what}: stride 0 on axis {axis}, a broadcast (expanded) view whose {extent} elements along "
                "that axis share one memory location; the chip needs every element in its own place: "
                "pass .contiguous() (torch) or np.ascontiguousarray (numpy)"
            )
    problem = view_bounds_problem(
        view.storage_ptr, view.storage_nbytes, view.offset_bytes // itemsize, itemsize, view.span_bytes
    )
    if problem is not None:
        raise TensorBindingError(f"{what}: {problem}{hint}")
    return view


def _describe_numpy(obj: Any, ndarray: type, what: str) -> HostTensor:
    iface = obj.__array_interface__
    typestr = str(iface["typestr"])
    dtype = _NUMPY_CODES.get(typestr[1:])
    if dtype is None or typestr[0] == ">":
        raise TensorBindingError(f"{what}: unsupported element type {typestr!r} (numpy dtype)")
    itemsize = int(typestr[2:])
    shape = tuple(int(d) for d in iface["shape"])
    ptr, readonly = iface["data"]
    raw = iface.get("strides")
    elem_strides = _row_major(shape) if raw is None else _element_strides(raw, itemsize, what)
    if not shape:
        raise TensorBindingError(f"{what}: a 0-d array is not a tensor argument; pass a Python scalar")
    span = _span(shape, elem_strides, itemsize)
    # The storage: the memory of the array at the root of the .base chain (an array that owns
    # its data, or one made over a buffer numpy holds for it).
    root = obj
    while isinstance(root.base, ndarray):
        root = root.base
    r_iface = root.__array_interface__
    r_itemsize = int(str(r_iface["typestr"])[2:])
    r_strides = r_iface.get("strides") or tuple(s * r_itemsize for s in _row_major(r_iface["shape"]))
    storage = _byte_range(int(r_iface["data"][0]), r_iface["shape"], r_strides, r_itemsize)
    base, nbytes = _within(int(ptr), span, itemsize, storage)
    view = HostTensor(int(ptr), span, shape, elem_strides, dtype, obj, bool(readonly), base, nbytes)
    return _check_bounds(view, itemsize, what)


def _describe_torch(obj: Any, what: str) -> HostTensor:
    device = getattr(obj, "device", None)
    if getattr(device, "type", "cpu") != "cpu":
        raise TensorBindingError(
            f"{what}: program mode on the simulator takes CPU tensors, got one on {device}; "
            "move it with .cpu() (device tensors belong to kernel mode, pypto.torch)"
        )
    # As in kernel mode (docs/pypto-torch.md): a tensor that requires grad is refused while
    # autograd records, and borrowed as it is under torch.no_grad() / inference_mode.
    if getattr(obj, "requires_grad", False) and sys.modules["torch"].is_grad_enabled():
        raise TensorBindingError(
            f"{what}: tensor requires grad while autograd is enabled; pass .detach() or call under "
            "torch.no_grad() (PyPTO kernels have no backward)"
        )
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
    itemsize = int(obj.element_size())
    try:
        storage = obj.untyped_storage()
        storage_ptr, storage_nbytes = int(storage.data_ptr()), int(storage.nbytes())
        offset, ptr = int(obj.storage_offset()), int(obj.data_ptr())
    except Exception as exc:  # FakeTensors, wrapper subclasses: no storage to read
        raise TensorBindingError(
            f"{what}: a {type(obj).__name__} without readable host storage ({exc}); pass a plain CPU tensor"
        ) from None
    span = _span(shape, strides, itemsize)
    if span and ptr != storage_ptr + offset * itemsize:
        raise TensorBindingError(
            f"{what}: data_ptr() {ptr:#x} is not storage {storage_ptr:#x} + offset {offset} elements; "
            "pass a plain CPU tensor"
        )
    view = HostTensor(
        storage_ptr + offset * itemsize, span, shape, strides, dtype, obj, False, storage_ptr, storage_nbytes
    )
    return _check_bounds(view, itemsize, what, " (was its storage resized below the view?)")


class _PyBuffer(ctypes.Structure):
    _fields_ = [
        ("buf", ctypes.c_void_p),
        ("obj", ctypes.c_void_p),
        ("len", ctypes.c_ssize_t),
        ("itemsize", ctypes.c_ssize_t),
        ("readonly", ctypes.c_int),
        ("ndim", ctypes.c_int),
        ("format", ctypes.c_char_p),
        ("shape", ctypes.c_void_p),
        ("strides", ctypes.c_void_p),
        ("suboffsets", ctypes.c_void_p),
        ("internal", ctypes.c_void_p),
    ]


_PyBUF_SIMPLE = 0  # a contiguous buffer, as bytes
_PyBUF_STRIDES = 0x0018  # PyBUF_STRIDES | PyBUF_ND: shape and strides, no indirection
# ctypes.pythonapi functions hold the GIL and raise the Python error they set.
_get_buffer = ctypes.pythonapi.PyObject_GetBuffer
_get_buffer.argtypes = [ctypes.py_object, ctypes.POINTER(_PyBuffer), ctypes.c_int]
_get_buffer.restype = ctypes.c_int
_release_buffer = ctypes.pythonapi.PyBuffer_Release
_release_buffer.argtypes = [ctypes.POINTER(_PyBuffer)]
_release_buffer.restype = None


def _buffer_address(obj: object, flags: int = _PyBUF_STRIDES) -> tuple[int, int]:
    """(address of the first element, len in bytes) that ``obj``'s buffer export reports."""
    view = _PyBuffer()
    _get_buffer(obj, ctypes.byref(view), flags)
    try:
        return int(view.buf or 0), int(view.len)
    finally:
        _release_buffer(ctypes.byref(view))


def _describe_buffer(obj: object, view: memoryview, what: str) -> HostTensor:
    fmt = view.format
    order, code = (fmt[0], fmt[1:]) if fmt[:1] in "@=<>!" else ("@", fmt)
    kind = _BUFFER_KINDS.get(code) if len(code) == 1 else None
    dtype = _NUMPY_CODES.get(f"{kind}{view.itemsize}") if kind else None
    if dtype is None or (order in ">!" and view.itemsize > 1) or sys.byteorder != "little":
        raise TensorBindingError(
            f"{what}: unsupported buffer element format {fmt!r} ({type(obj).__name__}); "
            "expected a little-endian int, unsigned, float16/32 or bool format"
        )
    if view.suboffsets:
        raise TensorBindingError(f"{what}: an indirect (suboffsets) buffer is not a strided tensor")
    shape = tuple(int(d) for d in view.shape or ())
    if not shape:
        raise TensorBindingError(f"{what}: a 0-d buffer is not a tensor argument; pass a Python scalar")
    itemsize = view.itemsize
    strides = _element_strides(view.strides or (), itemsize, what)
    span = _span(shape, strides, itemsize)
    try:
        ptr, _ = _buffer_address(view)
        storage: tuple[int, int] | None = None
        exporter = view.obj
        if exporter is not None and exporter is not view:
            try:
                start, length = _buffer_address(exporter, _PyBUF_SIMPLE)  # the whole exporter
                storage = (start, start + length)
            except (BufferError, TypeError, ValueError):
                storage = None  # not a contiguous exporter: the view's own span
    except (BufferError, TypeError, ValueError) as exc:
        raise TensorBindingError(f"{what}: cannot read the buffer of a {type(obj).__name__}: {exc}") from None
    base, nbytes = _within(ptr, span, itemsize, storage)
    # The memoryview is the owner: while it lives, a resizable exporter (bytearray) cannot resize.
    host = HostTensor(ptr, span, shape, strides, dtype, view, bool(view.readonly), base, nbytes)
    return _check_bounds(host, itemsize, what)


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
        if tensor_library(obj) == "torch":
            torch = sys.modules["torch"]
            if hasattr(torch, dtype.array_name):
                return obj.new_empty(tuple(shape), dtype=getattr(torch, dtype.array_name))  # type: ignore[attr-defined]
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
