"""Inline runs (docs/simpler-runtime.md, "Threads"): a run orchestrated on the calling thread of
an idle Worker runs its chain of ready tasks on that thread, as an idle core. Its results,
errors, swimlane tracks and dependency graph are those of the same run handed to the
orchestrator and core threads (``CallConfig(orchestrate_on_caller=False)``), on both runtimes
(host_build_graph builds its graph on the calling thread either way)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from worker_failure_cases import CASES, failure_args, failure_config

import simpler
from simpler import ArgDirection as D
from simpler import Buffer, CallConfig, DataType, TaskArgs


def _stages_args(x: np.ndarray, out: np.ndarray) -> TaskArgs:
    args = TaskArgs()
    for arr, d in ((x, D.InOut), (out, D.Out)):
        args.add_tensor(Buffer.wrap(arr.ctypes.data, arr.nbytes, owner=arr).tensor((8,), DataType.INT64), d)
    return args.add_scalar(3, DataType.INT64)


def _run_traced(worker: simpler.Worker, h: Any, on_caller: bool, prefix: Path) -> tuple[Any, ...]:
    x = np.arange(8, dtype=np.int64)
    out = np.zeros_like(x)
    cfg = CallConfig(
        swimlane=True, dep_graph=True, output_prefix=str(prefix), orchestrate_on_caller=on_caller
    )
    worker.run(h, _stages_args(x, out), cfg, timeout=30)
    files = worker.flush_diagnostics()
    trace = json.loads(next(Path(f) for f in files if "swimlane" in f).read_text())
    events = trace["traceEvents"]
    tracks = sorted((e["tid"], e["args"]["name"]) for e in events if e["name"] == "thread_name")
    tasks = sorted((e["tid"], e["name"]) for e in events if e.get("ph") == "X" and e["cat"] == "task")
    graph = json.loads(next(Path(f) for f in files if "deps" in f).read_text())
    return x.tolist(), out.tolist(), tracks, tasks, graph["tasks"]


def test_inline_run_has_the_core_threads_results_and_traces(
    runtime_worker: simpler.Worker, build_callable: Callable[[str], Any], tmp_path: Path
) -> None:
    worker = runtime_worker
    h = worker.register(build_callable("stages"))
    threaded = _run_traced(worker, h, False, tmp_path / "threaded")
    inline = _run_traced(worker, h, True, tmp_path / "inline")
    assert inline == threaded
    assert len(inline[3]) == 6
    assert all(tid == 2 for tid, _ in inline[3])  # AIV 0's track


@pytest.mark.parametrize(("case", "message"), CASES, ids=[str(c) for c, _ in CASES])
def test_inline_run_reports_the_core_threads_errors(
    runtime_worker: simpler.Worker, build_callable: Callable[[str], Any], case: int, message: str
) -> None:
    worker = runtime_worker
    h = worker.register(build_callable("failures"))
    seen = []
    for on_caller in (False, True):
        args, _ = failure_args(case)
        config, message = failure_config(worker.runtime, case, message, orchestrate_on_caller=on_caller)
        with pytest.raises(simpler.DeviceError, match=message) as info:
            worker.run(h, args, config, timeout=30)
        seen.append(str(info.value))
    assert seen[0] == seen[1]
    # The Worker stays usable: a good run after the failure.
    x = np.arange(8, dtype=np.int64)
    out = np.zeros_like(x)
    worker.run(worker.register(build_callable("stages")), _stages_args(x, out), timeout=30)
    assert re.search(message, seen[1])
