"""Swimlane (Chrome trace JSON) and dependency-graph output under output_prefix."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import simpler
from simpler import ArgDirection as D
from simpler import Buffer, CallConfig, DataType, TaskArgs


def test_swimlane_and_dep_graph(
    runtime_worker: simpler.Worker, build_callable: Callable[[str], Any], tmp_path: Path
) -> None:
    worker = runtime_worker
    h = worker.register(build_callable("stages"))
    x = np.arange(8, dtype=np.int64)
    out = np.zeros_like(x)
    args = TaskArgs()
    for arr, d in ((x, D.InOut), (out, D.Out)):
        args.add_tensor(Buffer.wrap(arr.ctypes.data, arr.nbytes, owner=arr).tensor((8,), DataType.INT64), d)
    args.add_scalar(3, DataType.INT64)
    prefix = tmp_path / "diag"
    cfg = CallConfig(swimlane=True, dep_graph=True, output_prefix=str(prefix))
    worker.submit(h, args, cfg).result(timeout=30)
    files = worker.flush_diagnostics()
    assert len(files) == 2
    assert all(Path(f).parent == prefix for f in files)
    assert worker.flush_diagnostics() == []
    trace = json.loads(next(Path(f) for f in files if "swimlane" in f).read_text())
    events = trace["traceEvents"]
    threads = {e["args"]["name"] for e in events if e["name"] == "thread_name"}
    orchestrator = {
        "tensormap_and_ringbuffer": "AICPU orchestrator",
        "host_build_graph": "host orchestration (graph build)",
    }[worker.runtime]
    assert threads == {orchestrator, "AIC 0", "AIV 0"}
    slices = [e for e in events if e.get("ph") == "X" and e["cat"] == "task"]
    assert len(slices) == 6  # copy, 3 muladd, copy, muladd(x)
    assert all(e["dur"] >= 0 and e["tid"] == 2 for e in slices)  # all AIV kernels
    assert any(e["cat"] == "orchestration" for e in events if e.get("ph") == "X")
    graph = json.loads(next(Path(f) for f in files if "deps" in f).read_text())
    deps = {t["task"]: t["deps"] for t in graph["tasks"]}
    # The whole graph, not what was still running at each submit: copy -> muladd -> muladd ->
    # muladd -> copy, and the final muladd on x after the first copy read x (write after read).
    assert deps == {0: [], 1: [0], 2: [1], 3: [2], 4: [3], 5: [0]}
    assert (graph["program"], graph["call"]) == ("stages", 1)
    # The files say which program and which of its calls they belong to.
    assert sorted(Path(f).name for f in files) == ["stages_call1.deps.json", "stages_call1.swimlane.json"]
    worker.submit(h, args, cfg).result(timeout=30)
    again = sorted(Path(f).name for f in worker.flush_diagnostics())
    assert again == ["stages_call2.deps.json", "stages_call2.swimlane.json"]
    assert [t["kernel"] for t in graph["tasks"]] == [
        "copy_i64",
        "muladd",
        "muladd",
        "muladd",
        "copy_i64",
        "muladd",
    ]
