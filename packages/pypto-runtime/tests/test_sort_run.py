"""``pl.sort32``, ``pl.mrgsort`` and ``pl.tile.gather_mask`` on a2a3sim against ``torch.sort``
(descending, stable), in upstream's program forms (``tests/st/runtime/ops/test_sort.py``):
32-value blocks sorted into (value, index) pairs and read back by index gather, by mask gather
and on the host; a 128-value row merged once; a 2048-value row merged three times with a run
length computed from the loop index, written with tiles, with ``pl.tensor.*`` in a ``pl.at``
scope and with the ``pl.*`` spellings; two sorted halves merged as two lists; four lists merged
by the tile form into a shorter row, with and without ``exhausted``."""

from __future__ import annotations

from typing import Any

import pytest

import pypto.language as pl
from pypto.runtime import run

torch = pytest.importorskip("torch")


def _values(shape: tuple[int, int], *, ties: bool) -> Any:
    """Random FP32 values; with ``ties``, small integers so that equal values are common."""
    if ties:
        return torch.randint(-6, 7, shape).float()
    return torch.randn(shape)


def _want(src: Any, idx: Any, block: int) -> tuple[Any, Any]:
    """Each run of ``block`` values of each row sorted descending (equal values in index order)
    and the indices carried with them: what sort32 (block 32) and the merges compute."""
    rows, cols = src.shape
    v, order = torch.sort(src.reshape(rows, cols // block, block), dim=-1, descending=True, stable=True)
    carried = torch.gather(idx.reshape(rows, cols // block, block), -1, order)
    return v.reshape(rows, cols), carried.reshape(rows, cols)


def _pairs(out: Any) -> tuple[Any, Any]:
    """The values (even columns) and index bits (odd columns) of sorted pairs."""
    return out[:, 0::2], out.view(torch.int32)[:, 1::2]


@pl.program
class Sort32Program:
    @pl.function(type=pl.FunctionType.InCore)
    def sort32_kernel(
        self,
        src_tensor: pl.Tensor[[8, 64], pl.FP32],
        idx_tensor: pl.Tensor[[8, 64], pl.UINT32],
        output: pl.Out[pl.Tensor[[8, 128], pl.FP32]],
    ) -> pl.Tensor[[8, 128], pl.FP32]:
        src_tile: pl.Tile[[8, 64], pl.FP32] = pl.load(src_tensor, offsets=[0, 0], shapes=[8, 64])
        idx_tile: pl.Tile[[8, 64], pl.UINT32] = pl.load(idx_tensor, offsets=[0, 0], shapes=[8, 64])
        sorted_tile: pl.Tile[[8, 128], pl.FP32] = pl.tile.sort32(src_tile, idx_tile)
        out: pl.Tensor[[8, 128], pl.FP32] = pl.store(sorted_tile, offsets=[0, 0], output_tensor=output)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def orchestrator(
        self,
        src_tensor: pl.Tensor[[8, 64], pl.FP32],
        idx_tensor: pl.Tensor[[8, 64], pl.UINT32],
        output: pl.Out[pl.Tensor[[8, 128], pl.FP32]],
    ) -> pl.Tensor[[8, 128], pl.FP32]:
        output = self.sort32_kernel(src_tensor, idx_tensor, output)
        return output


@pytest.mark.parametrize("ties", [False, True])
def test_sort32_sorts_each_block_of_32_into_value_index_pairs(ties: bool) -> None:
    src = _values((8, 64), ties=ties)
    idx = torch.randperm(8 * 64).reshape(8, 64).to(torch.int32)  # any indices are carried as they are
    if ties:  # equal values keep the order of their indices: give each block increasing ones
        idx = torch.arange(8 * 64, dtype=torch.int32).reshape(8, 64)
    out = torch.zeros(8, 128)
    run(Sort32Program, src, idx.to(torch.uint32), out)
    values, indices = _pairs(out)
    want_v, want_i = _want(src, idx, 32)
    assert torch.equal(values, want_v)
    assert torch.equal(indices, want_i)


@pl.program
class Sort32GatherProgram:
    """The pairs split by ``pl.tile.gather``'s index form and by its mask form."""

    @pl.function(type=pl.FunctionType.InCore)
    def sort32_gather_kernel(  # noqa: PLR0917 - a program takes its tensors positionally
        self,
        src_tensor: pl.Tensor[[8, 32], pl.FP32],
        idx_tensor: pl.Tensor[[8, 32], pl.UINT32],
        val_gather_idx: pl.Tensor[[8, 32], pl.INT32],
        idx_gather_idx: pl.Tensor[[8, 32], pl.INT32],
        gather_tmp: pl.Tensor[[8, 32], pl.INT32],
        val_output: pl.Out[pl.Tensor[[8, 32], pl.FP32]],
        idx_output: pl.Out[pl.Tensor[[8, 32], pl.FP32]],
        mask_output: pl.Out[pl.Tensor[[8, 32], pl.FP32]],
    ) -> tuple[pl.Tensor[[8, 32], pl.FP32], pl.Tensor[[8, 32], pl.FP32], pl.Tensor[[8, 32], pl.FP32]]:
        src_tile: pl.Tile[[8, 32], pl.FP32] = pl.load(src_tensor, offsets=[0, 0], shapes=[8, 32])
        idx_tile: pl.Tile[[8, 32], pl.UINT32] = pl.load(idx_tensor, offsets=[0, 0], shapes=[8, 32])
        sorted_tile: pl.Tile[[8, 64], pl.FP32] = pl.tile.sort32(src_tile, idx_tile)
        val_gidx: pl.Tile[[8, 32], pl.INT32] = pl.load(val_gather_idx, offsets=[0, 0], shapes=[8, 32])
        idx_gidx: pl.Tile[[8, 32], pl.INT32] = pl.load(idx_gather_idx, offsets=[0, 0], shapes=[8, 32])
        tmp_tile: pl.Tile[[8, 32], pl.INT32] = pl.load(gather_tmp, offsets=[0, 0], shapes=[8, 32])
        val_tile: pl.Tile[[8, 32], pl.FP32] = pl.tile.gather(sorted_tile, val_gidx, tmp_tile)
        idx_tile_fp32: pl.Tile[[8, 32], pl.FP32] = pl.tile.gather(sorted_tile, idx_gidx, tmp_tile)
        gathered: pl.Tile[[8, 32], pl.FP32] = pl.tile.gather_mask(
            sorted_tile, mask_pattern=pl.tile.MaskPattern.P0101
        )
        val_out = pl.store(val_tile, offsets=[0, 0], output_tensor=val_output)
        idx_out = pl.store(idx_tile_fp32, offsets=[0, 0], output_tensor=idx_output)
        mask_out = pl.store(gathered, offsets=[0, 0], output_tensor=mask_output)
        return val_out, idx_out, mask_out

    @pl.function(type=pl.FunctionType.Orchestration)
    def orchestrator(  # noqa: PLR0917 - a program takes its tensors positionally
        self,
        src_tensor: pl.Tensor[[8, 32], pl.FP32],
        idx_tensor: pl.Tensor[[8, 32], pl.UINT32],
        val_gather_idx: pl.Tensor[[8, 32], pl.INT32],
        idx_gather_idx: pl.Tensor[[8, 32], pl.INT32],
        gather_tmp: pl.Tensor[[8, 32], pl.INT32],
        val_output: pl.Out[pl.Tensor[[8, 32], pl.FP32]],
        idx_output: pl.Out[pl.Tensor[[8, 32], pl.FP32]],
        mask_output: pl.Out[pl.Tensor[[8, 32], pl.FP32]],
    ) -> tuple[pl.Tensor[[8, 32], pl.FP32], pl.Tensor[[8, 32], pl.FP32], pl.Tensor[[8, 32], pl.FP32]]:
        val_output, idx_output, mask_output = self.sort32_gather_kernel(
            src_tensor,
            idx_tensor,
            val_gather_idx,
            idx_gather_idx,
            gather_tmp,
            val_output,
            idx_output,
            mask_output,
        )
        return val_output, idx_output, mask_output


def test_sorted_pairs_split_by_index_gather_and_by_mask_gather() -> None:
    src = torch.randn(8, 32)
    idx = torch.arange(32, dtype=torch.int32).repeat(8, 1)
    rows = torch.arange(8, dtype=torch.int32).unsqueeze(1) * 64  # flat positions in the [8, 64] pairs
    even, odd = (
        rows + 2 * torch.arange(32, dtype=torch.int32),
        rows + 2 * torch.arange(32, dtype=torch.int32) + 1,
    )
    vals, ids, masked = torch.zeros(8, 32), torch.zeros(8, 32), torch.zeros(8, 32)
    run(
        Sort32GatherProgram,
        src,
        idx.to(torch.uint32),
        even,
        odd,
        torch.zeros(8, 32, dtype=torch.int32),
        vals,
        ids,
        masked,
    )
    want_v, want_i = _want(src, idx, 32)
    assert torch.equal(vals, want_v)
    assert torch.equal(ids.view(torch.int32), want_i)
    assert torch.equal(masked, want_v)


@pl.program
class MrgSort1Program:
    @pl.function(type=pl.FunctionType.InCore)
    def mrgsort1_kernel(
        self,
        src_tensor: pl.Tensor[[1, 128], pl.FP32],
        idx_tensor: pl.Tensor[[1, 128], pl.UINT32],
        val_output: pl.Out[pl.Tensor[[1, 128], pl.FP32]],
        idx_output: pl.Out[pl.Tensor[[1, 128], pl.UINT32]],
    ) -> tuple[pl.Tensor[[1, 128], pl.FP32], pl.Tensor[[1, 128], pl.UINT32]]:
        src_tile: pl.Tile[[1, 128], pl.FP32] = pl.load(src_tensor, offsets=[0, 0], shapes=[1, 128])
        idx_tile: pl.Tile[[1, 128], pl.UINT32] = pl.load(idx_tensor, offsets=[0, 0], shapes=[1, 128])
        sorted_tile: pl.Tile[[1, 256], pl.FP32] = pl.tile.sort32(src_tile, idx_tile)
        merged: pl.Tile[[1, 256], pl.FP32] = pl.tile.mrgsort(sorted_tile, block_len=64)
        vals: pl.Tile[[1, 128], pl.FP32] = pl.tile.gather_mask(merged, mask_pattern=pl.tile.MaskPattern.P0101)
        idx: pl.Tile[[1, 128], pl.UINT32] = pl.tile.gather_mask(
            merged, mask_pattern=pl.tile.MaskPattern.P1010, output_dtype=pl.UINT32
        )
        out_val = pl.store(vals, offsets=[0, 0], output_tensor=val_output)
        out_idx = pl.store(idx, offsets=[0, 0], output_tensor=idx_output)
        return out_val, out_idx

    @pl.function(type=pl.FunctionType.Orchestration)
    def orchestrator(
        self,
        src_tensor: pl.Tensor[[1, 128], pl.FP32],
        idx_tensor: pl.Tensor[[1, 128], pl.UINT32],
        val_output: pl.Out[pl.Tensor[[1, 128], pl.FP32]],
        idx_output: pl.Out[pl.Tensor[[1, 128], pl.UINT32]],
    ) -> tuple[pl.Tensor[[1, 128], pl.FP32], pl.Tensor[[1, 128], pl.UINT32]]:
        val_output, idx_output = self.mrgsort1_kernel(src_tensor, idx_tensor, val_output, idx_output)
        return val_output, idx_output


@pytest.mark.parametrize("ties", [False, True])
def test_one_merge_of_four_sorted_runs_sorts_128_values(ties: bool) -> None:
    src = _values((1, 128), ties=ties)
    idx = torch.arange(128, dtype=torch.int32).unsqueeze(0)
    vals, ids = torch.zeros(1, 128), torch.zeros(1, 128, dtype=torch.uint32)
    run(MrgSort1Program, src, idx.to(torch.uint32), vals, ids)
    want_v, want_i = _want(src, idx, 128)
    assert torch.equal(vals, want_v)
    assert torch.equal(ids.to(torch.int32), want_i)


@pl.program
class MrgSort1DynProgram:
    """Three merges in a loop, the run length computed from the loop index: 64, 256, 1024."""

    @pl.function(type=pl.FunctionType.InCore)
    def mrgsort1_dyn_kernel(
        self,
        src_tensor: pl.Tensor[[1, 2048], pl.FP32],
        idx_tensor: pl.Tensor[[1, 2048], pl.UINT32],
        val_output: pl.Out[pl.Tensor[[1, 2048], pl.FP32]],
    ) -> pl.Tensor[[1, 2048], pl.FP32]:
        src_tile: pl.Tile[[1, 2048], pl.FP32] = pl.load(src_tensor, offsets=[0, 0], shapes=[1, 2048])
        idx_tile: pl.Tile[[1, 2048], pl.UINT32] = pl.load(idx_tensor, offsets=[0, 0], shapes=[1, 2048])
        sorted_tile: pl.Tile[[1, 4096], pl.FP32] = pl.tile.sort32(src_tile, idx_tile)
        for i, (tile_iter,) in pl.range(3, init_values=(sorted_tile,)):
            block_len = 1 << (6 + i * 2)
            merged: pl.Tile[[1, 4096], pl.FP32] = pl.tile.mrgsort(tile_iter, block_len=block_len)
            result = pl.yield_(merged)
        vals: pl.Tile[[1, 2048], pl.FP32] = pl.tile.gather_mask(
            result, mask_pattern=pl.tile.MaskPattern.P0101
        )
        out = pl.store(vals, offsets=[0, 0], output_tensor=val_output)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def orchestrator(
        self,
        src_tensor: pl.Tensor[[1, 2048], pl.FP32],
        idx_tensor: pl.Tensor[[1, 2048], pl.UINT32],
        val_output: pl.Out[pl.Tensor[[1, 2048], pl.FP32]],
    ) -> pl.Tensor[[1, 2048], pl.FP32]:
        val_output = self.mrgsort1_dyn_kernel(src_tensor, idx_tensor, val_output)
        return val_output


def test_three_merges_with_a_run_length_from_the_loop_index_sort_2048_values() -> None:
    src = torch.randn(1, 2048)
    vals = torch.zeros(1, 2048)
    run(MrgSort1DynProgram, src, torch.arange(2048, dtype=torch.int32).unsqueeze(0).to(torch.uint32), vals)
    assert torch.equal(vals, torch.sort(src, descending=True).values)


@pl.program
class MrgSort1TensorProgram:
    """The same at tensor level: ``pl.tensor.*`` in a ``pl.at`` scope."""

    @pl.function(type=pl.FunctionType.Opaque)
    def main(
        self,
        src: pl.Tensor[[1, 2048], pl.FP32],
        idx: pl.Tensor[[1, 2048], pl.UINT32],
        val_output: pl.Out[pl.Tensor[[1, 2048], pl.FP32]],
        idx_output: pl.Out[pl.Tensor[[1, 2048], pl.UINT32]],
    ) -> tuple[pl.Tensor[[1, 2048], pl.FP32], pl.Tensor[[1, 2048], pl.UINT32]]:
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
            sorted_t = pl.tensor.sort32(src, idx)
            for i, (acc,) in pl.range(3, init_values=(sorted_t,)):
                block_len = 1 << (6 + i * 2)
                merged = pl.tensor.mrgsort(acc, block_len=block_len)
                result = pl.yield_(merged)
            vals = pl.tensor.gather(result, mask_pattern=pl.tile.MaskPattern.P0101)
            sorted_idx = pl.tensor.gather(
                result, mask_pattern=pl.tile.MaskPattern.P1010, output_dtype=pl.UINT32
            )
            val_output = pl.assemble(val_output, vals, [0, 0])
            idx_output = pl.assemble(idx_output, sorted_idx, [0, 0])
        return val_output, idx_output


@pl.program
class MrgSort1TopLevelProgram:
    """The same with the ``pl.*`` spellings."""

    @pl.function(type=pl.FunctionType.Opaque)
    def main(
        self,
        src: pl.Tensor[[1, 2048], pl.FP32],
        idx: pl.Tensor[[1, 2048], pl.UINT32],
        val_output: pl.Out[pl.Tensor[[1, 2048], pl.FP32]],
        idx_output: pl.Out[pl.Tensor[[1, 2048], pl.UINT32]],
    ) -> tuple[pl.Tensor[[1, 2048], pl.FP32], pl.Tensor[[1, 2048], pl.UINT32]]:
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
            sorted_t = pl.sort32(src, idx)
            for i, (acc,) in pl.range(3, init_values=(sorted_t,)):
                block_len = 1 << (6 + i * 2)
                merged = pl.mrgsort(acc, block_len=block_len)
                result = pl.yield_(merged)
            vals = pl.gather(result, mask_pattern=pl.tile.MaskPattern.P0101)
            sorted_idx = pl.gather(result, mask_pattern=pl.tile.MaskPattern.P1010, output_dtype=pl.UINT32)
            val_output = pl.assemble(val_output, vals, [0, 0])
            idx_output = pl.assemble(idx_output, sorted_idx, [0, 0])
        return val_output, idx_output


@pytest.mark.parametrize("program", [MrgSort1TensorProgram, MrgSort1TopLevelProgram], ids=["tensor", "pl"])
def test_tensor_level_sort_of_2048_values_with_their_indices(program: Any) -> None:
    src = torch.randint(-50, 50, (1, 2048)).float()  # many equal values: their indices keep order
    idx = torch.arange(2048, dtype=torch.int32).unsqueeze(0)
    vals, ids = torch.zeros(1, 2048), torch.zeros(1, 2048, dtype=torch.uint32)
    run(program, src, idx.to(torch.uint32), vals, ids)
    want_v, want_i = _want(src, idx, 2048)
    assert torch.equal(vals, want_v)
    assert torch.equal(ids.to(torch.int32), want_i)


@pl.program
class MrgSort2WayProgram:
    """Two halves sorted on their own (sort32, two single-list merges), then merged as two lists."""

    @pl.function(type=pl.FunctionType.Opaque)
    def main(
        self,
        src: pl.Tensor[[1, 1024], pl.FP32],
        idx: pl.Tensor[[1, 1024], pl.UINT32],
        val_output: pl.Out[pl.Tensor[[1, 1024], pl.FP32]],
        idx_output: pl.Out[pl.Tensor[[1, 1024], pl.UINT32]],
    ) -> tuple[pl.Tensor[[1, 1024], pl.FP32], pl.Tensor[[1, 1024], pl.UINT32]]:
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
            left_src = pl.tensor.slice(src, shape=[1, 512], offset=[0, 0])
            left_idx = pl.tensor.slice(idx, shape=[1, 512], offset=[0, 0])
            right_src = pl.tensor.slice(src, shape=[1, 512], offset=[0, 512])
            right_idx = pl.tensor.slice(idx, shape=[1, 512], offset=[0, 512])
            left_s32 = pl.tensor.sort32(left_src, left_idx)
            left_m1 = pl.tensor.mrgsort(left_s32, block_len=64)
            left_sorted = pl.tensor.mrgsort(left_m1, block_len=256)
            right_s32 = pl.tensor.sort32(right_src, right_idx)
            right_m1 = pl.tensor.mrgsort(right_s32, block_len=64)
            right_sorted = pl.tensor.mrgsort(right_m1, block_len=256)
            merged = pl.tensor.mrgsort(left_sorted, right_sorted)
            vals = pl.tensor.gather(merged, mask_pattern=pl.tile.MaskPattern.P0101)
            sorted_idx = pl.tensor.gather(
                merged, mask_pattern=pl.tile.MaskPattern.P1010, output_dtype=pl.UINT32
            )
            val_output = pl.assemble(val_output, vals, [0, 0])
            idx_output = pl.assemble(idx_output, sorted_idx, [0, 0])
        return val_output, idx_output


def test_two_sorted_halves_merged_as_two_lists_sort_1024_values() -> None:
    src = torch.randint(-30, 30, (1, 1024)).float()  # equal values across the halves: the left one first
    idx = torch.arange(1024, dtype=torch.int32).unsqueeze(0)
    vals, ids = torch.zeros(1, 1024), torch.zeros(1, 1024, dtype=torch.uint32)
    run(MrgSort2WayProgram, src, idx.to(torch.uint32), vals, ids)
    want_v, want_i = _want(src, idx, 1024)
    assert torch.equal(vals, want_v)
    assert torch.equal(ids.to(torch.int32), want_i)


def _four_list_program(exhausted: bool) -> Any:
    """Four sorted lists of 32 pairs (one sort32 each) merged by the tile form into a row of 96
    pairs: fewer than the 128 given, so the merge stops when the row is full (or, with
    ``exhausted``, when the first list is used up)."""

    @pl.program
    class FourLists:
        @pl.function(type=pl.FunctionType.InCore)
        def k(
            self,
            a: pl.Tensor[[4, 32], pl.FP32],
            ix: pl.Tensor[[4, 32], pl.UINT32],
            y: pl.Out[pl.Tensor[[1, 192], pl.FP32]],
        ) -> pl.Tensor[[1, 192], pl.FP32]:
            v0, i0 = pl.load(a, [0, 0], [1, 32]), pl.load(ix, [0, 0], [1, 32])
            v1, i1 = pl.load(a, [1, 0], [1, 32]), pl.load(ix, [1, 0], [1, 32])
            v2, i2 = pl.load(a, [2, 0], [1, 32]), pl.load(ix, [2, 0], [1, 32])
            v3, i3 = pl.load(a, [3, 0], [1, 32]), pl.load(ix, [3, 0], [1, 32])
            tmp = pl.tile.create([1, 192], dtype=pl.FP32)
            merged = pl.tile.mrgsort(
                pl.tile.sort32(v0, i0),
                pl.tile.sort32(v1, i1),
                pl.tile.sort32(v2, i2),
                pl.tile.sort32(v3, i3),
                tmp,
                exhausted=exhausted,
            )
            y = pl.store(merged, [0, 0], y)
            return y

        @pl.function(type=pl.FunctionType.Orchestration)
        def orchestrator(
            self,
            a: pl.Tensor[[4, 32], pl.FP32],
            ix: pl.Tensor[[4, 32], pl.UINT32],
            y: pl.Out[pl.Tensor[[1, 192], pl.FP32]],
        ) -> pl.Tensor[[1, 192], pl.FP32]:
            y = self.k(a, ix, y)
            return y

    return FourLists


@pytest.mark.parametrize("exhausted", [False, True])
def test_four_lists_merged_into_a_shorter_row(exhausted: bool) -> None:
    src = torch.randn(4, 32)
    src[3] += 10.0  # the last list holds the greatest values: it is used up first
    idx = torch.arange(128, dtype=torch.int32).reshape(4, 32)
    out = torch.zeros(1, 192)
    run(_four_list_program(exhausted), src, idx.to(torch.uint32), out)
    values, indices = _pairs(out)
    want_v, want_i = _want(src.reshape(1, 128), idx.reshape(1, 128), 128)
    taken = 32 if exhausted else 96  # with exhausted, the merge stops after the last list's 32 pairs
    assert torch.equal(values[:, :taken], want_v[:, :taken])
    assert torch.equal(indices[:, :taken], want_i[:, :taken])
