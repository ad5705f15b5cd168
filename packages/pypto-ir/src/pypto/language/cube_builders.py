"""The parser's builders of the cube ops (pypto/ir/ops/matmul_table.py): ``a_trans``/``b_trans``
of tensor operands, ``pl.matmul``'s ``out_dtype``, ``pl.matmul_acc``'s ``init_cond``, and the
Mat operands upstream's programs pass to ``pl.matmul_bias`` and the GEMVs (moved to Left, Right
and Bias here); registered in ``OP_BUILDERS`` by ``op_builders``."""

from __future__ import annotations

import ast
import itertools
import math
from typing import TYPE_CHECKING, Any

from pypto.ir.nodes import Arg, Call, Const, Expr
from pypto.ir.ops.matmul_rules import batch_plane, broadcast_batch
from pypto.ir.ops.rules import CASTABLE
from pypto.ir.ops.spec import OpError
from pypto.ir.types import MemorySpace, TensorType, TileType
from pypto.language.fold import INDEX
from pypto.language.op_builders import OP_BUILDERS, _flag, _value
from pypto.language.parser.tuple_value import TupleValue

if TYPE_CHECKING:
    from pypto.language.parser.calls import _Calls as _Parser


def _transposed(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> tuple[Expr, Expr]:
    """The operands of a matmul with ``a_trans``/``b_trans`` applied: at tensor level the operand
    is transposed first (``pl.transpose``); a tile operand must be transposed by the kernel
    (``pl.tile.transpose_view``), as upstream requires. ``c_matrix_nz`` (an NZ result) is refused."""
    what = f"pl.{opname}"
    lhs, rhs = p.expr(b["lhs"]), p.expr(b["rhs"])
    if _flag(p, b, "c_matrix_nz", what, node):
        raise p.err(
            f"{what}: c_matrix_nz=True (an NZ-laid-out result) is not available; the result is ND "
            "(leave c_matrix_nz out or pass False)",
            node,
        )
    out = []
    for key, x in (("a_trans", lhs), ("b_trans", rhs)):
        if not _flag(p, b, key, what, node):
            out.append(x)
            continue
        if isinstance(x.type, TileType):
            raise p.err(
                f"{what}: {key}=True applies to tensor operands; transpose a tile operand with "
                "pl.tile.transpose_view before moving it to Left/Right",
                node,
            )
        out.append(p.make_op("transpose", [x], {}, node))
    return out[0], out[1]


def _build_matmul(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    lhs, rhs = _transposed(p, opname, b, node)
    call = p.make_op("matmul", [lhs, rhs], {}, node)
    if b.get("out_dtype") is not None:
        want = p.dtype(b["out_dtype"], "pl.matmul out_dtype")
        got = call.type.dtype  # type: ignore[union-attr]
        if want is not got and isinstance(call.type, TensorType) and want in CASTABLE:
            return p.make_op("cast", [call], {"dtype": want}, node)  # accumulate, then round once
        if want is not got:
            raise p.err(f"pl.matmul out_dtype={want.value}: this matmul accumulates in {got.value}", node)
    return call


def _build_matmul_acc(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    """``pl.matmul_acc(acc, lhs, rhs, init_cond=...)``: a literal condition picks the overwriting
    (``pl.matmul``) or the accumulating form here; a run-time one is the op's fourth operand."""
    lhs, rhs = _transposed(p, opname, b, node)
    acc = p.expr(b["acc"])
    if b.get("init_cond") is None:
        return p.make_op("matmul_acc", [acc, lhs, rhs], {}, node)
    what = f"pl.{opname} init_cond"
    if not isinstance(acc.type, TileType):
        raise p.err(
            f"{what}: applies to tile operands (Acc, Left, Right); a tensor-level matmul_acc adds the "
            "product into its accumulator, use pl.matmul for the first step",
            node,
        )
    cond = p.scalar(b["init_cond"], what)
    if isinstance(cond, Const):
        if not isinstance(cond.value, bool):
            raise p.err(
                f"{what} must be True, False or a BOOL scalar (such as k == 0), got {cond.value!r}", node
            )
        return (
            p.make_op("matmul", [lhs, rhs], {}, node)
            if cond.value
            else p.make_op("matmul_acc", [acc, lhs, rhs], {}, node)
        )
    return p.make_op("matmul_acc", [acc, lhs, rhs, cond], {}, node)


# Where a cube operand held in Mat is moved before the instruction reads it: upstream's programs
# pass L1 tiles to pl.tile.matmul_bias and the GEMVs, and its passes insert the moves.
_CUBE_PLACE = {"lhs": MemorySpace.Left, "rhs": MemorySpace.Right, "bias": MemorySpace.Bias}


def _build_cube(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    """``pl.matmul_bias`` and the GEMVs: operands in Mat moved to Left/Right/Bias, ``acc_phase``
    (a string constant) recorded as an attribute when it is not ``"unspecified"``."""
    args: list[Arg] = []
    for key in ("acc", "lhs", "rhs", "bias"):
        if key not in b:
            continue
        x = _value(p, b[key])
        if key in _CUBE_PLACE and isinstance(x.type, TileType) and x.type.memory is MemorySpace.Mat:
            x = p.make_op("move", [x], {"memory": _CUBE_PLACE[key]}, node)
        args.append(x)
    attrs: dict[str, Any] = {}
    if "acc_phase" in b:
        phase = p.static_value(b["acc_phase"], f"pl.{opname} acc_phase", node)
        if phase != "unspecified":
            attrs["acc_phase"] = phase
    return p.make_op(opname, args, attrs, node)


def _batched(p: _Parser, x: Expr, what: str, node: ast.Call) -> tuple[tuple[int, ...], bool]:
    """The N-D shape of a batch_matmul operand and whether its planes lie side by side in
    columns (a ``pl.tile.transpose_view`` of an N-D tile) rather than one below the other."""
    t = x.type
    if not isinstance(t, TileType) or t.memory not in (MemorySpace.Mat, MemorySpace.Vec):
        raise p.err(f"pl.batch_matmul: {what} must be a tile in Mat (or Vec), got {t}", node)
    nd = p.st.nd_shapes.get(id(x))
    if nd is not None and len(nd) > 2:
        return nd, False
    cols = p.st.nd_columns.get(id(x))
    if cols is None and isinstance(x, Call) and x.op == "tile.transpose_view":  # written in place
        inner = p.st.nd_shapes.get(id(x.args[0]))
        cols = (*inner[:-2], inner[-1], inner[-2]) if inner is not None else None
    if cols is not None:
        return cols, True
    return tuple(int(d) for d in t.shape), False


def _plane(
    p: _Parser,
    x: Expr,
    shape: tuple[int, ...],
    *,
    by_columns: bool,
    index: int,
    target: MemorySpace,
    node: ast.Call,
) -> Expr:
    """Plane ``index`` (flat, row-major over the batch dims) of operand ``x`` moved to ``target``."""
    from pypto.language.parser.nd_tiles import _bind

    r, c = shape[-2:]
    row, col = (0, index * c) if by_columns else (index * r, 0)
    vec = x.type.memory is MemorySpace.Vec  # type: ignore[union-attr]
    plane: Expr = x
    if len(shape) > 2:  # TEXTRACT: Mat -> Left/Right, or Vec -> Vec
        at = (Const(row, INDEX), Const(col, INDEX))
        attrs = {"shape": (r, c), "memory": MemorySpace.Vec if vec else target}
        plane = p.make_op("extract", [x, at], attrs, node)
    if vec:  # as a tile matmul of Vec tiles moves them: to Mat, then where the cube reads it
        plane = p.make_op("move", [plane], {"memory": MemorySpace.Mat}, node)
    if plane.type.memory is MemorySpace.Mat:  # type: ignore[union-attr]
        plane = p.make_op("move", [plane], {"memory": target}, node)
    return _bind(p, "bmm", plane, node)  # type: ignore[arg-type]


def _build_batch_matmul(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Any:
    """``pl.batch_matmul(lhs, rhs)`` of ``[.., M, K]`` and ``[.., K, N]`` tiles (batch dims
    broadcast as numpy does): one ``pl.matmul`` per batch, of the planes moved from Mat to Left
    and Right, the result held as its ``[M, N]`` Acc planes (a tuple the parser knows the N-D
    shape of): ``pl.store`` stores each plane, ``t[i]`` is plane ``i``. On the device an Acc tile
    has no room for a batch's planes side by side (the cube writes whole fractals), so upstream
    stores them one by one too."""
    from pypto.language.parser.nd_tiles import MAX_PLANES, _bind

    lhs, rhs = _value(p, b["lhs"]), _value(p, b["rhs"])
    p.not_planes(opname, [lhs, rhs], node)
    ls, lcols = _batched(p, lhs, "lhs", node)
    rs, rcols = _batched(p, rhs, "rhs", node)
    if ls[-1] != rs[-2]:
        raise p.err(
            f"pl.batch_matmul: cannot multiply [.., {ls[-2]}, {ls[-1]}] by [.., {rs[-2]}, {rs[-1]}]", node
        )
    try:
        batch = broadcast_batch(ls[:-2], rs[:-2], "batch_matmul")
    except OpError as exc:
        raise p.err(str(exc), node) from None
    count = math.prod(batch)
    if count > MAX_PLANES:
        raise p.err(f"pl.batch_matmul: {count} batches; at most {MAX_PLANES} are unrolled (use a loop)", node)
    planes: list[Expr] = []
    for index in itertools.product(*(range(d) for d in batch)):
        left = _plane(
            p,
            lhs,
            ls,
            by_columns=lcols,
            index=batch_plane(index, ls[:-2]),
            target=MemorySpace.Left,
            node=node,
        )
        right = _plane(
            p,
            rhs,
            rs,
            by_columns=rcols,
            index=batch_plane(index, rs[:-2]),
            target=MemorySpace.Right,
            node=node,
        )
        planes.append(_bind(p, "bmm", p.make_op("matmul", [left, right], {}, node), node))  # type: ignore[arg-type]
    if not batch:
        return planes[0]
    result = TupleValue(tuple(planes))
    p.st.nd_planes[id(result)] = (result, (*batch, ls[-2], rs[-1]))
    return result


OP_BUILDERS.update(
    {
        "batch_matmul": _build_batch_matmul,
        "matmul": _build_matmul,
        "matmul_acc": _build_matmul_acc,
        "matmul_bias": _build_cube,
        "gemv": _build_cube,
        "gemv_acc": _build_cube,
        "gemv_bias": _build_cube,
    }
)
