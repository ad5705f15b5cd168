"""``pl.rem`` / ``pl.rems`` (PTO-ISA TREM / TREMS): what the type rules accept and refuse, the
kernel's instruction with upstream's scratch tile, and the printed text. Runs against
torch.remainder are in pypto-runtime's test_rem_run.py."""

from __future__ import annotations

from typing import Any

import pytest

import pypto.language as pl
from pypto.ir.codegen import generate_kernel
from pypto.ir.errors import KernelError
from pypto.ir.nodes import structural_equal


def _kernel(dt: Any = pl.FP32, rhs_dt: Any = None, scalar_rem: bool = False) -> Any:
    rdt = dt if rhs_dt is None else rhs_dt

    @pl.function(type=pl.FunctionType.InCore)
    def k(
        a: pl.Tensor[[4, 16], dt], b: pl.Tensor[[4, 16], rdt], y: pl.Out[pl.Tensor[[4, 16], dt]]
    ) -> pl.Tensor[[4, 16], dt]:
        ta = pl.load(a, [0, 0], [4, 16])
        tb = pl.load(b, [0, 0], [4, 16])
        tmp = pl.create_tile([4, 16], dtype=dt, target_memory=pl.MemorySpace.Vec)
        r = pl.rem(ta, tb, tmp)
        s = pl.tile.rems(r, 3, tmp)
        return pl.store(s, [0, 0], y)

    return k


def test_the_kernel_calls_trem_and_trems_with_the_scratch_tile() -> None:
    text = generate_kernel(_kernel().ir).text
    assert "TREM(r, ta, tb, tmp);" in text
    assert "TREMS(s, r, static_cast<float>(static_cast<float>(INT64_C(3))), tmp);" in text


@pytest.mark.parametrize(
    ("dt", "rhs_dt", "why"),
    [
        (pl.INT8, None, r"pl.rem: lhs must be BF16/FP16/FP32/INT16/INT32, got INT8"),
        (pl.FP32, pl.FP16, r"pl.rem: operand dtypes differ: FP32 vs FP16"),
    ],
)
def test_bad_operands_are_refused_naming_them(dt: Any, rhs_dt: Any, why: str) -> None:
    with pytest.raises(KernelError, match=why):
        _ = _kernel(dt, rhs_dt).ir


def test_rems_takes_a_scalar_divisor() -> None:
    @pl.function(type=pl.FunctionType.InCore)
    def k(
        a: pl.Tensor[[4, 16], pl.FP32], y: pl.Out[pl.Tensor[[4, 16], pl.FP32]]
    ) -> pl.Tensor[[4, 16], pl.FP32]:
        ta = pl.load(a, [0, 0], [4, 16])
        return pl.store(pl.rems(ta, ta, ta), [0, 0], y)

    with pytest.raises(
        KernelError, match=r"pl.rems: rhs must be a scalar, got .*; for a tile divisor use pl.rem"
    ):
        _ = k.ir


def test_print_parses_back_to_the_same_function() -> None:
    k = _kernel(pl.INT32)
    printed = k.ir.as_python()
    assert "pl.rem(ta, tb, tmp)" in printed
    assert "pl.rems(r, 3, tmp)" in printed
    assert structural_equal(pl.parse(printed), k.ir)
