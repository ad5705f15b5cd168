"""Annotation types of the kernel language: ``pl.Tensor``, ``pl.Tile``, ``pl.Scalar``,
``pl.Out``/``pl.InOut``, ``pl.dynamic`` dimensions and the ``pl.RUNTIME`` scalar marker.

They are only read by the parser (annotations are evaluated, bodies are not executed).
``pl.Tensor`` bare means "take shape and dtype from the call" (``@pl.jit``); subscripted it
fixes them: ``pl.Tensor[[M, 128], pl.FP32]`` where ``M = pl.dynamic("M")``. A dtype may be a
dtype variable, ``DT = pl.dtype_var("DT", pl.FP32, pl.BF16)``: bound to the call's dtype.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from pypto.ir.dtypes import DataType
from pypto.ir.param_info import Layout, ParamDirection
from pypto.ir.types import DynDim, MemorySpace

__all__ = [
    "RUNTIME",
    "DTypeVar",
    "DirectionAnnotation",
    "DynVar",
    "InOut",
    "Out",
    "RuntimeScalarMarker",
    "Scalar",
    "ScalarAnnotation",
    "Tensor",
    "TensorAnnotation",
    "TensorSpec",
    "TensorView",
    "Tile",
    "TileAnnotation",
    "Tuple",
    "TupleAnnotation",
    "annotation_text",
    "complete_tensor",
    "dtype_var",
    "dynamic",
    "is_runtime",
]

DynVar = DynDim


def dynamic(name: str) -> DynDim:
    """A dimension whose extent is read from the tensor at run time.

    Example:
        >>> M = dynamic("M")
        >>> Tensor[[M, 128], DataType.FP32].shape
        (M, 128)
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"pl.dynamic(name): expected an identifier, got {name!r}")
    return DynDim(name)


@dataclass(frozen=True)
class DTypeVar:
    """A dtype variable (``pl.dtype_var``): bound, per specialisation, to the dtype of the call's
    tensors annotated with it; inside the ``@pl.jit`` function's body and annotations its name is
    that dtype (``pl.cast(t, target_type=DT)``, ``if DT == pl.FP32:``).

    Attributes:
        name: The variable's name (messages, specialisation keys).
        allowed: The dtypes it may take; empty: any.
    """

    name: str
    allowed: tuple[DataType, ...] = ()

    def __repr__(self) -> str:
        return self.name


def dtype_var(name: str, *allowed: Any) -> DTypeVar:
    """A dtype variable for tensor annotations: one kernel serves each dtype in ``allowed``.

    Every tensor annotated with the variable must have the same dtype at a call; a call's
    dtype outside ``allowed`` is refused. Each dtype is one specialisation (one compile).

    Example:
        >>> DT = dtype_var("DT", DataType.FP32, DataType.BF16)
        >>> Tensor[[16, 16], DT].dtype
        DT
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"pl.dtype_var(name): expected an identifier, got {name!r}")
    return DTypeVar(
        name, tuple(DataType.parse(d, what=f"pl.dtype_var({name!r}) allowed dtype") for d in allowed)
    )


@dataclass(frozen=True)
class TensorSpec:
    """A tensor argument without data, for specialising a ``@pl.jit`` function: its dims
    (ints, or ``pl.dynamic`` dims that stay run-time values) and dtype. Layers above pass it
    for a bare ``pl.Tensor`` parameter whose extents the compiled program reads at each call."""

    shape: tuple[int | DynDim, ...]
    dtype: DataType


def _dims(shape: Any, what: str) -> tuple[int | DynDim, ...]:
    if isinstance(shape, (int, DynDim)):
        shape = [shape]
    if not isinstance(shape, (list, tuple)):
        raise TypeError(f"{what}: shape must be a list of ints or pl.dynamic dims, got {shape!r}")
    out: list[int | DynDim] = []
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, (int, DynDim)) or (isinstance(d, int) and d < 0):
            raise TypeError(f"{what}: dims must be ints >= 0 or pl.dynamic(...), got {d!r} in {shape!r}")
        out.append(d)
    return tuple(out)


@dataclass(frozen=True)
class TensorAnnotation:
    """``pl.Tensor[[dims], dtype]`` (or bare ``pl.Tensor``: shape and dtype are None)."""

    shape: tuple[int | DynDim, ...] | None
    dtype: DataType | DTypeVar | None
    layout: Layout = Layout.ND


def complete_tensor(ann: object) -> tuple[tuple[int | DynDim, ...], DataType, Layout] | None:
    """``(shape, dtype, layout)`` of a ``pl.Tensor[[dims], dtype]`` annotation that gives both its
    shape and a dtype (not a ``pl.dtype_var``); None for anything else (a bare ``pl.Tensor``, a
    dtype variable, no tensor annotation at all)."""
    if isinstance(ann, TensorAnnotation) and ann.shape is not None and isinstance(ann.dtype, DataType):
        return ann.shape, ann.dtype, ann.layout
    return None


@dataclass(frozen=True)
class TileAnnotation:
    shape: tuple[int, ...]
    dtype: DataType
    memory: MemorySpace | None = None
    memref: Any = None  # a pl.MemRef: where the tile is placed (pypto.language.memref)


@dataclass(frozen=True)
class ScalarAnnotation:
    dtype: DataType


@dataclass(frozen=True)
class DirectionAnnotation:
    direction: ParamDirection
    inner: Any


@dataclass(frozen=True)
class TensorView:
    """The third entry of ``pl.Tensor[[shape], dtype, pl.TensorView(...)]``: the tensor's layout
    and the part of it that holds data (``valid_shape``, dims or ``pl.dynamic`` names). The
    simulator takes the layout; ``valid_shape`` documents the kernel's contract and is not
    checked: a kernel reads its valid region with ``pl.load(..., valid_shape=...)``."""

    valid_shape: Any = None
    layout: Layout = Layout.ND

    def __post_init__(self) -> None:
        if not isinstance(self.layout, Layout):
            raise TypeError(f"pl.TensorView(layout): expected a pl.TensorLayout, got {self.layout!r}")
        if self.valid_shape is not None:
            object.__setattr__(self, "valid_shape", _dims(self.valid_shape, "pl.TensorView valid_shape"))


class _TensorMeta(type):
    def __getitem__(cls, item: Any) -> TensorAnnotation:
        if not isinstance(item, tuple) or len(item) not in (2, 3):
            raise TypeError(
                f"pl.Tensor[...]: expected [shape, dtype] or [shape, dtype, layout], got {item!r}"
            )
        layout = Layout.ND
        if len(item) == 3 and isinstance(item[2], TensorView):
            layout = item[2].layout
        elif len(item) == 3:
            layout = Layout(item[2].value if isinstance(item[2], Layout) else str(item[2]).upper())
        dtype = item[1] if isinstance(item[1], DTypeVar) else DataType.parse(item[1], what="pl.Tensor dtype")
        return TensorAnnotation(_dims(item[0], "pl.Tensor"), dtype, layout)


class Tensor(metaclass=_TensorMeta):
    """A tensor in device memory. Use bare, or as ``pl.Tensor[[M, N], pl.FP32]``."""


class _TileMeta(type):
    def __getitem__(cls, item: Any) -> TileAnnotation:
        from pypto.language.memref import MemRef

        if not isinstance(item, tuple) or len(item) not in (2, 3, 4):
            raise TypeError(
                "pl.Tile[...]: expected [shape, dtype], [shape, dtype, memory] or "
                f"[shape, dtype, pl.MemRef(...), memory], got {item!r}"
            )
        dims = _dims(item[0], "pl.Tile")
        if any(isinstance(d, DynDim) for d in dims):
            raise TypeError(f"pl.Tile: tile shapes are static, got {item[0]!r}")
        memory: MemorySpace | None = None
        memref: MemRef | None = None
        for extra in item[2:]:
            if isinstance(extra, MemRef) and memref is None:
                memref = extra
            elif isinstance(extra, MemorySpace) and memory is None:
                memory = extra
            else:
                raise TypeError(
                    "pl.Tile: after shape and dtype come a pl.MemRef(...) and a pl.MemorySpace, "
                    f"each at most once, got {extra!r}"
                )
        return TileAnnotation(
            tuple(d for d in dims if isinstance(d, int)),
            DataType.parse(item[1], what="pl.Tile dtype"),
            memory,
            memref,
        )


class Tile(metaclass=_TileMeta):
    """A tile in an on-chip buffer: ``pl.Tile[[64, 64], pl.FP32]``."""


@dataclass(frozen=True)
class TupleAnnotation:
    """``pl.Tuple[a, b, ...]``: a tuple value (a kernel call's results, ``(x, y)``) and its items' annotations."""

    items: tuple[Any, ...]


class _TupleMeta(type):
    def __getitem__(cls, item: Any) -> TupleAnnotation:
        return TupleAnnotation(item if isinstance(item, tuple) else (item,))


class Tuple(metaclass=_TupleMeta):
    """The annotation of a tuple value: ``t: pl.Tuple[pl.Tensor[[16, 1], pl.FP32], pl.Tensor[[16, 8], pl.FP32]]``."""


class _ScalarMeta(type):
    def __getitem__(cls, item: Any) -> ScalarAnnotation:
        return ScalarAnnotation(DataType.parse(item, what="pl.Scalar dtype"))


class Scalar(metaclass=_ScalarMeta):
    """A scalar value: ``pl.Scalar[pl.FP32]`` (a bare dtype such as ``pl.FP32`` works too)."""


class RuntimeScalarMarker:
    """The type of ``pl.RUNTIME``: a scalar parameter whose value arrives at dispatch.

    ``@pl.jit`` folds a scalar argument into the compiled program as a constant, and each
    value compiles its own artifact. A scalar parameter is instead a *runtime* parameter,
    kept as a real scalar argument of the orchestration and its kernels, when

    - its signature default is ``pl.RUNTIME`` (``n: pl.Scalar[pl.INT32] = pl.RUNTIME``): then
      every call, eager calls included, uses one artifact for all values; or
    - ``pl.RUNTIME`` is passed in place of its value when specialising or compiling
      (``fn.specialize(a, pl.RUNTIME, c)``, ``pypto.runtime.compile(fn, a, c=c, alpha=pl.RUNTIME)``);
      the compiled program then takes the value at every call.

    A runtime scalar needs a scalar dtype annotation (``pl.Scalar[pl.FP32]`` or ``pl.FP32``).
    The specialisation key records it as runtime with its dtype, never a value, so every
    value shares one key and one artifact. ``pl.RUNTIME`` is only a marker: it has no value
    inside a kernel, and a tensor parameter cannot take it.

    Use the ``RUNTIME`` singleton; the class cannot be instantiated again.

    Example:
        >>> @pl.jit  # doctest: +SKIP
        ... def scale(a: pl.Tensor, alpha: pl.FP32, c: pl.Out[pl.Tensor]): ...
        >>> prog = pypto.runtime.compile(scale, a, pl.RUNTIME, c)  # doctest: +SKIP
        >>> prog(a, 1.5, c); prog(a, 3.0, c)  # one artifact  # doctest: +SKIP
    """

    _instance: RuntimeScalarMarker | None = None
    __slots__ = ()

    def __new__(cls) -> RuntimeScalarMarker:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "pl.RUNTIME"

    def __reduce__(self) -> str:
        return "RUNTIME"  # pickles as the module-level singleton

    def __copy__(self) -> RuntimeScalarMarker:
        return self

    def __deepcopy__(self, memo: object) -> RuntimeScalarMarker:
        return self


RUNTIME: Final = RuntimeScalarMarker()
"""The singleton ``RuntimeScalarMarker``: see its docstring."""


def is_runtime(value: object) -> bool:
    """Whether ``value`` is the ``pl.RUNTIME`` marker."""
    return isinstance(value, RuntimeScalarMarker)


class _DirMeta(type):
    _direction: ParamDirection

    def __getitem__(cls, item: Any) -> DirectionAnnotation:
        if isinstance(item, DirectionAnnotation):
            # a window view (pld.DistributedTensor) is InOut already: pl.InOut[...] says so again,
            # pl.Out[...] (upstream's spelling for a window the kernel writes) keeps it InOut, since
            # a window is device memory whose unwritten part other ranks may still read
            window = isinstance(item.inner, TensorAnnotation) and type(item.inner) is not TensorAnnotation
            if window and cls._direction in (ParamDirection.INOUT, ParamDirection.OUT):
                return item
            if window:
                raise TypeError(
                    f"pl.{cls.__name__}[...]: a pld.DistributedTensor window is read and written; "
                    "annotate it bare or as pl.InOut[pld.DistributedTensor[...]]"
                )
            raise TypeError(
                f"pl.{cls.__name__}[...]: directions do not nest (got {annotation_text(item)} inside)"
            )
        if isinstance(item, (ScalarAnnotation, DataType)):
            raise TypeError(f"pl.{cls.__name__}[...]: a scalar parameter is always In")
        return DirectionAnnotation(cls._direction, item)


class Out(metaclass=_DirMeta):
    """An output tensor parameter the kernel writes: ``c: pl.Out[pl.Tensor]``."""

    _direction = ParamDirection.OUT


class InOut(metaclass=_DirMeta):
    """A tensor parameter the kernel reads and writes."""

    _direction = ParamDirection.INOUT


def annotation_text(ann: Any) -> str:
    """How a parameter annotation is written in source: ``pl.Out[pl.Tensor[[M, 32], pl.FP32]]``."""
    if isinstance(ann, str):  # postponed evaluation (from __future__ import annotations): the source text
        return ann
    if ann is Tensor:
        return "pl.Tensor"
    if ann is Tile:
        return "pl.Tile"
    if isinstance(ann, DirectionAnnotation):
        name = "Out" if ann.direction is ParamDirection.OUT else "InOut"
        return f"pl.{name}[{annotation_text(ann.inner)}]"
    if isinstance(ann, TensorAnnotation):
        if ann.shape is None:
            return "pl.Tensor"
        nz = ", pl.NZ" if ann.layout is Layout.NZ else ""
        return f"pl.Tensor[[{', '.join(map(repr, ann.shape))}], {ann.dtype!r}{nz}]"
    if isinstance(ann, TileAnnotation):
        memref = f", {ann.memref!r}" if ann.memref is not None else ""
        memory = f", pl.Mem.{ann.memory.value}" if ann.memory is not None else ""
        return f"pl.Tile[[{', '.join(map(str, ann.shape))}], {ann.dtype!r}{memref}{memory}]"
    if isinstance(ann, TupleAnnotation):
        return f"pl.Tuple[{', '.join(annotation_text(i) for i in ann.items)}]"
    if isinstance(ann, ScalarAnnotation):
        return f"pl.Scalar[{ann.dtype!r}]"
    return repr(ann)
