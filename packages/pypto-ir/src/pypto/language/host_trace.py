"""Recording what a ``@pl.jit.host`` orchestrator does, by running its body as Python.

The host orchestrator is control-plane code on the host CPU: it allocates window buffers and
launches one per-device ``@pl.jit`` program per rank. Compiling it runs its body once in a
:class:`HostTrace`: host tensor parameters arrive as :class:`HostTensorRef` placeholders (indexing
one records the index), ``pl.range`` is Python's ``range``, ``pld.world_size()`` is the configured
rank count, ``pld.alloc_window_buffer``/``pld.window`` record window declarations and each call
``per_rank(..., device=r)`` records a :class:`Dispatch`. The runtime turns the trace into a plan.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.execution import resume_executor_plans, suspend_executor_plans

__all__ = [
    "HOST_OPS",
    "Dispatch",
    "HostTensorDecl",
    "HostTensorRef",
    "HostTrace",
    "SubWorkerCall",
    "WindowBufferDecl",
    "WindowView",
    "active_trace",
    "require_trace",
]


class _TraceState(threading.local):
    """Per thread: the ``@pl.jit.host`` body being traced. The class default answers a thread
    that never traced, so reading it never builds and swallows an AttributeError (every
    ``@pl.jit`` call without an executor plan reads it)."""

    trace: HostTrace | None = None


_state = _TraceState()

HOST_OPS = frozenset({"create_tensor"})
"""The kernel-language ops a host body may call (run as Python while it is traced)."""


def active_trace() -> HostTrace | None:
    """The trace of the ``@pl.jit.host`` body running on this thread, or None."""
    return _state.trace


def require_trace(what: str) -> HostTrace:
    trace = active_trace()
    if trace is None:
        raise RuntimeError(
            f"{what} runs only inside a @pl.jit.host body (the host orchestrator), which "
            "compile() runs once to record its dispatches"
        )
    return trace


@dataclass(frozen=True)
class HostTensorRef:
    """A host tensor parameter, or an element of it (``x[r]``), inside a host body.

    Attributes:
        param: Position of the host function's parameter.
        path: The integer indices applied so far, outermost first.
        example: The example argument indexed the same way (what the per-device program is
            specialised on).
    """

    param: int
    name: str
    path: tuple[int, ...]
    example: Any

    def __getitem__(self, index: Any) -> HostTensorRef:
        if isinstance(index, tuple) and index:  # x[i, r] is x[i][r]
            ref = self
            for i in index:
                ref = ref[i]
            return ref
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(
                f"host tensor {self.name!r}: a host body indexes a tensor with ints, one per axis "
                f"(x[r], x[i, r]); got {index!r}"
            )
        extent = self.shape[0] if self.shape else 0
        if not -extent <= index < extent:
            raise IndexError(
                f"host tensor {self.name!r}: index {index} is out of range for axis of size {extent}"
            )
        index %= extent
        return HostTensorRef(self.param, self.name, (*self.path, index), self.example[index])

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(int(d) for d in self.example.shape)

    def describe(self) -> str:
        return self.name + "".join(f"[{i}]" for i in self.path)


@dataclass(frozen=True)
class HostTensorDecl:
    """``pl.create_tensor(shape, dtype)`` in a host body: a host tensor of the body's own, zero
    at the start of every call, which launches and SubWorker calls pass as they pass a
    parameter (its :class:`HostTensorRef` has ``param`` ``-1 - index``)."""

    index: int
    name: str
    shape: tuple[int, ...]
    dtype: DataType


@dataclass(frozen=True)
class WindowBufferDecl:
    """``pld.alloc_window_buffer(shape, dtype)``: one window of this shape in every rank."""

    index: int
    shape: tuple[int, ...]
    dtype: DataType


@dataclass(frozen=True)
class WindowView:
    """``pld.window(buf, shape, dtype)``: a typed view of the calling rank's window of ``buf``."""

    buffer: WindowBufferDecl
    shape: tuple[int, ...]
    dtype: DataType


@dataclass(frozen=True)
class Dispatch:
    """One ``fn(*args, device=r)`` launch recorded in a host body."""

    fn: Any  # a JITFunction (an IR Function in a @pl.program's host orchestrator)
    rank: int
    args: tuple[Any, ...]  # HostTensorRef | WindowView | int | float | bool
    phase: int = 0  # how many sub-worker calls the body made before this launch


@dataclass(frozen=True)
class SubWorkerCall:
    """One call of a host-level SubWorker (a runtime-bound callback) in a host body; it runs
    after every launch recorded before it (``phase`` of them came before the previous calls)."""

    name: str
    args: tuple[Any, ...]  # HostTensorRef | int | float | bool


@dataclass
class HostTrace:
    """What one run of a host body did."""

    world_size: int
    windows: list[WindowBufferDecl] = field(default_factory=list)
    dispatches: list[Dispatch] = field(default_factory=list)
    sub_worker_calls: list[SubWorkerCall] = field(default_factory=list)
    tensors: list[HostTensorDecl] = field(default_factory=list)
    # makes the example tensor of a created host tensor: (shape, dtype, what) -> a host tensor
    make_tensor: Any = None

    def __enter__(self) -> HostTrace:
        if active_trace() is not None:
            raise RuntimeError("a @pl.jit.host body cannot compile another @pl.jit.host function")
        suspend_executor_plans()  # a @pl.jit call in the body must reach the trace (general_call)
        _state.trace = self
        return self

    def __exit__(self, *exc: object) -> None:
        _state.trace = None
        resume_executor_plans()

    def alloc_window(self, shape: tuple[int, ...], dtype: DataType) -> WindowBufferDecl:
        decl = WindowBufferDecl(len(self.windows), shape, dtype)
        self.windows.append(decl)
        return decl

    def host_op(self, name: str, arguments: dict[str, Any]) -> Any:
        """A kernel-language op of :data:`HOST_OPS` called in the host body."""
        assert name == "create_tensor"
        return self.create_tensor(arguments["shape"], arguments["dtype"])

    def create_tensor(self, shape: Any, dtype: Any) -> HostTensorRef:
        """``pl.create_tensor(shape, dtype)``: a zero host tensor of the body's own."""
        index = len(self.tensors)
        what = f"pl.create_tensor(...) #{index} in a host body"
        if isinstance(shape, int) and not isinstance(shape, bool):
            shape = [shape]
        if not isinstance(shape, (list, tuple)) or any(
            isinstance(d, bool) or not isinstance(d, int) or d <= 0 for d in shape
        ):
            raise TypeError(f"{what}: shape: expected a list of ints > 0, got {shape!r}")
        if not isinstance(dtype, DataType):
            raise TypeError(f"{what}: dtype: expected a pl dtype (pl.FP32, ...), got {dtype!r}")
        if self.make_tensor is None:
            raise RuntimeError(f"{what}: this trace makes no host tensors")
        decl = HostTensorDecl(index, f"create_tensor#{index}", tuple(shape), dtype)
        self.tensors.append(decl)
        return HostTensorRef(-1 - index, decl.name, (), self.make_tensor(decl.shape, dtype, what))

    def dispatch(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Record ``fn(*args, device=r)`` (``device`` may be omitted when there is one rank);
        returns what the launch writes: the arguments of its ``Out``/``InOut`` parameters (one,
        a tuple, or None)."""
        kwargs = dict(kwargs)
        if "device" not in kwargs and self.world_size != 1:
            raise TypeError(
                f"{fn.__name__}(): a call in a @pl.jit.host body launches on one of {self.world_size} "
                f"ranks; pass device=r (an int in [0, {self.world_size}))"
            )
        device = kwargs.pop("device", 0)
        if isinstance(device, bool) or not isinstance(device, int) or not 0 <= device < self.world_size:
            raise ValueError(
                f"{fn.__name__}(device=...): expected a rank in [0, {self.world_size}), got {device!r}"
            )
        if kwargs:
            bound = fn.bind(*args, **kwargs)
        else:
            bound = tuple(args)
        for name, a in zip(fn.param_names, bound, strict=False):
            if not isinstance(a, (HostTensorRef, WindowView, int, float, bool)):
                raise TypeError(
                    f"{fn.__name__}(): argument {name!r} in a @pl.jit.host body must be a host tensor "
                    f"parameter (or an element x[r]), a pld.window(...) view or a Python scalar; got "
                    f"{type(a).__name__}"
                )
        self.dispatches.append(Dispatch(fn, device, tuple(bound), len(self.sub_worker_calls)))
        written = [
            a
            for p, a in zip(fn.declared_params(), bound, strict=False)
            if p.direction.writes and isinstance(a, (HostTensorRef, WindowView))
        ]
        return written[0] if len(written) == 1 else (tuple(written) if written else None)

    def sub_worker_call(self, name: str, args: tuple[Any, ...]) -> None:
        for i, a in enumerate(args):
            if not isinstance(a, (HostTensorRef, int, float, bool)):
                raise TypeError(
                    f"{name}(): argument {i} of a SubWorker call must be a host tensor parameter (or an "
                    f"element x[r], or what a launch returned) or a Python scalar; got {type(a).__name__}"
                )
        self.sub_worker_calls.append(SubWorkerCall(name, tuple(args)))
