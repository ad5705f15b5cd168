"""SPMD launches and pl.system operations run on a2a3sim and checked against torch:
``pl.system.syncall`` as a barrier among the blocks of a launch (each block reads what another
wrote before it), ``pl.spmd_submit`` and ``with pl.spmd(...) as tid`` ordering a later launch,
the core-count queries sizing a launch, pipe-ordering hints that leave the numbers alone, and
``pl.split_aiv`` lanes with ``pl.aiv_shard`` / ``pl.aic_gather``."""

from __future__ import annotations

import pytest

import pypto.language as pl
from pypto.runtime import run

torch = pytest.importorskip("torch")


@pl.program
class RotateAfterBarrier:
    """Each of 4 blocks writes 3 * its rows of x to a scratch tensor, meets the others at
    pl.system.syncall, then adds the rows the next block wrote to its own rows of x."""

    @pl.function(type=pl.FunctionType.InCore)
    def rotate(
        self,
        x: pl.Tensor[[64, 16], pl.FP32],
        scratch: pl.InOut[pl.Tensor[[64, 16], pl.FP32]],
        out: pl.Out[pl.Tensor[[64, 16], pl.FP32]],
    ) -> pl.Tensor[[64, 16], pl.FP32]:
        i = pl.tile.get_block_idx()
        n = pl.tile.get_block_num()
        mine = pl.load(x, [i * 16, 0], [16, 16])
        scratch = pl.store(pl.mul(mine, 3.0), [i * 16, 0], scratch)
        pl.system.syncall()
        nxt = pl.load(scratch, [((i + 1) % n) * 16, 0], [16, 16])
        out = pl.store(pl.add(nxt, mine), [i * 16, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self, x: pl.Tensor[[64, 16], pl.FP32], out: pl.Out[pl.Tensor[[64, 16], pl.FP32]]
    ) -> pl.Tensor[[64, 16], pl.FP32]:
        scratch = pl.create_tensor([64, 16], dtype=pl.FP32)
        with pl.spmd(core_num=4):
            out = self.rotate(x, scratch, out)
        return out


def test_syncall_blocks_read_what_other_blocks_wrote_before_the_barrier() -> None:
    x = torch.randn(64, 16)
    out = torch.zeros(64, 16)
    run(RotateAfterBarrier, x, out)
    torch.testing.assert_close(out, x + 3 * torch.roll(x, -16, 0))


@pl.program
class TwoPhases:
    """Two barriers, the soft form with the launch's count: block i sums the 3 blocks' rows in
    phase 2 and then rescales what block (i + 1) % 3 wrote in phase 2."""

    @pl.function(type=pl.FunctionType.InCore)
    def phases(
        self,
        x: pl.Tensor[[24, 8], pl.FP32],
        ws: pl.Tensor[[8], pl.INT32],
        stage: pl.InOut[pl.Tensor[[24, 8], pl.FP32]],
        out: pl.Out[pl.Tensor[[24, 8], pl.FP32]],
    ) -> pl.Tensor[[24, 8], pl.FP32]:
        i = pl.tile.get_block_idx()
        stage = pl.store(pl.load(x, [i * 8, 0], [8, 8]), [i * 8, 0], stage)
        pl.system.syncall(mode="soft", core_type="aiv_only", gm_workspace=ws, used_cores=3)
        total = pl.add(
            pl.add(pl.load(stage, [0, 0], [8, 8]), pl.load(stage, [8, 0], [8, 8])),
            pl.load(stage, [16, 0], [8, 8]),
        )
        pl.system.syncall(mode="soft", core_type="aiv_only", gm_workspace=ws, used_cores=0)
        stage = pl.store(total, [i * 8, 0], stage)
        pl.system.syncall()
        other = pl.load(stage, [((i + 1) % 3) * 8, 0], [8, 8])
        out = pl.store(pl.mul(other, i + 1), [i * 8, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        x: pl.Tensor[[24, 8], pl.FP32],
        ws: pl.Tensor[[8], pl.INT32],
        out: pl.Out[pl.Tensor[[24, 8], pl.FP32]],
    ) -> pl.Tensor[[24, 8], pl.FP32]:
        stage = pl.create_tensor([24, 8], dtype=pl.FP32)
        with pl.spmd(3):
            out = self.phases(x, ws, stage, out)
        return out


def test_soft_syncall_and_repeated_barriers() -> None:
    x = torch.randn(24, 8)
    out = torch.zeros(24, 8)
    run(TwoPhases, x, torch.zeros(8, dtype=torch.int32), out)
    total = x[0:8] + x[8:16] + x[16:24]
    torch.testing.assert_close(out, torch.cat([total * 1, total * 2, total * 3]))


@pl.program
class InlineRing:
    """An inline pl.spmd body that syncs: block b adds the exp of the rows block b - 1 wrote."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self, x: pl.Tensor[[48, 8], pl.FP32], out: pl.Out[pl.Tensor[[48, 8], pl.FP32]]
    ) -> pl.Tensor[[48, 8], pl.FP32]:
        scratch = pl.create_tensor([48, 8], dtype=pl.FP32)
        for b in pl.spmd(3, name_hint="ring"):
            t = pl.load(x, [b * 16, 0], [16, 8])
            scratch = pl.store(pl.exp(t), [b * 16, 0], scratch)
            pl.system.syncall()
            before = pl.load(scratch, [((b + 2) % 3) * 16, 0], [16, 8])
            out = pl.store(pl.add(before, t), [b * 16, 0], out)
        with pl.at(level=pl.Level.CORE_GROUP):  # one block: the barrier is passed at once
            last = pl.load(out, [32, 0], [16, 8])
            pl.system.syncall(core_type="mix")
            out = pl.store(pl.neg(last), [32, 0], out)
        return out


def test_syncall_in_an_inline_spmd_body_and_in_a_single_scope() -> None:
    x = torch.randn(48, 8)
    out = torch.zeros(48, 8)
    run(InlineRing, x, out)
    want = x + torch.roll(x.exp(), 16, 0)
    want[32:] = -want[32:]
    torch.testing.assert_close(out, want)


@pl.program
class WrongParticipants:
    @pl.function(type=pl.FunctionType.InCore)
    def k(
        self, ws: pl.Tensor[[8], pl.INT32], out: pl.Out[pl.Tensor[[16, 8], pl.FP32]]
    ) -> pl.Tensor[[16, 8], pl.FP32]:
        pl.system.syncall(mode="soft", gm_workspace=ws, used_cores=3)
        out = pl.store(pl.full([16, 8], dtype=pl.FP32, value=1.0), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self, ws: pl.Tensor[[8], pl.INT32], out: pl.Out[pl.Tensor[[16, 8], pl.FP32]]
    ) -> pl.Tensor[[16, 8], pl.FP32]:
        with pl.spmd(2):
            out = self.k(ws, out)
        return out


def test_soft_syncall_with_a_participant_count_other_than_the_launch_fails_the_run() -> None:
    with pytest.raises(Exception, match=r"used_cores is 3 but the launch has 2 blocks"):
        run(WrongParticipants, torch.zeros(8, dtype=torch.int32), torch.zeros(16, 8))


@pl.program
class Pipeline:
    @pl.function(type=pl.FunctionType.InCore)
    def produce(
        self, x: pl.Tensor[[64, 16], pl.FP32], mid: pl.Out[pl.Tensor[[64, 16], pl.FP32]]
    ) -> pl.Tensor[[64, 16], pl.FP32]:
        i = pl.tile.get_block_idx()
        mid = pl.store(pl.exp(pl.load(x, [i * 16, 0], [16, 16])), [i * 16, 0], mid)
        return mid

    @pl.function(type=pl.FunctionType.InCore)
    def consume(
        self, mid: pl.Tensor[[64, 16], pl.FP32], out: pl.Out[pl.Tensor[[64, 16], pl.FP32]]
    ) -> pl.Tensor[[64, 16], pl.FP32]:
        i = pl.tile.get_block_idx()
        out = pl.store(pl.sub(pl.load(mid, [i * 32, 0], [32, 16]), 1.0), [i * 32, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self, x: pl.Tensor[[64, 16], pl.FP32], out: pl.Out[pl.Tensor[[64, 16], pl.FP32]]
    ) -> pl.Tensor[[64, 16], pl.FP32]:
        with pl.manual_scope():
            mid = pl.create_tensor([64, 16], dtype=pl.FP32)
            mid, produced = pl.spmd_submit(self.produce, x, mid, core_num=4, sync_start=True)
            out, _ = pl.spmd_submit(self.consume, mid, out, core_num=2, deps=[produced])
        return out


def test_spmd_submit_launch_waits_for_every_block_of_its_dependency() -> None:
    x = torch.randn(64, 16)
    out = torch.zeros(64, 16)
    run(Pipeline, x, out)
    torch.testing.assert_close(out, x.exp() - 1)


@pl.program
class InlineStages:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self, a: pl.Tensor[[48, 8], pl.FP32], out: pl.Out[pl.Tensor[[48, 8], pl.FP32]]
    ) -> pl.Tensor[[48, 8], pl.FP32]:
        with pl.manual_scope():
            mid = pl.create_tensor([48, 8], dtype=pl.FP32)
            with pl.spmd(3, name_hint="halve") as first:
                i = pl.tile.get_block_idx()
                mid = pl.store(pl.mul(pl.load(a, [i * 16, 0], [16, 8]), 0.5), [i * 16, 0], mid)
            with pl.spmd(6, name_hint="square", deps=[first]) as second:  # noqa: F841
                j = pl.tile.get_block_idx()
                t = pl.load(mid, [j * 8, 0], [8, 8])
                out = pl.store(pl.mul(t, t), [j * 8, 0], out)
        return out


def test_with_spmd_as_tid_orders_a_later_launch_with_other_block_boundaries() -> None:
    a = torch.randn(48, 8)
    out = torch.zeros(48, 8)
    run(InlineStages, a, out)
    torch.testing.assert_close(out, (a * 0.5) ** 2)


@pl.program
class EveryCluster:
    """One block per cluster of the chip: the width is pl.system.available_cluster_count()."""

    @pl.function(type=pl.FunctionType.InCore)
    def fill(self, out: pl.Out[pl.Tensor[[24, 8], pl.FP32]]) -> pl.Tensor[[24, 8], pl.FP32]:
        i = pl.tile.get_block_idx()
        n = pl.tile.get_block_num()
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.system.bar_v()
        pl.system.bar_all()
        pl.system.fence()
        pl.system.cacheinvalid(out, [1, 8], [i, 0])
        pl.system.cacheinvalid()
        row = pl.full([1, 8], dtype=pl.FP32, value=0.0)
        out = pl.store(pl.add(row, i * 100 + n), [i, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, out: pl.Out[pl.Tensor[[24, 8], pl.FP32]]) -> pl.Tensor[[24, 8], pl.FP32]:
        pl.system.fence()
        with pl.spmd(pl.system.available_cluster_count()):
            out = self.fill(out)
        return out


def test_cluster_count_sizes_a_launch_and_pipe_hints_leave_results_alone() -> None:
    out = torch.zeros(24, 8)
    run(EveryCluster, out)
    want = (torch.arange(24, dtype=torch.float32) * 100 + 24)[:, None].expand(24, 8)
    torch.testing.assert_close(out, want)


@pl.program
class LaneColumns:
    """A matmul result read by the two vector lanes, each on its half of the columns."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        a: pl.Tensor[[32, 32], pl.FP32],
        b: pl.Tensor[[32, 64], pl.FP32],
        out: pl.Out[pl.Tensor[[32, 64], pl.FP32]],
    ) -> pl.Tensor[[32, 64], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            a_l1 = pl.load(a, [0, 0], [32, 32], target_memory=pl.MemorySpace.Mat)
            b_l1 = pl.load(b, [0, 0], [32, 64], target_memory=pl.MemorySpace.Mat)
            c = pl.matmul(
                pl.move(a_l1, target_memory=pl.MemorySpace.Left),
                pl.move(b_l1, target_memory=pl.MemorySpace.Right),
            )
            for lane in pl.split_aiv(2, mode=pl.SplitMode.LEFT_RIGHT):
                half: pl.Tile[[32, 32], pl.FP32] = pl.aiv_shard(c)
                out = pl.store(pl.add(half, pl.tile.get_subblock_idx() * 10), [0, lane * 32], out)
        return out


def test_split_aiv_lanes_each_read_their_half_of_a_cube_result() -> None:
    a = torch.randn(32, 32)
    b = torch.randn(32, 64)
    out = torch.zeros(32, 64)
    run(LaneColumns, a, b, out)
    want = a @ b
    want[:, 32:] += 10
    torch.testing.assert_close(out, want, rtol=1e-4, atol=1e-4)


@pl.program
class LaneRows:
    """Each lane exponentiates its own rows; pl.aic_gather joins the halves into one tile."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self, x: pl.Tensor[[32, 16], pl.FP32], out: pl.Out[pl.Tensor[[32, 16], pl.FP32]]
    ) -> pl.Tensor[[32, 16], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
                t = pl.load(x, [lane * 16, 0], [16, 16])
                whole = pl.aic_gather(pl.exp(t))
            out = pl.store(pl.mul(whole, 2.0), [0, 0], out)
        return out


def test_split_aiv_gather_joins_the_lanes_halves() -> None:
    x = torch.randn(32, 16)
    out = torch.zeros(32, 16)
    run(LaneRows, x, out)
    torch.testing.assert_close(out, 2 * x.exp())


@pl.program
class LaneTasks:
    """mode=NONE: both lanes run the whole body; each takes every other 8-row block."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self, x: pl.Tensor[[32, 8], pl.FP32], out: pl.Out[pl.Tensor[[32, 8], pl.FP32]]
    ) -> pl.Tensor[[32, 8], pl.FP32]:
        for lane in pl.split_aiv(2, mode=pl.SplitMode.NONE):
            for k in pl.range(2):
                r = (k * 2 + lane) * 8
                out = pl.store(pl.neg(pl.load(x, [r, 0], [8, 8])), [r, 0], out)
        return out


def test_split_aiv_none_lanes_divide_work_by_lane_index() -> None:
    x = torch.randn(32, 8)
    out = torch.zeros(32, 8)
    run(LaneTasks, x, out)
    torch.testing.assert_close(out, -x)
