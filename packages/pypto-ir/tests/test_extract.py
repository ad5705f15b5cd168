"""``pl.tile.extract`` (PTO-ISA TEXTRACT): the memories it moves between, the window check, the
instruction, and the printed text. Runs are in pypto-runtime's test_extract_run.py."""

from __future__ import annotations

from typing import Any

import pytest

import pypto.language as pl
from pypto.ir.codegen import generate_kernel
from pypto.ir.errors import KernelError
from pypto.ir.nodes import structural_equal


def _kernel(target: Any = pl.MemorySpace.Left, col: int = 64, width: int = 64) -> Any:
    @pl.function(type=pl.FunctionType.InCore)
    def k(
        a: pl.Tensor[[16, 128], pl.FP16],
        b: pl.Tensor[[64, 32], pl.FP16],
        y: pl.Out[pl.Tensor[[16, 32], pl.FP32]],
    ) -> pl.Tensor[[16, 32], pl.FP32]:
        a_mat = pl.load(a, [0, 0], [16, 128], target_memory=pl.MemorySpace.Mat)
        b_mat = pl.load(b, [0, 0], [64, 32], target_memory=pl.MemorySpace.Mat)
        a1 = pl.tile.extract(a_mat, 0, col, [16, width], target_memory=target)
        b0 = pl.tile.extract(b_mat, 0, 0, [64, 32], target_memory=pl.MemorySpace.Right)
        c = pl.matmul(a1, b0)
        return pl.store(c, [0, 0], y)

    return k


def test_the_kernel_calls_textract_at_the_offsets() -> None:
    text = generate_kernel(_kernel().ir).text
    assert (
        "TEXTRACT(a1, a_mat, static_cast<std::uint16_t>(INT64_C(0)), static_cast<std::uint16_t>(INT64_C(64)));"
        in text
    )


def test_a_window_outside_the_source_or_a_wrong_memory_is_refused() -> None:
    with pytest.raises(
        KernelError, match=r"pl.tile.extract: from a Mat tile the target_memory is Left or Right, got Vec"
    ):
        _ = _kernel(pl.MemorySpace.Vec).ir
    with pytest.raises(KernelError, match=r"pl.tile.extract"):
        _ = _kernel(col=96).ir  # columns 96..160 of a 128-column tile


def test_print_parses_back_to_the_same_function() -> None:
    k = _kernel()
    printed = k.ir.as_python()
    assert "pl.tile.extract(a_mat, 0, 64, [16, 64], target_memory=pl.MemorySpace.Left)" in printed
    assert structural_equal(pl.parse(printed), k.ir)
