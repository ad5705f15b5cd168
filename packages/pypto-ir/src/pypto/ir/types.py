"""IR types: tensors in device memory, tiles in on-chip buffers, scalars, task ids.

Also the enums the language exposes (memory spaces, scope levels, function kinds). They live
here, below the language, so that the IR never imports ``pypto.language``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TypeVar

from pypto.ir.dtypes import DataType
from pypto.ir.param_info import Layout

__all__ = [
    "ArrayType",
    "AtomicType",
    "CoreType",
    "Dim",
    "DynDim",
    "FunctionType",
    "Level",
    "MemorySpace",
    "NotifyOp",
    "PadValue",
    "PipeType",
    "ReduceOp",
    "ScalarType",
    "SplitMode",
    "TaskIdType",
    "TensorType",
    "TileType",
    "TupleType",
    "Type",
    "WaitCmp",
    "format_dims",
]


class _PlEnum(enum.Enum):
    """An enum of the ``pl`` namespace: its repr is how kernel source names a member
    (``pl.Level.CORE_GROUP``), which the printer and error messages write."""

    # members are singletons compared by identity: hash them by identity too (C-level; Enum's
    # own __hash__ is a Python call, paid on every dict or set lookup the compiler makes)
    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"pl.{type(self).__name__}.{self.name}"


class _PldEnum(enum.Enum):
    """An enum of the ``pld`` (multi-chip) namespace, spelled ``pld.WaitCmp.Ge``."""

    def __repr__(self) -> str:
        return f"pld.{type(self).__name__}.{self.name}"


class MemorySpace(_PlEnum):
    """Where a tile lives. DDR is device (global) memory, where tensors live."""

    DDR = "DDR"
    Vec = "Vec"  # unified buffer, vector unit operands
    Mat = "Mat"  # L1, staging for the cube unit
    Left = "Left"  # L0A, left matmul operand
    Right = "Right"  # L0B, right matmul operand
    Acc = "Acc"  # L0C, matmul accumulator (FP32)
    Bias = "Bias"  # BT, the bias table: a [1, N] row a matmul adds (pl.matmul_bias, pl.gemv_bias)


class Level(_PlEnum):
    """The hardware level code runs on. ``pl.at(level=CORE_GROUP)`` outlines an InCore kernel;
    ``@pl.function(level=HOST, role=...)`` is host-CPU code of a multi-chip ``@pl.program``, in
    whose host orchestrator ``pl.at(level=CHIP, role=pl.Role.Orchestrator)`` is a chip
    orchestration written in place (``pypto.language.host_outline``)."""

    CORE_GROUP = "CORE_GROUP"
    CHIP = "CHIP"
    HOST = "HOST"


class Role(_PlEnum):
    """What a ``Level.HOST`` function of a ``@pl.program`` is: the host orchestrator (launches
    the chip orchestrations and calls SubWorkers) or a SubWorker (a host callback)."""

    Orchestrator = "Orchestrator"
    SubWorker = "SubWorker"


class FunctionType(_PlEnum):
    """What a function is: orchestration (runs on the AICPU) or an InCore kernel (AICore)."""

    Opaque = "Opaque"
    Orchestration = "Orchestration"
    InCore = "InCore"
    AIC = "AIC"
    AIV = "AIV"

    @property
    def is_kernel(self) -> bool:
        return self in (FunctionType.InCore, FunctionType.AIC, FunctionType.AIV)


class PadValue(_PlEnum):
    """What ``fillpad`` writes outside a tile's valid region."""

    zero = "zero"
    min = "min"  # the lowest finite value (-inf for floats)
    max = "max"  # the highest value (+inf for floats)


class SplitMode(_PlEnum):
    """How ``pl.split`` asks a mixed (cube + vector) scope to be halved between the two vector
    cores of a core group: ``UP_DOWN`` by rows, ``LEFT_RIGHT`` by columns, ``NONE`` not at all.
    A hint: the simulated chip runs the scope's kernel whole either way (docs/pypto-ir.md)."""

    NONE = "NONE"
    UP_DOWN = "UP_DOWN"
    LEFT_RIGHT = "LEFT_RIGHT"


class AtomicType(_PlEnum):
    """How ``pl.assemble`` into a tensor combines with what the tensor holds: ``None_``
    overwrites, ``Add`` adds the source into the destination (an accumulation several tasks
    may target; see docs/pypto-ir.md for how the simulator keeps it exact)."""

    None_ = "None"
    Add = "Add"


class NotifyOp(_PldEnum):
    """How ``pld.system.notify`` changes a peer's INT32 signal cell: ``AtomicAdd`` adds the value
    atomically, ``Set`` stores it."""

    AtomicAdd = "AtomicAdd"
    Set = "Set"


class WaitCmp(_PldEnum):
    """What ``pld.system.wait`` waits for: the local signal cell ``== expected`` (``Eq``) or
    ``>= expected`` (``Ge``)."""

    Eq = "Eq"
    Ge = "Ge"


class ReduceOp(_PldEnum):
    """The element-wise combination of ``pld.tensor.allreduce`` and ``reduce_scatter``."""

    Sum = "Sum"
    Max = "Max"
    Min = "Min"
    Prod = "Prod"


class PipeType(_PlEnum):
    """A pipe of an AICore, named by ``pl.system`` synchronisation: the transfer engines
    ``MTE1``/``MTE2``/``MTE3``, the cube ``M``, the vector unit ``V``, the scalar unit ``S``,
    the fixpipe ``FIX`` and ``ALL`` of them."""

    MTE1 = "MTE1"
    MTE2 = "MTE2"
    MTE3 = "MTE3"
    M = "M"
    V = "V"
    S = "S"
    FIX = "FIX"
    ALL = "ALL"


class CoreType(enum.Enum):
    """The core kind a kernel runs on: AIV (vector) or AIC (cube)."""

    AIV = "AIV"
    AIC = "AIC"


@dataclass(frozen=True)
class DynDim:
    """A dimension whose extent is known only at run time (``pl.dynamic("M")``)."""

    name: str

    def __repr__(self) -> str:
        return self.name


Dim = int | DynDim


def format_dims(shape: tuple[Dim, ...]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


@dataclass(frozen=True)
class TensorType:
    """A tensor in device memory (DDR). Dims are ints or ``DynDim``."""

    shape: tuple[Dim, ...]
    dtype: DataType
    layout: Layout = Layout.ND

    @property
    def is_static(self) -> bool:
        return all(isinstance(d, int) for d in self.shape)

    @property
    def static_shape(self) -> tuple[int, ...]:
        return tuple(d if isinstance(d, int) else -1 for d in self.shape)

    def __str__(self) -> str:
        nz = ", NZ" if self.layout is Layout.NZ else ""
        return f"Tensor[{format_dims(self.shape)}, {self.dtype.value}{nz}]"


@dataclass(frozen=True)
class TileType:
    """A tile in an on-chip buffer: static shape, element type, memory space."""

    shape: tuple[int, ...]
    dtype: DataType
    memory: MemorySpace = MemorySpace.Vec

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def __str__(self) -> str:
        return f"Tile[{format_dims(self.shape)}, {self.dtype.value}, {self.memory.value}]"


@dataclass(frozen=True)
class ScalarType:
    dtype: DataType

    def __str__(self) -> str:
        return f"Scalar[{self.dtype.value}]"


@dataclass(frozen=True)
class TaskIdType:
    """The id of a submitted task (``with pl.at(...) as tid``), usable in ``deps=[tid]``."""

    def __str__(self) -> str:
        return "TaskId"


@dataclass(frozen=True)
class TupleType:
    items: tuple[Type, ...]

    def __str__(self) -> str:
        return "(" + ", ".join(str(t) for t in self.items) + ")"


@dataclass(frozen=True)
class ArrayType:
    """A fixed-length array of task ids held by the orchestration (``pl.array.create(n,
    pl.TASK_ID)``). Updating an entry gives a new array value; an entry never set names no
    task, and a ``deps=`` list skips it."""

    extent: int
    elem: TaskIdType = TaskIdType()

    def __str__(self) -> str:
        return f"Array[{self.extent}, {self.elem}]"


Type = TensorType | TileType | ScalarType | TaskIdType | ArrayType | TupleType


_E = TypeVar("_E", bound=enum.Enum)


def enum_member(cls: type[_E], value: object, argument: str) -> _E:
    """``value`` (a member of ``cls`` or a member's name) as the member; ValueError naming
    ``argument``, the members and what was found otherwise."""
    if isinstance(value, cls):
        return value
    if isinstance(value, str) and value in cls.__members__:
        return cls[value]
    names = ", ".join(f"{cls.__name__}.{n}" for n in cls.__members__)
    raise ValueError(f"{argument}: expected one of {names}, got {value!r}")
