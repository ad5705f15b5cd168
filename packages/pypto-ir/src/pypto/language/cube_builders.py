"""The parser's builders of the cube ops (pypto/ir/ops/matmul_table.py): ``a_trans``/``b_trans``
of tensor operands, ``pl.matmul``'s ``out_dtype``, ``pl.matmul_acc``'s ``init_cond``, and the
Mat operands upstream's programs pass to ``pl.matmul_bias`` and the GEMVs (moved to Left, Right
and Bias here); registered in ``OP_BUILDERS`` by ``op_builders``."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from pypto.ir.nodes import Arg, Const, Expr
from pypto.ir.ops.rules import CASTABLE
from pypto.ir.types import MemorySpace, TensorType, TileType
from pypto.language.op_builders import OP_BUILDERS, _flag, _value

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


OP_BUILDERS.update(
    {
        "matmul": _build_matmul,
        "matmul_acc": _build_matmul_acc,
        "matmul_bias": _build_cube,
        "gemv": _build_cube,
        "gemv_acc": _build_cube,
        "gemv_bias": _build_cube,
    }
)
