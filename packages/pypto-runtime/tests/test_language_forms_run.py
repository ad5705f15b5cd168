"""Language forms run on a2a3sim and checked against torch: inline pl.spmd bodies
(``for i in pl.spmd(n):`` / ``with pl.spmd(n):`` over kernel code, each block on its own rows),
subscripts (``t[i, j]`` elements of tensors and tiles, ``t[a:b, :]`` / ``t[i]`` sub-tiles), and a
plain ``with pl.at(...)`` block inside an InCore function."""

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


@pl.program
class Subscripts:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        a: pl.Tensor[[32, 16], pl.FP32],
        cfg: pl.InOut[pl.Tensor[[2, 2], pl.INT64]],
        out: pl.Out[pl.Tensor[[32, 16], pl.FP32]],
    ) -> pl.Tensor[[32, 16], pl.FP32]:
        r = cfg[0, 1]  # one element: pl.read(cfg, [0, 1])
        cfg[1, 0] = r + 5  # one element: pl.write(cfg, [1, 0], r + 5)
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [32, 16])
            top = t[0:16, :]  # a sub-tile
            row = t[3]  # an index keeps the rank: a [1, 16] sub-tile
            e = t[2, 5]  # one element of a tile
            out = pl.store(pl.add(top, e), [16, 0], out)
            out = pl.store(pl.mul(t[16:32, :], 2.0), [0, 0], out)
            out[r, :] = row
        return out


def test_subscripts_read_and_write_elements_and_take_sub_tiles() -> None:
    a = torch.randn(32, 16)
    cfg = torch.tensor([[0, 7], [0, 0]])
    out = torch.zeros(32, 16)
    run(Subscripts, a, cfg, out)
    want = torch.empty(32, 16)
    want[:16] = a[16:] * 2
    want[16:] = a[:16] + a[2, 5]
    want[7] = a[3]
    torch.testing.assert_close(out, want)
    assert cfg.tolist() == [[0, 7], [12, 0]]


@pl.program
class KernelWithAtBlock:
    @pl.function(type=pl.FunctionType.InCore)
    def halve(
        self, x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]
    ) -> pl.Tensor[[16, 16], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):  # already a kernel: the block is its body
            out = pl.store(pl.mul(pl.load(x, [0, 0], [16, 16]), 0.5), [0, 0], out)
        return out


def test_a_pl_at_block_in_a_kernel_is_its_body() -> None:
    x = torch.randn(16, 16)
    out = torch.zeros(16, 16)
    run(KernelWithAtBlock, x, out)
    torch.testing.assert_close(out, x * 0.5)


ORIGIN = (8, 0)  # module-level lists and tuples of ints stand for [..] literals
BLOCK = [8, 16]


@pl.program
class NamedOffsets:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self, x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]
    ) -> pl.Tensor[[16, 16], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, ORIGIN, BLOCK)
            out = pl.store(pl.exp(t), ORIGIN, out)
        return out


def test_offsets_and_shapes_named_by_module_constants() -> None:
    x = torch.randn(16, 16)
    out = torch.zeros(16, 16)
    run(NamedOffsets, x, out)
    want = torch.zeros(16, 16)
    want[8:] = torch.exp(x[8:])
    torch.testing.assert_close(out, want)


@pl.jit
def halves_then_whole(x: pl.Tensor, mid: pl.Out[pl.Tensor], out: pl.Out[pl.Tensor]):
    tids = pl.array.create(3, pl.TASK_ID)
    for i in pl.range(3):
        with pl.at(level=pl.Level.CORE_GROUP) as t:
            mid[i * 8 : i * 8 + 8, :] = pl.add(x[i * 8 : i * 8 + 8, :], 1.0)
        tids[i] = t
    # the comprehension is unrolled when compiling: deps=[tids[0], tids[1], tids[2]]
    with pl.at(level=pl.Level.CORE_GROUP, deps=[tids[k] for k in range(3)]):
        out[:] = pl.mul(mid, 2.0)
    return mid, out


def test_deps_comprehension_waits_on_every_listed_task() -> None:
    x = torch.randn(24, 16)
    mid, out = torch.zeros(24, 16), torch.zeros(24, 16)
    halves_then_whole(x, mid, out)
    torch.testing.assert_close(mid, x + 1)
    torch.testing.assert_close(out, (x + 1) * 2)
