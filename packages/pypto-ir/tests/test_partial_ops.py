"""``pl.part_add`` / ``part_mul`` / ``part_max`` / ``part_min`` (PTO-ISA TPART*): what the type
rules accept and refuse, the kernel's instruction and its result's valid shape (the first
operand's), and the printed text. Runs are in pypto-runtime's test_part_run.py."""

from __future__ import annotations

from typing import Any

import pytest

import pypto.language as pl
from pypto.ir.codegen import generate_kernel
from pypto.ir.errors import KernelError
from pypto.ir.nodes import structural_equal


def _kernel(dt: Any = pl.FP32) -> Any:
    @pl.function(type=pl.FunctionType.InCore)
    def k(
        a: pl.Tensor[[4, 16], dt], b: pl.Tensor[[4, 16], dt], y: pl.Out[pl.Tensor[[4, 16], dt]]
    ) -> pl.Tensor[[4, 16], dt]:
        ta = pl.load(a, [0, 0], [4, 16], valid_shape=[3, 16])
        tb = pl.load(b, [0, 0], [4, 16], valid_shape=[4, 8])
        s = pl.part_add(ta, tb)
        m = pl.tile.part_max(s, tb)
        return pl.store(m, [0, 0], y)

    return k


def test_the_kernel_calls_tpart_with_the_first_operands_valid_shape() -> None:
    text = generate_kernel(_kernel().ir).text
    assert "TPARTADD(s, ta, tb);" in text
    assert "TPARTMAX(m, s, tb);" in text
    assert " s(ta.GetValidRow(), ta.GetValidCol());" in text


def test_a_scalar_or_an_unsupported_dtype_is_refused() -> None:
    @pl.function(type=pl.FunctionType.InCore)
    def k(
        a: pl.Tensor[[4, 16], pl.FP32], y: pl.Out[pl.Tensor[[4, 16], pl.FP32]]
    ) -> pl.Tensor[[4, 16], pl.FP32]:
        ta = pl.load(a, [0, 0], [4, 16])
        return pl.store(pl.part_min(ta, 1.0), [0, 0], y)

    with pytest.raises(KernelError, match=r"pl.part_min: rhs must be a tile or a tensor, got a scalar"):
        _ = k.ir
    with pytest.raises(KernelError, match=r"pl.part_add: operands must be .*, got UINT16"):
        _ = _kernel(pl.UINT16).ir


def test_print_parses_back_to_the_same_function() -> None:
    k = _kernel(pl.INT32)
    printed = k.ir.as_python()
    assert "pl.part_add(ta, tb)" in printed
    assert structural_equal(pl.parse(printed), k.ir)
