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
from torch_test_programs import add, shift_rows

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


def test_fp32_scalars_are_encoded_natively_as_simpler_does(
    native: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    op = pt.register(scale, f"pypto_test_{uuid.uuid4().hex[:8]}::scale")
    try:
        x, out = torch.rand(16, 16), torch.empty(16, 16)
        op(x, 2.0, out)
        assert op._bound is not None
        counting = _Counting(monkeypatch)
        for alpha in (0.1, -3.5, 1e-40, 3.4028234e38):  # rounding, sign, a subnormal, near FLT_MAX
            op(x, alpha, out)
            torch.testing.assert_close(out, x * torch.tensor(alpha, dtype=torch.float32))
        assert counting.calls == 0
        op(x, 3, out)  # the dispatcher hands the kernel a float for the schema's float
        torch.testing.assert_close(out, x * 3.0)
        assert counting.calls == 0
        with pytest.raises(ArgumentError, match="overflows FP32"):  # declined: the general path's error
            op(x, 1e300, out)
        assert _native_describe.loaded_module().pinned_count() == 0
    finally:
        op.remove()


def test_int32_scalars_are_encoded_natively(native: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    op = pt.register(shift_rows, f"pypto_test_{uuid.uuid4().hex[:8]}::rotate")
    try:
        x, out = torch.rand(64, 32), torch.empty(64, 32)
        op(x, 0, out)
        assert op._bound is not None
        counting = _Counting(monkeypatch)
        for n in (1, 3, -1, 2**31 - 1):  # negative values in two's complement, the top of the range
            op(x, n, out)
            torch.testing.assert_close(out, torch.cat([x[((i + n) % 4) * 16 :][:16] for i in range(4)]))
        assert counting.calls == 0
        with pytest.raises(ArgumentError, match="INT32"):  # out of range: declined, the general path's error
            op(x, 2**31, out)
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


class _NotDoneYet:
    """A native run that reports not done on its first read (as a run queued behind another
    launch does), then answers as the run itself."""

    def __init__(self, run: Any) -> None:
        self._run = run
        self._reads = 0

    @property
    def done(self) -> bool:
        self._reads += 1
        return self._reads > 1 and bool(self._run.done)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._run, name)


def _wrap_kernel_launch(op: pt.Operator, wrap: Any) -> None:
    """Bind ``op`` and replace the chip's kernel_launch in its bound launch's cell."""
    a, b, out = _args()
    op(a, b, out)
    assert op._bound is not None
    (cell,) = context.current().bound_cells
    cell[0] = wrap(cell[0])


def test_a_run_that_does_not_finish_on_the_caller_is_retired_by_the_tail(
    op: pt.Operator, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pypto.torch._kernel import bound

    tails: list[Any] = []
    finish = bound.finish

    def counting(*args: Any) -> Any:
        tails.append(args)
        return finish(*args)

    monkeypatch.setattr(bound, "finish", counting)  # read when the launch is bound
    _wrap_kernel_launch(op, lambda launch: lambda *args: _NotDoneYet(launch(*args)))
    counting_general = _Counting(monkeypatch)
    a, b, out = _args()
    op(a, b, out)
    torch.testing.assert_close(out, a + b)
    assert len(tails) == 1
    assert counting_general.calls == 0
    assert not context.current().pending
    assert _native_describe.loaded_module().pinned_count() == 0


def test_shutdown_waits_for_a_bound_launch_inside_the_gate(
    op: pt.Operator, monkeypatch: pytest.MonkeyPatch
) -> None:
    entered, release = threading.Event(), threading.Event()

    def holding(launch: Any) -> Any:
        def held(*args: Any) -> Any:
            entered.set()
            release.wait(10)
            return launch(*args)

        return held

    _wrap_kernel_launch(op, holding)
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
    assert not context.current().bound_cells  # emptied: the Worker is not held
    assert _native_describe.loaded_module().pinned_count() == 0


def test_a_malformed_plan_is_a_type_error(native: Any) -> None:
    with pytest.raises(TypeError, match="launch\\(bound, args\\)"):
        native.launch((), ())
