"""``pl.addc`` / ``pl.subc`` / ``pl.addsc`` / ``pl.subsc`` (PTO-ISA TADDC, TSUBC, TADDSC,
TSUBSC): the operands the rules take, the instruction, and the printed text. Runs are in
pypto-runtime's test_three_operand_run.py."""

from __future__ import annotations

import pytest

import pypto.language as pl
from pypto.ir.codegen import generate_kernel
from pypto.ir.errors import KernelError
from pypto.ir.nodes import structural_equal


@pl.function(type=pl.FunctionType.InCore)
def _k(
    a: pl.Tensor[[4, 16], pl.INT32], y: pl.Out[pl.Tensor[[4, 16], pl.INT32]]
) -> pl.Tensor[[4, 16], pl.INT32]:
    x = pl.load(a, [0, 0], [4, 16])
    s = pl.subc(x, x, x)
    t = pl.tile.addsc(s, 7, x)
    return pl.store(t, [0, 0], y)


def test_the_kernel_calls_the_instruction_with_the_scalar_in_the_middle() -> None:
    text = generate_kernel(_k.ir).text
    assert "TSUBC(s, x, x, x);" in text
    assert "TADDSC(t, s, static_cast<std::int32_t>(static_cast<std::int32_t>(INT64_C(7))), x);" in text


def test_a_scalar_where_a_tile_belongs_and_the_reverse_are_refused() -> None:
    @pl.function(type=pl.FunctionType.InCore)
    def k(
        a: pl.Tensor[[4, 16], pl.FP32], y: pl.Out[pl.Tensor[[4, 16], pl.FP32]]
    ) -> pl.Tensor[[4, 16], pl.FP32]:
        x = pl.load(a, [0, 0], [4, 16])
        return pl.store(pl.addc(x, 1.0, x), [0, 0], y)

    with pytest.raises(KernelError, match=r"pl.addc: rhs must be a tile, got"):
        _ = k.ir

    @pl.function(type=pl.FunctionType.InCore)
    def k2(
        a: pl.Tensor[[4, 16], pl.FP32], y: pl.Out[pl.Tensor[[4, 16], pl.FP32]]
    ) -> pl.Tensor[[4, 16], pl.FP32]:
        x = pl.load(a, [0, 0], [4, 16])
        return pl.store(pl.subsc(x, x, x), [0, 0], y)

    with pytest.raises(KernelError, match=r"pl.subsc: rhs must be a scalar, got"):
        _ = k2.ir


def test_print_parses_back_to_the_same_function() -> None:
    printed = _k.ir.as_python()
    assert "pl.subc(x, x, x)" in printed
    assert "pl.addsc(s, 7, x)" in printed
    assert structural_equal(pl.parse(printed), _k.ir)
