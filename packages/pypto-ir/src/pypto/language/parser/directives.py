"""Compile-time directives: ``pl.static_print``, ``pl.static_assert`` and ``pl.func_attr``.

They run while the parser reads a kernel and leave no statement in the IR (``pl.func_attr``
records attributes on the function). They are statements:
the statement parser hands them here; used as a value they are an error.
"""

from __future__ import annotations

import ast
import enum
import sys
from typing import Any

from pypto.ir.nodes import Const, Expr, ParamRef, Var
from pypto.ir.serialization import ENUM_TYPES
from pypto.ir.types import TensorType
from pypto.language.parser.common import _Static
from pypto.language.parser.expressions import _Expressions

__all__ = ["DIRECTIVES"]

DIRECTIVES = ("static_print", "static_assert", "func_attr", "dump_tag")


class _Directives(_Expressions):
    def directive(self, kind: str, node: ast.Call) -> None:
        """Run the compile-time directive ``pl.<kind>(...)`` at ``node``."""
        if kind == "static_print":
            self.static_print(node)
        elif kind == "func_attr":
            self.func_attr(node)
        elif kind == "dump_tag":
            self.dump_tag(node)
        else:
            self.static_assert(node)

    def dump_tag(self, node: ast.Call) -> None:
        """``pl.dump_tag(t)`` in an orchestration: every later kernel call that takes the tensor
        ``t`` (this value of the name) records it in its ``dumps``."""
        self.check_orchestration("pl.dump_tag", node)
        if node.keywords or len(node.args) != 1 or not isinstance(node.args[0], ast.Name):
            raise self.err("pl.dump_tag takes one tensor name: pl.dump_tag(t)", node)
        name = node.args[0].id
        v = self.st.env.get(name)
        if not isinstance(v, Var) or not isinstance(v.type, TensorType):
            got = "not a name of this function" if v is None else f"a {v.type}"
            raise self.err(f"pl.dump_tag({name}): expected a tensor of this function, got {got}", node)
        if not any(t is v for t in self.st.dump_tags):
            self.st.dump_tags.append(v)

    def func_attr(self, node: ast.Call) -> None:
        """``pl.func_attr({"key": value, ...})``: record function attributes (prologue only)."""
        if not self.st.prologue:
            raise self.err(
                "pl.func_attr must come before every other statement of the function body (it describes "
                "the whole function); move it to the top",
                node,
            )
        if node.keywords or len(node.args) != 1 or not isinstance(node.args[0], ast.Dict):
            raise self.err('pl.func_attr takes one dict literal: pl.func_attr({"key": value})', node)
        params = {p.arg for p in self.src.tree.args.args}
        for k_node, v_node in zip(node.args[0].keys, node.args[0].values, strict=True):
            if not (isinstance(k_node, ast.Constant) and isinstance(k_node.value, str)):
                where = k_node if k_node is not None else v_node
                raise self.err("pl.func_attr: keys must be string literals", where)
            key = k_node.value
            if key == "auto_scope":
                raise self.err(
                    "pl.func_attr: 'auto_scope' cannot be set with pl.func_attr; give it on the decorator: "
                    "@pl.function(auto_scope=False)",
                    k_node,
                )
            if key in self.st.attrs:
                raise self.err(f"pl.func_attr: the key {key!r} is given twice", k_node)
            self.st.attrs[key] = self._attr_value(key, v_node, params)

    def _attr_value(self, key: str, node: ast.expr, params: set[str]) -> Any:
        if isinstance(node, ast.Name) and node.id in params and node.id != "self":
            return ParamRef(node.id)
        value = self.static_value(node, f"pl.func_attr value of {key!r}", node)
        if isinstance(value, ENUM_TYPES) or (
            isinstance(value, (bool, int, float, str)) and not isinstance(value, enum.Enum)
        ):
            return value
        raise self.err(
            f"pl.func_attr: the value of {key!r} must be a parameter name or a constant (int, float, bool, "
            f"str, a pl enum member), got {ast.unparse(node)} = {value!r}",
            node,
        )

    def static_print(self, node: ast.Call) -> None:
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise self.err("pl.static_print takes positional arguments only (no *args, no keywords)", node)
        if not node.args:
            raise self.err(
                "pl.static_print needs at least one argument (a string, a value or an f-string)", node
            )
        parts = [self._describe_part(a) for a in node.args]
        span = self.src.span(node)
        print(f"static_print [{span.file}:{span.line}]: {' '.join(parts)}", file=sys.stdout, flush=True)

    def _describe_part(self, node: ast.expr) -> str:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.JoinedStr):
            out: list[str] = []
            for piece in node.values:
                if isinstance(piece, ast.Constant):
                    out.append(str(piece.value))
                    continue
                assert isinstance(piece, ast.FormattedValue)
                if piece.conversion != -1 or piece.format_spec is not None:
                    raise self.err(
                        "pl.static_print f-strings take plain {expr} fields (no !r/!s/!a, no :format spec)",
                        piece,
                    )
                out.append(self._describe_value(piece.value, in_fstring=True))
            return "".join(out)
        return self._describe_value(node)

    def _describe_value(self, node: ast.expr, in_fstring: bool = False) -> str:
        """A kernel value as ``text: <type>``; a compile-time constant as ``text = value``
        (in an f-string field, the value alone)."""
        value = self._expr(node)
        text = ast.unparse(node)
        if isinstance(value, (_Static, Const)):
            return str(value.value) if in_fstring else f"{text} = {value.value!r}"
        return f"{text}: {value.type}"

    def static_assert(self, node: ast.Call) -> None:
        if any(isinstance(a, ast.Starred) for a in node.args) or len(node.args) not in (1, 2):
            raise self.err(
                "pl.static_assert(condition, message='') takes a condition and an optional message", node
            )
        message_node: ast.expr | None = node.args[1] if len(node.args) == 2 else None
        for kw in node.keywords:
            if kw.arg != "message" or message_node is not None:
                raise self.err(f"pl.static_assert: unexpected keyword {kw.arg!r}", kw)
            message_node = kw.value
        message = ""
        if message_node is not None:
            if not (isinstance(message_node, ast.Constant) and isinstance(message_node.value, str)):
                raise self.err("pl.static_assert(message): expected a string literal", message_node)
            message = message_node.value
        cond = node.args[0]
        value = self._static_condition(cond)
        if not value:
            detail = f": {message}" if message else ""
            raise self.err(f"static assertion failed: {ast.unparse(cond)}{detail}", cond)

    def _static_condition(self, node: ast.expr) -> bool:
        value: Expr | _Static = self._expr(node)
        if isinstance(value, _Static):
            return bool(value.value)
        if isinstance(value, Const):
            return bool(value.value)
        raise self.err(
            f"pl.static_assert(condition): expected a condition known at compile time, but "
            f"{ast.unparse(node)} is a {value.type} computed when the kernel runs",
            node,
        )
