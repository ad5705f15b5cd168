"""Tuple values in kernel bodies: ``t = (a, b)``, ``t[0]``, ``a, b = t``, ``return t``.

A tuple exists only while the parser reads the body: its name stands for its items, which are
ordinary values (or tuples), so the IR never holds a tuple. Indexing takes a constant index;
unpacking binds each name as an assignment would.
"""

from __future__ import annotations

import ast

from pypto.ir.nodes import Assign, Const, Stmt, Var, expr_vars
from pypto.language.parser.common import _Static
from pypto.language.parser.tasks import _Tasks
from pypto.language.parser.tuple_value import Item, TupleValue

__all__ = ["Item", "TupleValue", "_Tuples"]


class _Tuples(_Tasks):
    def tuple_literal(self, node: ast.Tuple) -> TupleValue:
        items: list[Item] = []
        for e in node.elts:
            if isinstance(e, ast.Starred):
                raise self.err("a tuple in a kernel lists its items; *unpacking is not supported", e)
            v = self._expr(e)
            if isinstance(v, _Static):
                raise self.err(
                    f"a tuple holds values (names, constants, expressions, tuples), not {ast.unparse(e)}", e
                )
            items.append(v)
        return TupleValue(tuple(items))

    def tuple_item(self, node: ast.Subscript) -> Item | None:
        """``t[k]`` when ``t`` is a tuple (a name bound to one, a literal or an item of one);
        None when the base is not a tuple."""
        base = self._tuple_base(node.value)
        if base is None:
            return None
        index = node.slice
        k = self.static_value(index, "a tuple index", index)
        if isinstance(k, bool) or not isinstance(k, int):
            raise self.err(f"a tuple index must be an integer constant, got {ast.unparse(index)}", index)
        n = len(base.items)
        if not -n <= k < n:
            raise self.err(f"tuple index {k} is out of range for a tuple of {n} item(s)", index)
        return base.items[k]

    def _tuple_base(self, node: ast.expr) -> TupleValue | None:
        if isinstance(node, ast.Name):
            v = self.st.env.get(node.id)
            return v if isinstance(v, TupleValue) else None
        if isinstance(node, ast.Tuple):
            return self.tuple_literal(node)
        if isinstance(node, ast.Subscript):
            inner = self.tuple_item(node)
            return inner if isinstance(inner, TupleValue) else None
        return None

    def unpack_tuple(self, target: ast.Tuple | ast.List, value: TupleValue, s: ast.stmt) -> list[Stmt]:
        """``a, b = t`` / ``a, (b, c) = x, (y, z)``: every item is read before any name is
        bound (so ``a, b = b, a`` swaps)."""
        out: list[Stmt] = []
        pairs: list[tuple[ast.Name, Item]] = []
        self._pair(target, value, pairs)
        targets = {t.id for t, _ in pairs}
        held: list[tuple[ast.Name, Item]] = []
        rebound = {self.prefix + t for t in targets}
        for name, item in pairs:
            if (
                not isinstance(item, TupleValue)
                and not (isinstance(item, Var) and item.name == self.prefix + name.id)
                and any(v.name in rebound for v in expr_vars(item))
            ):
                # a value that reads a name about to be rebound (``a, b = b, a + b``) is computed
                # into a copy first
                self.hoisted += 1
                tmp = Var(f"{self.prefix}_item{self.hoisted}", item.type, self.src.span(name))
                out.append(Assign(tmp, item, self.src.span(s)))
                held.append((name, tmp))
                continue
            held.append((name, item))
        for name, item in held:
            out.extend(self.bind_name(name, item))
        return out

    def _pair(self, target: ast.expr, value: Item, pairs: list[tuple[ast.Name, Item]]) -> None:
        if isinstance(target, ast.Name):
            pairs.append((target, value))
            return
        if not isinstance(target, (ast.Tuple, ast.List)) or any(
            isinstance(e, ast.Starred) for e in target.elts
        ):
            raise self.err("tuple unpacking assigns names or nested tuples of names: a, (b, c) = t", target)
        if not isinstance(value, TupleValue):
            raise self.err(
                f"cannot unpack {value.type} into {len(target.elts)} names: it is not a tuple", target
            )
        if len(value.items) != len(target.elts):
            raise self.err(
                f"cannot unpack a tuple of {len(value.items)} item(s) into {len(target.elts)} name(s)", target
            )
        for t, v in zip(target.elts, value.items, strict=True):
            self._pair(t, v, pairs)

    def bind_name(self, target: ast.Name, value: Item) -> list[Stmt]:
        """Bind ``target`` to ``value`` as ``target = value`` does."""
        name = target.id
        if isinstance(value, TupleValue):
            self.st.env[name] = value  # type: ignore[assignment]
            return []
        if isinstance(value, Var) and value.name == self.prefix + name:
            return []
        if isinstance(value, Const) and name not in self.st.multi:
            self.st.env[name] = value
            return []
        var = Var(self.prefix + name, value.type, self.src.span(target))
        self.st.env[name] = var
        return [Assign(var, value, self.src.span(target))]
