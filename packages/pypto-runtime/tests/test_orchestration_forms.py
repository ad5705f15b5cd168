"""Orchestration forms of model programs, run on a2a3sim and checked against torch:
pl.tensor.read / pl.tensor.dim, scalar pl.min / pl.max, tensors created and windowed with
run-time extents (pl.create_tensor / pl.slice), unpacking a kernel's results
(a, b = kernel(...), also with inline-created outputs), pl.tile.transpose_view on L1, and
fixed-width windows that run past their tensor's end (a descriptor of the part inside it)."""

from __future__ import annotations

import pto_backend
import pytest

import pypto.language as pl
from pypto.runtime import RunConfig, run
from pypto_testing.forms import qk_method

torch = pytest.importorskip("torch")

ROWS = 16


@pl.function(type=pl.FunctionType.InCore)
def _scale_and_square(
    x: pl.Tensor[[16, 32], pl.FP32],
    scale: pl.Scalar[pl.FP32],
    scaled: pl.Out[pl.Tensor[[16, 32], pl.FP32]],
    squared: pl.Out[pl.Tensor[[16, 32], pl.FP32]],
) -> tuple[pl.Tensor[[16, 32], pl.FP32], pl.Tensor[[16, 32], pl.FP32]]:
    t = pl.load(x, [0, 0], [16, 32])
    s = pl.mul(t, scale)
    scaled = pl.store(s, [0, 0], scaled)
    squared = pl.store(pl.mul(t, t), [0, 0], squared)
    return scaled, squared


@pl.function(type=pl.FunctionType.InCore)
def _add(
    a: pl.Tensor[[16, 32], pl.FP32],
    b: pl.Tensor[[16, 32], pl.FP32],
    out: pl.Out[pl.Tensor[[16, 32], pl.FP32]],
) -> pl.Tensor[[16, 32], pl.FP32]:
    return pl.store(pl.add(pl.load(a, [0, 0], [16, 32]), pl.load(b, [0, 0], [16, 32])), [0, 0], out)


def _build(total_rows: int):
    """A builder function: the annotations name its arguments."""

    @pl.program
    class Blocks:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(
            self,
            x: pl.Tensor[[total_rows, 32], pl.FP32],
            cfg: pl.Tensor[[2], pl.INT64],
            out: pl.Out[pl.Tensor[[total_rows, 32], pl.FP32]],
        ) -> pl.Tensor[[total_rows, 32], pl.FP32]:
            blocks = pl.tensor.read(cfg, [0])
            cols = pl.tensor.read(cfg, [1])
            last = pl.tensor.dim(x, 0) // ROWS - 1
            for i in pl.range(pl.min(blocks, last + 1)):
                row = pl.max(i * ROWS, 0)
                xi = pl.slice(x, [ROWS, cols], [row, 0])
                scaled_buf = pl.create_tensor([ROWS, cols], dtype=pl.FP32)
                squared_buf = pl.create_tensor([ROWS, cols], dtype=pl.FP32)
                scaled, squared = _scale_and_square(xi, 3.0, scaled_buf, squared_buf)
                oi = pl.slice(out, [ROWS, cols], [row, 0])
                _add(scaled, squared, oi)
            return out

    return Blocks


def test_runtime_extents_scalar_min_max_and_unpacking() -> None:
    total = 4 * ROWS
    x = torch.randn(total, 32)
    out = torch.zeros(total, 32)
    cfg = torch.tensor([3, 32], dtype=torch.int64)  # 3 of the 4 blocks
    run(_build(total), x, cfg, out)
    ref = torch.zeros(total, 32)
    ref[: 3 * ROWS] = 3.0 * x[: 3 * ROWS] + x[: 3 * ROWS] * x[: 3 * ROWS]
    torch.testing.assert_close(out, ref)
    # more blocks asked than the tensor has: pl.min bounds the loop by the tensor's extent
    out.zero_()
    run(_build(total), x, torch.tensor([9, 32], dtype=torch.int64), out)
    torch.testing.assert_close(out, 3.0 * x + x * x)


@pl.program
class InlineOutputs:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self, x: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]
    ) -> pl.Tensor[[16, 32], pl.FP32]:
        scaled, squared = _scale_and_square(
            x, 2.0, pl.create_tensor([16, 32], dtype=pl.FP32), pl.create_tensor([16, 32], dtype=pl.FP32)
        )
        out = _add(scaled, squared, out)
        return out


def test_unpacked_names_are_the_inline_created_tensors_the_kernel_wrote() -> None:
    x = torch.randn(16, 32)
    out = torch.zeros(16, 32)
    run(InlineOutputs, x, out, config=RunConfig())
    torch.testing.assert_close(out, 2.0 * x + x * x)


def test_a_window_with_a_runtime_extent_outside_its_tensor_fails_the_run() -> None:
    total = 2 * ROWS
    x = torch.randn(total, 32)
    out = torch.zeros(total, 32)
    with pytest.raises(
        Exception, match=r"pl.slice of .x. .*the window \[0, 40\) on axis 1 is outside the tensor.s extent 32"
    ):
        run(_build(total), x, torch.tensor([2, 40], dtype=torch.int64), out)


def test_min_max_outside_a_kernel_are_pythons() -> None:
    assert pl.min(3, 7) == 3
    assert pl.max(3, 7) == 7
    assert pl.tensor.read is pl.read
    assert pl.tensor.dim is pl.dim
    assert "read" in pl.tensor.__all__
    assert "load" not in pl.tensor.__all__  # no tensor form


@pl.program
class QKt:
    qk = qk_method(16, 32, 64, pl.BF16)


def test_transpose_view_on_l1_gives_q_times_k_transposed() -> None:
    pto_backend.needs_bfloat16()  # the same kernel in FP16 matches on the official backend too
    q = torch.randn(16, 64, dtype=torch.bfloat16)
    k = torch.randn(32, 64, dtype=torch.bfloat16)
    out = torch.zeros(16, 32)
    run(QKt, q, k, out, config=RunConfig())
    torch.testing.assert_close(out, q.float() @ k.float().T, rtol=1e-4, atol=1e-3)


@pl.program
class RowBlocks:
    @pl.function(type=pl.FunctionType.InCore)
    def plus_one(
        self, x: pl.Tensor[[32, 16], pl.FP32], out: pl.Out[pl.Tensor[[32, 16], pl.FP32]]
    ) -> pl.Tensor[[32, 16], pl.FP32]:
        for b in pl.range(2):
            t = pl.load(x, [b * 16, 0], [16, 16])
            written = pl.store(pl.add(t, 1.0), [b * 16, 0], out)
        return written  # bound in the loop: after it, the tensor its stores wrote


def test_a_store_bound_in_a_loop_names_its_tensor_after_the_loop() -> None:
    x = torch.randn(32, 16)
    out = torch.zeros(32, 16)
    run(RowBlocks, x, out)
    torch.testing.assert_close(out, x + 1.0)


@pl.program
class Spmd:
    @pl.function(type=pl.FunctionType.InCore)
    def rows_by_block(
        self,
        x: pl.Tensor[[96, 16], pl.FP32],
        out: pl.Out[pl.Tensor[[96, 16], pl.FP32]],
        blocks: pl.Scalar[pl.INDEX],
    ) -> pl.Tensor[[96, 16], pl.FP32]:
        idx = pl.tile.get_block_idx()
        num = pl.tile.get_block_num()
        for b in pl.range(idx, blocks, num):  # block idx takes row blocks idx, idx + num, ...
            t = pl.load(x, [b * 16, 0], [16, 16])
            marked = pl.add(pl.mul(t, 0.0), pl.cast(idx * 10 + num, pl.FP32))
            out = pl.store(marked, [b * 16, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        x: pl.Tensor[[96, 16], pl.FP32],
        out: pl.Out[pl.Tensor[[96, 16], pl.FP32]],
        spread: pl.Out[pl.Tensor[[96, 16], pl.FP32]],
    ) -> tuple[pl.Tensor[[96, 16], pl.FP32], pl.Tensor[[96, 16], pl.FP32]]:
        with pl.cluster():  # noqa: SIM117 - the nesting upstream programs write
            with pl.spmd(core_num=4, sync_start=True):
                spread = self.rows_by_block(x, spread, 6)
        out = self.rows_by_block(x, out, 6)  # outside pl.spmd: block 0 of 1
        return out, spread


def test_spmd_blocks_see_their_index_and_count() -> None:
    x = torch.randn(96, 16)
    out = torch.zeros(96, 16)
    spread = torch.zeros(96, 16)
    run(Spmd, x, out, spread)
    # row block b is written by SPMD block b % 4, which writes 10 * idx + 4
    want = torch.tensor([10.0 * (b % 4) + 4 for b in range(6)]).repeat_interleave(16)[:, None].expand(96, 16)
    torch.testing.assert_close(spread, want)
    torch.testing.assert_close(out, torch.ones(96, 16))  # idx 0, num 1 everywhere


WIDTH = 16  # rows gathered per task: a fixed-width window of the index table


@pl.program
class GatherRows:
    @pl.function(type=pl.FunctionType.InCore)
    def gather(
        self,
        rows: pl.Tensor[[WIDTH], pl.INT32],
        src: pl.Tensor[[64, 32], pl.FP32],
        count: pl.Scalar[pl.INDEX],
        out: pl.Out[pl.Tensor[[WIDTH, 32], pl.FP32]],
    ) -> pl.Tensor[[WIDTH, 32], pl.FP32]:
        for i, (acc,) in pl.range(count, init_values=(out,)):
            row = pl.read(rows, i)
            written = pl.store(pl.load(src, [row, 0], [1, 32]), [i, 0], acc)
            (acc_next,) = pl.yield_(written)
        return acc_next

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        table: pl.Tensor[[40], pl.INT32],
        src: pl.Tensor[[64, 32], pl.FP32],
        cfg: pl.Tensor[[1], pl.INT64],
        out: pl.Out[pl.Tensor[[40, 32], pl.FP32]],
    ) -> pl.Tensor[[40, 32], pl.FP32]:
        reads_up_to = pl.tensor.read(cfg, [0])
        for blk in pl.range(0, 40, WIDTH):
            # the last windows ([32, 48) of 40 entries) run past the table's and out's end
            rows = pl.slice(table, [WIDTH], [blk])
            out_rows = pl.slice(out, [WIDTH, 32], [blk, 0])
            self.gather(rows, src, pl.min(WIDTH, reads_up_to - blk), out_rows)
        return out


def test_a_fixed_width_window_past_the_tensor_end_holds_the_tensors_part() -> None:
    table = torch.randperm(64)[:40].to(torch.int32)
    src = torch.randn(64, 32)
    out = torch.zeros(40, 32)
    run(GatherRows, table, src, torch.tensor([40]), out, config=RunConfig())
    torch.testing.assert_close(out, src[table.long()])


def test_a_kernel_reading_past_a_windows_part_inside_the_tensor_fails() -> None:
    table = torch.arange(40, dtype=torch.int32)
    out = torch.zeros(40, 32)
    # the last task reads entries 8..15 of a window that holds only 8 of the table's entries
    with pytest.raises(Exception, match=r"'gather'.*at \(0, 8\) outside the tensor's last dims \[1, 8\]"):
        run(GatherRows, table, torch.randn(64, 32), torch.tensor([48]), out, config=RunConfig())
