"""``pl.tile.extract`` (PTO-ISA TEXTRACT): a window of a tile moved to another memory, on
a2a3sim against torch: K slices of cube operands held in L1 (upstream's form: Mat tiles
extracted into Left and Right, multiplied and accumulated), an accumulator's columns extracted
into Mat and multiplied again, and a Vec window."""

from __future__ import annotations

import pytest

import pypto.language as pl
from pypto.runtime import run

torch = pytest.importorskip("torch")


@pl.program
class KSlices:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(
        self,
        a: pl.Tensor[[16, 128], pl.FP32],
        b: pl.Tensor[[128, 64], pl.FP32],
        y: pl.Out[pl.Tensor[[16, 64], pl.FP32]],
    ) -> pl.Tensor[[16, 64], pl.FP32]:
        a_mat = pl.load(a, [0, 0], [16, 128], target_memory=pl.MemorySpace.Mat)
        b_mat = pl.load(b, [0, 0], [128, 64], target_memory=pl.MemorySpace.Mat)
        a0 = pl.tile.extract(a_mat, 0, 0, [16, 64], target_memory=pl.MemorySpace.Left)
        b0 = pl.tile.extract(b_mat, 0, 0, [64, 64], target_memory=pl.MemorySpace.Right)
        acc = pl.matmul(a0, b0)
        a1 = pl.tile.extract(a_mat, 0, 64, [16, 64], target_memory=pl.MemorySpace.Left)
        b1 = pl.tile.extract(b_mat, 64, 0, [64, 64], target_memory=pl.MemorySpace.Right)
        acc = pl.matmul_acc(acc, a1, b1)
        return pl.store(acc, [0, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def orchestrator(
        self,
        a: pl.Tensor[[16, 128], pl.FP32],
        b: pl.Tensor[[128, 64], pl.FP32],
        y: pl.Out[pl.Tensor[[16, 64], pl.FP32]],
    ) -> pl.Tensor[[16, 64], pl.FP32]:
        return self.kernel(a, b, y)


def test_k_slices_of_l1_operands_multiply_and_accumulate() -> None:
    a, b = torch.randn(16, 128), torch.randn(128, 64)
    y = torch.zeros(16, 64)
    run(KSlices, a, b, y)
    torch.testing.assert_close(y, (a.double() @ b.double()).float(), rtol=1e-5, atol=1e-5)


@pl.program
class AccColumns:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(  # noqa: PLR0917 - a program takes its tensors positionally
        self,
        a: pl.Tensor[[16, 32], pl.FP32],
        b: pl.Tensor[[32, 64], pl.FP32],
        c: pl.Tensor[[32, 32], pl.FP32],
        v: pl.Tensor[[16, 64], pl.FP32],
        y: pl.Out[pl.Tensor[[16, 32], pl.FP32]],
        z: pl.Out[pl.Tensor[[8, 32], pl.FP32]],
    ) -> tuple[pl.Tensor[[16, 32], pl.FP32], pl.Tensor[[8, 32], pl.FP32]]:
        left = pl.move(
            pl.load(a, [0, 0], [16, 32], target_memory=pl.MemorySpace.Mat), target_memory=pl.MemorySpace.Left
        )
        right = pl.move(
            pl.load(b, [0, 0], [32, 64], target_memory=pl.MemorySpace.Mat), target_memory=pl.MemorySpace.Right
        )
        ab = pl.matmul(left, right)
        # (a @ b)[:, 32:64] from the accumulator into L1, then times c
        upper = pl.tile.extract(ab, 0, 32, [16, 32], target_memory=pl.MemorySpace.Mat)
        c_right = pl.move(
            pl.load(c, [0, 0], [32, 32], target_memory=pl.MemorySpace.Mat), target_memory=pl.MemorySpace.Right
        )
        y = pl.store(pl.matmul(pl.move(upper, target_memory=pl.MemorySpace.Left), c_right), [0, 0], y)
        window = pl.tile.extract(
            pl.load(v, [0, 0], [16, 64]), 4, 16, [8, 32], target_memory=pl.MemorySpace.Vec
        )
        z = pl.store(window, [0, 0], z)
        return y, z

    @pl.function(type=pl.FunctionType.Orchestration)
    def orchestrator(  # noqa: PLR0917 - a program takes its tensors positionally
        self,
        a: pl.Tensor[[16, 32], pl.FP32],
        b: pl.Tensor[[32, 64], pl.FP32],
        c: pl.Tensor[[32, 32], pl.FP32],
        v: pl.Tensor[[16, 64], pl.FP32],
        y: pl.Out[pl.Tensor[[16, 32], pl.FP32]],
        z: pl.Out[pl.Tensor[[8, 32], pl.FP32]],
    ) -> tuple[pl.Tensor[[16, 32], pl.FP32], pl.Tensor[[8, 32], pl.FP32]]:
        y, z = self.kernel(a, b, c, v, y, z)
        return y, z


def test_an_accumulators_columns_into_l1_and_a_vec_window() -> None:
    a, b, c, v = torch.randn(16, 32), torch.randn(32, 64), torch.randn(32, 32), torch.randn(16, 64)
    y, z = torch.zeros(16, 32), torch.zeros(8, 32)
    run(AccColumns, a, b, c, v, y, z)
    want = ((a.double() @ b.double())[:, 32:] @ c.double()).float()
    torch.testing.assert_close(y, want, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(z, v[4:12, 16:48], rtol=0, atol=0)
