"""``pl.tile.write`` (``pl.write`` of a tile): the statement form rebinds the tile's name, the
kernel sets the element with ``sk::write_elem`` (SetValue on PIPE_S), the printed text parses
back, and what the rule refuses. Runs are in pypto-runtime's test_tile_write_run.py."""

from __future__ import annotations

from typing import Any

import pytest

import pypto.language as pl
from pypto.ir.codegen import generate_kernel
from pypto.ir.errors import KernelError
from pypto.ir.nodes import Assign, Call, structural_equal, walk_stmts


def _kernel(*, subscript: bool) -> Any:
    """A kernel writing element [1, 2] of a loaded FP16 tile: ``pl.tile.write`` or ``t[1, 2] = 3``."""
    if subscript:

        @pl.function(type=pl.FunctionType.InCore)
        def k(
            a: pl.Tensor[[8, 16], pl.FP16], y: pl.Out[pl.Tensor[[8, 16], pl.FP16]]
        ) -> pl.Tensor[[8, 16], pl.FP16]:
            t = pl.load(a, [0, 0], [8, 16])
            t[1, 2] = 3
            return pl.store(t, [0, 0], y)

        return k

    @pl.function(type=pl.FunctionType.InCore)
    def k(
        a: pl.Tensor[[8, 16], pl.FP16], y: pl.Out[pl.Tensor[[8, 16], pl.FP16]]
    ) -> pl.Tensor[[8, 16], pl.FP16]:
        t = pl.load(a, [0, 0], [8, 16])
        pl.tile.write(t, [1, 2], 3)
        return pl.store(t, [0, 0], y)

    return k


_K = _kernel(subscript=False)


def test_the_statement_form_rebinds_the_name_and_the_kernel_sets_the_element() -> None:
    writes = [s for s in walk_stmts(_K.ir.body) if isinstance(s, Assign) and isinstance(s.value, Call)]
    write = next(s for s in writes if s.value.op == "tile.write")  # type: ignore[union-attr]
    assert write.var.name == "t"
    text = generate_kernel(_K.ir).text
    call = "sk::write_elem(t, static_cast<std::int64_t>(INT64_C(1)), static_cast<std::int64_t>(INT64_C(2)), "
    assert (
        call + "static_cast<half>(static_cast<float>(INT64_C(3))));" in text
    )  # the value in the tile's dtype


def test_the_subscript_form_is_the_same_write() -> None:
    assert structural_equal(_kernel(subscript=True).ir, _K.ir)


def test_print_parses_back_to_the_same_function() -> None:
    printed = _K.ir.as_python()
    assert "= pl.write(t, [1, 2], 3)" in printed
    assert structural_equal(pl.parse(printed), _K.ir)


@pytest.mark.parametrize(
    ("write", "match"),
    [
        ("pl.tile.write(t, [8, 0], 1.0)", r"pl.write: index 8 on axis 0 is outside the tile \[8, 16\]"),
        ("pl.tile.write(t, [0, 0, 0], 1.0)", r"pl.write: a tile is written at \[row, col\], got 3 indices"),
        ("pl.tile.write(t, [0, 0], t)", r"pl.write value must be a scalar"),
    ],
)
def test_what_the_rule_refuses(write: str, match: str) -> None:
    src = f"""
@pl.function(type=pl.FunctionType.InCore)
def k(a: pl.Tensor[[8, 16], pl.FP32], y: pl.Out[pl.Tensor[[8, 16], pl.FP32]]) -> pl.Tensor[[8, 16], pl.FP32]:
    t = pl.load(a, [0, 0], [8, 16])
    {write}
    return pl.store(t, [0, 0], y)
"""
    with pytest.raises(KernelError, match=match):
        _ = pl.parse(src)
