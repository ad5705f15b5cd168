"""Entering an op into the table: ``_enter`` records a ``pl`` function (``LangOp``) with its IR
forms (``OpSpec``), refusing a name entered twice; ``_leveled`` makes the tile and tensor forms
of an element-wise family op, ``_tile_and_tensor`` enters an op with one of each. Every family table (``*_table``) enters its ops with these."""

from __future__ import annotations

from collections.abc import Callable

from pypto.ir.dtypes import DataType
from pypto.ir.ops.rules import VEC
from pypto.ir.ops.spec import LANGUAGE, OPS, Cpp, LangOp, OpSpec, Param, Rule

__all__ = ["P", "_both", "_enter", "_leveled", "_tile_and_tensor"]

P = Param


def _enter(lang: LangOp, *specs: OpSpec) -> None:
    for spec in specs:
        if spec.name in OPS:
            raise ValueError(f"op table: {spec.name} entered twice")
        OPS[spec.name] = spec
    if lang.name in LANGUAGE:
        raise ValueError(f"op table: pl.{lang.name} entered twice")
    missing = [n for n in lang.ir_ops if n not in OPS]
    if missing:
        raise ValueError(f"op table: pl.{lang.name} names IR ops without an entry: {missing}")
    LANGUAGE[lang.name] = lang


def _both(name: str) -> dict[str, str]:
    return {"tile": f"tile.{name}", "tensor": f"tensor.{name}"}


def _tile_and_tensor(
    name: str,
    params: tuple[Param, ...],
    doc: str,
    *,
    group: str,
    rules_of: tuple[Rule, Rule],
    arity: tuple[int, int],
    cpp: Cpp | None = None,
    attrs: tuple[str, ...] = (),
    dtypes: frozenset[DataType] | None = None,
) -> None:
    """Enter ``pl.<name>`` with its tile form (a Vec tile op, ``cpp``) and its tensor form,
    taking the same operands, attributes and dtypes (``rules_of``: the tile and the tensor
    type rule)."""
    lo, hi = arity
    _enter(
        LangOp(name, params, doc, _both(name), group=group),
        OpSpec(f"tile.{name}", rules_of[0], lo, hi, cpp, attrs=attrs, dtypes=dtypes, spaces=VEC),
        OpSpec(f"tensor.{name}", rules_of[1], lo, hi, attrs=attrs, dtypes=dtypes),
    )


def _leveled(
    name: str,
    make: Callable[[str], Rule],
    arity: tuple[int, int],
    cpp: Cpp,
    dtypes: frozenset[DataType] | None = None,
) -> tuple[OpSpec, OpSpec]:
    """The tile and tensor forms of an element-wise family op (the tile form reads Vec tiles)."""
    lo, hi = arity
    return (
        OpSpec(f"tile.{name}", make("tile"), lo, hi, cpp, dtypes=dtypes, spaces=VEC),
        OpSpec(f"tensor.{name}", make("tensor"), lo, hi, dtypes=dtypes),
    )
