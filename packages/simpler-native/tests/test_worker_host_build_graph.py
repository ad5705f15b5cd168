"""The host_build_graph runtime: the orchestration runs on the submitting thread and builds the
whole graph, with the same dependencies as TMR; a graph whose build fails runs none of its tasks."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from worker_args import vadd_args

import simpler
from simpler import ArgDirection as D
from simpler import Buffer, CallConfig, DataType, TaskArgs

N = 24


def interpret_args(x: np.ndarray, table: np.ndarray) -> TaskArgs:
    args = TaskArgs()
    args.add_tensor(Buffer.wrap(x.ctypes.data, x.nbytes, owner=x).tensor(x.shape, DataType.INT64), D.InOut)
    args.add_tensor(
        Buffer.wrap(table.ctypes.data, table.nbytes, owner=table).tensor(table.shape, DataType.INT64), D.In
    )
    return args


@pytest.mark.parametrize(
    ("runtime", "on_caller", "returns_while_gated"),
    [
        ("tensormap_and_ringbuffer", None, True),
        ("tensormap_and_ringbuffer", True, False),
        ("host_build_graph", None, False),
    ],
)
def test_where_the_orchestration_runs(
    build_callable: Callable[[str], Any], runtime: str, on_caller: bool | None, returns_while_gated: bool
) -> None:
    # `gated` returns only once the host opens its flag: under TMR it runs on the AICPU
    # orchestrator thread, so submit returns at once, unless orchestrate_on_caller asks an idle
    # Worker to run it inside submit; under HBG it always runs inside submit, on the calling
    # thread (which holds no GIL meanwhile: this thread opens the gate).
    flag = np.zeros(1, dtype=np.int64)
    args = TaskArgs().add_tensor(
        Buffer.wrap(flag.ctypes.data, flag.nbytes, owner=flag).tensor((1,), "INT64"), D.In
    )
    args.add_scalar(20_000, DataType.INT64)
    config = simpler.CallConfig(orchestrate_on_caller=on_caller)
    with simpler.Worker(runtime=runtime) as w:
        w.init()
        h = w.register(build_callable("gated"))
        runs: list[simpler.RunHandle] = []
        submitter = threading.Thread(target=lambda: runs.append(w.submit(h, args, config)))
        submitter.start()
        # a submit that returns while gated may take a while on a loaded machine: wait for it
        # long; one that must stay inside submit is given half a second to leave wrongly
        submitter.join(timeout=30 if returns_while_gated else 0.5)
        assert (not submitter.is_alive()) == returns_while_gated
        flag[0] = 1
        submitter.join(timeout=30)
        assert not submitter.is_alive()
        runs[0].result(timeout=30)


def test_same_dependency_graph_as_tmr(
    build_callable: Callable[[str], Any], task_graphs: Any, tmp_path: Path
) -> None:
    ops = task_graphs.seeded(np.arange(N, dtype=np.int64), seed=5, count=40)
    graphs = {}
    for runtime in simpler.RUNTIMES:
        x = np.arange(N, dtype=np.int64)
        table = np.array(ops, dtype=np.int64).reshape(len(ops), 5)
        prefix = tmp_path / runtime
        with simpler.Worker(runtime=runtime, aiv_threads=2) as w:
            w.init()
            h = w.register(build_callable("interpret"))
            cfg = CallConfig(dep_graph=True, output_prefix=str(prefix), task_window=8)
            w.submit(h, interpret_args(x, table), cfg).result(timeout=60)
            (path,) = w.flush_diagnostics()
        np.testing.assert_array_equal(x, task_graphs.sequential(np.arange(N, dtype=np.int64), ops))
        graphs[runtime] = json.loads(Path(path).read_text())["tasks"]
    assert graphs["host_build_graph"] == graphs["tensormap_and_ringbuffer"]
    assert any(t["deps"] for t in graphs["host_build_graph"])


@pytest.mark.parametrize(("runtime", "submitted"), [("tensormap_and_ringbuffer", 2), ("host_build_graph", 0)])
def test_failed_build_runs_no_task(
    build_callable: Callable[[str], Any], runtime: str, submitted: int
) -> None:
    # Two good rows, then a copy that runs past x: the third submit fails. TMR has dispatched
    # the first two tasks by then; HBG submits the graph only once it is complete.
    x = np.arange(N, dtype=np.int64)
    table = np.array([(0, 0, 0, 4, 1), (0, 4, 0, 4, 1), (1, 0, 4, N, 0)], dtype=np.int64)
    with simpler.Worker(runtime=runtime) as w:
        w.init()
        h = w.register(build_callable("interpret"))
        run = w.submit(h, interpret_args(x, table))
        with pytest.raises(
            simpler.DeviceError, match=r"orchestration 'interpret': task 2 .*invalid descriptor"
        ):
            run.result(timeout=30)
        assert run.stats["tasks_submitted"] == submitted


def test_intermediates_of_a_graph_stay_within_the_heaps(build_callable: Callable[[str], Any]) -> None:
    # Every intermediate of a graph lives until the run ends, within the four heaps' total:
    # vadd_scaled allocates one float32[4096] (16 KiB); a graph that needs more is refused.
    with simpler.Worker(runtime="host_build_graph") as w:
        w.init()
        h = w.register(build_callable("vadd_scaled"))
        a = np.ones(4096, dtype=np.float32)
        c = np.zeros_like(a)
        args = vadd_args(a, a, c, 256).add_scalar(2.0, DataType.FLOAT32)
        w.run(h, args, CallConfig(heap=4096), timeout=30)  # 16 KiB of intermediates fit 4 x 4 KiB
        np.testing.assert_array_equal(c, 4 * a)
        run = w.submit(h, args, CallConfig(heap=2048))
        with pytest.raises(
            simpler.DeviceError, match="16384 bytes would exceed the host-built graph's 8192 bytes"
        ):
            run.result(timeout=30)
