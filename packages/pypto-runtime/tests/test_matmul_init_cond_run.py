"""``pl.matmul_acc(acc, lhs, rhs, init_cond=...)`` on a2a3sim against torch: a split-K loop whose
accumulator is never zeroed (upstream's ``test_matmul_acc_init_cond.py`` program form), a
condition that holds on a later step (the steps before it are overwritten), and literal
conditions, which pick the overwriting or the accumulating form when compiling."""

from __future__ import annotations

from typing import Any

import pytest

import pypto.language as pl
from pypto.runtime import run

torch = pytest.importorskip("torch")

M, K, N, KT = 64, 256, 64, 64


def _split_k(first: int) -> Any:
    """The product over the K steps from ``first`` on: ``init_cond`` overwrites at that step."""

    @pl.program
    class SplitK:
        @pl.function(type=pl.FunctionType.InCore)
        def matmul_acc_split_k(
            self,
            a: pl.Tensor[[M, K], pl.FP32],
            b: pl.Tensor[[K, N], pl.FP32],
            c: pl.Out[pl.Tensor[[M, N], pl.FP32]],
        ) -> pl.Tensor[[M, N], pl.FP32]:
            acc = pl.tile.create([M, N], pl.FP32, target_memory=pl.MemorySpace.Acc)
            for k0 in pl.range(0, K, KT):
                a_l1 = pl.load(a, offsets=[0, k0], shapes=[M, KT], target_memory=pl.MemorySpace.Mat)
                b_l1 = pl.load(b, offsets=[k0, 0], shapes=[KT, N], target_memory=pl.MemorySpace.Mat)
                a_l0 = pl.move(a_l1, target_memory=pl.MemorySpace.Left)
                b_l0 = pl.move(b_l1, target_memory=pl.MemorySpace.Right)
                acc = pl.matmul_acc(acc, a_l0, b_l0, init_cond=(k0 == first))
            out_c = pl.store(acc, offsets=[0, 0], output_tensor=c)
            return out_c

        @pl.function(type=pl.FunctionType.Orchestration)
        def orchestrator(
            self,
            a: pl.Tensor[[M, K], pl.FP32],
            b: pl.Tensor[[K, N], pl.FP32],
            out_c: pl.Out[pl.Tensor[[M, N], pl.FP32]],
        ) -> pl.Tensor[[M, N], pl.FP32]:
            out_c = self.matmul_acc_split_k(a, b, out_c)
            return out_c

    return SplitK


@pytest.mark.parametrize("first", [0, KT, 3 * KT])
def test_init_cond_overwrites_the_accumulator_where_it_holds(first: int) -> None:
    a, b = torch.randn(M, K), torch.randn(K, N)
    c = torch.full((M, N), float("nan"))
    run(_split_k(first), a, b, c)
    want = (a[:, first:].double() @ b[first:, :].double()).float()
    torch.testing.assert_close(c, want, rtol=1e-5, atol=1e-4)


@pl.program
class LiteralConditions:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(
        self,
        a: pl.Tensor[[16, 64], pl.FP32],
        b: pl.Tensor[[64, 32], pl.FP32],
        y: pl.Out[pl.Tensor[[32, 32], pl.FP32]],
    ) -> pl.Tensor[[32, 32], pl.FP32]:
        left = pl.move(
            pl.load(a, [0, 0], [16, 64], target_memory=pl.MemorySpace.Mat), target_memory=pl.MemorySpace.Left
        )
        right = pl.move(
            pl.load(b, [0, 0], [64, 32], target_memory=pl.MemorySpace.Mat), target_memory=pl.MemorySpace.Right
        )
        acc = pl.matmul(left, right)
        twice = pl.tile.matmul_acc(acc, left, right, init_cond=False)  # acc + a @ b
        y = pl.store(twice, [0, 0], y)
        once = pl.matmul_acc(twice, left, right, init_cond=True)  # a @ b: the accumulator is dropped
        return pl.store(once, [16, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def orchestrator(
        self,
        a: pl.Tensor[[16, 64], pl.FP32],
        b: pl.Tensor[[64, 32], pl.FP32],
        y: pl.Out[pl.Tensor[[32, 32], pl.FP32]],
    ) -> pl.Tensor[[32, 32], pl.FP32]:
        return self.kernel(a, b, y)


def test_literal_conditions_pick_the_form_when_compiling() -> None:
    a, b = torch.randn(16, 64), torch.randn(64, 32)
    y = torch.zeros(32, 32)
    run(LiteralConditions, a, b, y)
    product = (a.double() @ b.double()).float()
    torch.testing.assert_close(y[:16], 2 * product, rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(y[16:], product, rtol=1e-5, atol=1e-5)
