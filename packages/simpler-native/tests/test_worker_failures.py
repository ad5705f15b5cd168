"""Failures surface in RunHandle.result() naming the task and kernel; the Worker stays usable."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from worker_args import vadd_args
from worker_failure_cases import CASES, failure_args, failure_config

import simpler
from simpler import ArgDirection as D
from simpler import Buffer, DataType, TaskArgs


@pytest.mark.parametrize(("case", "message"), CASES, ids=[str(c) for c, _ in CASES])
def test_failure_is_reported_and_worker_stays_usable(
    runtime_worker: simpler.Worker, build_callable: Callable[[str], Any], case: int, message: str
) -> None:
    worker = runtime_worker
    h = worker.register(build_callable("failures"))
    args, _ = failure_args(case)
    config, message = failure_config(worker.runtime, case, message)
    run = worker.submit(h, args, config)
    with pytest.raises(simpler.DeviceError, match=message):
        run.result(timeout=30)
    # Still usable: a good run right after.
    ok = worker.register(build_callable("vadd_tiles"))
    a = np.arange(32, dtype=np.float32)
    c = np.zeros_like(a)
    worker.run(ok, vadd_args(a, a, c, 8), timeout=30)
    np.testing.assert_array_equal(c, a + a)


def test_failed_run_skips_remaining_kernels(worker: simpler.Worker, register: Callable[[str], Any]) -> None:
    h = register("failures")
    args, _ = failure_args(0)
    run = worker.submit(h, args)
    with pytest.raises(simpler.DeviceError):
        run.result(timeout=30)
    assert run.stats["tasks_submitted"] == 1


def test_out_of_bounds_argument_rejected_before_running(
    worker: simpler.Worker, register: Callable[[str], Any]
) -> None:
    h = register("failures")
    ptr = worker.malloc(64)
    # The descriptor claims 128 bytes of a 64-byte device allocation.
    t = Buffer.wrap(ptr, 128).tensor((32,), DataType.FLOAT32)
    args = TaskArgs().add_tensor(t, D.In).add_scalar(0, DataType.INT64)
    with pytest.raises(IndexError, match="runs past its device allocation"):
        worker.submit(h, args)
    worker.free(ptr)


def test_register_rejects_bad_binaries(worker: simpler.Worker, kernel_binary: bytes) -> None:
    with pytest.raises(RuntimeError, match="not a loadable shared object"):
        worker.register(simpler.ChipCallable.build([D.In], "nope", b"not an elf"))
    with pytest.raises(ValueError, match="does not export 'missing_orch'"):
        worker.register(simpler.ChipCallable.build([D.In], "missing_orch", kernel_binary))
    core = simpler.CoreCallable.build([D.In], kernel_binary, "aiv", entry="no_such_kernel")
    with pytest.raises(ValueError, match="does not export 'no_such_kernel'"):
        worker.register(simpler.ChipCallable.build([D.In], "x", kernel_binary, children=[(0, core)]))


def test_needs_entry_must_match_signature(worker: simpler.Worker, orchestration_binary: bytes) -> None:
    cc = simpler.ChipCallable.build([D.In, D.In], "vadd_tiles", orchestration_binary)
    with pytest.raises(
        ValueError, match="vadd_tiles_needs expects 3 tensors and 1 scalars, the signature has 2 and 0"
    ):
        worker.register(cc)


def test_kernel_without_threads_of_its_core_type(build_callable: Callable[[str], Any]) -> None:
    with simpler.Worker(aic_threads=0, aiv_threads=1) as w:
        w.init()
        h = w.register(build_callable("matmul_tiles"))
        A = np.zeros((4, 4), dtype=np.float32)
        args = vadd_args(A, A, A, 4)
        with pytest.raises(ValueError, match="needs an AIC thread, but this Worker has none"):
            w.submit(h, args)
