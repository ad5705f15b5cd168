"""A transposed tensor as a cube operand, read in L1 as its transpose.

``pl.matmul(a, b, b_trans=True)`` on tensors is ``pl.matmul(a, pl.transpose(b))``. When ``b`` is a
tensor (or a window of one) that the kernel only reads (an ``In`` parameter), the transpose is
not computed where it is written: each matmul that reads it loads ``b`` into L1 as it is and
reads that tile as its transpose (``tile.transpose_view``: the NZ bytes read as ZN, no data
moved), as upstream lowers a transposed operand. No Vec copy, no TTRANS, no move from Vec to L1,
and the operand need not fit a Vec tile. Any other reader (a vector op, a loop carry, a store)
gets the Vec transpose (``tile.transpose``) of tensor_to_tile, made where it is read.

A parameter the kernel writes is not read this way: a write between the transpose and the
matmul would change what the deferred load reads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pypto.ir import nodes
from pypto.ir.dtypes import DataType
from pypto.ir.param_info import Layout
from pypto.ir.passes._rewrite import add_index
from pypto.ir.types import MemorySpace, TensorType

if TYPE_CHECKING:
    from pypto.ir.passes.tensor_to_tile import _Lowerer

__all__ = ["deferrable", "in_l1", "panel"]


def deferrable(lw: _Lowerer, call: nodes.Call) -> bool:
    """Whether ``call`` (a ``tensor.transpose``) reads a tensor the kernel only reads, through a
    window without a valid shape, of a static ND shape: then cube readers read it in L1."""
    src = call.args[0]
    if not isinstance(src, nodes.Var) or not isinstance(src.type, TensorType):
        return False
    if not src.type.is_static or src.type.layout is Layout.NZ:
        return False
    base = src
    view = lw.views.get(src.name)
    if view is not None:
        if view.attr("valid_shape") is not None:
            return False
        base = view.args[0]  # type: ignore[assignment]
    return isinstance(base, nodes.Var) and base.name in lw.read_only


def _source(lw: _Lowerer, call: nodes.Call) -> tuple[nodes.Var, tuple[nodes.Expr, ...], tuple[int, ...]]:
    """The tensor a deferred transpose reads, the offsets of its window there, its shape."""
    src = call.args[0]
    assert isinstance(src, nodes.Var)
    assert isinstance(src.type, TensorType)
    shape = src.type.static_shape
    view = lw.views.get(src.name)
    if view is None:
        return src, tuple(nodes.Const(0, DataType.INT64) for _ in shape), shape
    base, offs = view.args
    assert isinstance(base, nodes.Var)
    assert isinstance(offs, tuple)
    return base, offs, shape


def _read(
    lw: _Lowerer, base: nodes.Var, at: tuple[nodes.Expr, ...], window: tuple[int, ...], out: list[nodes.Stmt]
) -> nodes.Var:
    static = [o.value if isinstance(o, nodes.Const) else None for o in at]
    attrs = {"shape": window, "memory": MemorySpace.Mat, "static_offsets": static}
    tile = lw.emit("tile.load", [base, at], attrs, out, "l1")
    return lw.emit("tile.transpose_view", [tile], {}, out, "tv")


def in_l1(lw: _Lowerer, call: nodes.Call, out: list[nodes.Stmt], *, plane: tuple[int, ...] = ()) -> nodes.Var:
    """The transposed operand in L1: its source (or plane ``plane`` of a source of rank 3 or
    more) loaded into Mat and read as its transpose."""
    base, offs, shape = _source(lw, call)
    lead = tuple(add_index(o, nodes.Const(i, DataType.INT64)) for o, i in zip(offs, plane, strict=False))
    at = lead + offs[len(lead) :]
    window = (*((1,) * (len(shape) - 2)), *shape[-2:]) if plane else shape
    return _read(lw, base, at, window, out)


def panel(
    lw: _Lowerer,
    call: nodes.Call,
    row: nodes.Expr,
    col: nodes.Expr,
    *,
    shape: tuple[int, int],
    out: list[nodes.Stmt],
) -> nodes.Var:
    """The ``shape`` block at (``row``, ``col``) of the transposed operand, in L1: the source's
    block at (``col``, ``row``) of the reversed shape, read as its transpose."""
    base, offs, src_shape = _source(lw, call)
    at = (*offs[:-2], add_index(offs[-2], col), add_index(offs[-1], row))
    window = (*((1,) * (len(src_shape) - 2)), shape[1], shape[0])
    return _read(lw, base, at, window, out)
