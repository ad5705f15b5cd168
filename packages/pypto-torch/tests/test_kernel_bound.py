"""Bound launches (pypto.torch._kernel.bound): a registered operator's common call is one native
call once its registration has launched once; every other call takes the general path, with the
general path's errors, and the bound path keeps kernel mode's rules (pins, shutdown, streams)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import torch
from torch_test_programs import add

import pypto.language as pl
import pypto.torch as pt
from pypto.torch import _native_describe
from pypto.torch._kernel import context
from pypto.torch._kernel.context import KernelClosedError
from pypto.torch._platform.simulator import SimulatorStream, use_stream
from pypto.torch.interop import ArgumentError

pytestmark = pytest.mark.usefixtures("kernel_mode")


@pl.jit
def scale(x: pl.Tensor, alpha: pl.FP32, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="scale"):
        out[:] = pl.mul(x, alpha)
    return out


@pytest.fixture
def native() -> Any:
    assert _native_describe.build_native(), _native_describe.native_error()
    return _native_describe.loaded_module()


@pytest.fixture
def op(native: Any) -> Iterator[pt.Operator]:
    made = pt.register(add, f"pypto_test_{uuid.uuid4().hex[:8]}::add")
    yield made
    made.remove()


class _Counting:
    """Counts the manager's general launches (the bound path does not make one)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        manager = context.current()
        general = manager.launch

        def counting(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return general(*args, **kwargs)

        monkeypatch.setattr(manager, "launch", counting)


def _args(n: int = 16) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return torch.rand(n, n), torch.rand(n, n), torch.empty(n, n)


def test_a_repeat_common_call_is_one_native_call(op: pt.Operator, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b, out = _args()
    op(a, b, out)  # the first call of a key: compile, general launch, then bind
    assert op._bound is not None
    counting = _Counting(monkeypatch)
    for _ in range(3):
        a, b, out = _args()
        assert op(a, b, out) is out
        torch.testing.assert_close(out, a + b)  # the kernel ran, the result is visible
    assert counting.calls == 0
    assert _native_describe.loaded_module().pinned_count() == 0  # every pin was released
    assert not context.current().pending


def test_calls_the_bound_path_does_not_take_go_the_general_way(
    op: pt.Operator, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b, out = _args()
    op(a, b, out)
    counting = _Counting(monkeypatch)
    # another shape (this kernel is compiled per shape): a new key, launched on the general
    # path, then bound
    a2, b2, out2 = _args(32)
    op(a2, b2, out2)
    op(a2, b2, out2)
    torch.testing.assert_close(out2, a2 + b2)
    assert counting.calls == 1
    # a stream entered with use_stream: the general path orders it on that stream
    with use_stream(SimulatorStream()):
        op(a2, b2, out2)
    assert counting.calls == 2
    # back on the default stream: the bound path again
    a2, b2, out2 = _args(32)
    op(a2, b2, out2)
    torch.testing.assert_close(out2, a2 + b2)
    assert counting.calls == 2


def test_declined_calls_raise_the_general_paths_errors(op: pt.Operator) -> None:
    a, b, out = _args()
    op(a, b, out)
    assert op._bound is not None
    with pytest.raises(
        ArgumentError, match="describe_call: parameter 'b' \\(#1, In FP32\\): expected a contiguous view"
    ):
        op(a, torch.rand(16, 16).t(), out)
    big = torch.rand(17, 16)
    with pytest.raises(ArgumentError, match="partially overlap"):
        op(a, big[1:], big[:16])
    w = torch.rand(16, 16).requires_grad_()
    with pytest.raises(ArgumentError, match="requires grad"):
        op(a, w, out)
    assert _native_describe.loaded_module().pinned_count() == 0


def test_kernels_with_scalars_are_not_bound(native: Any) -> None:
    op = pt.register(scale, f"pypto_test_{uuid.uuid4().hex[:8]}::scale")
    try:
        x, out = torch.rand(16, 16), torch.empty(16, 16)
        op(x, 2.0, out)
        op(x, 3.0, out)
        torch.testing.assert_close(out, x * 3.0)
        assert op._bound is None
        assert next(iter(op._callables.values())).bound == ()
    finally:
        op.remove()


def test_asynchronous_mode_is_not_bound(op: pt.Operator) -> None:
    pt.init(asynchronous=True)
    a, b, out = _args()
    op(a, b, out)
    op(a, b, out)
    pt.synchronize()
    torch.testing.assert_close(out, a + b)
    assert op._bound is None


def test_after_shutdown_the_bound_path_declines_and_the_general_path_refuses(op: pt.Operator) -> None:
    a, b, out = _args()
    op(a, b, out)
    assert op._bound is not None
    pt.shutdown()
    with pytest.raises(KernelClosedError, match="shut down"):
        op(a, b, out)


def _queued_with_tail(op: pt.Operator, monkeypatch: pytest.MonkeyPatch, hook: Any) -> list[Any]:
    """Kernel mode whose runs are queued on the chip's threads (so every bound launch ends in
    the tail), with ``hook`` called in the tail before the real one; returns the tail calls."""
    import simpler
    from pypto.torch._kernel import bound

    pt.init(config=simpler.CallConfig(orchestrate_on_caller=False))
    tails: list[Any] = []
    finish = bound.finish

    def counting(*args: Any) -> Any:
        tails.append(args)
        hook()
        return finish(*args)

    monkeypatch.setattr(bound, "finish", counting)
    a, b, out = _args()
    op(a, b, out)  # general launch, then bound with the counting tail
    assert op._bound is not None
    return tails


def test_a_run_that_does_not_finish_on_the_caller_is_retired_by_the_tail(
    op: pt.Operator, monkeypatch: pytest.MonkeyPatch
) -> None:
    tails = _queued_with_tail(op, monkeypatch, lambda: None)
    counting = _Counting(monkeypatch)
    a, b, out = _args()
    op(a, b, out)
    torch.testing.assert_close(out, a + b)
    assert len(tails) == 1
    assert counting.calls == 0
    assert not context.current().pending
    assert _native_describe.loaded_module().pinned_count() == 0


def test_shutdown_waits_for_a_bound_launch_inside_the_gate(
    op: pt.Operator, monkeypatch: pytest.MonkeyPatch
) -> None:
    entered, release = threading.Event(), threading.Event()

    def hold() -> None:
        entered.set()
        release.wait(10)

    _queued_with_tail(op, monkeypatch, hold)
    module, gate = context.current().gate
    a, b, out = _args()
    caller = threading.Thread(target=op, args=(a, b, out))
    caller.start()
    assert entered.wait(10)
    assert module.gate_inflight(gate) == 1
    finished = threading.Event()
    closer = threading.Thread(target=lambda: (pt.shutdown(), finished.set()))
    closer.start()
    assert not finished.wait(0.3)  # the Worker stays open while the launch is inside
    release.set()
    caller.join(10)
    closer.join(10)
    assert finished.is_set()
    torch.testing.assert_close(out, a + b)
    assert module.gate_inflight(gate) == 0
    assert _native_describe.loaded_module().pinned_count() == 0


def test_a_malformed_plan_is_a_type_error(native: Any) -> None:
    with pytest.raises(TypeError, match="launch\\(bound, args\\)"):
        native.launch((), ())
