"""Worker program mode on a2a3sim: hand-written kernels and orchestrations end to end."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from worker_args import vadd_args, vadd_operands, wrap

import simpler
from simpler import ArgDirection as D
from simpler import Buffer, CallConfig, DataType, TaskArgs


def test_vector_add_over_many_tiles(worker: simpler.Worker, register: Callable[[str], Any]) -> None:
    h = register("vadd_tiles")
    rng = np.random.default_rng(0)
    a = rng.standard_normal(10_000).astype(np.float32)
    b = rng.standard_normal(10_000).astype(np.float32)
    c = np.zeros_like(a)
    args = TaskArgs().add_tensor(wrap(a), D.In).add_tensor(wrap(b), D.In).add_tensor(wrap(c), D.Out)
    args.add_scalar(256, DataType.UINT32)
    run = worker.submit(h, args)
    run.result(timeout=30)
    assert run.done
    np.testing.assert_array_equal(c, a + b)
    assert run.stats["tasks_executed"] == (10_000 + 255) // 256


def test_intermediate_tensor_in_ring_heap_with_scope(
    worker: simpler.Worker, register: Callable[[str], Any]
) -> None:
    h = register("vadd_scaled")
    a, b, out = vadd_operands()
    args = vadd_args(a, b, out, 64).add_scalar(0.5, DataType.FLOAT32)
    worker.run(h, args, timeout=30)
    np.testing.assert_array_equal(out, (a + b) * 0.5)


def test_matmul_tiles_on_aic(worker: simpler.Worker, register: Callable[[str], Any]) -> None:
    h = register("matmul_tiles")
    rng = np.random.default_rng(1)
    A = rng.standard_normal((48, 40)).astype(np.float32)
    B = rng.standard_normal((40, 56)).astype(np.float32)
    C = np.zeros((48, 56), dtype=np.float32)
    args = TaskArgs().add_tensor(wrap(A), D.In).add_tensor(wrap(B), D.In).add_tensor(wrap(C), D.Out)
    args.add_scalar(16, DataType.UINT32)
    worker.run(h, args, timeout=30)
    np.testing.assert_allclose(C, A @ B, rtol=1e-4, atol=1e-4)


def expected_stages(x: np.ndarray, rounds: int) -> np.ndarray:
    t = x.copy()
    for r in range(rounds):
        t = t * (2 if r % 2 == 0 else 3) + (r + 1)
    return t


def test_multi_stage_graph_respects_raw_war_waw(
    worker: simpler.Worker, register: Callable[[str], Any]
) -> None:
    h = register("stages")
    for trial in range(3):
        x = np.arange(64, dtype=np.int64) + trial
        x0 = x.copy()
        out = np.zeros_like(x)
        args = (
            TaskArgs().add_tensor(wrap(x), D.InOut).add_tensor(wrap(out), D.Out).add_scalar(5, DataType.INT64)
        )
        worker.run(h, args, timeout=30)
        np.testing.assert_array_equal(out, expected_stages(x0, 5))  # chain order (RAW, WAW)
        np.testing.assert_array_equal(x, np.full_like(x, 7))  # overwritten after it was read (WAR)


def test_explicit_dependency_orders_disjoint_tasks(
    worker: simpler.Worker, register: Callable[[str], Any]
) -> None:
    h = register("explicit_dep")
    counter = np.zeros(1, dtype=np.int64)
    for _ in range(3):
        slots = np.full(2, -1, dtype=np.int64)
        args = TaskArgs().add_tensor(wrap(slots), D.Out)
        args.add_scalar(counter.ctypes.data, DataType.UINT64).add_scalar(1, DataType.INT64)
        worker.run(h, args, timeout=30)
        assert slots[1] == slots[0] + 1


def test_scalars_round_trip_through_the_abi(worker: simpler.Worker, register: Callable[[str], Any]) -> None:
    h = register("vadd_scaled")
    a = np.full(8, 3.0, dtype=np.float32)
    b = np.full(8, 1.0, dtype=np.float32)
    out = np.zeros_like(a)
    for s in (-2.25, 1e-3, 1024.0):
        args = TaskArgs().add_tensor(wrap(a), D.In).add_tensor(wrap(b), D.In).add_tensor(wrap(out), D.Out)
        args.add_scalar(3, DataType.UINT32).add_scalar(s, DataType.FLOAT32)
        worker.run(h, args, timeout=30)
        np.testing.assert_array_equal(out, np.float32(4.0) * np.float32(s))


def test_device_memory_malloc_copy_free(worker: simpler.Worker, register: Callable[[str], Any]) -> None:
    h = register("vadd_tiles")
    n = 300
    a = np.arange(n, dtype=np.float32)
    b = np.full(n, 2.0, dtype=np.float32)
    ptrs = [worker.malloc(n * 4) for _ in range(3)]
    worker.copy_to(ptrs[0], a)
    worker.copy_to(ptrs[1], b)
    tensors = [Buffer.wrap(p, n * 4).tensor((n,), DataType.FLOAT32) for p in ptrs]
    args = TaskArgs().add_tensor(tensors[0], D.In).add_tensor(tensors[1], D.In).add_tensor(tensors[2], D.Out)
    worker.run(h, args.add_scalar(64, DataType.UINT32), timeout=30)
    c = np.zeros(n, dtype=np.float32)
    worker.copy_from(c, ptrs[2])
    np.testing.assert_array_equal(c, a + b)
    with pytest.raises(IndexError, match="past the end"):
        worker.copy_to(ptrs[0], np.zeros(n + 1, dtype=np.float32))
    for p in ptrs:
        worker.free(p)
    with pytest.raises(ValueError, match="live device allocation"):
        worker.free(ptrs[0])


def test_buffer_allocate_owns_storage(worker: simpler.Worker, register: Callable[[str], Any]) -> None:
    h = register("vadd_tiles")
    bufs = [Buffer.allocate(40) for _ in range(3)]
    views = [np.frombuffer(b.memoryview(), dtype=np.float32) for b in bufs]
    views[0][:] = np.arange(10)
    views[1][:] = 5
    args = TaskArgs()
    for b, d in zip(bufs, (D.In, D.In, D.Out), strict=True):
        args.add_tensor(b.tensor((10,), "FLOAT32"), d)
    worker.run(h, args.add_scalar(4, DataType.UINT32), timeout=30)
    np.testing.assert_array_equal(views[2], np.arange(10) + 5)


def test_same_content_same_handle_and_cap(
    worker: simpler.Worker, build_callable: Callable[[str], Any]
) -> None:
    h1 = worker.register(build_callable("vadd_tiles"))
    h2 = worker.register(build_callable("vadd_tiles"))
    h3 = worker.register(build_callable("stages"))
    assert h1 is h2
    assert h3 is not h1


def test_context_manager_and_closed_worker(build_callable: Callable[[str], Any]) -> None:
    with simpler.Worker() as w:
        w.init()
        w.register(build_callable("vadd_tiles"))
    with pytest.raises(simpler.WorkerClosedError, match="closed"):
        w.register(build_callable("vadd_tiles"))
    fresh = simpler.Worker()
    with pytest.raises(simpler.WorkerClosedError, match="init"):
        fresh.malloc(16)
    fresh.close()


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_device_platforms_fail_at_init_with_what_is_missing(platform: str) -> None:
    w = simpler.Worker(platform=platform)
    with pytest.raises(simpler.UnsupportedPlatformError, match="CANN"):
        w.init()
    w.close()


def test_submit_checks_arguments_before_running(
    worker: simpler.Worker, register: Callable[[str], Any]
) -> None:
    h = register("vadd_tiles")
    a = np.zeros(8, dtype=np.float32)
    args = TaskArgs().add_tensor(wrap(a), D.In).add_tensor(wrap(a), D.In)
    with pytest.raises(ValueError, match="expects 3 tensors and 1 scalars, got 2 and 0"):
        worker.submit(h, args)
    args = TaskArgs().add_tensor(wrap(a), D.In).add_tensor(wrap(a), D.Out).add_tensor(wrap(a), D.Out)
    with pytest.raises(ValueError, match=r"tensor 1 .* is In in the signature but was added as Out"):
        worker.submit(h, args.add_scalar(1, DataType.UINT32))
    with pytest.raises(ValueError, match=r"task_window\[0\]: expected a power of two"):
        worker.submit(h, TaskArgs(), CallConfig(task_window=6))


def test_submit_takes_materialised_arguments_as_launch_does(
    worker: simpler.Worker, register: Callable[[str], Any]
) -> None:
    h = register("vadd_tiles")
    a, b, c = vadd_operands()
    mat = vadd_args(a, b, c, 256).materialize()
    run = worker.submit(h, mat, keep_alive=(a, b, c))
    run.result(timeout=30)
    np.testing.assert_array_equal(c, a + b)
    # Counts and directions are checked as for a TaskArgs; the chip checks each descriptor.
    with pytest.raises(ValueError, match="expects 3 tensors and 1 scalars, got 2 and 1"):
        worker.submit(h, simpler.ChipStorageTaskArgs(mat.tensors[:2], mat.directions[:2], mat.scalars))
    with pytest.raises(ValueError, match=r"tensor 2 .* is Out in the signature but was added as In"):
        worker.submit(h, simpler.ChipStorageTaskArgs(mat.tensors, (1, 1, 1), mat.scalars))
    addr, _size, dtype, shape, strides, start = mat.tensors[2]
    short = (addr, 16, dtype, shape, strides, start)  # claims 16 bytes of storage for 4000
    with pytest.raises(IndexError, match="tensor 2: invalid descriptor"):
        worker.submit(h, simpler.ChipStorageTaskArgs((*mat.tensors[:2], short), mat.directions, mat.scalars))
