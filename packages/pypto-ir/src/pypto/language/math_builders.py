"""The parser's builders of the composed math ops whose keywords are attributes: ``pl.gelu``'s
``approximate=`` and ``pl.softplus``'s ``beta=``/``threshold=`` (op table:
pypto/ir/ops/math_table.py); registered in ``OP_BUILDERS`` by ``op_builders``."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from pypto.ir.nodes import Expr
from pypto.ir.ops.math_table import GELU_FORMS
from pypto.language.op_builders import OP_BUILDERS, _value

if TYPE_CHECKING:
    from pypto.language.parser.calls import _Calls as _Parser

__all__: list[str] = []


def _build_gelu(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    form = p.static_value(b.get("approximate", "none"), "pl.gelu approximate", node)
    if form not in GELU_FORMS:
        raise p.err(
            f"pl.gelu: approximate must be one of {', '.join(map(repr, GELU_FORMS))}, got {form!r}", node
        )
    attrs = {"approximate": form} if form != "none" else {}
    return p.make_op(opname, [_value(p, b["input"])], attrs, node)


def _build_softplus(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    attrs: dict[str, Any] = {}
    for key, default in (("beta", 1.0), ("threshold", 20.0)):
        v = p.static_value(b.get(key, default), f"pl.softplus {key}", node)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise p.err(f"pl.softplus: {key} must be a number known at compile time, got {v!r}", node)
        if float(v) != default:
            attrs[key] = float(v)
    return p.make_op(opname, [_value(p, b["input"])], attrs, node)


OP_BUILDERS.update({"gelu": _build_gelu, "softplus": _build_softplus})
