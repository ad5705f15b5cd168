"""Kernel mode: TMR packets through the encoding cache, copy-on-enqueue, AICPU-side validation."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from worker_args import vadd_args

import simpler
from simpler import ArgDirection as D
from simpler import Buffer, DataType, TaskArgs

_generations = itertools.count(1000)


@pytest.fixture(params=simpler.RUNTIMES)
def kworker(request: pytest.FixtureRequest) -> Iterator[simpler.Worker]:
    # Kernel mode on each runtime: the same packets, admission and copy-on-enqueue; HBG consumes
    # the copied packet on the launching thread, where its orchestration runs.
    w = simpler.Worker(execution_mode="kernel", runtime=request.param)
    w.init(borrowed_context_generation=next(_generations))
    yield w
    w.close()


def test_launch_runs_through_the_aicpu_consumer(
    kworker: simpler.Worker, build_callable: Callable[[str], Any]
) -> None:
    h = kworker.register(build_callable("vadd_tiles"))
    assert kworker.residency_generation(h) == 1
    a = np.arange(1000, dtype=np.float32)
    b = np.full(1000, 0.5, dtype=np.float32)
    outs = [np.zeros_like(a) for _ in range(4)]
    runs = [kworker.launch(h, vadd_args(a, b, c, 128)) for c in outs]
    kworker.default_stream.synchronize()
    for run, c in zip(runs, outs, strict=True):
        assert run.done
        np.testing.assert_array_equal(c, a + b)


def test_args_object_may_be_reused_after_launch(
    kworker: simpler.Worker, build_callable: Callable[[str], Any]
) -> None:
    # Copy-on-enqueue: the packet is a snapshot of the descriptors at launch time.
    h = kworker.register(build_callable("vadd_tiles"))
    a = np.ones(64, dtype=np.float32)
    c1, c2 = np.zeros_like(a), np.zeros_like(a)
    r1 = kworker.launch(h, vadd_args(a, a, c1, 16))
    r2 = kworker.launch(h, vadd_args(a, a, c2, 64))
    r1.result(timeout=30)
    r2.result(timeout=30)
    np.testing.assert_array_equal(c1, 2 * a)
    np.testing.assert_array_equal(c2, 2 * a)


def test_stale_packets_are_rejected_before_any_kernel_runs(
    kworker: simpler.Worker, build_callable: Callable[[str], Any]
) -> None:
    h = kworker.register(build_callable("many_incs"))
    counters = np.zeros(4, dtype=np.int64)
    t = Buffer.wrap(counters.ctypes.data, counters.nbytes, owner=counters).tensor((4,), DataType.INT64)
    slow = TaskArgs().add_tensor(t, D.InOut).add_scalar(40_000, DataType.INT64).add_scalar(0, DataType.INT64)
    args = TaskArgs().add_tensor(t, D.InOut).add_scalar(400, DataType.INT64).add_scalar(0, DataType.INT64)
    first = kworker.launch(h, slow)  # keeps the AICPU busy while the others queue up
    deadline = time.monotonic() + 30
    while counters.sum() == 0 and not first.done and time.monotonic() < deadline:
        time.sleep(0.0005)  # wait until the consumer has admitted the first packet
    queued = [kworker.launch(h, args) for _ in range(20)]
    kworker.unregister(h)  # packets still queued now carry a stale generation
    first.result(timeout=30)
    outcomes = []
    for run in queued:
        run.wait(30)
        outcomes.append(run._native.error)
    stale = [e for e in outcomes if e]
    if kworker.runtime == "host_build_graph":
        # HBG consumes each copied packet on the launching thread, before launch returns: none
        # was still queued when the slot retired, so every one ran.
        assert stale == []
    else:
        assert stale
    assert all("StaleCallable" in e and "AICPU consumer" in e for e in stale)
    # Every launch either ran completely (100 per counter) or not at all.
    ran = outcomes.count("")
    np.testing.assert_array_equal(counters, np.full(4, 10_000 + 100 * ran))
    with pytest.raises(ValueError, match="StaleCallable"):
        kworker.launch(h, args)
    h2 = kworker.register(build_callable("many_incs"))
    assert kworker.residency_generation(h2) == 2  # same slot, next generation


def test_consumer_rejects_a_corrupt_block(
    kworker: simpler.Worker, build_callable: Callable[[str], Any]
) -> None:
    kworker.register(build_callable("vadd_tiles"))
    chip = kworker._chip
    bad = [
        b"",
        b"\x05\x00\x00\x00\x00\x00\x00\x00abc",
        (56 + 3 * 128 + 8).to_bytes(8, "little") + bytes(56 + 3 * 128 + 8),
    ]
    for block in bad:
        run = chip.kernel_enqueue_block(block)
        assert run.wait(30)
        assert "rejected by the AICPU consumer" in run.error
        assert run.tasks_submitted == 0


def test_streams_and_events(kworker: simpler.Worker, build_callable: Callable[[str], Any]) -> None:
    h = kworker.register(build_callable("vadd_tiles"))
    s1, s2 = kworker.create_stream(), kworker.create_stream()
    a = np.arange(256, dtype=np.float32)
    tmp, out = np.zeros_like(a), np.zeros_like(a)
    kworker.launch(h, vadd_args(a, a, tmp, 32), stream=s1)  # tmp = 2a
    ev = s1.record()
    s2.wait_event(ev)
    kworker.launch(h, vadd_args(tmp, a, out, 32), stream=s2)  # out = tmp + a
    s2.synchronize()
    assert ev.query()
    np.testing.assert_array_equal(out, 3 * a)


def test_stream_synchronize_raises_device_errors(
    kworker: simpler.Worker, build_callable: Callable[[str], Any]
) -> None:
    h = kworker.register(build_callable("failures"))
    x = np.zeros(16, dtype=np.float32)
    t = Buffer.wrap(x.ctypes.data, x.nbytes, owner=x).tensor((16,), "FLOAT32")
    kworker.launch(h, TaskArgs().add_tensor(t, D.In).add_scalar(0, DataType.INT64))
    with pytest.raises(simpler.DeviceError, match="kernel 'fails'"):
        kworker.default_stream.synchronize()


def test_execution_mode_is_latched(
    kworker: simpler.Worker, worker: simpler.Worker, build_callable: Callable[[str], Any]
) -> None:
    kh = kworker.register(build_callable("vadd_tiles"))
    with pytest.raises(RuntimeError, match="kernel mode"):
        kworker.submit(kh, TaskArgs())
    ph = worker.register(build_callable("vadd_tiles"))
    with pytest.raises(RuntimeError, match="program mode"):
        worker.launch(ph, TaskArgs())


def test_borrowed_context_generation_rules() -> None:
    w = simpler.Worker(execution_mode="kernel")
    with pytest.raises(ValueError, match="nonzero 64-bit int, got None"):
        w.init()
    g = next(_generations)
    w.init(borrowed_context_generation=g)
    other = simpler.Worker(execution_mode="kernel")
    with pytest.raises(ValueError, match="already used by another Worker"):
        other.init(borrowed_context_generation=g)
    w.close()
    other.init(borrowed_context_generation=g)  # released by close()
    other.close()
    with pytest.raises(ValueError, match="only kernel mode borrows a context"):
        simpler.Worker().init(borrowed_context_generation=5)


def test_kernel_entry_admission_runs_before_loading(kworker: simpler.Worker, kernel_binary: bytes) -> None:
    kernel = simpler.CoreCallable.build([D.In], kernel_binary, "aiv", entry="empty", name="empty")
    # func_id 64 is fine in program mode but outside the kernel-mode child range (0..63); the
    # orchestration binary is garbage, which proves admission rejects before any load.
    bad = simpler.ChipCallable.build([D.In], "orch", b"not a shared object", children=[(64, kernel)])
    with pytest.raises(ValueError, match="rejected by kernel-entry admission: InvalidCounts"):
        kworker.register(bad)
    odd_name = simpler.CoreCallable.build([D.In], kernel_binary, "aiv", entry="empty", name="has space")
    bad = simpler.ChipCallable.build([D.In], "orch", b"not a shared object", children=[(0, odd_name)])
    with pytest.raises(ValueError, match="rejected by kernel-entry admission: InvalidSignature"):
        kworker.register(bad)


def test_a_waited_launch_runs_on_the_calling_thread_of_an_idle_worker(
    kworker: simpler.Worker, build_callable: Callable[[str], Any]
) -> None:
    # launch(waits=True) on an idle Worker is consumed, orchestrated and run before it returns
    # (no hand-off to the chip's threads); behind a run in flight it is queued in order.
    vadd = kworker.register(build_callable("vadd_tiles"))
    a = np.arange(256, dtype=np.float32)
    c = np.zeros_like(a)
    run = kworker.launch(vadd, vadd_args(a, a, c, 256), waits=True)  # one task
    if kworker.runtime == "tensormap_and_ringbuffer":  # HBG's tasks run on the chip's threads
        assert run.done
    run.result(timeout=30)
    np.testing.assert_array_equal(c, 2 * a)
    h = kworker.register(build_callable("many_incs"))
    counters = np.zeros(4, dtype=np.int64)
    t = Buffer.wrap(counters.ctypes.data, counters.nbytes, owner=counters).tensor((4,), DataType.INT64)

    def incs(n: int) -> TaskArgs:
        return TaskArgs().add_tensor(t, D.InOut).add_scalar(n, DataType.INT64).add_scalar(0, DataType.INT64)

    kworker.launch(h, incs(100), waits=True).result(timeout=30)
    np.testing.assert_array_equal(counters, np.full(4, 25))
    slow = kworker.launch(h, incs(40_000))  # queued: the chip's threads run it
    behind = [kworker.launch(h, incs(400), waits=True) for _ in range(3)]
    for r in (slow, *behind):
        r.result(timeout=30)
    np.testing.assert_array_equal(counters, np.full(4, 25 + 10_000 + 3 * 100))
    kworker.unregister(h)
    with pytest.raises(ValueError, match="StaleCallable"):
        kworker.launch(h, incs(4), waits=True)
    kworker.close()
    with pytest.raises(RuntimeError, match="closed"):
        kworker.launch(h, incs(4), waits=True)


def test_launch_target_runs_what_launch_runs(
    kworker: simpler.Worker, worker: simpler.Worker, build_callable: Callable[[str], Any], tmp_path: Any
) -> None:
    # A framework adapter's bound launch: the chip's launch entry and the waited run settings.
    h = kworker.register(build_callable("vadd_tiles"))
    target = kworker.launch_target()
    assert target is not None
    kernel_launch, settings = target
    a = np.arange(512, dtype=np.float32)
    c = np.zeros_like(a)
    args = vadd_args(a, a, c, 128)
    mat = args.materialize()
    simpler.RunHandle(kernel_launch(h.slot, mat.tensors, mat.scalars, settings), args, h).result(timeout=30)
    np.testing.assert_array_equal(c, 2 * a)
    diagnostics = simpler.CallConfig(dep_graph=True, output_prefix=str(tmp_path))
    assert kworker.launch_target(diagnostics) is None  # its files are collected by launch()
    with pytest.raises(RuntimeError, match="program mode"):
        worker.launch_target()
    kworker.close()
    assert kworker.launch_target() is None
