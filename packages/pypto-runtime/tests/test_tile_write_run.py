"""``pl.tile.write`` on a2a3sim: elements of a Vec tile set from scalars (constants, values read
from the tile, run-time positions), as a statement (the name then holds the written tile, also
in a loop), as ``t[i, j] = v`` and as a value, against torch; a run-time position outside the tile fails the task."""

from __future__ import annotations

import pytest

import pypto.language as pl
import simpler
from pypto.runtime import run

torch = pytest.importorskip("torch")


@pl.program
class Writes:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(
        self,
        a: pl.Tensor[[8, 16], pl.FP32],
        at: pl.Tensor[[1, 8], pl.INT32],
        y: pl.Out[pl.Tensor[[8, 16], pl.FP32]],
    ) -> pl.Tensor[[8, 16], pl.FP32]:
        t = pl.load(a, [0, 0], [8, 16])
        pl.tile.write(t, [0, 3], 7.5)
        t[2, 5] = 4.0  # the subscript form
        for i in pl.range(8):
            pl.tile.write(t, [i, i], pl.tile.read(t, [i, 0]) * 2.0)  # the diagonal: twice column 0
        col = pl.tensor.read(at, [0, 0])  # a run-time position
        u = pl.write(t, [7, col], -1.0)
        return pl.store(u, [0, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def orchestrator(
        self,
        a: pl.Tensor[[8, 16], pl.FP32],
        at: pl.Tensor[[1, 8], pl.INT32],
        y: pl.Out[pl.Tensor[[8, 16], pl.FP32]],
    ) -> pl.Tensor[[8, 16], pl.FP32]:
        return self.kernel(a, at, y)


def test_writes_set_their_elements_and_nothing_else() -> None:
    a, y = torch.randn(8, 16), torch.zeros(8, 16)
    run(Writes, a, torch.full((1, 8), 12, dtype=torch.int32), y)
    want = a.clone()
    want[0, 3] = 7.5
    want[2, 5] = 4.0
    for i in range(8):
        want[i, i] = want[i, 0] * 2
    want[7, 12] = -1.0
    torch.testing.assert_close(y, want, rtol=0, atol=0)


def test_a_run_time_position_outside_the_tile_fails_the_task() -> None:
    with pytest.raises(
        simpler.DeviceError, match=r"tile write: element \(7, 16\) is outside the tile \[8, 16\]"
    ):
        run(Writes, torch.randn(8, 16), torch.full((1, 8), 16, dtype=torch.int32), torch.zeros(8, 16))
