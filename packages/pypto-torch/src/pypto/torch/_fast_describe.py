"""The per-signature fast path of ``CallSignature.describe_call``, generated as Python source.

A :class:`~pypto.torch.interop.CallSignature` knows at construction how many arguments a call
takes, which are tensors and which scalars, each tensor's dtype, rank, static dimensions,
element size and strides, and each scalar's accepted range. :func:`build_fast_path` writes one
function for that signature with every such fact as a constant and the per-argument loops
unrolled (the way ``dataclasses`` and ``torch.fx`` generate code), and compiles it once.

The generated function handles the common call only: list or tuple arguments, plain
``torch.Tensor`` (or ``Parameter``) objects on the platform's device in a base format,
contiguous, nonempty, inside their storage, of the declared dtype and shape, with no
autograd requirement, no conjugate or negative bit, no partial overlap with a written view,
and scalars of exactly the declared Python type inside their range; and a current device and
stream that match. It checks each of these and, at the first thing outside that case (or any
exception raised by a query), gives the call to the general path, which checks everything
again in its documented order and raises its own error. So the fast path never decides an
error, and the general path alone defines which error is reported and what its message says.
It accepts exactly what the general path accepts within that case, and builds the same frame.

Every query it makes is a read without side effects (tensor attributes, storage facts, the
platform's device, format and stream queries), so asking it again on the general path changes
nothing. On a successful call it queries the current device and stream once each, as the
general path does.

The source is kept on the function (``__source__``) and in :mod:`linecache`, so a traceback
through it shows the generated line; ``CallSignature.fast_path_source`` returns it.
"""

from __future__ import annotations

import itertools
import linecache
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from pypto.ir import ParamInfo
from pypto.torch._frames import CallFrame, ScalarArgument, TensorArgument
from pypto.torch._platform import FORMAT_NCHW, FORMAT_ND, DevicePlatform

__all__ = ["FastScalar", "FastTensor", "build_fast_path"]

# Past this many (written view, other view) pairs the overlap test calls the general sweep
# instead of being unrolled pair by pair.
_MAX_UNROLLED_PAIRS = 16

_serial = itertools.count(1)  # names each generated function's pseudo-file


@dataclass(frozen=True)
class FastTensor:
    """One tensor parameter as the generator needs it."""

    index: int
    param: ParamInfo
    torch_dtype: Any
    itemsize: int
    strides: tuple[int, ...] | None  # the same on every call, or None (worked out per call)
    writes: bool


@dataclass(frozen=True)
class FastScalar:
    """One scalar parameter: the exact Python type it accepts here and its range (None: any)."""

    index: int
    param: ParamInfo
    kind: type
    lo: int | float | None
    hi: int | float | None


class _Source:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.indent = 0

    def __call__(self, line: str) -> None:
        self.lines.append("    " * self.indent + line)


def build_fast_path(
    *,
    signature: object,
    nparams: int,
    tensors: Sequence[FastTensor],
    scalars: Sequence[FastScalar],
    return_aliases: Sequence[int],
    platform: DevicePlatform,
    general: Callable[[Sequence[object]], CallFrame],
    row_major: Callable[[tuple[int, ...]], tuple[int, ...]],
    partial_overlap: Callable[[list[tuple[int, int, int, bool]]], tuple[int, int] | None],
) -> Callable[[Sequence[object]], CallFrame]:
    """Generate and compile the fast ``describe_call`` of one signature.

    Args:
        signature: The CallSignature the frames name.
        nparams: How many arguments a call takes.
        tensors, scalars: The tensor and scalar parameters, in signature order.
        return_aliases: Indices of the arguments the frame returns.
        platform: The signature's platform; its query methods are bound once, here.
        general: The general path, called with the arguments whenever the fast path does not
            apply; its result (or exception) is the call's.
        row_major: Row-major strides of a shape (for tensors whose strides vary per call).
        partial_overlap: The storage rules' overlap sweep (used past a few written views).

    Returns:
        The compiled function; its source is its ``__source__`` attribute.
    """
    cpu_device = platform.cpu_device_index
    env: dict[str, Any] = {
        "general": general,
        "new": tuple.__new__,
        "Tensor": torch.Tensor,
        "Parameter": torch.nn.Parameter,
        "TensorArgument": TensorArgument,
        "ScalarArgument": ScalarArgument,
        "CallFrame": CallFrame,
        "signature": signature,
        "is_grad_enabled": torch.is_grad_enabled,
        "row_major": row_major,
        "partial_overlap": partial_overlap,
        "current_stream": platform.current_stream,
        "stream_device_index": platform.stream_device_index,
    }
    if cpu_device is None:
        env["device_of"] = platform.tensor_device_index
        env["format_of"] = platform.tensor_format
        env["current_device"] = platform.current_device

    src = _Source()
    src("def describe_call(args):")
    src.indent += 1
    src(f'"""The fast path of describe_call for {signature!r}."""')
    src("try:")
    src.indent += 1
    src("while True:  # one pass: `break` hands the call to the general path")
    src.indent += 1
    src(f"if (type(args) is not list and type(args) is not tuple) or len(args) != {nparams}:")
    src("    break")
    names = [f"a{i}" for i in range(nparams)]
    if nparams == 1:
        src(f"{names[0]}, = args")
    elif nparams:
        src(f"{', '.join(names)} = args")

    # On a platform with device queries, the argument types come first: binding rejects None
    # before any platform query is made. (Elsewhere each tensor's type is checked with its reads.)
    if tensors and cpu_device is None:
        src("if (")
        for k, t in enumerate(tensors):
            a = names[t.index]
            src(
                f"    (type({a}) is not Tensor and type({a}) is not Parameter){' or' if k < len(tensors) - 1 else ''}"
            )
        src("):")
        src("    break")
    for s in scalars:
        a = names[s.index]
        src(f"# {s.param.name!r} (#{s.index}): {s.param.dtype.value} scalar")
        test = f"type({a}) is not {s.kind.__name__}"
        if s.lo is not None:
            test += f" or not {s.lo!r} <= {a} <= {s.hi!r}"
        src(f"if {test}:")
        src("    break")

    records: list[str] = []
    overlapping = {t.index for pair in _overlap_pairs(tensors) for t in pair}
    first_device: str | None = None
    for t in tensors:
        i, p, a = t.index, t.param, names[t.index]
        shape = tuple(p.shape or ())
        rank = len(shape)
        dtype_name = f"dtype_{i}"
        env[dtype_name] = t.torch_dtype
        src(f"# {p.name!r} (#{i}): {p.direction.value} {p.dtype.value} {list(shape)}, {p.layout.value}")
        checks = [
            *(
                [f"(type({a}) is not Tensor and type({a}) is not Parameter)"]
                if cpu_device is not None
                else []
            ),
            *([f"not {a}.is_cpu"] if cpu_device is not None else [f"{a}.is_meta"]),
            f"{a}.dtype is not {dtype_name}",
            f"{a}.is_neg()",
            f"not {a}.is_contiguous()",
        ]
        src(f"if {' or '.join(checks)}:")
        src("    break")
        if cpu_device is None:
            src(f"device_{i} = device_of({a})")
            if first_device is None:
                first_device = f"device_{i}"
                src(f"if device_{i} is None:")
            else:
                src(f"if device_{i} is None or device_{i} != {first_device}:")
            src("    break")
            src(f"format_{i} = format_of({a})")
            src(f"if format_{i} != {FORMAT_ND} and format_{i} != {FORMAT_NCHW}:")
            src("    break")
            fmt = f"format_{i}"
        else:
            fmt = str(FORMAT_ND)
        # The extents, unpacked (a tensor of another rank raises here: the general path reports
        # it), the static ones compared, and the shape rebuilt as a plain tuple.
        dims = [f"d{axis}_{i}" for axis in range(rank)]  # a tensor parameter has rank >= 1
        src(f"{', '.join(dims)}{',' if rank == 1 else ''} = {a}.shape")
        static = [f"{dims[axis]} != {d}" for axis, d in enumerate(shape) if d >= 0]
        if static:
            src(f"if {' or '.join(static)}:")
            src("    break")
        extents = [dims[axis] if d < 0 else str(d) for axis, d in enumerate(shape)]
        src(f"shape_{i} = {_tuple(extents)}")
        # Bytes of the view: the dynamic extents times the static ones folded into a constant.
        constant = t.itemsize
        for d in shape:
            if d >= 0:
                constant *= d
        factors = [dims[axis] for axis, d in enumerate(shape) if d < 0]
        src(f"nbytes_{i} = {' * '.join([*factors, str(constant)])}")
        src(f"storage_{i} = {a}.untyped_storage()")
        src(f"base_{i} = storage_{i}.data_ptr()")
        src(f"capacity_{i} = storage_{i}.nbytes()")
        src(f"offset_{i} = {a}.storage_offset()")
        # Nonempty and inside its storage (pypto.ir.storage_rules.view_bounds_problem).
        src(
            f"if not nbytes_{i} or not base_{i} or offset_{i} < 0 "
            f"or offset_{i} * {t.itemsize} + nbytes_{i} > capacity_{i}:"
        )
        src("    break")
        src(f"start_{i} = base_{i} + offset_{i} * {t.itemsize}")
        if i in overlapping:
            src(f"end_{i} = start_{i} + nbytes_{i}")
        strides = repr(t.strides) if t.strides is not None else f"row_major(shape_{i})"
        records.append(
            f"new(TensorArgument, ({i}, {p.name!r}, direction_{i}, param_dtype_{i}, layout_{i}, "
            f"shape_{i}, {strides}, offset_{i}, {fmt}, start_{i}, base_{i}, capacity_{i}, nbytes_{i}, "
            f"None, {a}, storage_{i}))"
        )
        env[f"direction_{i}"] = p.direction
        env[f"param_dtype_{i}"] = p.dtype
        env[f"layout_{i}"] = p.layout

    if tensors:
        src("# autograd: a tensor that requires grad is refused only while grad is enabled")
        grads = " or ".join(f"{names[t.index]}.requires_grad" for t in tensors)
        src(f"if ({grads}) and is_grad_enabled():")
        src("    break")

    scalar_records = [
        f"new(ScalarArgument, ({s.index}, {s.param.name!r}, scalar_dtype_{s.index}, {names[s.index]}))"
        for s in scalars
    ]
    for s in scalars:
        env[f"scalar_dtype_{s.index}"] = s.param.dtype

    _overlap_test(src, tensors)

    # The context queries come last, as on the general path.
    if cpu_device is None:
        src("device_index = current_device()")
        if first_device is not None:
            src(f"if device_index != {first_device}:")
            src("    break")
        device = "device_index"
    else:
        device = str(cpu_device)
    src(f"stream = current_stream({device})")
    src(f"if stream_device_index(stream) != {device}:")
    src("    break")
    src("return new(CallFrame, (")
    src(f"    signature, {platform.name!r},")
    src("    (")
    for record in records:
        src(f"        {record},")
    src("    ),")
    src(f"    {_tuple(scalar_records)},")
    src(f"    {device}, stream, {_tuple([names[k] for k in return_aliases])},")
    src("))")
    src.indent -= 2
    src("except Exception:  # a query raised: the general path asks again and reports it")
    src("    pass")
    src("return general(args)")

    source = "\n".join(src.lines) + "\n"
    filename = f"<describe_call fast path #{next(_serial)}>"
    exec(compile(source, filename, "exec"), env)  # our own generated source
    function: Callable[[Sequence[object]], CallFrame] = env["describe_call"]
    function.__source__ = source  # type: ignore[attr-defined]
    # Tracebacks show the generated lines while the function lives.
    linecache.cache[filename] = (len(source), None, [line + "\n" for line in src.lines], filename)
    weakref.finalize(function, linecache.cache.pop, filename, None)
    return function


def _tuple(items: Sequence[str]) -> str:
    """Source of a tuple display of ``items``."""
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"


def _overlap_pairs(tensors: Sequence[FastTensor]) -> list[tuple[FastTensor, FastTensor]]:
    """The pairs of tensors that may conflict: every pair in which at least one is written."""
    return [(a, b) for k, a in enumerate(tensors) for b in tensors[k + 1 :] if a.writes or b.writes]


def _overlap_test(src: _Source, tensors: Sequence[FastTensor]) -> None:
    """Emit the partial-overlap test: a written view may only alias another exactly or be
    disjoint from it (pypto.ir.storage_rules.partial_overlap); views only read never conflict.
    Each view ``i`` spans bytes [start_i, end_i)."""
    pairs = _overlap_pairs(tensors)
    if not pairs:
        return
    if len(pairs) > _MAX_UNROLLED_PAIRS:
        items = ", ".join(f"(start_{t.index}, end_{t.index}, {k}, {t.writes})" for k, t in enumerate(tensors))
        src(f"if partial_overlap([{items}]) is not None:")
        src("    break")
        return
    src("# a view sharing bytes with a written view must be its exact alias")
    src("if (")
    for k, (a, b) in enumerate(pairs):
        i, j = a.index, b.index
        test = f"(start_{i} < end_{j} and start_{j} < end_{i} and (start_{i} != start_{j} or end_{i} != end_{j}))"
        src(f"    {test}{' or' if k < len(pairs) - 1 else ''}")
    src("):")
    src("    break")
