"""Stress: a 10,000-task graph, tiny rings (back-pressure), concurrent submitters."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest
from worker_args import vadd_args

import simpler
from simpler import ArgDirection as D
from simpler import Buffer, CallConfig, DataType, TaskArgs


def counters_args(counters: np.ndarray, count: int, depth: int = 0) -> TaskArgs:
    t = Buffer.wrap(counters.ctypes.data, counters.nbytes, owner=counters).tensor(
        counters.shape, DataType.INT64
    )
    return (
        TaskArgs().add_tensor(t, D.InOut).add_scalar(count, DataType.INT64).add_scalar(depth, DataType.INT64)
    )


def test_ten_thousand_task_graph(worker: simpler.Worker, register: Callable[[str], Any]) -> None:
    h = register("many_incs")
    counters = np.zeros(64, dtype=np.int64)
    run = worker.submit(h, counters_args(counters, 10_000))
    run.result(timeout=60)
    assert run.stats == {"tasks_submitted": 10_000, "tasks_executed": 10_000}
    expected = np.bincount(np.arange(10_000) % 64, minlength=64)
    np.testing.assert_array_equal(counters, expected)


@pytest.mark.parametrize("depth", [0, 1, 5])
def test_tiny_rings_apply_back_pressure(
    worker: simpler.Worker, register: Callable[[str], Any], depth: int
) -> None:
    h = register("many_incs")
    counters = np.zeros(3, dtype=np.int64)
    cfg = CallConfig(task_window=4, dep_pool=4, heap=1024)
    worker.run(h, counters_args(counters, 500, depth), cfg, timeout=60)
    np.testing.assert_array_equal(counters, np.bincount(np.arange(500) % 3, minlength=3))


def test_tiny_heap_reuses_space_after_scopes_end(
    worker: simpler.Worker, register: Callable[[str], Any]
) -> None:
    # vadd_scaled allocates 4 KiB at depth 0 each run; a 4 KiB heap must be reclaimed between runs.
    h = register("vadd_scaled")
    a = np.arange(1024, dtype=np.float32)
    out = np.zeros_like(a)
    ta = Buffer.wrap(a.ctypes.data, a.nbytes, owner=a).tensor((1024,), "FLOAT32")
    to = Buffer.wrap(out.ctypes.data, out.nbytes, owner=out).tensor((1024,), "FLOAT32")
    for _ in range(3):
        args = TaskArgs().add_tensor(ta, D.In).add_tensor(ta, D.In).add_tensor(to, D.Out)
        args.add_scalar(128, DataType.UINT32).add_scalar(1.0, DataType.FLOAT32)
        worker.run(h, args, CallConfig(heap=4096, task_window=4, dep_pool=16), timeout=30)
        np.testing.assert_array_equal(out, a + a)


def test_concurrent_submits_from_python_threads(
    worker: simpler.Worker, register: Callable[[str], Any]
) -> None:
    h = register("vadd_tiles")

    def client(seed: int) -> None:
        rng = np.random.default_rng(seed)
        for _ in range(10):
            a = rng.standard_normal(777).astype(np.float32)
            b = rng.standard_normal(777).astype(np.float32)
            c = np.zeros_like(a)
            worker.submit(h, vadd_args(a, b, c, 100)).result(timeout=60)
            np.testing.assert_array_equal(c, a + b)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(client, range(4)))  # four clients at once; a client's failure is raised here


def test_close_finishes_queued_runs(build_callable: Callable[[str], Any]) -> None:
    w = simpler.Worker()
    w.init()
    h = w.register(build_callable("many_incs"))
    arrays = [np.zeros(8, dtype=np.int64) for _ in range(5)]
    runs = [w.submit(h, counters_args(arr, 200)) for arr in arrays]
    w.close()
    for run, arr in zip(runs, arrays, strict=True):
        assert run.done
        run.result()
        np.testing.assert_array_equal(arr, np.full(8, 25))
