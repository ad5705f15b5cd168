"""Tensor-level values of rank 3 and more inside kernels (``[B, M, N]`` and the like), for the
tensor-to-tile lowering.

Such a value is held as one Vec tile with its leading dims flattened into rows, as an N-D tile is
(language/parser/nd_tiles.py): ``[B, M, N]`` is the ``[B * M, N]`` tile whose rows ``b * M``
to ``b * M + M`` are plane ``b``. So element-wise ops work on it as they are, and the rest is
done plane by plane:

- a tensor operand is loaded one ``[M, N]`` plane at a time, each inserted at its rows (the
  planes of a window need not be adjacent in the tensor);
- ``pl.matmul`` / ``pl.matmul_acc`` multiply batch by batch (the batch dims broadcast as numpy
  does; a 2-D operand serves every batch), each product moved from Acc to its rows of the
  result; ``b_trans`` / ``pl.transpose`` swap the last two axes of every plane;
- ``pl.assemble`` into a tensor stores each plane at its place.

A value whose leading dims are all 1 (``[1, M, N]``) is one plane: one load, one store.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from typing import TYPE_CHECKING

from pypto.ir import nodes
from pypto.ir.dtypes import DataType
from pypto.ir.errors import KernelError, Span
from pypto.ir.ops import infer
from pypto.ir.ops.matmul_rules import batch_plane
from pypto.ir.ops.spec import LANGUAGE
from pypto.ir.passes import transposed_reads
from pypto.ir.passes._rewrite import add_index
from pypto.ir.passes.matmul_tiling import Scratch, Store, emit_blocked_matmul, needs_blocking
from pypto.ir.types import AtomicType, MemorySpace, TensorType, TileType

if TYPE_CHECKING:
    from pypto.ir.passes.tensor_to_tile import _Lowerer

__all__ = [
    "MAX_ELEMENTS",
    "MAX_PLANES",
    "assemble",
    "by_batch",
    "check_plane_wise",
    "load",
    "load_window",
    "matmul",
    "planar",
    "plane_types",
    "store",
    "too_big",
    "transpose",
    "window_of",
]

MAX_PLANES = 64
"""The most planes a tensor-level value is loaded, multiplied or stored in (one instruction
sequence each, unrolled)."""

MAX_ELEMENTS = 1 << 16
"""The most elements of a tensor-level value held in one tile (tensor_to_tile's
``MAX_TILE_ELEMENTS``, of any rank)."""

# Tensor ops whose result on the flattened tile is their result plane by plane: element-wise in
# every element (by group), and a fill by a scalar. The part ops narrow each operand's valid
# region, which the flattened tile does not have per plane.
_PLANE_WISE_GROUPS = frozenset({"element-wise", "bitwise", "compare"})
_PLANE_WISE_EXTRA = frozenset({"cast", "expands"})
_NOT_PLANE_WISE = frozenset({"part_add", "part_max", "part_min", "part_mul"})


def planar(t: object) -> bool:
    """Whether ``t`` is a tensor type of more than one ``[M, N]`` plane (a leading dim above 1)."""
    return (
        isinstance(t, TensorType)
        and len(t.shape) > 2
        and t.is_static
        and any(d != 1 for d in t.static_shape[:-2])
    )


def _flat(shape: tuple[int, ...]) -> tuple[int, int]:
    return (math.prod(shape[:-1]), shape[-1])


def _planes(shape: tuple[int, ...], what: str, span: Span | None) -> list[tuple[int, ...]]:
    planes = list(itertools.product(*(range(d) for d in shape[:-2])))
    if len(planes) > MAX_PLANES:
        raise KernelError(
            f"{what}: a tensor-level value of shape {list(shape)} has {len(planes)} [M, N] planes; at most "
            f"{MAX_PLANES} are unrolled (loop over the leading dims with pl.range and pl.slice windows)",
            span,
        )
    return planes


def _index(i: int) -> nodes.Const:
    return nodes.Const(i, DataType.INT64)


def _rows(
    lw: _Lowerer, tile: nodes.Var, row: int, shape: tuple[int, int], out: list[nodes.Stmt]
) -> nodes.Var:
    """The ``shape`` rows of ``tile`` from ``row``: one plane of a flattened value, copied out."""
    attrs: dict[str, object] = {"shape": shape, "static_offsets": [row, 0]}
    return lw.emit("tile.slice", [tile, (_index(row), _index(0))], attrs, out, "ps")


def check_plane_wise(c: nodes.Call) -> None:
    """Refuse a tensor-level op that the flattened tile of a rank-3 value would get wrong."""
    kind = c.op.split(".", 1)[1]
    lang = LANGUAGE.get(kind)
    group = lang.group if lang is not None else ""
    if kind in _PLANE_WISE_EXTRA or (group in _PLANE_WISE_GROUPS and kind not in _NOT_PLANE_WISE):
        return
    if kind.startswith("row_") and group in ("reduction", "broadcast"):  # each row: in one plane
        return
    shapes = [a.type for a in c.args if not isinstance(a, tuple)] + [c.type]
    if any(planar(t) for t in shapes):
        raise KernelError(
            f"pl.{kind} on a tensor-level value of rank 3 or more is not supported: such values take "
            "element-wise ops, row reductions and row broadcasts, pl.matmul / pl.matmul_acc, "
            "pl.transpose of the last two axes and pl.assemble; for the others, loop over the leading "
            "dims with pl.slice windows",
            c.span,
        )


def window_of(lw: _Lowerer, e: nodes.Var) -> tuple[nodes.Var, tuple[nodes.Expr, ...]]:
    """The tensor in device memory that ``e`` reads and the offsets of its window there."""
    view = lw.views.get(e.name)
    if view is None:
        return e, tuple(_index(0) for _ in e.type.shape)  # type: ignore[union-attr]
    if view.attr("valid_shape") is not None:
        raise KernelError(
            f"{e.name}: a pl.slice window of rank 3 or more with a valid_shape is not supported at "
            "tensor level; load its planes with pl.load",
            view.span,
        )
    base, offs = view.args
    assert isinstance(base, nodes.Var)
    assert isinstance(offs, tuple)
    return base, offs


def _at(offs: tuple[nodes.Expr, ...], plane: tuple[int, ...]) -> tuple[nodes.Expr, ...]:
    lead = tuple(add_index(o, _index(i)) for o, i in zip(offs, plane, strict=False))
    return lead + offs[len(plane) :]


def _load_plane(
    lw: _Lowerer,
    base: nodes.Var,
    offs: tuple[nodes.Expr, ...],
    *,
    shape: tuple[int, ...],
    plane: tuple[int, ...],
    memory: MemorySpace,
    out: list[nodes.Stmt],
) -> nodes.Var:
    """Plane ``plane`` of the ``shape`` window of ``base`` at ``offs``: one ``[M, N]`` tile."""
    at = _at(offs, plane)
    attrs = {"shape": (*((1,) * (len(shape) - 2)), *shape[-2:]), "memory": memory}
    static = [o.value if isinstance(o, nodes.Const) else None for o in at]
    return lw.emit("tile.load", [base, at], {**attrs, "static_offsets": static}, out, "pl")


def load(
    lw: _Lowerer, e: nodes.Var, memory: MemorySpace, out: list[nodes.Stmt], span: Span | None
) -> nodes.Var:
    """The flattened tile of tensor (or window) ``e`` of rank 3 or more, in ``memory``."""
    base, offs = window_of(lw, e)
    tt = e.type
    assert isinstance(tt, TensorType)
    return load_window(lw, base, offs, shape=tt.static_shape, memory=memory, out=out, span=span)


def load_window(
    lw: _Lowerer,
    base: nodes.Var,
    offs: tuple[nodes.Expr, ...],
    *,
    shape: tuple[int, ...],
    memory: MemorySpace,
    out: list[nodes.Stmt],
    span: Span | None,
) -> nodes.Var:
    """The flattened tile of the ``shape`` window of ``base`` at ``offs``, loaded plane by plane."""
    dtype = base.type.dtype  # type: ignore[union-attr]
    name = base.name + "_nd"
    whole = lw.emit("tile.create", [], {"shape": _flat(shape), "dtype": dtype, "memory": memory}, out, name)
    for k, plane in enumerate(_planes(shape, f"loading {base.name}", span)):
        one = _load_plane(lw, base, offs, shape=shape, plane=plane, memory=memory, out=out)
        row = k * shape[-2]
        at = (_index(row), _index(0))
        whole = lw.emit("tile.assemble", [whole, one, at], {"static_offsets": [row, 0]}, out, name)
    return whole


def store(
    lw: _Lowerer,
    tile: nodes.Var,
    shape: tuple[int, ...],
    *,
    target: nodes.Var,
    offs: tuple[nodes.Expr, ...],
    out: list[nodes.Stmt],
    span: Span | None,
) -> nodes.Call:
    """Store the flattened tile of a value of N-D ``shape`` into ``target`` at ``offs``, plane by
    plane; returns the last store (its value is the target), the others are appended to ``out``."""
    if len(offs) != len(shape):
        raise KernelError(
            f"pl.assemble: a tensor-level value of shape {list(shape)} goes into a tensor of the same rank, "
            f"got {len(offs)} offsets",
            span,
        )
    r, c = shape[-2:]
    planes = _planes(shape, f"storing into {target.name}", span)
    last: nodes.Call | None = None
    for k, plane in enumerate(planes):
        row = k * r
        sub = _rows(lw, tile, row, (r, c), out)
        infer("tile.store", [sub.type, target.type], {})
        call = nodes.Call("tile.store", (sub, _at(offs, plane), target), (), target.type, span)
        if target.name in lw.views:
            call = lw._rebase(call)
        if last is not None:
            out.append(nodes.ExprStmt(last, span))
        last = call
    assert last is not None
    return last


def assemble(
    lw: _Lowerer, v: nodes.Var, c: nodes.Call, tile: nodes.Var, *, on_chip: bool, out: list[nodes.Stmt]
) -> nodes.Assign:
    """``v = pl.assemble(target, source, offsets)`` of a source of rank 3 or more held in ``tile``:
    stored plane by plane (with ``atomic=Add``, each window's planes loaded and added to first);
    returns the assignment of the last store to ``v``."""
    target, source, offs = c.args
    assert isinstance(target, nodes.Var)
    assert isinstance(offs, tuple)
    shape = source.type.static_shape  # type: ignore[union-attr]
    if on_chip:
        raise KernelError(
            f"pl.assemble: a tensor-level value of shape {list(shape)} goes into a tensor in device memory; "
            f"{target.name} is held on chip",
            c.span,
        )
    if c.attr("atomic") is AtomicType.Add:
        base, base_offs = window_of(lw, target)
        at = tuple(add_index(a, b) for a, b in zip(base_offs, offs, strict=True))
        was = load_window(lw, base, at, shape=shape, memory=MemorySpace.Vec, out=out, span=c.span)
        tile = lw.emit("tile.add", [was, tile], {}, out, "sum")
    last = store(lw, tile, shape, target=target, offs=offs, out=out, span=c.span)
    return nodes.Assign(v, last, c.span)


def transpose(lw: _Lowerer, c: nodes.Call, out: list[nodes.Stmt], base: str) -> nodes.Var:
    """``pl.transpose`` of a value of rank 3 or more: the last two axes of every plane swapped."""
    src = c.args[0]
    assert isinstance(src, nodes.Var)
    st, rt = src.type, c.type
    assert isinstance(st, TensorType)
    assert isinstance(rt, TensorType)
    shape = st.static_shape
    tile = lw.operand(src, out, c.span)
    assert isinstance(tile, nodes.Var)
    r, cols = shape[-2:]
    result = lw.emit(
        "tile.create",
        [],
        {"shape": _flat(rt.static_shape), "dtype": st.dtype, "memory": MemorySpace.Vec},
        out,
        base,
    )
    for k, _ in enumerate(_planes(shape, "pl.transpose", c.span)):
        sub = _rows(lw, tile, k * r, (r, cols), out)
        flipped = lw.emit("tile.transpose", [sub], {}, out, "pt")
        at = (_index(k * cols), _index(0))
        result = lw.emit("tile.assemble", [result, flipped, at], {"static_offsets": [k * cols, 0]}, out, base)
    return result


def _operand_plane(
    lw: _Lowerer, e: nodes.Var, number: int, out: list[nodes.Stmt], span: Span | None
) -> nodes.Var:
    """Plane ``number`` of matmul operand ``e`` in Mat: loaded from device memory on its own, or
    copied out of the tile that holds an on-chip value and moved to Mat."""
    tt = e.type
    assert isinstance(tt, TensorType)
    shape = tt.static_shape
    deferred = lw.transposed.get(e.name)
    if deferred is not None:  # a transposed tensor the kernel only reads: in L1, as its transpose
        plane = _unravel(number, shape[:-2]) if planar(tt) else ()
        return transposed_reads.in_l1(lw, deferred, out, plane=plane)
    held = lw.on_chip(e, out, span, MemorySpace.Vec)
    if held is None and planar(tt):
        base, offs = window_of(lw, e)
        lead = shape[:-2]
        plane = tuple(int(i) for i in _unravel(number, lead))
        return _load_plane(lw, base, offs, shape=shape, plane=plane, memory=MemorySpace.Mat, out=out)
    tile = held if held is not None else lw.operand(e, out, span, MemorySpace.Mat)
    assert isinstance(tile, nodes.Var)
    if planar(tt):
        r, c = shape[-2:]
        row = number * r
        tile = _rows(lw, tile, row, (r, c), out)
    assert isinstance(tile.type, TileType)
    if tile.type.memory is not MemorySpace.Mat:
        tile = lw.emit("tile.move", [tile], {"memory": MemorySpace.Mat}, out, "mv")
    return tile


def _unravel(number: int, dims: tuple[int, ...]) -> tuple[int, ...]:
    index = []
    for d in reversed(dims):
        index.append(number % d)
        number //= d
    return tuple(reversed(index))


def matmul(lw: _Lowerer, c: nodes.Call, out: list[nodes.Stmt], base: str) -> nodes.Var:
    """``pl.matmul`` with an operand of rank 3 or more: one cube product a batch (the batch dims
    broadcast as numpy does), each moved from Acc to its rows of the flattened Vec result."""
    lhs, rhs = c.args[0], c.args[1]
    assert isinstance(lhs, nodes.Var)
    assert isinstance(rhs, nodes.Var)
    lt, rt, res = lhs.type, rhs.type, c.type
    assert isinstance(lt, TensorType)
    assert isinstance(rt, TensorType)
    assert isinstance(res, TensorType)
    out_shape = res.static_shape
    m = out_shape[-2]
    flat = _flat(out_shape)
    if too_big(c):
        raise _too_large(out_shape, c.span)
    planes = _planes(out_shape, "pl.matmul", c.span)
    result: nodes.Var | None = None
    if len(planes) > 1:
        attrs = {"shape": flat, "dtype": res.dtype, "memory": MemorySpace.Vec}
        result = lw.emit("tile.create", [], attrs, out, base)
    whole = {x.name: _operand_plane(lw, x, 0, out, c.span) for x in (lhs, rhs) if not planar(x.type)}
    for k, index in enumerate(planes):
        a = whole.get(lhs.name) or _operand_plane(
            lw, lhs, batch_plane(index, lt.static_shape[:-2]), out, c.span
        )
        b = whole.get(rhs.name) or _operand_plane(
            lw, rhs, batch_plane(index, rt.static_shape[:-2]), out, c.span
        )
        left = lw.emit("tile.move", [a], {"memory": MemorySpace.Left}, out, "lhs")
        right = lw.emit("tile.move", [b], {"memory": MemorySpace.Right}, out, "rhs")
        acc = lw.emit("tile.matmul", [left, right], {}, out, "acc")
        vec = lw.emit("tile.move", [acc], {"memory": MemorySpace.Vec}, out, "pv")
        if result is None:
            return vec
        at = (_index(k * m), _index(0))
        result = lw.emit("tile.assemble", [result, vec, at], {"static_offsets": [k * m, 0]}, out, base)
    assert result is not None
    return result


def _too_large(shape: tuple[int, ...], span: Span | None) -> KernelError:
    rows, cols = _flat(shape)
    return KernelError(
        f"pl.matmul: the batched product {list(shape)} is held as one [{rows}, {cols}] tile, larger than a "
        f"tensor-level value may be ({MAX_ELEMENTS} elements), or a batch's product needs more than one "
        "set of cube tiles; assemble it straight into a tensor (pl.assemble(out, pl.matmul(...), offsets)), "
        "which computes it a batch at a time, or loop over the batches with pl.range and pl.slice windows",
        span,
    )


def plane_types(c: nodes.Call) -> tuple[TensorType, TensorType]:
    """The 2-D operand types of one batch of the batched ``tensor.matmul`` ``c``."""
    a, b = (x.type for x in c.args[:2])  # type: ignore[union-attr]
    assert isinstance(a, TensorType)
    assert isinstance(b, TensorType)
    return TensorType(tuple(a.shape[-2:]), a.dtype), TensorType(tuple(b.shape[-2:]), b.dtype)


def too_big(c: nodes.Call) -> bool:
    """Whether the batched ``tensor.matmul`` ``c`` cannot be held as one tile, or a batch of it
    needs more than one set of cube tiles: then it is computed a batch at a time where it is
    stored (``by_batch``)."""
    if not planar(c.type):
        return False
    rows, cols = _flat(c.type.static_shape)  # type: ignore[union-attr]
    return rows * cols > MAX_ELEMENTS or needs_blocking(*plane_types(c))


def _plane_operand(lw: _Lowerer, e: nodes.Var, number: int, span: Span | None) -> nodes.Var:
    """Plane ``number`` of matmul operand ``e`` as a 2-D tensor-level name the blocked nest
    reads: a window of the tensor in device memory (``lw.views``), or of the source of a
    transpose the kernel only reads (``lw.transposed``). A 2-D operand serves every batch."""
    tt = e.type
    assert isinstance(tt, TensorType)
    if not planar(tt):
        return e
    plane = _unravel(number, tt.static_shape[:-2])
    deferred = lw.transposed.get(e.name)
    if deferred is not None:
        src = deferred.args[0]
        assert isinstance(src, nodes.Var)
        window = _plane_window(lw, src, plane)
        flipped = window.type
        assert isinstance(flipped, TensorType)
        shape = (*flipped.shape[:-2], flipped.shape[-1], flipped.shape[-2])
        var = lw.fresh(e.name + "_plane", TensorType(shape, tt.dtype))
        lw.transposed[var.name] = nodes.Call("tensor.transpose", (window,), (), var.type, span)
        return var
    if e.name in lw.tiles or e.name in lw.blocked:
        raise _too_large(tt.static_shape, span)
    return _plane_window(lw, e, plane)


def _plane_window(lw: _Lowerer, e: nodes.Var, plane: tuple[int, ...]) -> nodes.Var:
    base, offs = window_of(lw, e)
    shape = e.type.static_shape  # type: ignore[union-attr]
    one = (*((1,) * (len(shape) - 2)), *shape[-2:])
    var = lw.fresh(e.name + "_plane", TensorType(one, e.type.dtype))  # type: ignore[union-attr]
    lw.views[var.name] = nodes.Call("tensor.view", (base, _at(offs, plane)), (("shape", one),), var.type)
    return var


def by_batch(lw: _Lowerer, c: nodes.Call, sink: Store | Scratch, *, out: list[nodes.Stmt], base: str) -> None:
    """The batched product ``c`` stored a batch at a time: each batch's product a blocked nest
    (matmul_tiling) whose blocks go straight from Acc to their window of the target."""
    res = c.type
    assert isinstance(res, TensorType)
    if not isinstance(sink, Store):
        raise _too_large(res.static_shape, c.span)
    lhs, rhs = c.args[0], c.args[1]
    assert isinstance(lhs, nodes.Var)
    assert isinstance(rhs, nodes.Var)
    lead_l = lhs.type.static_shape[:-2]  # type: ignore[union-attr]
    lead_r = rhs.type.static_shape[:-2]  # type: ignore[union-attr]
    for k, index in enumerate(_planes(res.static_shape, "pl.matmul", c.span)):
        a = _plane_operand(lw, lhs, batch_plane(index, lead_l), c.span)
        b = _plane_operand(lw, rhs, batch_plane(index, lead_r), c.span)
        call = nodes.Call("tensor.matmul", (a, b), (), infer("tensor.matmul", [a.type, b.type], {}), c.span)
        at = _at(sink.offsets, index)
        emit_blocked_matmul(lw, call, replace(sink, offsets=at), caps=lw.caps, out=out, base=f"{base}_b{k}")
