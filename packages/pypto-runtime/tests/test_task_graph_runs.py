"""Manual scopes, pl.submit, task-id arrays and task barriers, run on a2a3sim: results compared
with numpy, and the explicit edges read back from the chip's dependency-graph file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pypto.language as pl
import pypto.runtime as rt

TILE = 16
COLS = 48
FAN = 3  # tasks per stage
STAGES = 3
ROWS = STAGES * FAN * TILE


def build(barrier: bool) -> Any:
    """STAGES stages of FAN tasks; each task writes its own TILE rows of ``out`` as
    ``x * 2 + stage``. A stage waits on the whole previous stage: through the task-id array
    itself, or (``barrier``) through one pl.system.task_dummy standing for it."""

    @pl.program
    class Staged:
        @pl.function(type=pl.FunctionType.InCore)
        def band(
            self,
            x: pl.Tensor[[ROWS, COLS], pl.FP32],
            row: pl.Scalar[pl.INDEX],
            bias: pl.Scalar[pl.FP32],
            out: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]],
        ) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
            t = pl.load(x, [row, 0], [TILE, COLS])
            y = pl.add(pl.mul(t, 2.0), bias)
            return pl.store(y, [row, 0], out)

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(
            self,
            x: pl.Tensor[[ROWS, COLS], pl.FP32],
            out: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]],
        ) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
            with pl.manual_scope():
                prev = pl.array.create(FAN, pl.TASK_ID)
                for s, (before,) in pl.range(STAGES, init_values=(prev,)):
                    now = pl.array.create(FAN, pl.TASK_ID)
                    if barrier:
                        gate = pl.system.task_dummy(deps=[before])
                    for k in pl.parallel(FAN):
                        row: pl.Scalar[pl.INDEX] = (s * FAN + k) * TILE
                        bias: pl.Scalar[pl.FP32] = pl.cast(s, pl.FP32)
                        if barrier:
                            out, tid = pl.submit(self.band, x, row, bias, out, deps=[gate])
                        else:
                            out, tid = pl.submit(self.band, x, row, bias, out, deps=[before])
                        now[k] = tid
                    prev = pl.yield_(now)
            return out

    return Staged


def expected(x: np.ndarray) -> np.ndarray:
    stage = (np.arange(ROWS) // (FAN * TILE)).astype(np.float32)[:, None]
    return x * 2 + stage


def run(barrier: bool, tmp_path: Path) -> tuple[np.ndarray, np.ndarray, dict[int, list[int]], list[str]]:
    simpler = pytest.importorskip("simpler")
    prog = rt.compile(build(barrier))
    x = np.random.default_rng(3).standard_normal((ROWS, COLS)).astype(np.float32)
    out = np.zeros_like(x)
    diag = tmp_path / ("barrier" if barrier else "array")
    cfg = rt.RunConfig(call_config=simpler.CallConfig(dep_graph=True, output_prefix=str(diag)))
    prog(x, out, config=cfg)
    (graph_file,) = diag.rglob("*.deps.json")
    graph = json.loads(graph_file.read_text())
    deps = {t["task"]: t["deps"] for t in graph["tasks"]}
    kernels = [t["kernel"] for t in graph["tasks"]]
    return x, out, deps, kernels


def test_array_deps_order_each_stage_after_the_previous(tmp_path: Path) -> None:
    x, out, deps, kernels = run(False, tmp_path)
    np.testing.assert_allclose(out, expected(x), rtol=1e-6, atol=1e-6)
    assert len(kernels) == STAGES * FAN
    for task in range(FAN, STAGES * FAN):
        stage = task // FAN
        previous = set(range((stage - 1) * FAN, stage * FAN))
        assert previous <= set(deps[task]), (task, deps[task])  # the whole array is named


def test_task_dummy_stands_for_the_previous_stage(tmp_path: Path) -> None:
    x, out, deps, kernels = run(True, tmp_path)
    np.testing.assert_allclose(out, expected(x), rtol=1e-6, atol=1e-6)
    # per stage: one barrier, then FAN band tasks
    per = FAN + 1
    assert len(kernels) == STAGES * per
    barriers = [s * per for s in range(STAGES)]
    assert all(kernels[b] != kernels[b + 1] for b in barriers)
    assert deps[barriers[0]] == []  # the first stage's array has no entry set: nothing to wait on
    for s in range(1, STAGES):
        b = barriers[s]
        assert set(range(b - FAN, b)) <= set(deps[b])  # the barrier waits on the previous bands
    for s in range(STAGES):
        for task in range(barriers[s] + 1, barriers[s] + per):
            assert barriers[s] in deps[task]  # each band names its stage's barrier


def test_array_index_outside_the_array_fails_the_run() -> None:
    pytest.importorskip("simpler")

    @pl.program
    class Bad:
        @pl.function(type=pl.FunctionType.InCore)
        def band(
            self,
            x: pl.Tensor[[TILE, COLS], pl.FP32],
            out: pl.Out[pl.Tensor[[TILE, COLS], pl.FP32]],
        ) -> pl.Tensor[[TILE, COLS], pl.FP32]:
            return pl.store(pl.load(x, [0, 0], [TILE, COLS]), [0, 0], out)

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(
            self,
            x: pl.Tensor[[TILE, COLS], pl.FP32],
            n: pl.Scalar[pl.INDEX],
            out: pl.Out[pl.Tensor[[TILE, COLS], pl.FP32]],
        ) -> pl.Tensor[[TILE, COLS], pl.FP32]:
            tids = pl.array.create(2, pl.TASK_ID)
            out, tid = pl.submit(self.band, x, out)
            tids[n] = tid
            return out

    prog = rt.compile(Bad)
    x = np.ones((TILE, COLS), np.float32)
    out = np.zeros_like(x)
    prog(x, 1, out)
    np.testing.assert_array_equal(out, x)
    with pytest.raises(Exception, match=r"array update of 'tids'.*index 2 is outside the array's 2 entries"):
        prog(x, 2, np.zeros_like(x))


@pl.jit
def halves_then_whole(x: pl.Tensor, mid: pl.Out[pl.Tensor], out: pl.Out[pl.Tensor]):
    # two pl.at tasks write the halves of mid; their ids go into an array the last task waits on
    tids = pl.array.create(2, pl.TASK_ID)
    for i in pl.range(2):
        with pl.at(level=pl.Level.CORE_GROUP) as t:
            mid[i * 8 : i * 8 + 8, :] = pl.add(x[i * 8 : i * 8 + 8, :], 1.0)
        tids[i] = t
    with pl.at(level=pl.Level.CORE_GROUP, deps=[tids]):
        out[:] = pl.mul(mid, 2.0)
    return mid, out


def test_a_task_id_array_feeds_pl_at_deps_in_a_jit_function() -> None:
    pytest.importorskip("simpler")
    x = np.random.default_rng(5).standard_normal((16, 32)).astype(np.float32)
    mid, out = np.zeros_like(x), np.zeros_like(x)
    halves_then_whole(x, mid, out)
    np.testing.assert_allclose(mid, x + 1, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(out, (x + 1) * 2, rtol=1e-6, atol=1e-6)
