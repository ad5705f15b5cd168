"""CallConfig.aicpu_thread_num: one AICPU orchestrator plus n-1 scheduler threads per run, and
run completion that does not wait for later orchestrations."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import simpler
from simpler import ArgDirection as D
from simpler import Buffer, CallConfig, DataType, TaskArgs

N = 64


def _tensor(arr: np.ndarray) -> Any:
    return Buffer.wrap(arr.ctypes.data, arr.nbytes, owner=arr).tensor(arr.shape, DataType.INT64)


@pytest.fixture(scope="module")
def two_aiv_worker() -> Iterator[simpler.Worker]:
    w = simpler.Worker(aic_threads=1, aiv_threads=2)
    w.init()
    yield w
    w.close()


@pytest.mark.parametrize("n", [1, 2, 3])
def test_each_aicpu_thread_has_a_track_and_results_stay_sequential(
    two_aiv_worker: simpler.Worker,
    build_callable: Callable[[str], Any],
    task_graphs: Any,
    tmp_path: Path,
    n: int,
) -> None:
    h = two_aiv_worker.register(build_callable("interpret"))
    x = np.arange(N, dtype=np.int64) % 11
    ops = task_graphs.seeded(x, n, 300)
    expected = task_graphs.sequential(x, ops)
    table = np.array(ops, dtype=np.int64)
    args = TaskArgs()
    args.add_tensor(_tensor(x), D.InOut)
    args.add_tensor(_tensor(table), D.In)
    cfg = CallConfig(aicpu_thread_num=n, swimlane=True, output_prefix=str(tmp_path), task_window=16)
    run = two_aiv_worker.submit(h, args, cfg)
    run.result(timeout=60)
    np.testing.assert_array_equal(x, expected)
    assert run.stats["tasks_executed"] == len(ops)

    (path,) = run.diagnostics_files
    events = json.loads(Path(path).read_text())["traceEvents"]
    tracks = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    schedulers = [f"AICPU scheduler {k}" for k in range(n - 1)]
    assert sorted(tracks.values()) == sorted(["AICPU orchestrator", "AIC 0", "AIV 0", "AIV 1", *schedulers])
    aicpu = [tid for tid, name in tracks.items() if name.startswith("AICPU")]
    assert len(aicpu) == n  # one track per AICPU thread
    # Every task completion was resolved by a scheduler thread when there are any; tasks are
    # spread over the scheduler lanes, so each of them did work.
    sched = [e for e in events if e.get("ph") == "X" and e["cat"] == "scheduler"]
    assert {tracks[e["tid"]] for e in sched} == set(schedulers)
    completed = sum(int(e["name"].rsplit("completed ", 1)[1]) for e in sched)
    assert completed == (len(ops) if n > 1 else 0)
    tasks = [e for e in events if e.get("ph") == "X" and e["cat"] == "task"]
    assert len(tasks) == len(ops)
    assert all(tracks[e["tid"]].startswith("AIV") for e in tasks)


@pytest.mark.parametrize("n", [1, 2])
def test_a_run_is_done_before_a_later_orchestration_returns(
    build_callable: Callable[[str], Any], n: int
) -> None:
    # The first run is a chain of 300 muladds of 50 us each on x[0]: its orchestration returns
    # while ~256 of them (the task window) are still queued. The second run's orchestration then
    # blocks until the host sets a flag. The first run must complete as soon as its last task
    # does, not when the orchestrator is next free.
    with simpler.Worker(aic_threads=1, aiv_threads=1) as w:
        w.init()
        chain = w.register(build_callable("interpret"))
        gated = w.register(build_callable("gated"))
        x = np.zeros(4, dtype=np.int64)
        table = np.array([(0, 0, 0, 1, 0)] * 299 + [(0, 0, 0, 1, 5)], dtype=np.int64)
        a = TaskArgs()
        a.add_tensor(_tensor(x), D.InOut)
        a.add_tensor(_tensor(table), D.In)
        flag = np.zeros(1, dtype=np.int64)
        b = TaskArgs()
        b.add_tensor(_tensor(flag), D.In)
        b.add_scalar(20_000, DataType.INT64)  # the gate gives up (status 7) after 20 s
        cfg = CallConfig(aicpu_thread_num=n)
        first = w.submit(chain, a, cfg)
        second = w.submit(gated, b, cfg)
        try:
            first_done = first.wait(timeout=10)
            second_open = not second.done
        finally:
            flag[0] = 1
        second.result(timeout=30)
        assert first_done, "the first run was not done while a later orchestration was running"
        assert second_open
        first.result(timeout=0)
        assert first.stats["tasks_executed"] == 300
        assert list(x) == [5, 0, 0, 0]
