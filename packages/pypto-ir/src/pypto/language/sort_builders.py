"""The parser's builders of the sorting ops whose keywords are attributes or pick a form:
``pl.mrgsort``'s ``block_len`` (its single-list form; upstream's multi-list form is refused by
name), ``pl.tile.gather_mask``'s ``mask_pattern``/``output_dtype``, and ``pl.gather``'s mask form
(op table: pypto/ir/ops/sort_table.py); registered in ``OP_BUILDERS`` by ``op_builders``."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from pypto.ir.nodes import Const, Expr
from pypto.ir.ops.sort_rules import MaskPattern
from pypto.language.op_builders import OP_BUILDERS, _value

if TYPE_CHECKING:
    from pypto.language.parser.calls import _Calls as _Parser

__all__: list[str] = []

_MULTI_LIST = ("src1", "src2", "src3", "tmp")


def _build_mrgsort(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    """``pl.mrgsort(src, block_len=n)``: a constant ``n`` is also an attribute, which the type
    rule checks against src's width."""
    others = [k for k in _MULTI_LIST if b.get(k) is not None]
    exhausted = b.get("exhausted", False)
    if b.get("block_len") is None:
        raise p.err(
            "pl.mrgsort: give block_len=n (the single-list form: pl.mrgsort(src, block_len=64)); "
            "merging two to four lists (src1, src2, src3, tmp=, exhausted=) is not built here",
            node,
        )
    if others or (exhausted is not False and p.static_value(exhausted, "pl.mrgsort exhausted", node)):
        given = ", ".join(others or ["exhausted"])
        raise p.err(
            f"pl.mrgsort: block_len= (one list of sorted runs) does not take {given}, which belong to "
            "the multi-list form (not built here)",
            node,
        )
    length = p.scalar(b["block_len"], "pl.mrgsort block_len")
    attrs: dict[str, Any] = {}
    if isinstance(length, Const):
        if isinstance(length.value, bool) or not isinstance(length.value, int):
            raise p.err(f"pl.mrgsort: block_len must be an integer, got {length.value!r}", node)
        attrs["static_block_len"] = length.value
    return p.make_op(opname, [_value(p, b["src0"]), length], attrs, node)


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
