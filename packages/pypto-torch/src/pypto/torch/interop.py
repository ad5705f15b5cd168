"""Call frames on borrowed tensors: one torch call described for a kernel-mode launch.

:class:`CallSignature` keeps a kernel's immutable ParamInfo signature and its return
aliases. :meth:`CallSignature.describe_call` validates one call's arguments and returns a
new immutable :class:`CallFrame`: the tensors (with their storage facts), the scalars (typed
values), the current device and stream, and the caller's objects that the operator returns.

The order of work is fixed: bind every parameter (Out/InOut included) first, then validate
each argument, then query the current device and stream. Nothing here switches devices,
caches a stream, synchronizes, enqueues work, copies a tensor, converts a format or
allocates an output.

A frame retains each tensor and its storage object. Python ownership alone does not protect
asynchronous device use after the frame is released (that is the launch layer's job), and
callers must not resize or free borrowed storage while a frame is in use.

Example:
    >>> import torch
    >>> from pypto.ir import ParamInfo
    >>> sig = CallSignature(
    ...     [ParamInfo("x", "In", [-1], "FP32"), ParamInfo("out", "Out", [-1], "FP32"),
    ...      ParamInfo("alpha", "In", None, "FP32")],
    ...     return_aliases=[1], platform="a2a3sim")
    >>> x, out = torch.ones(4), torch.empty(4)
    >>> frame = sig.describe_call([x, out, 2.0])
    >>> frame.alias_result() is out, frame.device_index, frame.scalars[0].value
    (True, 0, 2.0)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from math import prod
from operator import itemgetter
from typing import Any

import torch
from pypto.ir import (
    DEFAULT_PLATFORM,
    NZ_BLOCK_BYTES,
    NZ_BLOCK_ROWS,
    PLATFORM_TABLE,
    DataType,
    Layout,
    ParamDirection,
    ParamInfo,
    SignatureError,
    bind_complete_args,
    validate_param_names,
    validate_return_aliases,
    view_bounds_problem,
)
from pypto.ir import partial_overlap as _partial_overlap
from pypto.torch._dtypes import to_torch_dtype
from pypto.torch._fast_describe import FastScalar, FastTensor, build_fast_path
from pypto.torch._frames import CallFrame, ScalarArgument, TensorArgument
from pypto.torch._native_describe import native_describe
from pypto.torch._platform import (
    FORMAT_FRACTAL_NZ,
    FORMAT_NCHW,
    FORMAT_ND,
    DevicePlatform,
    PhysicalDescriptor,
    platform_for,
)
from pypto.torch._validation import (
    ArgumentError,
    _int_range,
    check_scalar,
    check_tensor_signature,
    describe_param,
)
from torch._subclasses.fake_tensor import is_fake
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

__all__ = [
    "ArgumentError",
    "CallFrame",
    "CallSignature",
    "ScalarArgument",
    "TensorArgument",
    "nz_physical_shape",
]

_BASE_FORMATS = (FORMAT_NCHW, FORMAT_ND)
_NZ_DTYPES = (DataType.FP16, DataType.BF16, DataType.INT8)
_SCALAR_FLOATS = (DataType.FP32, DataType.FP16, DataType.BF16)
_NZ_PLATFORMS = tuple(name for name, p in PLATFORM_TABLE.items() if p.nz_storage_inputs)


def nz_physical_shape(logical: Sequence[int], itemsize: int) -> tuple[int, ...] | None:
    """The complete, unpadded fractal NZ storage shape of a logical [R, C] or [B, R, C] matrix.

    ``[R, C]`` is stored as ``[C / C0, R / 16, 16, C0]`` with ``C0 = 32 / itemsize``
    elements (one 32-byte block row); a leading batch dimension stays in front. Returns
    None when R or C is not a whole number of blocks (the storage would be padded).
    """
    if len(logical) not in (2, 3) or itemsize <= 0 or NZ_BLOCK_BYTES % itemsize:
        return None
    c0 = NZ_BLOCK_BYTES // itemsize
    *batch, rows, cols = logical
    if rows % NZ_BLOCK_ROWS or cols % c0:
        return None
    return (*batch, cols // c0, rows // NZ_BLOCK_ROWS, NZ_BLOCK_ROWS, c0)


@dataclass(frozen=True, slots=True)
class _TensorSlot:
    """What describe_call needs to know of one tensor parameter, worked out at construction."""

    index: int
    param: ParamInfo
    torch_dtype: Any
    nz_admitted: bool
    rank: int
    itemsize: int


# Per tensor parameter: its slot, then the slot facts the loop reads (index, torch dtype, rank,
# itemsize), the static-dimension getter and its expected value, the strides when they are the
# same on every call, the first five TensorArgument fields, and whether the kernel writes it.
_TensorPlan = tuple[
    _TensorSlot,
    int,
    Any,
    int,
    int,
    Callable[[tuple[int, ...]], object] | None,
    object,
    tuple[int, ...] | None,
    tuple[int, str, ParamDirection, DataType, Layout],
    bool,
]
_ScalarPlan = tuple[int, ParamInfo, tuple[int, str, DataType], type, int | float | None, int | float | None]

# The largest finite value of each float scalar type: a Python float within it never overflows.
_FLOAT_MAX = {
    DataType.FP32: float.fromhex("0x1.fffffep127"),
    DataType.FP16: 65504.0,
    DataType.BF16: float.fromhex("0x1.fep127"),
}

_new_record = tuple.__new__  # builds a record (a named tuple) from one tuple of its fields

# Exactly these types take the fast path; any other tensor type (FakeTensor, functional or
# other wrapper subclasses) is examined by _reject_non_plain_tensor first.
_PLAIN_TENSOR_TYPES = (torch.Tensor, torch.nn.Parameter)


def _fail(slot: _TensorSlot, problem: str) -> ArgumentError:
    return ArgumentError(f"describe_call: {describe_param(slot.index, slot.param)}: {problem}")


def _reject_non_plain_tensor(slot: _TensorSlot, arg: object) -> None:
    """Raise for anything but a real tensor; return for a subclass that holds real storage."""
    if not isinstance(arg, torch.Tensor):
        module = type(arg).__module__
        if module.split(".")[0] in ("simpler", "pypto"):
            raise _fail(
                slot,
                f"got a Worker-owned {module}.{type(arg).__qualname__}; kernel mode borrows framework tensors only",
            )
        raise _fail(slot, f"expected a torch.Tensor, got {type(arg).__name__}")
    if is_fake(arg):
        raise _fail(
            slot, "got a Fake tensor, which has no device storage; describe_call needs real device tensors"
        )
    if is_traceable_wrapper_subclass(arg):
        raise _fail(
            slot,
            f"got a {type(arg).__name__} wrapper tensor; describe_call needs the real device tensor it wraps",
        )


class CallSignature:
    """A kernel's signature as call description sees it: ParamInfo list, return aliases, platform.

    Everything that depends only on the signature (each tensor parameter's torch dtype, rank,
    static dimensions, row-major strides when only the leading dimension is dynamic, NZ
    admission; each scalar's accepted range) is worked out here once, so that
    :meth:`describe_call` spends its time on the per-call facts only.

    Args:
        params: The logical ParamInfo signature (kept as an immutable tuple).
        return_aliases: Indices into ``params`` (scalar slots counted) of the tensors the
            operator returns; they may repeat.
        platform: A platform string (``"a2a3sim"`` by default, ``"a2a3"``, ...) or a
            :class:`~pypto.torch._platform.DevicePlatform` that answers device and stream
            queries.

    Raises:
        SignatureError: Repeated names, invalid aliases or a dtype this torch cannot carry.
        ValueError: An unknown platform.
    """

    __slots__ = (
        "__weakref__",
        "_fast",
        "_platform",
        "_python_fast",
        "_returns",
        "_scalar_plan",
        "_tensor_plan",
        "params",
        "return_aliases",
    )

    def __init__(
        self,
        params: Iterable[ParamInfo],
        return_aliases: Iterable[int] = (),
        *,
        platform: str | DevicePlatform = DEFAULT_PLATFORM,
    ) -> None:
        self.params: tuple[ParamInfo, ...] = tuple(params)
        validate_param_names(self.params)
        self.return_aliases: tuple[int, ...] = validate_return_aliases(self.params, return_aliases)
        self._platform = platform_for(platform)
        # The caller's objects for two or more aliases, as a tuple (used only then).
        self._returns: Any = itemgetter(*self.return_aliases) if len(self.return_aliases) > 1 else None
        tensor_plan = []
        for i, p in enumerate(self.params):
            if p.is_tensor:
                if p.layout is Layout.NZ and p.rank not in (2, 3):
                    raise SignatureError(
                        f"CallSignature: {describe_param(i, p)}: NZ shape {list(p.shape or ())} is a lowered "
                        "blocked shape, never a torch shape; pass the logical params ([R, C] or [B, R, C])"
                    )
                try:
                    torch_dtype = to_torch_dtype(p.dtype, what=describe_param(i, p))
                except ValueError as exc:
                    raise SignatureError(str(exc)) from None
                nz = (
                    p.layout is Layout.NZ
                    and p.direction is ParamDirection.IN
                    and p.dtype in _NZ_DTYPES
                    and self._platform.name in _NZ_PLATFORMS
                )
                shape = p.shape or ()
                slot = _TensorSlot(i, p, torch_dtype, nz, len(shape), p.dtype.itemsize)
                tensor_plan.append(
                    (
                        slot,
                        i,
                        torch_dtype,
                        len(shape),
                        p.dtype.itemsize,
                        *_static_check(shape),
                        _known_strides(shape),
                        (i, p.name, p.direction, p.dtype, p.layout),
                        p.direction.writes,
                    )
                )
        self._tensor_plan: tuple[_TensorPlan, ...] = tuple(tensor_plan)
        scalar_plan = []
        for i, p in enumerate(self.params):
            if p.is_scalar:
                fast = _scalar_fast_path(p.dtype)
                if fast is None:
                    raise SignatureError(
                        f"CallSignature: {describe_param(i, p)}: {p.dtype.value} has no scalar argument type"
                    )
                scalar_plan.append((i, p, (i, p.name, p.dtype), *fast))
        self._scalar_plan: tuple[_ScalarPlan, ...] = tuple(scalar_plan)
        self._python_fast = self._compile_fast_path(self._describe_general)
        self._fast = self._python_fast  # what describe_call runs: this, or the native path
        self._use_native()

    def _use_native(self) -> None:
        """Describe common calls natively once ``pypto.torch.build_native()`` has succeeded
        (platforms whose device memory is CPU memory only)."""
        cpu_device = self._platform.cpu_device_index
        if cpu_device is None:
            return
        native = native_describe(self, self._native_plan(cpu_device), self._describe_general)
        if native is not None:
            self._fast = native

    def _native_plan(self, cpu_device: int) -> tuple[Any, ...]:
        """The plan tuple ``_native_describe.cpp`` reads (its layout is documented there)."""
        platform = self._platform
        return (
            len(self.params),
            tuple(
                (index, torch_dtype, itemsize, tuple(slot.param.shape or ()), strides, prefix, writes)
                for slot, index, torch_dtype, _, itemsize, _, _, strides, prefix, writes in self._tensor_plan
            ),
            tuple((i, kind, lo, hi, head) for i, _, head, kind, lo, hi in self._scalar_plan),
            self.return_aliases,
            self,
            platform.name,
            cpu_device,
            platform.current_stream,
            platform.stream_device_index,
            torch.Tensor,
            torch.nn.Parameter,
            TensorArgument,
            ScalarArgument,
            CallFrame,
            FORMAT_ND,
        )

    def _compile_fast_path(
        self, general: Callable[[Sequence[object]], CallFrame]
    ) -> Callable[[Sequence[object]], CallFrame]:
        """This signature's generated fast path, handing what it does not take to ``general``."""
        return build_fast_path(
            signature=self,
            nparams=len(self.params),
            tensors=[
                FastTensor(slot.index, slot.param, slot.torch_dtype, slot.itemsize, strides, writes)
                for slot, *_, strides, _, writes in self._tensor_plan
            ],
            scalars=[FastScalar(i, p, kind, lo, hi) for i, p, _, kind, lo, hi in self._scalar_plan],
            return_aliases=self.return_aliases,
            platform=self._platform,
            general=general,
            row_major=_row_major,
            partial_overlap=_partial_overlap,
        )

    @property
    def platform(self) -> DevicePlatform:
        return self._platform

    @property
    def fast_path_source(self) -> str:
        """The Python source of this signature's generated fast path (see ``_fast_describe``)."""
        source: str = self._python_fast.__source__  # type: ignore[attr-defined]
        return source

    def __repr__(self) -> str:
        names = ", ".join(f"{p.name}:{p.direction.value}" for p in self.params)
        return f"CallSignature([{names}], return_aliases={list(self.return_aliases)}, platform={self._platform.name!r})"

    def describe_call(self, args: Sequence[object]) -> CallFrame:
        """Validate one call's arguments and snapshot them with the current device and stream.

        Args:
            args: One argument per parameter, in signature order (Out/InOut included).

        Returns:
            A new :class:`CallFrame`.

        Raises:
            SignatureError: Missing or surplus arguments (raised before any framework query).
            ArgumentError: An argument breaks its parameter's contract, tensors span devices,
                Out/InOut views partially overlap another view, or the current device or
                stream does not match the tensors.
            NpuRuntimeUnavailable: An NPU platform query needs torch_npu and it is missing.
        """
        # The generated fast path (or, after pypto.torch.build_native() on a simulator, the
        # native one) takes the common call and hands every other call to _describe_general,
        # which alone decides and reports errors.
        return self._fast(args)

    def _describe_general(self, args: Sequence[object]) -> CallFrame:
        """describe_call for any arguments: every check in its documented order."""
        # Binding: the count and the None check of bind_complete_args, which itself raises
        # the error (the signature's names were validated at construction).
        if len(args) != len(self.params):
            bind_complete_args(self.params, args)
        for arg in args:
            if arg is None:
                bind_complete_args(self.params, args)
        platform = self._platform
        device_of = platform.tensor_device_index
        format_of = platform.tensor_format
        cpu_device = platform.cpu_device_index
        grad_enabled = torch.is_grad_enabled()
        tensors: list[TensorArgument] = []
        spans: list[tuple[int, int, int, bool]] = []  # (start, end, tensor position, writes)
        first_device: int | None = None
        stray: tuple[_TensorSlot, int] | None = None  # the first tensor off the first one's device
        # The checks run in this order for each tensor; the first failure is the one reported.
        for (
            slot,
            index,
            torch_dtype,
            rank,
            itemsize,
            static_axes,
            static_want,
            known_strides,
            prefix,
            writes,
        ) in self._tensor_plan:
            tensor: Any = args[index]
            if type(tensor) not in _PLAIN_TENSOR_TYPES:
                _reject_non_plain_tensor(slot, tensor)
            if cpu_device is None:
                device = None if tensor.is_meta else device_of(tensor)
            else:
                device = cpu_device if tensor.is_cpu else None
            if device is None:
                if tensor.is_meta:
                    raise _fail(
                        slot,
                        "got a Meta tensor, which has no device storage; describe_call needs real device tensors",
                    )
                raise _fail(
                    slot,
                    f"expected a tensor on the {platform.device_type} device of platform {platform.name!r}, "
                    f"got a tensor on {tensor.device}",
                )
            if first_device is None:
                first_device = device
            elif device != first_device and stray is None:
                stray = (slot, device)
            if grad_enabled and tensor.requires_grad:
                raise _fail(
                    slot,
                    "the tensor requires grad while autograd is enabled; PyPTO kernels have no backward "
                    "(call under torch.no_grad() or pass a detached tensor)",
                )
            dtype = tensor.dtype
            # Only a complex tensor can be a conjugate view, and no parameter dtype is complex.
            if dtype is not torch_dtype and tensor.is_conj():
                raise _fail(slot, "got an unresolved conjugate view; call .resolve_conj() first")
            if tensor.is_neg():
                raise _fail(slot, "got an unresolved negative view; call .resolve_neg() first")
            shape = tuple(tensor.shape)
            if (
                dtype is not torch_dtype
                or len(shape) != rank
                or (static_axes is not None and static_axes(shape) != static_want)
            ):
                check_tensor_signature(index, slot.param, tensor, torch_dtype, caller="describe_call")
            fmt = FORMAT_ND if cpu_device is not None else format_of(tensor)
            storage = tensor.untyped_storage()
            storage_ptr = storage.data_ptr()
            storage_nbytes = storage.nbytes()
            offset = tensor.storage_offset()
            numel = prod(shape)
            physical: tuple[int, ...] | None = None
            if fmt in _BASE_FORMATS:
                if not tensor.is_contiguous():
                    raise _fail(
                        slot,
                        f"expected a contiguous view, got shape {list(shape)} with strides {list(tensor.stride())} "
                        "(transposed or strided views are not copied; pass .contiguous())",
                    )
                nbytes = numel * itemsize
            elif fmt == FORMAT_FRACTAL_NZ and slot.nz_admitted:
                if not tensor.is_contiguous():
                    raise _fail(slot, f"expected a contiguous NZ tensor, got strides {list(tensor.stride())}")
                physical = self._check_nz(slot, tensor, shape, itemsize)
                nbytes = prod(physical) * itemsize if numel else 0
            else:
                raise _format_error(slot, fmt, platform)
            data_ptr = storage_ptr + offset * itemsize
            if numel:
                # The storage rules (bounds here, aliasing below) are pypto.ir.storage_rules'.
                problem = view_bounds_problem(storage_ptr, storage_nbytes, offset, itemsize, nbytes)
                if problem is not None:
                    raise _fail(slot, problem)
                spans.append((data_ptr, data_ptr + nbytes, len(tensors), writes))
            tensors.append(
                _new_record(
                    TensorArgument,
                    prefix  # noqa: RUF005 - concatenating a ready tuple is cheaper than unpacking it
                    + (
                        shape,
                        _row_major(shape) if known_strides is None else known_strides,
                        offset,
                        fmt,
                        data_ptr,
                        storage_ptr,
                        storage_nbytes,
                        nbytes,
                        physical,
                        tensor,
                        storage,
                    ),
                )
            )
        scalars = []
        for index, param, head, fast_type, lo, hi in self._scalar_plan:
            value = args[index]
            # The common case (a plain value of the declared kind, well inside its range)
            # is accepted here; everything else gets check_scalar's full treatment.
            if type(value) is not fast_type or (lo is not None and not lo <= value <= hi):  # type: ignore[operator]
                value = check_scalar(index, param, value, caller="describe_call")
            scalars.append(_new_record(ScalarArgument, head + (value,)))  # noqa: RUF005 - as above
        if stray is not None:
            first = self._tensor_plan[0][0].param
            raise ArgumentError(
                f"describe_call: tensors span devices: parameter {first.name!r} is on "
                f"{platform.device_type}:{first_device}, parameter {stray[0].param.name!r} is on "
                f"{platform.device_type}:{stray[1]}"
            )
        if len(spans) > 1:
            _check_overlaps(spans, tensors)
        # Context queries come last, and are made afresh on every call (a platform whose
        # device memory is CPU memory has that one device, always current).
        device_index = platform.current_device() if cpu_device is None else cpu_device
        if first_device is not None and device_index != first_device:
            raise ArgumentError(
                f"describe_call: the tensors are on {platform.device_type}:{first_device} but the current "
                f"device is {platform.device_type}:{device_index}; make their device current "
                "(PyPTO never switches devices)"
            )
        stream = platform.current_stream(device_index)
        stream_device = platform.stream_device_index(stream)
        if stream_device != device_index:
            raise ArgumentError(
                f"describe_call: the current stream {stream!r} belongs to device {stream_device}, "
                f"but the current device is {device_index}"
            )
        aliases = self.return_aliases
        returned: tuple[Any, ...]
        if len(aliases) == 1:
            returned = (args[aliases[0]],)
        elif aliases:
            returned = self._returns(args)
        else:
            returned = ()
        return _new_record(
            CallFrame,
            (
                self,
                platform.name,
                tuple(tensors),
                tuple(scalars),
                device_index,
                stream,
                returned,
            ),
        )

    def _check_nz(
        self, slot: _TensorSlot, tensor: Any, shape: tuple[int, ...], itemsize: int
    ) -> tuple[int, ...]:
        def fail(problem: str) -> ArgumentError:
            return _fail(slot, problem)

        if tensor.storage_offset() != 0:
            raise fail(f"an NZ input must start at storage offset 0, got {tensor.storage_offset()}")
        expected = nz_physical_shape(shape, itemsize)
        if expected is None:
            raise fail(
                f"logical shape {list(shape)} is not a whole number of NZ blocks (rows of 16, "
                f"columns of {NZ_BLOCK_BYTES // itemsize}); padded NZ storage is not accepted"
            )
        desc: PhysicalDescriptor = self._platform.physical_descriptor(tensor)
        if desc.format != FORMAT_FRACTAL_NZ:
            raise fail(f"the physical storage reports format {desc.format}, expected {FORMAT_FRACTAL_NZ}")
        if desc.storage_offset != 0:
            raise fail(f"the physical NZ storage offset must be 0, got {desc.storage_offset}")
        if desc.storage_shape != expected:
            raise fail(
                f"physical NZ dimensions {list(desc.storage_shape)} are not the complete unpadded "
                f"matrix {list(expected)} of logical shape {list(shape)}"
            )
        need = prod(expected) * itemsize
        if desc.storage_nbytes < need:
            raise fail(f"the NZ storage holds {desc.storage_nbytes} bytes, the matrix needs {need}")
        return expected


def _row_major(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides = [1] * len(shape)
    for axis in range(len(shape) - 2, -1, -1):
        strides[axis] = strides[axis + 1] * max(shape[axis + 1], 1)
    return tuple(strides)


def _known_strides(shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """The row-major strides of every call when only dimension 0 may be dynamic (a stride
    depends on the later dimensions only), else None (computed per call)."""
    if any(d < 0 for d in shape[1:]):
        return None
    return _row_major(tuple(max(d, 0) for d in shape))


def _static_check(shape: tuple[int, ...]) -> tuple[Callable[[tuple[int, ...]], object] | None, object]:
    """A getter of the static axes of a shape and the value it must return (None: no static
    axis). One axis gives a plain int, several a tuple, as ``operator.itemgetter`` does."""
    axes = [axis for axis, d in enumerate(shape) if d >= 0]
    if not axes:
        return None, None
    getter = itemgetter(*axes)
    return getter, getter(shape)


def _scalar_fast_path(dtype: DataType) -> tuple[type, int | float | None, int | float | None] | None:
    """(Python type, lowest, highest) of the values describe_call accepts for a scalar of
    ``dtype`` without consulting check_scalar (None, None for BOOL: every bool); None if the
    dtype has no scalar argument type."""
    if dtype.is_signed_int or dtype.is_unsigned_int:
        lo, hi = _int_range(dtype)
        return int, lo, hi
    if dtype in _SCALAR_FLOATS:
        return float, -_FLOAT_MAX[dtype], _FLOAT_MAX[dtype]
    if dtype is DataType.BOOL:
        return bool, None, None
    return None


def _format_error(slot: _TensorSlot, fmt: int, platform: DevicePlatform) -> ArgumentError:
    if fmt == FORMAT_FRACTAL_NZ:
        param = slot.param
        return _fail(
            slot,
            f"got storage format {fmt} (fractal NZ); it is admitted only for a read-only FP16/BF16/INT8 "
            f"input declared layout='NZ' on platform {' or '.join(map(repr, _NZ_PLATFORMS))}, not for this "
            f"{param.direction.value} {param.dtype.value} {param.layout.value} parameter on {platform.name!r}; "
            "formats are never converted",
        )
    return _fail(
        slot,
        f"got storage format {fmt}; expected base format ND ({FORMAT_ND}) or NCHW ({FORMAT_NCHW}); "
        "formats are never converted",
    )


def _check_overlaps(spans: list[tuple[int, int, int, bool]], tensors: list[TensorArgument]) -> None:
    """Accept exact byte-span aliases, disjoint views and overlapping read-only views;
    reject a partial overlap in which an Out/InOut view takes part (pypto.ir.storage_rules)."""
    found = _partial_overlap(spans)
    if found is None:
        return
    a, b = tensors[found[0]], tensors[found[1]]
    raise ArgumentError(
        f"describe_call: parameters {a.name!r} ({a.direction.value}, bytes "
        f"[{a.data_ptr:#x}, {a.data_ptr + a.nbytes:#x})) and {b.name!r} ({b.direction.value}, bytes "
        f"[{b.data_ptr:#x}, {b.data_ptr + b.nbytes:#x})) partially overlap; a written view may "
        "only alias another view exactly or be disjoint from it"
    )
