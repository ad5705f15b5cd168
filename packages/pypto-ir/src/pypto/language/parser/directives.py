"""Compile-time directives: ``pl.static_print`` and ``pl.static_assert``.

Both run while the parser reads a kernel and leave nothing in the IR. They are statements:
the statement parser hands them here; used as a value they are an error.
"""

from __future__ import annotations

import ast
import sys

from pypto.ir.nodes import Const, Expr
from pypto.language.parser.common import _Static
from pypto.language.parser.expressions import _Expressions

__all__ = ["DIRECTIVES"]

DIRECTIVES = ("static_print", "static_assert")


class _Directives(_Expressions):
    def directive(self, kind: str, node: ast.Call) -> None:
        """Run the compile-time directive ``pl.<kind>(...)`` at ``node``."""
        if kind == "static_print":
            self.static_print(node)
        else:
            self.static_assert(node)

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
