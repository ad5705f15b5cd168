"""Property: any graph of overlapping reads and writes computes what sequential execution does."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import simpler
from simpler import ArgDirection as D
from simpler import Buffer, CallConfig, DataType, TaskArgs

N = 24


@pytest.fixture(scope="module", params=simpler.RUNTIMES)
def two_core_worker(request: pytest.FixtureRequest) -> Iterator[simpler.Worker]:
    # two AIV threads: real concurrency; each chip runtime (TMR, HBG) derives the same order
    w = simpler.Worker(aic_threads=1, aiv_threads=2, runtime=request.param)
    w.init()
    yield w
    w.close()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), window=st.sampled_from([4, 8, 256]))
def test_random_graphs_match_sequential_execution(
    two_core_worker: simpler.Worker,
    build_callable: Callable[[str], Any],
    task_graphs: Any,
    data: st.DataObject,
    window: int,
) -> None:
    ops = data.draw(task_graphs.strategy(N), label="ops")
    h = two_core_worker.register(build_callable("interpret"))
    x = np.arange(N, dtype=np.int64)
    expected = task_graphs.sequential(x, ops)
    table = np.array(ops, dtype=np.int64).reshape(len(ops), 5)
    args = TaskArgs()
    args.add_tensor(Buffer.wrap(x.ctypes.data, x.nbytes, owner=x).tensor((N,), DataType.INT64), D.InOut)
    args.add_tensor(
        Buffer.wrap(table.ctypes.data, table.nbytes, owner=table).tensor(table.shape, DataType.INT64), D.In
    )
    two_core_worker.run(h, args, CallConfig(task_window=window, dep_pool=64), timeout=60)
    np.testing.assert_array_equal(x, expected)


def test_at_most_64_callables(worker: simpler.Worker, build_callable: Callable[[str], Any]) -> None:
    base = build_callable("vadd_tiles")
    kernel = base.children[0][1]
    handles = {
        worker.register(simpler.ChipCallable.build(base.signature, "vadd_tiles", base.binary, [(i, kernel)]))
        for i in range(simpler.MAX_CALLABLES)
    }
    assert len(handles) == simpler.MAX_CALLABLES
    with pytest.raises(ValueError, match="at most 64 callables per Worker; 64 registered"):
        worker.register(
            simpler.ChipCallable.build(base.signature, "vadd_tiles", base.binary, [(999, kernel)])
        )


def test_back_to_back_runs_keep_cross_run_order(
    two_core_worker: simpler.Worker,
    build_callable: Callable[[str], Any],
    task_graphs: Any,
) -> None:
    # Runs are orchestrated without waiting for the previous run's tasks; the tensor map spans
    # runs, so overlapping accesses still execute in submission order. The third config changes
    # the ring sizes (the chip drains before resizing).
    h = two_core_worker.register(build_callable("interpret"))
    rng = np.random.default_rng(7)
    x = np.arange(N, dtype=np.int64)
    expected = x.copy()
    runs, tables = [], []
    for i in range(12):
        ops = [
            (0, int(a), 0, int(n), int(k))
            for a, n, k in zip(
                rng.integers(0, N - 8, 6), rng.integers(1, 8, 6), rng.integers(-3, 3, 6), strict=True
            )
        ]
        ops.append((1, 0, 12, 8, 0))
        expected = task_graphs.sequential(expected, ops)
        table = np.array(ops, dtype=np.int64)
        tables.append(table)
        args = TaskArgs()
        args.add_tensor(Buffer.wrap(x.ctypes.data, x.nbytes, owner=x).tensor((N,), DataType.INT64), D.InOut)
        args.add_tensor(
            Buffer.wrap(table.ctypes.data, table.nbytes, owner=table).tensor(table.shape, DataType.INT64),
            D.In,
        )
        cfg = CallConfig(task_window=8 if i % 5 == 2 else 256)
        runs.append(two_core_worker.submit(h, args, cfg))
    for r in runs:
        r.result(timeout=60)
    np.testing.assert_array_equal(x, expected)
