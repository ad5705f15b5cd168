"""Run on a2a3sim and checked against torch: tiles placed with ``pl.tile.alloc`` /
``pl.MemRef`` (the form a planned program is printed in), a kernel's several results held as one
tuple (``t = self.kernel(...)``, then ``t[0]``), ``res = pl.submit(...)`` and
``res = pl.spmd_submit(...)`` without unpacking, and tile-typed parameters of an inline helper."""

from __future__ import annotations

import pytest

import pypto.language as pl
from pypto.runtime import run

torch = pytest.importorskip("torch")


@pl.program
class Placed:
    @pl.function(type=pl.FunctionType.AIV)
    def scale_add(
        self,
        x: pl.Tensor[[32, 64], pl.FP32],
        y: pl.Tensor[[32, 64], pl.FP32],
        out: pl.Out[pl.Tensor[[32, 64], pl.FP32]],
    ) -> pl.Tensor[[32, 64], pl.FP32]:
        buf_a: pl.Ptr = pl.tile.alloc(pl.Mem.Vec, 16384)
        buf_b: pl.Ptr = pl.tile.alloc(pl.Mem.Vec, 8192)
        # two tiles of 8 KiB side by side in buf_a, a third in buf_b
        a: pl.Tile[[32, 64], pl.FP32, pl.MemRef(buf_a, 0, 8192), pl.Mem.Vec] = pl.tile.load(
            x, [0, 0], [32, 64]
        )
        b: pl.Tile[[32, 64], pl.FP32, pl.MemRef(buf_a, 8192, 8192), pl.Mem.Vec] = pl.tile.load(
            y, [0, 0], [32, 64]
        )
        c: pl.Tile[[32, 64], pl.FP32, pl.MemRef(buf_b, 0, 8192), pl.Mem.Vec] = pl.tile.add(
            pl.tile.mul(a, 3.0), b
        )
        out = pl.tile.store(c, [0, 0], out)
        return out


def test_placed_tiles_compute_as_unplaced_ones_and_the_placements_are_recorded() -> None:
    x, y = torch.randn(32, 64), torch.randn(32, 64)
    out = torch.zeros(32, 64)
    run(Placed, x, y, out)
    torch.testing.assert_close(out, 3 * x + y)
    placed = Placed.functions["scale_add"].placements
    assert [(p.tile, p.allocation, p.space, p.byte_offset, p.size) for p in placed] == [
        ("a", "buf_a", pl.Mem.Vec, 0, 8192),
        ("b", "buf_a", pl.Mem.Vec, 8192, 8192),
        ("c", "buf_b", pl.Mem.Vec, 0, 8192),
    ]


@pl.program
class TupleResults:
    @pl.function(type=pl.FunctionType.AIV)
    def split_stats(
        self,
        x: pl.Tensor[[16, 32], pl.FP32],
        rows: pl.Out[pl.Tensor[[16, 1], pl.FP32]],
        doubled: pl.Out[pl.Tensor[[16, 32], pl.FP32]],
    ) -> tuple[pl.Tensor[[16, 1], pl.FP32], pl.Tensor[[16, 32], pl.FP32]]:
        t = pl.tile.load(x, [0, 0], [16, 32])
        r0 = pl.tile.store(pl.row_sum(t), [0, 0], rows)
        r1 = pl.tile.store(pl.tile.add(t, t), [0, 0], doubled)
        return r0, r1

    @pl.function(type=pl.FunctionType.InCore)
    def shift(
        self,
        a: pl.Tensor[[16, 32], pl.FP32],
        s: pl.Tensor[[16, 1], pl.FP32],
        out: pl.Out[pl.Tensor[[16, 32], pl.FP32]],
    ) -> pl.Tensor[[16, 32], pl.FP32]:
        out = pl.store(
            pl.row_expand_sub(pl.load(a, [0, 0], [16, 32]), pl.load(s, [0, 0], [16, 1])), [0, 0], out
        )
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self, x: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]
    ) -> pl.Tensor[[16, 32], pl.FP32]:
        rows = pl.create_tensor([16, 1], dtype=pl.FP32)
        doubled = pl.create_tensor([16, 32], dtype=pl.FP32)
        res: pl.Tuple[pl.Tensor[[16, 1], pl.FP32], pl.Tensor[[16, 32], pl.FP32]] = self.split_stats(
            x, rows, doubled
        )
        out = self.shift(res[1], res[0], out)
        return out


def test_a_kernels_results_held_as_one_tuple_and_indexed() -> None:
    x = torch.randn(16, 32)
    out = torch.zeros(16, 32)
    run(TupleResults, x, out)
    torch.testing.assert_close(out, 2 * x - x.sum(dim=1, keepdim=True))


@pl.program
class WholeSubmits:
    @pl.function(type=pl.FunctionType.InCore)
    def plus_one(
        self, x: pl.Tensor[[64, 16], pl.FP32], out: pl.Out[pl.Tensor[[64, 16], pl.FP32]]
    ) -> pl.Tensor[[64, 16], pl.FP32]:
        i = pl.tile.get_block_idx()
        out = pl.store(pl.add(pl.load(x, [i * 16, 0], [16, 16]), 1.0), [i * 16, 0], out)
        return out

    @pl.function(type=pl.FunctionType.InCore)
    def square(
        self, x: pl.Tensor[[64, 16], pl.FP32], out: pl.Out[pl.Tensor[[64, 16], pl.FP32]]
    ) -> pl.Tensor[[64, 16], pl.FP32]:
        t = pl.load(x, [0, 0], [64, 16])
        out = pl.store(pl.mul(t, t), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self, x: pl.Tensor[[64, 16], pl.FP32], out: pl.Out[pl.Tensor[[64, 16], pl.FP32]]
    ) -> pl.Tensor[[64, 16], pl.FP32]:
        with pl.manual_scope():
            mid = pl.create_tensor([64, 16], dtype=pl.FP32)
            first = pl.spmd_submit(self.plus_one, x, mid, core_num=4)
            second = pl.submit(self.square, first[0], out, deps=[first[1]])
            out = second[0]
        return out


def test_spmd_submit_and_submit_results_held_whole_order_the_tasks() -> None:
    x = torch.randn(64, 16)
    out = torch.zeros(64, 16)
    run(WholeSubmits, x, out)
    torch.testing.assert_close(out, (x + 1) ** 2)


@pl.jit.inline
def _blend(a: pl.Tile[[16, 16], pl.FP32], b: pl.Tile[[16, 16], pl.FP32]) -> pl.Tile[[16, 16], pl.FP32]:
    return pl.add(pl.mul(a, 0.25), b)


@pl.program
class TileHelper:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        x: pl.Tensor[[16, 16], pl.FP32],
        y: pl.Tensor[[16, 16], pl.FP32],
        out: pl.Out[pl.Tensor[[16, 16], pl.FP32]],
    ) -> pl.Tensor[[16, 16], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            out = pl.store(_blend(pl.load(x, [0, 0], [16, 16]), pl.load(y, [0, 0], [16, 16])), [0, 0], out)
        return out


def test_an_inline_helper_with_tile_parameters() -> None:
    x, y = torch.randn(16, 16), torch.randn(16, 16)
    out = torch.zeros(16, 16)
    run(TileHelper, x, y, out)
    torch.testing.assert_close(out, x / 4 + y)


@pl.program
class WhileReads:
    @pl.function(type=pl.FunctionType.InCore)
    def bump(
        self, x: pl.Tensor[[16, 16], pl.FP32], o: pl.InOut[pl.Tensor[[16, 16], pl.FP32]]
    ) -> pl.Tensor[[16, 16], pl.FP32]:
        o = pl.store(pl.add(pl.load(x, [0, 0], [16, 16]), 1.0), [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        x: pl.Tensor[[16, 32], pl.FP32],
        cfg: pl.Tensor[[1, 4], pl.INT64],
        lim: pl.Tensor[[1, 4], pl.FP32],
        out: pl.Out[pl.Tensor[[16, 32], pl.FP32]],
        acc: pl.InOut[pl.Tensor[[16, 16], pl.FP32]],
    ) -> pl.Tensor[[16, 32], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [0, 0], [16, 32])
            k: pl.Scalar[pl.INT64] = 0
            while k < pl.read(cfg, [0, k % 4]):  # the bound is read again before every iteration
                t = pl.add(t, 1.0)
                k = k + 1
                if k == 2:
                    continue  # continue tests the condition afresh too
            out = pl.store(t, [0, 0], out)
        n: pl.Scalar[pl.INT64] = 0
        while pl.tensor.read(lim, [0, 0]) > n:
            acc = self.bump(acc, acc)
            n = n + 1
        return out


@pytest.mark.parametrize(("bounds", "limit"), [([3, 2, 9, 9], 2.5), ([0, 5, 5, 5], 0.0), ([9, 9, 9, 1], 4.0)])
def test_while_conditions_that_read_tensors(bounds: list[int], limit: float) -> None:
    x = torch.randn(16, 32)
    acc0 = torch.randn(16, 16)
    out, acc = torch.zeros(16, 32), acc0.clone()
    run(WhileReads, x, torch.tensor([bounds]), torch.tensor([[limit, 0.0, 0.0, 0.0]]), out, acc)
    k = 0
    while k < bounds[k % 4]:  # the same loops in Python
        k += 1
    n = 0
    while limit > n:
        n += 1
    torch.testing.assert_close(out, x + k)
    torch.testing.assert_close(acc, acc0 + n)


@pl.program
class TileWindows:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        x: pl.Tensor[[32, 64], pl.FP32],
        y: pl.Tensor[[8, 16], pl.FP32],
        r: pl.Tensor[[1, 64], pl.FP32],
        row: pl.Scalar[pl.INDEX],
        out: pl.Out[pl.Tensor[[32, 64], pl.FP32]],
    ) -> pl.Tensor[[32, 64], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [0, 0], [32, 64])
            t[8:16, 16:32] = pl.load(y, [0, 0], [8, 16])
            t[row] = pl.load(r, [0, 0], [1, 64])
            out = pl.store(t, [0, 0], out)
        return out


def test_window_writes_into_a_tile() -> None:
    x, y, r = torch.randn(32, 64), torch.randn(8, 16), torch.randn(1, 64)
    out = torch.zeros(32, 64)
    run(TileWindows, x, y, r, 20, out)
    ref = x.clone()
    ref[8:16, 16:32] = y
    ref[20] = r[0]
    torch.testing.assert_close(out, ref)


@pl.program
class ScalarForms:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        cfg: pl.Tensor[[1, 4], pl.INT64],
        f: pl.Tensor[[1, 4], pl.FP32],
        x: pl.Tensor[[16, 16], pl.FP32],
        out: pl.Out[pl.Tensor[[16, 16], pl.FP32]],
    ) -> pl.Tensor[[16, 16], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            a = pl.read(cfg, [0, 0])
            b = pl.read(cfg, [0, 1])
            c = pl.sub(pl.mul(pl.add(a, b), b), 1)  # (a + b) * b - 1
            d = pl.div(pl.read(f, [0, 0]), pl.read(f, [0, 1]))
            t = pl.add(pl.mul(pl.load(x, [0, 0], [16, 16]), d), pl.cast(c + ~a, pl.FP32))
            if not b:
                t = pl.add(t, 100.0)
            out = pl.store(t, [0, 0], out)
        return out


@pytest.mark.parametrize(("a", "b"), [(3, 4), (-2, 0), (7, 1)])
def test_scalar_arithmetic_through_the_op_names_and_not_and_invert(a: int, b: int) -> None:
    x = torch.randn(16, 16)
    out = torch.zeros(16, 16)
    run(ScalarForms, torch.tensor([[a, b, 0, 0]]), torch.tensor([[3.0, 4.0, 0.0, 0.0]]), x, out)
    want = x * 0.75 + ((a + b) * b - 1 + ~a) + (100.0 if not b else 0.0)
    torch.testing.assert_close(out, want)
