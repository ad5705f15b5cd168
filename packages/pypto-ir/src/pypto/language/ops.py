"""The operations of the kernel language (``pl.load``, ``pl.add``, ...).

These functions are never executed: the parser reads kernel bodies and turns each call into
an IR operator, binding the call's arguments against the signatures written here (so a wrong
arity or an unknown keyword is reported at the call's source position). Calling one from
ordinary Python raises an error that says so. Ops that exist at tile and tensor level
(``pl.add`` on two tiles or on two tensors) dispatch on their first operand.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pypto.ir.types import MemorySpace

F = TypeVar("F", bound=Callable[..., Any])

__all__ = [
    "abs",
    "add",
    "assemble",
    "cast",
    "col_expand",
    "col_expand_add",
    "col_expand_div",
    "col_expand_mul",
    "col_expand_sub",
    "col_max",
    "col_min",
    "col_sum",
    "concat",
    "create_tensor",
    "create_tile",
    "dim",
    "div",
    "exp",
    "fillpad",
    "full",
    "load",
    "log",
    "matmul",
    "matmul_acc",
    "maximum",
    "minimum",
    "move",
    "mul",
    "neg",
    "read",
    "recip",
    "relu",
    "reshape",
    "row_expand",
    "row_expand_add",
    "row_expand_div",
    "row_expand_mul",
    "row_expand_sub",
    "row_max",
    "row_min",
    "row_sum",
    "rsqrt",
    "slice",
    "sqrt",
    "store",
    "sub",
    "transpose",
    "write",
]


def _op(fn: F) -> F:
    name = fn.__name__

    def outside(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            f"pl.{name}() is part of the kernel language and runs only inside a @pl.jit, "
            "@pl.jit.incore or @pl.function body, which the compiler parses"
        )

    outside.__name__ = name
    outside.__qualname__ = name
    outside.__doc__ = fn.__doc__
    outside.__wrapped__ = fn  # type: ignore[attr-defined]  # the signature the parser binds
    outside.__pypto_op__ = name  # type: ignore[attr-defined]
    return outside  # type: ignore[return-value]


# ----------------------------------------------------------------------------- memory


@_op
def load(
    tensor: Any,
    offsets: Any,
    shapes: Any,
    valid_shape: Any = None,
    target_memory: MemorySpace = MemorySpace.Vec,
) -> Any:
    """Load the window ``tensor[offsets : offsets + shapes]`` into a tile (Vec or Mat).

    ``valid_shape=[rows, cols]`` (run-time values allowed) loads only that leading region;
    the rest of the tile is padding (see ``pl.tile.fillpad``)."""


@_op
def store(tile: Any, offsets: Any, output_tensor: Any, shapes: Any = None) -> Any:
    """Store a tile into ``output_tensor`` at ``offsets``; returns the tensor. ``shapes``, when
    given, must be the tile's window shape."""


@_op
def move(tile: Any, target_memory: MemorySpace) -> Any:
    """Copy a tile to another memory space (Mat->Left/Right, Acc->Vec, ...)."""


@_op
def create_tile(shape: Any, dtype: Any, target_memory: MemorySpace = MemorySpace.Vec) -> Any:
    """A scratch tile (contents undefined)."""


@_op
def create_tensor(shape: Any, dtype: Any) -> Any:
    """An intermediate tensor in device memory, allocated by the runtime."""


@_op
def full(shape: Any, dtype: Any, value: Any = 0.0) -> Any:
    """A Vec tile of ``shape`` and ``dtype`` filled with ``value``."""


@_op
def dim(tensor: Any, axis: int) -> Any:
    """The run-time extent of ``tensor`` along ``axis`` (an index scalar)."""


# ----------------------------------------------------------------------------- element-wise


@_op
def add(lhs: Any, rhs: Any) -> Any:
    """Element-wise ``lhs + rhs`` (tile or tensor; ``rhs`` may be a scalar)."""


@_op
def sub(lhs: Any, rhs: Any) -> Any:
    """Element-wise ``lhs - rhs``."""


@_op
def mul(lhs: Any, rhs: Any) -> Any:
    """Element-wise ``lhs * rhs``."""


@_op
def div(lhs: Any, rhs: Any) -> Any:
    """Element-wise ``lhs / rhs``."""


@_op
def maximum(lhs: Any, rhs: Any) -> Any:
    """Element-wise maximum."""


@_op
def minimum(lhs: Any, rhs: Any) -> Any:
    """Element-wise minimum."""


@_op
def exp(input: Any) -> Any:
    """Element-wise e**x."""


@_op
def log(input: Any) -> Any:
    """Element-wise natural logarithm."""


@_op
def sqrt(input: Any) -> Any:
    """Element-wise square root."""


@_op
def rsqrt(input: Any) -> Any:
    """Element-wise 1 / sqrt(x)."""


@_op
def recip(input: Any) -> Any:
    """Element-wise 1 / x."""


@_op
def abs(input: Any) -> Any:
    """Element-wise absolute value."""


@_op
def neg(input: Any) -> Any:
    """Element-wise negation."""


@_op
def relu(input: Any) -> Any:
    """Element-wise max(x, 0)."""


# ----------------------------------------------------------------------------- reductions, broadcasts


@_op
def row_sum(input: Any, tmp_tile: Any = None) -> Any:
    """Sum of each row: [R, C] -> [R, 1]. ``tmp_tile`` is an optional scratch tile."""


@_op
def row_max(input: Any, tmp_tile: Any = None) -> Any:
    """Maximum of each row: [R, C] -> [R, 1]."""


@_op
def row_min(input: Any, tmp_tile: Any = None) -> Any:
    """Minimum of each row: [R, C] -> [R, 1]."""


@_op
def col_sum(input: Any, tmp_tile: Any = None) -> Any:
    """Sum of each column: [R, C] -> [1, C]."""


@_op
def col_max(input: Any, tmp_tile: Any = None) -> Any:
    """Maximum of each column: [R, C] -> [1, C]."""


@_op
def col_min(input: Any, tmp_tile: Any = None) -> Any:
    """Minimum of each column: [R, C] -> [1, C]."""


@_op
def row_expand(lhs: Any, rhs: Any) -> Any:
    """Broadcast a [R, 1] vector over the columns of a [R, C] shape."""


@_op
def row_expand_add(lhs: Any, rhs: Any) -> Any:
    """``tile + row_vec`` with the [R, 1] vector broadcast over columns."""


@_op
def row_expand_sub(lhs: Any, rhs: Any) -> Any:
    """``tile - row_vec`` with the [R, 1] vector broadcast over columns."""


@_op
def row_expand_mul(lhs: Any, rhs: Any) -> Any:
    """``tile * row_vec`` with the [R, 1] vector broadcast over columns."""


@_op
def row_expand_div(lhs: Any, rhs: Any) -> Any:
    """``tile / row_vec`` with the [R, 1] vector broadcast over columns."""


@_op
def col_expand(lhs: Any, rhs: Any) -> Any:
    """Broadcast a [1, C] vector over the rows of a [R, C] shape."""


@_op
def col_expand_add(lhs: Any, rhs: Any) -> Any:
    """``tile + col_vec`` with the [1, C] vector broadcast over rows."""


@_op
def col_expand_sub(lhs: Any, rhs: Any) -> Any:
    """``tile - col_vec`` with the [1, C] vector broadcast over rows."""


@_op
def col_expand_mul(lhs: Any, rhs: Any) -> Any:
    """``tile * col_vec`` with the [1, C] vector broadcast over rows."""


@_op
def col_expand_div(lhs: Any, rhs: Any) -> Any:
    """``tile / col_vec`` with the [1, C] vector broadcast over rows."""


# ----------------------------------------------------------------------------- shape, type, matmul


@_op
def reshape(input: Any, shape: Any) -> Any:
    """Same elements, new 2-D shape."""


@_op
def transpose(input: Any, axis1: int = 0, axis2: int = 1) -> Any:
    """Swap the two axes of a 2-D tile."""


@_op
def concat(src0: Any, src1: Any) -> Any:
    """Join two tiles with equal row counts column-wise."""


@_op
def cast(input: Any, target_type: Any, mode: Any = None) -> Any:
    """Convert the elements to another dtype (FP32/FP16/BF16/INT8/INT32)."""


@_op
def matmul(lhs: Any, rhs: Any, out_dtype: Any = None) -> Any:
    """Left [M, K] x Right [K, N] -> Acc [M, N] (FP32 accumulation; ``out_dtype`` may only
    say FP32, or INT32 for INT8 operands)."""


@_op
def matmul_acc(acc: Any, lhs: Any, rhs: Any) -> Any:
    """``acc + lhs @ rhs`` into the Acc tile."""


# ----------------------------------------------------------------------------- sub-tiles, scalars


@_op
def read(src: Any, offset: Any) -> Any:
    """One element of a tensor as a scalar: ``pl.read(cfg, [0])``."""


@_op
def slice(input: Any, shape: Any, offset: Any) -> Any:
    """The sub-tile of ``shape`` at ``offsets`` (a copy)."""


@_op
def assemble(target: Any, source: Any, offset: Any) -> Any:
    """``target`` with ``source`` written into it at ``offsets`` (``pl.tile.assemble``)."""


@_op
def fillpad(value: Any, pad_value: Any = None) -> Any:
    """The tile with everything outside its valid region set to ``pad_value`` (a pl.PadValue);
    the result is fully valid."""


@_op
def write(dst: Any, offset: Any, value: Any) -> Any:
    """Write one element of a tensor: ``pl.write(t, [i, j], v)``; returns the tensor."""
