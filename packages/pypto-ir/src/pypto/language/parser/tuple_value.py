"""The parser's tuple value (``TupleValue``), on its own so that modules the tuple handling
imports (the op builders, N-D tiles) can name it at their top: a tuple exists only while the
parser reads a body, its items are ordinary values (or tuples), and the IR never holds one
(parser/tuples.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from pypto.ir.nodes import Expr
from pypto.ir.types import TupleType, Type

Item = Union[Expr, "TupleValue"]


@dataclass(frozen=True)
class TupleValue:
    """A tuple the body built; ``items`` are values or nested tuples."""

    items: tuple[Item, ...]

    @property
    def type(self) -> Type:
        return TupleType(tuple(i.type for i in self.items))

    def flat(self) -> list[Expr]:
        out: list[Expr] = []
        for i in self.items:
            out.extend(i.flat() if isinstance(i, TupleValue) else [i])
        return out
