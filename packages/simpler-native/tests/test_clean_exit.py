"""A process that used a Worker exits cleanly, every time, even without closing it.

The chip's threads used to drop the last C++ reference to a Python-owned program after a run
completed; when that happened while the interpreter was finalising, the thread died taking the
GIL and the process aborted ("terminate called without an active exception", about 7% of
runs), and nanobind reported leaked ``ChipProgram``/``NativeRun`` instances. Now the chip holds
only C++ references (ChipProgram is enable_shared_from_this) and an atexit drain closes every
Worker still open before finalisation (simpler/worker.py).

``SIMPLER_CLEAN_EXIT_RUNS`` sets the number of short processes (default 40; the fix was
measured with 1,000).
"""

from __future__ import annotations

import gc
import importlib.util
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import simpler
from pypto_testing.scripts import ADD_PROGRAM_SOURCE
from simpler import ArgDirection as D
from simpler import Buffer, DataType, TaskArgs

RUNS = int(os.environ.get("SIMPLER_CLEAN_EXIT_RUNS", "40"))

# argv: kernels.so orchestrations.so mode; mode "wait" runs and waits, "inflight" exits with a
# run still queued, "kernel" launches in kernel mode. None closes its Worker.
CHILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    import numpy as np
    import simpler
    from simpler import ArgDirection as D, Buffer, DataType, TaskArgs

    kernels, orchestrations, mode = Path(sys.argv[1]).read_bytes(), Path(sys.argv[2]).read_bytes(), sys.argv[3]
    add = simpler.CoreCallable.build([D.In, D.In, D.Out], kernels, "aiv", entry="vadd")
    prog = simpler.ChipCallable.build([D.In, D.In, D.Out, D.Scalar], "vadd_tiles", orchestrations, children=[(0, add)])
    kernel_mode = mode == "kernel"
    w = simpler.Worker(platform="a2a3sim", execution_mode="kernel" if kernel_mode else "program")
    w.init(borrowed_context_generation=5) if kernel_mode else w.init()
    h = w.register(prog)
    a = np.ones(4096, np.float32)
    b = np.ones_like(a)
    c = np.zeros_like(a)
    args = TaskArgs()
    for arr, d in ((a, D.In), (b, D.In), (c, D.Out)):
        args.add_tensor(Buffer.wrap(arr.ctypes.data, arr.nbytes, owner=arr).tensor(arr.shape, "FLOAT32"), d)
    args.add_scalar(256, DataType.UINT32)
    run = w.launch(h, args) if kernel_mode else w.submit(h, args)
    if mode != "inflight":
        run.result(timeout=60)
        assert (c == 2).all()
    print("ran", mode, flush=True)
    """
)


@pytest.fixture(scope="module")
def binaries(
    tmp_path_factory: pytest.TempPathFactory, kernel_binary: bytes, orchestration_binary: bytes
) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("clean_exit")
    (d / "kernels.so").write_bytes(kernel_binary)
    (d / "orchestrations.so").write_bytes(orchestration_binary)
    (d / "child.py").write_text(CHILD)
    return d / "kernels.so", d / "orchestrations.so"


def _run_child(script: Path, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(script), *argv], capture_output=True, text=True, timeout=timeout, check=False
    )


def _assert_clean(proc: subprocess.CompletedProcess[str], what: str) -> None:
    assert proc.returncode == 0, f"{what}: exit code {proc.returncode}\n{proc.stderr[-2000:]}"
    assert "leaked" not in proc.stderr, f"{what}: nanobind leak report\n{proc.stderr[-2000:]}"
    assert "terminate called" not in proc.stderr, proc.stderr[-2000:]


def test_many_short_processes_exit_zero_without_leaks(binaries: tuple[Path, Path]) -> None:
    kernels, orchestrations = binaries
    script = kernels.with_name("child.py")
    modes = ["wait", "wait", "inflight", "kernel"]  # mostly the plain case; two at a time adds load
    jobs = [modes[i % len(modes)] for i in range(RUNS)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        procs = list(pool.map(lambda m: (m, _run_child(script, str(kernels), str(orchestrations), m)), jobs))
    bad = [(m, p.returncode, p.stderr[-500:]) for m, p in procs if p.returncode != 0 or "leaked" in p.stderr]
    assert not bad, f"{len(bad)} of {RUNS} processes did not exit cleanly: {bad[:3]}"
    for m, p in procs:
        _assert_clean(p, m)
        assert f"ran {m}" in p.stdout


def test_the_chip_holds_no_reference_to_the_python_program(
    worker: simpler.Worker, build_callable: Callable[[str], Any]
) -> None:
    """Queued and running runs, and their completion on a chip thread, never touch the Python
    object of the program (no refcount change), so a chip thread never needs the GIL."""
    h = worker.register(build_callable("gated"))
    native = h._native
    gc.collect()
    before = sys.getrefcount(native)
    flag = np.zeros(1, np.int64)
    args = TaskArgs().add_tensor(
        Buffer.wrap(flag.ctypes.data, flag.nbytes, owner=flag).tensor((1,), "INT64"), D.In
    )
    args.add_scalar(30_000, DataType.INT64)
    runs = [worker.submit(h, args) for _ in range(3)]  # one orchestrating, two queued
    time.sleep(0.05)
    assert not runs[0].done
    assert sys.getrefcount(native) == before
    flag[0] = 1
    for r in runs:
        r.result(timeout=60)
    assert sys.getrefcount(native) == before


def test_close_releases_the_native_programs_of_handles_that_outlive_the_worker(
    build_callable: Callable[[str], Any],
) -> None:
    w = simpler.Worker(platform="a2a3sim")
    w.init()
    h = w.register(build_callable("vadd_tiles"))
    assert h._native is not None
    w.close()
    assert h._native is None  # a framework's registry may keep h until the process ends
    with pytest.raises(simpler.WorkerClosedError):
        w.submit(h, TaskArgs())


DRAIN_CHILD = textwrap.dedent(
    """
    import atexit, sys
    from pathlib import Path
    import numpy as np

    seen = {}
    # Registered before simpler is imported, so it runs after simpler's exit drain.
    atexit.register(lambda: print("after drain: done", seen["run"].done, "closed", seen["w"]._chip is None, flush=True))

    import simpler
    import simpler.worker
    from simpler import ArgDirection as D, Buffer, DataType, TaskArgs

    orchestrations, release_ms, wait_s = Path(sys.argv[1]).read_bytes(), int(sys.argv[2]), float(sys.argv[3])
    simpler.worker.EXIT_WAIT_SECONDS = wait_s
    gated = simpler.ChipCallable.build([D.In, D.Scalar], "gated", orchestrations)
    w = simpler.Worker(platform="a2a3sim")
    w.init()
    h = w.register(gated)
    flag = simpler.Buffer.allocate(64)  # zero: the orchestration waits for it, up to release_ms
    if release_ms > 60_000:  # a run left running at exit must not read freed memory
        import ctypes
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(flag))
    args = TaskArgs().add_tensor(flag.tensor((1,), "INT64"), D.In).add_scalar(release_ms, DataType.INT64)
    seen["run"], seen["w"] = w.submit(h, args), w
    print("submitted", flush=True)
    """
)


def test_the_exit_drain_waits_for_runs_in_flight(binaries: tuple[Path, Path]) -> None:
    _, orchestrations = binaries
    script = orchestrations.with_name("drain_child.py")
    script.write_text(DRAIN_CHILD)
    # The orchestration gives up after 300 ms (the run fails): the drain waits for it, then closes.
    proc = _run_child(script, str(orchestrations), "300", "30")
    _assert_clean(proc, "drain")
    assert "after drain: done True closed True" in proc.stdout


def test_the_exit_drain_leaves_a_run_that_never_finishes(binaries: tuple[Path, Path]) -> None:
    _, orchestrations = binaries
    script = orchestrations.with_name("drain_child.py")
    script.write_text(DRAIN_CHILD)
    t0 = time.monotonic()
    proc = _run_child(script, str(orchestrations), "600000", "0.2")  # 10 minutes: "never" here
    assert time.monotonic() - t0 < 60
    _assert_clean(proc, "hung drain")
    assert "still has runs in flight after 0.2 s at exit; leaving its chip running" in proc.stderr
    assert "after drain: done False closed True" in proc.stdout


TORCH_CHILD = (
    "import torch\nimport pypto.torch as pt\n"
    + ADD_PROGRAM_SOURCE
    + textwrap.dedent(
        """
    op = pt.register(add, "clean_exit_test::add")
    a, b, out = torch.ones(32, 32), torch.ones(32, 32), torch.empty(32, 32)
    op(a, b, out)
    assert bool((out == 2).all())
    print("torch ok", flush=True)
    """
    )
)


@pytest.mark.skipif(
    importlib.util.find_spec("torch") is None or importlib.util.find_spec("pypto.torch") is None,
    reason="needs torch and pypto-torch (the whole stack)",
)
def test_a_kernel_mode_torch_process_exits_clean(tmp_path: Path) -> None:
    """Public pypto.torch API only: register an operator, call it, exit without shutdown. The
    operator stays in torch's registry until the process ends; simpler's side leaves nothing."""
    script = tmp_path / "torch_child.py"
    script.write_text(TORCH_CHILD)
    env = dict(os.environ, PYPTO_CACHE_DIR=str(tmp_path / "store"))
    for _ in range(3):
        proc = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env, check=False
        )
        _assert_clean(proc, "pypto.torch")
        assert "torch ok" in proc.stdout
