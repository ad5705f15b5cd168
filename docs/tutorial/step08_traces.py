"""Step 8: traces: see which task ran where, when, and what it depended on.

Runs the MLP block of step 6 with diagnostics on. ``simpler.CallConfig(swimlane=True,
dep_graph=True, output_prefix=DIR)``, passed as ``RunConfig(call_config=...)``, makes the
simulated chip write, per run:

- a swimlane file: a Chrome trace (open it in https://ui.perfetto.dev or chrome://tracing),
  one track per AICPU/AICore thread, one slice per task;
- a dependency file: each task with the indices of the tasks it depends on.

``docs/simpler-runtime.md`` ("Diagnostics") gives the file names and the exact contents.

The step prints the timeline and checks, from the trace, that within each row block the four
tasks ran one after the other (each reads what the one before wrote), and that no task
depends on a task of another block (the blocks touch disjoint windows). Timings are host CPU
time on the simulator, not NPU time.

    python docs/tutorial/step08_traces.py [DIR]     # DIR: where to keep the trace (default: a temp dir)
"""

from __future__ import annotations

import itertools
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
from step06_mlp_block import ROWS, D, T, mlp_block, reference  # the program of step 6

import pypto.runtime as rt
import simpler

KERNELS_PER_BLOCK = 4  # matmul, gelu, matmul, add_layer_norm: submitted in this order


def newest(folder: Path, pattern: str) -> Path:
    found = sorted(folder.glob(pattern), key=lambda p: p.stat().st_mtime_ns)
    if not found:
        raise FileNotFoundError(f"no {pattern} in {folder}: {sorted(p.name for p in folder.iterdir())}")
    return found[-1]


def main(trace_dir: Path, keep: bool = True) -> int:
    rng = np.random.default_rng(8)
    x = rng.standard_normal((ROWS, D)).astype(np.float32)
    w1, w2 = ((rng.standard_normal((D, D)) / np.sqrt(D)).astype(np.float32) for _ in range(2))
    gamma = rng.standard_normal((1, D)).astype(np.float32)
    beta = rng.standard_normal((1, D)).astype(np.float32)
    y = np.full((ROWS, D), np.nan, np.float32)

    diagnostics = simpler.CallConfig(swimlane=True, dep_graph=True, output_prefix=str(trace_dir))
    mlp_block(x, w1, w2, gamma, beta, y, config=rt.RunConfig(call_config=diagnostics))
    err = float(np.abs(y - reference(x, w1, w2, gamma, beta)).max())
    if not np.isfinite(err) or err > 1e-4:
        print(f"step08 MISMATCH: max abs err {err:.3e}")
        return 1

    # the files of this run are the newest ones (docs/simpler-runtime.md, "Diagnostics", names them)
    swimlane = newest(trace_dir, "*swimlane*.json")
    deps_file = newest(trace_dir, "*deps*.json")
    events = json.loads(swimlane.read_text())["traceEvents"]
    threads = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    tasks = sorted((e for e in events if e.get("cat") == "task"), key=lambda e: e["args"]["task"])
    deps = {t["task"]: t["deps"] for t in json.loads(deps_file.read_text())["tasks"]}

    if keep:
        print(f"trace files: {swimlane}\n             {deps_file}")
    else:  # the temporary folder goes away when the step ends: no path to print
        print(f"trace files: {swimlane.name}, {deps_file.name} (deleted on exit; pass a DIR to keep them)")
    print(f"{'task':<22} {'core':<8} {'start us':>9} {'dur us':>8}  deps")
    for e in tasks:
        task = e["args"]["task"]
        print(f"{e['name']:<22} {threads[e['tid']]:<8} {e['ts']:9.1f} {e['dur']:8.1f}  {deps[task]}")

    blocks = ROWS // T
    if len(tasks) != blocks * KERNELS_PER_BLOCK:
        print(f"step08 MISMATCH: {len(tasks)} tasks in the trace, expected {blocks * KERNELS_PER_BLOCK}")
        return 1
    for first in range(0, len(tasks), KERNELS_PER_BLOCK):
        chain = tasks[first : first + KERNELS_PER_BLOCK]
        for prev, nxt in itertools.pairwise(chain):
            if nxt["ts"] < prev["ts"] + prev["dur"] - 0.002:  # the file rounds to 1 ns
                print(f"step08 MISMATCH: {nxt['name']} started before {prev['name']} ended")
                return 1
    for task, needs in deps.items():  # row blocks touch disjoint windows: independent
        block = task // KERNELS_PER_BLOCK
        if any(n // KERNELS_PER_BLOCK != block for n in needs):
            print(f"step08 MISMATCH: task {task} of block {block} depends on {needs}")
            return 1
    print(f"step08 ok: max abs err {err:.3e}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1:
        sys.exit(main(Path(sys.argv[1]).resolve()))
    with tempfile.TemporaryDirectory() as tmp:
        sys.exit(main(Path(tmp), keep=False))
