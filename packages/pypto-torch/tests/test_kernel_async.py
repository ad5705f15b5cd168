"""Kernel mode's asynchronous mode (``init(asynchronous=True)``) on the simulated chip, with real
kernels: a launch returns before its kernel finished, one stream runs in order, events and
synchronisation points wait, dropped tensors stay valid, failed runs report at the next
synchronisation point. The slow kernel adds ``x`` to itself ``n`` times on the simulated core,
so a synchronisation that did not wait would read an unfinished (still zero) output."""

from __future__ import annotations

import gc
import time
import uuid
import weakref
from collections.abc import Iterator
from typing import Any

import pytest
import torch
from torch_test_programs import add

import pypto.language as pl
import pypto.torch as pt
import simpler
from pypto.torch._kernel import context

pytestmark = pytest.mark.usefixtures("kernel_mode")

# Additions on the simulated core: about 80 ms on the 2-core CI machine (1 ms per 6,000), far
# longer than a launch takes even when the other core is busy and the launching thread waits for
# its turn (the suites run on two pytest workers).
SPINS = 500_000


@pl.jit
def spin(x: pl.Tensor, n: pl.INT32, out: pl.Out[pl.Tensor]):
    """out = x * (n + 1), by n additions of x on the simulated core."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="spin"):
        t = pl.load(x, [0, 0], [32, 32])
        for _, (acc,) in pl.range(n, init_values=(t,)):
            (acc_next,) = pl.yield_(pl.add(acc, t))
        pl.store(acc_next, [0, 0], out)
    return out


@pl.jit
def rows_from(a: pl.Tensor, k: pl.Tensor, o: pl.Out[pl.Tensor]):
    """o = a[k[0]:k[0] + 16, :] + 1; a window past a's rows fails the task on the simulated
    core (the kernel's checked GM view, whichever PTO-ISA backend compiled it)."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="rows_from"):
        n = pl.read(k, [0])
        pl.store(pl.add(pl.load(a, [n, 0], [16, 40]), 1), [0, 0], o)
    return o


@pytest.fixture
def ops() -> Iterator[tuple[Any, Any]]:
    ns = f"pypto_test_async_{uuid.uuid4().hex[:8]}"
    spin_op, add_op = pt.register(spin, f"{ns}::spin"), pt.register(add, f"{ns}::add")
    try:
        yield spin_op, add_op
    finally:
        spin_op.remove()
        add_op.remove()


def _warm(spin_op: Any, add_op: Any) -> None:
    """Compile and register both kernels, then wait, so later launches only enqueue."""
    x = torch.ones(32, 32)
    spin_op(x, 1, torch.zeros(32, 32))
    add_op(x, x, torch.zeros(32, 32))
    pt.synchronize()


def test_the_default_stays_synchronous(ops: tuple[Any, Any]) -> None:
    spin_op, _ = ops
    assert pt.init().asynchronous is False
    x = torch.full((32, 32), 0.5)
    out = spin_op(x, SPINS, torch.zeros(32, 32))
    torch.testing.assert_close(out, x * (SPINS + 1))  # no synchronize needed
    assert context.current().pending == []


def test_a_launch_returns_before_its_kernel_and_synchronize_waits(ops: tuple[Any, Any]) -> None:
    spin_op, add_op = ops
    info = pt.init(asynchronous=True)
    assert info.asynchronous is True
    _warm(spin_op, add_op)
    x = torch.full((32, 32), 0.5)
    out = torch.zeros(32, 32)
    start = time.perf_counter()
    spin_op(x, SPINS, out)
    event = pt.current_stream().record_event()
    assert not event.query()  # the kernel is still running: the launch did not wait
    assert float(out.abs().sum()) == 0.0  # a read without synchronisation sees nothing yet
    launched = time.perf_counter() - start
    pt.synchronize()
    waited = time.perf_counter() - start
    torch.testing.assert_close(out, x * (SPINS + 1))
    assert event.query()
    assert waited > launched
    assert context.current().pending == []  # retired: the tensors are released


def test_one_stream_runs_in_order_and_an_event_waits(ops: tuple[Any, Any]) -> None:
    spin_op, add_op = ops
    pt.init(asynchronous=True)
    _warm(spin_op, add_op)
    side = pt.Stream()
    x = torch.full((32, 32), 0.25)
    mid, out = torch.zeros(32, 32), torch.zeros(32, 32)
    with pt.stream(side):
        spin_op(x, SPINS, mid)  # slow
        add_op(mid, x, out)  # reads what the slow kernel writes
        done = pt.Event()
        done.record()
    assert pt.current_stream() is not side
    assert not done.query()
    done.synchronize()
    torch.testing.assert_close(out, x * (SPINS + 2))  # the second launch ran after the first
    assert done.query()
    assert side.query()


def test_a_stream_that_waits_on_an_event_covers_it(ops: tuple[Any, Any]) -> None:
    spin_op, add_op = ops
    pt.init(asynchronous=True)
    _warm(spin_op, add_op)
    producer, consumer = pt.Stream(), pt.Stream()
    x = torch.full((32, 32), 0.5)
    mid, out = torch.zeros(32, 32), torch.zeros(32, 32)
    with pt.stream(producer):
        spin_op(x, SPINS, mid)
    consumer.wait_stream(producer)
    with pt.stream(consumer):
        add_op(mid, x, out)
    consumer.synchronize()  # covers the producer's launch it waited for
    torch.testing.assert_close(out, x * (SPINS + 2))
    torch.testing.assert_close(mid, x * (SPINS + 1))
    assert producer.query()


def test_a_tensor_dropped_while_its_launch_is_pending_stays_valid(ops: tuple[Any, Any]) -> None:
    spin_op, add_op = ops
    pt.init(asynchronous=True)
    _warm(spin_op, add_op)
    x = torch.full((32, 32), 0.5)
    alive = weakref.ref(x)
    out = torch.zeros(32, 32)
    spin_op(x, SPINS, out)
    del x
    gc.collect()
    assert alive() is not None  # the pending launch holds it
    garbage = [torch.full((32, 32), 99.0) for _ in range(8)]  # would reuse freed memory
    pt.synchronize()
    torch.testing.assert_close(out, torch.full((32, 32), 0.5 * (SPINS + 1)))
    del garbage
    gc.collect()
    assert alive() is None  # released once the run was retired


def test_a_failed_run_reports_at_the_next_synchronisation_point(ops: tuple[Any, Any]) -> None:
    spin_op, add_op = ops
    rows_op = pt.register(rows_from, f"pypto_test_async_{uuid.uuid4().hex[:8]}::rows_from")
    try:
        pt.init(asynchronous=True)
        _warm(spin_op, add_op)
        a = torch.ones(16, 40, dtype=torch.int32)
        rows_op(a, torch.tensor([0], dtype=torch.int32), torch.zeros_like(a))  # compiles; succeeds
        pt.synchronize()
        k = torch.tensor([32], dtype=torch.int32)  # a window the kernel refuses: the run fails there
        alive = weakref.ref(k)
        rows_op(a, k, torch.zeros_like(a))  # returns: the failure is not known yet
        del k
        with pytest.raises(simpler.DeviceError, match="outside the tensor"):
            pt.synchronize()
        gc.collect()
        assert alive() is None  # what the failed launch held is released
        assert context.current().pending == []
        pt.synchronize()  # reported once
        # a failure retired by a later launch's admission is still reported, by the stream's sync
        rows_op(a, torch.tensor([40], dtype=torch.int32), torch.zeros_like(a))
        ones = torch.ones(32, 32)
        deadline = time.monotonic() + 30
        while not context.current().failed and time.monotonic() < deadline:
            add_op(ones, ones, torch.zeros(32, 32))  # admission retires completed tickets
            time.sleep(0.01)
        assert context.current().failed  # retired by admission, not reported yet
        with pytest.raises(simpler.DeviceError, match="outside the tensor"):
            pt.current_stream().synchronize()
    finally:
        rows_op.remove()


def test_shutdown_drains_pending_launches_and_reports_an_unsynchronised_failure(ops: tuple[Any, Any]) -> None:
    spin_op, add_op = ops
    pt.init(asynchronous=True)
    _warm(spin_op, add_op)
    x = torch.full((32, 32), 0.5)
    outs = [torch.zeros(32, 32) for _ in range(3)]
    for o in outs:
        spin_op(x, SPINS, o)
    pt.shutdown()
    for o in outs:
        torch.testing.assert_close(o, x * (SPINS + 1))
    assert pt.state() is pt.KernelState.CLOSED
