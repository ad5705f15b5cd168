"""The parser's builders of the sorting ops whose keywords are attributes or pick a form:
``pl.mrgsort``'s ``block_len`` (its single-list form) or lists (its multi-list form, with
``tmp`` and ``exhausted``), ``pl.tile.gather_mask``'s ``mask_pattern``/``output_dtype``, and
``pl.gather``'s mask form (op table: pypto/ir/ops/sort_table.py); registered in
``OP_BUILDERS`` by ``op_builders``."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from pypto.ir.nodes import Arg, Const, Expr
from pypto.ir.ops.sort_rules import MaskPattern
from pypto.ir.types import TileType
from pypto.language.op_builders import OP_BUILDERS, _flag, _value

if TYPE_CHECKING:
    from pypto.language.parser.calls import _Calls as _Parser

__all__: list[str] = []

_MULTI_LIST = ("src1", "src2", "src3", "tmp")


def _build_mrgsort(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    """``pl.mrgsort(src, block_len=n)``: a constant ``n`` is also an attribute, which the type
    rule checks against src's width. Without ``block_len``, the multi-list form."""
    others = [k for k in _MULTI_LIST if b.get(k) is not None]
    exhausted = _flag(p, b, "exhausted", "pl.mrgsort", node)
    if b.get("block_len") is None:
        return _merge_lists(p, b, exhausted, node)
    if others or exhausted:
        given = ", ".join(others or ["exhausted"])
        raise p.err(
            f"pl.mrgsort: block_len= (one list of sorted runs) does not take {given}, which belong to "
            "the multi-list form (pl.mrgsort(src0, src1, ...) without block_len)",
            node,
        )
    length = p.scalar(b["block_len"], "pl.mrgsort block_len")
    attrs: dict[str, Any] = {}
    if isinstance(length, Const):
        if isinstance(length.value, bool) or not isinstance(length.value, int):
            raise p.err(f"pl.mrgsort: block_len must be an integer, got {length.value!r}", node)
        attrs["static_block_len"] = length.value
    return p.make_op(opname, [_value(p, b["src0"]), length], attrs, node)


def _merge_lists(p: _Parser, b: dict[str, Any], exhausted: bool, node: ast.Call) -> Expr:
    """``pl.mrgsort(src0, src1[, src2[, src3]])``: tensors, or tiles with ``tmp=`` (TMRGSORT's
    multi-list form; the tensor form's scratch row is made when it is lowered)."""
    if b.get("src1") is None:
        raise p.err(
            "pl.mrgsort: give block_len=n to merge the sorted runs of one row (pl.mrgsort(src, "
            "block_len=64)), or two to four sorted lists (pl.mrgsort(src0, src1, ...))",
            node,
        )
    lists: list[Arg] = [_value(p, b[k]) for k in ("src0", "src1", "src2", "src3") if b.get(k) is not None]
    tiles = isinstance(lists[0].type, TileType)  # type: ignore[union-attr]
    if tiles and b.get("tmp") is None:
        raise p.err(
            "pl.tile.mrgsort: merging tiles takes tmp=, a scratch FP32 row as wide as the result "
            "(pl.tile.mrgsort(src0, src1, tmp=tmp); the 4-way form also takes it fifth)",
            node,
        )
    if not tiles and b.get("tmp") is not None:
        raise p.err("pl.mrgsort: tmp= is for tiles; merging tensors makes its scratch row when lowered", node)
    args = lists + ([_value(p, b["tmp"])] if tiles else [])
    return p.make_op("mrgsort_lists", args, {"exhausted": True} if exhausted else {}, node)


def _mask_attrs(p: _Parser, b: dict[str, Any], what: str, node: ast.Call) -> dict[str, Any]:
    pattern = p.static_value(b["mask_pattern"], f"{what} mask_pattern", node)
    attrs: dict[str, Any] = {
        # a plain number in the IR (MaskPattern is an IntEnum): prints and parses back as itself
        "mask_pattern": int(pattern) if isinstance(pattern, MaskPattern) else pattern
    }
    if b.get("output_dtype") is not None:
        attrs["output_dtype"] = p.dtype(b["output_dtype"], f"{what} output_dtype")
    return attrs


def _build_gather_mask(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    attrs = _mask_attrs(p, b, "pl.tile.gather_mask", node)
    return p.make_op(opname, [_value(p, b["src"])], attrs, node)


_build_index_gather = OP_BUILDERS["gather"]


def _build_gather(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    """``pl.gather(input, mask_pattern=..., output_dtype=None)``, or the index forms."""
    if b.get("mask_pattern") is None:
        if b.get("output_dtype") is not None:
            raise p.err("pl.gather: output_dtype= belongs to the mask form (with mask_pattern=)", node)
        return _build_index_gather(p, opname, b, node)
    index_args = [k for k in ("dim", "index", "indices", "tmp") if b.get(k) is not None]
    if index_args:
        raise p.err(
            f"pl.gather: mask_pattern= (the mask form) does not take {', '.join(index_args)}, which belong "
            "to the index forms",
            node,
        )
    attrs = _mask_attrs(p, b, "pl.gather", node)
    return p.make_op("gather_by_mask", [_value(p, b["input"])], attrs, node)


OP_BUILDERS.update({"mrgsort": _build_mrgsort, "gather_mask": _build_gather_mask, "gather": _build_gather})
