"""``pl.matmul_bias`` and the GEMVs (``pl.gemv``, ``pl.gemv_acc``, ``pl.gemv_bias``; also
``pl.tile.*``): Mat operands moved to Left, Right and Bias (upstream's form), the instructions
and their accumulation phase, the Bias tile (one row in the bias table, BT), what the rules
refuse, and the printed text. Runs are in pypto-runtime's test_matmul_bias_gemv_run.py."""

from __future__ import annotations

import pytest

import pypto.language as pl
from pypto.ir.codegen import generate_kernel
from pypto.ir.errors import KernelError
from pypto.ir.nodes import structural_equal
from pypto.ir.pipeline import lower

K, N = 64, 32


@pl.program
class Gemvs:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(
        self,
        a: pl.Tensor[[1, K], pl.FP16],
        b: pl.Tensor[[K, N], pl.FP16],
        bias: pl.Tensor[[1, N], pl.FP32],
        y: pl.Out[pl.Tensor[[3, N], pl.FP32]],
    ) -> pl.Tensor[[3, N], pl.FP32]:
        ta = pl.load(a, [0, 0], [1, K], target_memory=pl.MemorySpace.Mat)
        tb = pl.load(b, [0, 0], [K, N], target_memory=pl.MemorySpace.Mat)
        tbias = pl.load(bias, [0, 0], [1, N], target_memory=pl.MemorySpace.Mat)
        acc = pl.tile.gemv(ta, tb, acc_phase="partial")
        acc = pl.gemv_acc(acc, ta, tb, acc_phase="final")
        y = pl.store(acc, [0, 0], y)
        with_bias = pl.gemv_bias(ta, tb, tbias)
        y = pl.store(with_bias, [1, 0], y)
        product = pl.tile.matmul_bias(ta, tb, tbias)
        return pl.store(product, [2, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def orchestrator(
        self,
        a: pl.Tensor[[1, K], pl.FP16],
        b: pl.Tensor[[K, N], pl.FP16],
        bias: pl.Tensor[[1, N], pl.FP32],
        y: pl.Out[pl.Tensor[[3, N], pl.FP32]],
    ) -> pl.Tensor[[3, N], pl.FP32]:
        return self.kernel(a, b, bias, y)


def test_mat_operands_are_moved_and_the_phase_is_the_instructions_template_argument() -> None:
    text = generate_kernel(lower(Gemvs).program.functions["kernel"]).text
    assert "TGEMV<AccPhase::Partial>(acc, " in text
    assert "TGEMV_ACC<AccPhase::Final>(acc__1, acc, " in text
    assert "TGEMV_BIAS(with_bias, " in text
    assert "TMATMUL_BIAS(product, " in text
    # the bias row in the bias table: one row-major row, moved there from L1
    assert "Tile<TileType::Bias, float, 1, 32, BLayout::RowMajor, -1, -1>" in text
    assert text.count("TileLeft<half, 16, 64, -1, -1>") == 4  # a [1, K] row padded to one fractal


def test_print_parses_back_to_the_same_function() -> None:
    printed = Gemvs.as_python()
    assert (
        "pl.gemv(pl.move(ta, target_memory=pl.MemorySpace.Left), pl.move(tb, target_memory=pl.MemorySpace.Right), "
        "acc_phase='partial')"
    ) in printed
    assert "pl.matmul_bias(" in printed
    assert structural_equal(pl.parse(printed), Gemvs)


def _refused(body: str, match: str) -> None:
    src = f"""
@pl.function(type=pl.FunctionType.InCore)
def k(
    a: pl.Tensor[[16, {K}], pl.FP32],
    b: pl.Tensor[[{K}, {N}], pl.FP32],
    bias: pl.Tensor[[2, {N}], pl.FP32],
    ibias: pl.Tensor[[1, {N}], pl.INT32],
    y: pl.Out[pl.Tensor[[16, {N}], pl.FP32]],
) -> pl.Tensor[[16, {N}], pl.FP32]:
    ta = pl.load(a, [0, 0], [16, {K}], target_memory=pl.MemorySpace.Mat)
    row = pl.load(a, [0, 0], [1, {K}], target_memory=pl.MemorySpace.Mat)
    tb = pl.load(b, [0, 0], [{K}, {N}], target_memory=pl.MemorySpace.Mat)
    tbias = pl.load(bias, [0, 0], [1, {N}], target_memory=pl.MemorySpace.Mat)
    {body}
    return pl.store(out, [0, 0], y)
"""
    with pytest.raises(KernelError, match=match):
        _ = pl.parse(src)


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ("out = pl.gemv(ta, tb)", r"pl.gemv: the left operand is one row \[1, K\], got \[16, 64\]"),
        (
            'out = pl.gemv(row, tb, acc_phase="last")',
            r"acc_phase must be one of unspecified, partial, final, got 'last'",
        ),
        (
            "out = pl.matmul_bias(ta, tb, pl.move(pl.load(bias, [0, 0], [1, 16], target_memory=pl.MemorySpace.Mat), target_memory=pl.MemorySpace.Bias))",
            r"pl.matmul_bias: the bias is \[1, N\] for the product's N = 32 columns, got \[1, 16\]",
        ),
        (
            "out = pl.gemv_bias(row, tb, pl.load(ibias, [0, 0], [1, 32], target_memory=pl.MemorySpace.Mat))",
            r"pl.gemv_bias: the bias is INT32 but the product accumulates in FP32",
        ),
        (
            "out = pl.move(pl.load(bias, [0, 0], [2, 32], target_memory=pl.MemorySpace.Mat), target_memory=pl.MemorySpace.Bias)",
            r"pl.move: a Bias tile is one row \[1, N\] \(the bias table\), got \[2, 32\]",
        ),
        (
            "out = pl.gemv_acc(pl.matmul(pl.move(ta, target_memory=pl.MemorySpace.Left), pl.move(tb, target_memory=pl.MemorySpace.Right)), row, tb)",
            r"pl.gemv_acc: the accumulator must be Tile\[\[1, 32\], FP32, Acc\] \(the product's\), got Tile\[\[16, 32\], FP32, Acc\]",
        ),
    ],
)
def test_what_the_rules_refuse(body: str, match: str) -> None:
    _refused(body, match)
