"""Inline pl.spmd bodies (``for i in pl.spmd(n):`` / ``with pl.spmd(n):`` over kernel code) run on
a2a3sim, each block on its own rows, checked against torch."""

from __future__ import annotations

import pytest

import pypto.language as pl
from pypto.runtime import run

torch = pytest.importorskip("torch")


@pl.program
class RowBlocks:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        x: pl.Tensor[[48, 16], pl.FP32],
        bias: pl.Tensor[[16, 16], pl.FP32],
        out: pl.Out[pl.Tensor[[48, 16], pl.FP32]],
    ) -> pl.Tensor[[48, 16], pl.FP32]:
        for blk in pl.spmd(3, name_hint="row_block"):
            t = pl.load(x, [blk * 16, 0], [16, 16])
            b = pl.load(bias, [0, 0], [16, 16])
            out = pl.store(pl.add(pl.mul(t, blk), b), [blk * 16, 0], out)
        return out


@pl.program
class BlockQueries:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self, x: pl.Tensor[[32, 8], pl.FP32], out: pl.Out[pl.Tensor[[32, 8], pl.FP32]]
    ) -> pl.Tensor[[32, 8], pl.FP32]:
        with pl.spmd(core_num=4):
            i = pl.tile.get_block_idx()
            n = pl.tile.get_block_num()
            t = pl.load(x, [i * 8, 0], [8, 8])
            out = pl.store(pl.sub(t, n), [i * 8, 0], out)
        return out


def test_for_spmd_blocks_each_write_their_rows() -> None:
    x = torch.randn(48, 16)
    bias = torch.randn(16, 16)
    out = torch.zeros(48, 16)
    run(RowBlocks, x, bias, out)
    scale = torch.arange(3, dtype=torch.float32).repeat_interleave(16)[:, None]
    torch.testing.assert_close(out, x * scale + bias.repeat(3, 1))


def test_with_spmd_inline_body_reads_block_index_and_count() -> None:
    x = torch.randn(32, 8)
    out = torch.zeros(32, 8)
    run(BlockQueries, x, out)
    torch.testing.assert_close(out, x - 4.0)
