"""Program-mode call plans: the plan's descriptors are the general path's, anything unusual
takes the general path, and the @pl.jit executor's call keys skip specialising."""

from __future__ import annotations

import importlib
import sys
from typing import Any

import numpy as np
import pytest
from runtime_programs import make_add, make_scale

import pypto.language as pl
import pypto.runtime as rt
import simpler
from pypto.ir.execution import set_jit_executor
from pypto.language import binding
from pypto.runtime.call_plan import CallPlan
from pypto.runtime.compiled import CompiledProgram
from pypto.runtime.host_tensors import describe
from pypto.runtime.runner import _chip_view

pytestmark = pytest.mark.usefixtures("module_store")  # one store: each program compiles once

R, C = 16, 64


# objects of this module's own: the tests check what calls store on them
plan_add = make_add()
plan_scale = make_scale()


def ones() -> np.ndarray:
    return np.ones((R, C), np.float32)


@pytest.fixture
def prog() -> CompiledProgram:
    return rt.compile(plan_add, ones(), ones(), ones())


def _plan(prog: CompiledProgram) -> CallPlan:
    prog(ones(), ones(), ones())
    plan = prog.artifact._call_plan
    assert isinstance(plan, CallPlan)
    return plan


def _try_import(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _general(args: tuple[Any, ...]) -> tuple[Any, ...]:
    import simpler

    return tuple(_chip_view(simpler, describe(a, what="x"), "x").descriptor() for a in args)


def test_plan_descriptors_are_the_general_paths(prog: CompiledProgram) -> None:
    plan = _plan(prog)
    base = np.arange((R + 2) * C, dtype=np.float32).reshape(R + 2, C)
    cases: list[tuple[Any, ...]] = [
        (ones(), ones(), np.empty((R, C), np.float32)),  # arrays that own their memory
        (base[2:], ones(), np.zeros((R, C), np.float32)),  # a view at an offset
        (ones(), ones(), np.zeros((R, C), np.float32).T.copy().T),  # column-major output
    ]
    torch: Any = sys.modules.get("torch") or _try_import("torch")
    if torch is not None:
        t = torch.arange((R + 1) * C, dtype=torch.float32).reshape(R + 1, C)
        cases.append((t[1:], torch.ones(R, C), torch.zeros(R, C)))
    for args in cases:
        mat = plan._materialize(args)
        assert mat is not None
        assert tuple((a, s, d, tuple(sh), tuple(st), o) for a, s, d, sh, st, o in mat.tensors) == tuple(
            (a, s, d, tuple(sh), tuple(st), o) for a, s, d, sh, st, o in _general(args)
        )
        assert mat.directions == (1, 1, 2)
        out = prog(*args)
        assert out is args[2]
        np.testing.assert_array_equal(np.asarray(out), np.asarray(args[0]) + 1)


def test_unusual_calls_take_the_general_path(prog: CompiledProgram) -> None:
    plan = _plan(prog)
    a = ones()
    shared = np.zeros((R, C), np.float32)
    for args in [
        (a, a, shared),  # two parameters, one array: exact aliases are the general path's to judge
        (a, ones(), np.zeros((R, C), np.float64)),  # wrong dtype
        (a, ones(), np.zeros((R, C + 1), np.float32)),  # wrong shape
        (a, ones(), None),
        (a, ones(), "x"),
    ]:
        assert plan._materialize(args) is None
    ro = ones()
    ro.flags.writeable = False
    assert plan._materialize((ro, ones(), shared)) is not None  # a read-only input is fine
    assert plan._materialize((a, ones(), ro)) is None  # a read-only output is not
    with pytest.raises(TypeError, match="read-only"):
        prog(a, ones(), ro)
    out = prog(a, ones())  # an omitted output is allocated (general path)
    np.testing.assert_array_equal(out, a + 1)
    np.testing.assert_array_equal(prog(a, b=ones(), out=shared), a + 1)  # keywords


def test_scalars_are_encoded_once_checked() -> None:
    a = np.arange(R * C, dtype=np.float32).reshape(R, C)
    prog = rt.compile(plan_scale, a, pl.RUNTIME, a)
    out = np.zeros_like(a)
    prog(a, 2.0, out)
    np.testing.assert_array_equal(out, a * 2)
    prog(a, 3, out)
    np.testing.assert_array_equal(out, a * 3)
    with pytest.raises(TypeError, match="alpha"):
        prog(a, 1e300, out)  # out of FP32 range: the general path reports it
    with pytest.raises(TypeError, match="alpha"):
        prog(a, "2", out)


def test_jit_calls_with_a_known_call_key_skip_specialising(monkeypatch: pytest.MonkeyPatch) -> None:
    a, out = ones(), np.zeros((R, C), np.float32)
    plan_add(a, ones(), out)
    calls: list[object] = []
    real = plan_add.call_key  # the specialisation key: computed by every call that binds in full

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(plan_add, "call_key", counting)
    for _ in range(3):
        out[:] = 0
        plan_add(a, a, out)
        np.testing.assert_array_equal(out, a + a)
    assert calls == []
    plan_add(a, ones(), out=out)  # keywords: the specialising path
    assert len(calls) == 1
    small = np.ones((R, C // 2), np.float32)
    plan_add(small, small, np.zeros_like(small))  # another shape: specialised once, then known
    plan_add(small, small, np.zeros_like(small))
    assert len(calls) == 2
    with pytest.raises(TypeError, match="NoneType"):
        plan_add(a, None, out)
    key = binding.fast_key((a, a, out))
    assert key is not None
    assert binding.fast_key((a, float("nan"), out)) is None
    assert binding.fast_key((a, [1], out)) is None


def test_a_plan_follows_the_shared_worker_when_it_is_replaced(prog: CompiledProgram) -> None:
    from pypto.runtime import worker

    a, b, out = ones(), ones(), np.zeros((R, C), np.float32)
    prog(a, b, out)
    ((_, w1, _),) = prog.artifact._call_plan.bound.values()
    worker.close_shared_workers()  # w1 is closed: the next call must not use it
    out[:] = 0
    prog(a, b, out)
    np.testing.assert_array_equal(out, a + b)
    ((_, w2, _),) = prog.artifact._call_plan.bound.values()
    assert w2 is not w1


def test_the_native_plan_takes_plain_calls_and_declines_the_rest(prog: CompiledProgram) -> None:
    plan = _plan(prog)
    a, b, out = ones(), ones() * 2, np.zeros((R, C), np.float32)
    native = plan.native
    assert native is not None
    described = native.describe((a, b, out))
    assert described is not None
    assert described[0] == plan._materialize((a, b, out)).tensors  # the same descriptors
    out[:] = 0
    assert plan.run((a, b, out), {}, None) is out  # the native path
    np.testing.assert_array_equal(out, a + b)
    # what the native plan does not take, the Python paths decide, with their checks
    ro = np.zeros((R, C), np.float32)
    ro.flags.writeable = False
    assert native.describe((a, b, ro)) is None
    with pytest.raises(TypeError, match="read-only"):
        plan.run((a, b, ro), {}, None)
    base = np.zeros((R * 2, C), np.float32)
    view = base[R:]  # same type, shape, dtype and strides as out: a view of other storage
    assert native.describe((a, b, view)) is None
    plan.run((a, b, view), {}, None)
    np.testing.assert_array_equal(base[R:], a + b)
    np.testing.assert_array_equal(base[:R], 0)
    assert native.describe((a, b, a)) is None  # one array twice: the general path's to judge
    plan.run((a, b, a), {}, None)
    np.testing.assert_array_equal(a, ones() + b)
    # an exact plan takes only its key's shapes
    key = binding.fast_key((a, b, out))
    assert key is not None
    exact = plan.exact_plan(key)
    assert exact is not None
    assert exact.describe((a, b, out)) == described
    assert plan.exact_plan(key) is exact  # made once per key


@pl.jit
def hot_scale(a: pl.Tensor, alpha: pl.FP32, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(a, alpha)
    return out


def test_the_jit_hot_path_falls_back_and_respecialises(monkeypatch: pytest.MonkeyPatch) -> None:
    from pypto.runtime import api

    a = np.arange(R * C, dtype=np.float32).reshape(R, C).copy()  # owns its memory
    out = np.zeros_like(a)
    hot_scale(a, 2.0, out)
    hot = hot_scale.executor_plan
    # the function's call (a functools.partial's) calls it directly: a DirectCall of a BoundCall
    assert isinstance(hot, simpler.DirectCall)
    assert isinstance(hot.bound, simpler.BoundCall)
    assert hot_scale.func is hot
    assert hot.fallback == hot_scale.general_call
    slow: list[object] = []
    real = api._executor_call

    def counting(*args: Any) -> Any:
        slow.append(args)
        return real(*args)

    monkeypatch.setattr(api, "_executor_call", counting)
    out[:] = 0
    assert hot_scale(a, 2.0, out) is out  # the hot path
    np.testing.assert_array_equal(out, a * 2)
    assert slow == []
    hot_scale(a, 3.0, out)  # another folded scalar value: another specialisation
    np.testing.assert_array_equal(out, a * 3)
    assert len(slow) == 1
    assert hot_scale.executor_plan is not hot
    hot_scale(a, 3.0, out)
    assert len(slow) == 1
    small = a[:, : C // 2].copy()  # another shape: re-specialised, then hot again
    small_out = np.zeros_like(small)
    hot_scale(small, 3.0, small_out)
    np.testing.assert_array_equal(small_out, small * 3)
    hot_scale(small, 3.0, small_out)
    assert len(slow) == 2
    with pytest.raises(TypeError, match="dtype"):  # wrong dtype: the full path's error
        hot_scale(small, 3.0, small_out.astype(np.float64))
    strided = np.zeros((R, C), np.float32)[:, : C // 2]  # not contiguous: the full path runs it
    hot_scale(small, 3.0, strided)
    np.testing.assert_array_equal(strided, small * 3)
    ro = np.zeros_like(small)
    ro.flags.writeable = False
    with pytest.raises(TypeError, match="read-only"):
        hot_scale(small, 3.0, ro)
    assert len(slow) == 5
    hot_scale(small, 3.0, small_out)  # the last plain call's plan is hot again
    assert len(slow) == 5


def test_the_hot_path_is_dropped_when_its_worker_or_gate_changes() -> None:
    from pypto.runtime import mode_gate
    from pypto.runtime.worker import close_shared_workers

    a = np.arange(R * C, dtype=np.float32).reshape(R, C).copy()
    out = np.zeros_like(a)
    hot_scale(a, 2.0, out)
    assert hot_scale.executor_plan is not None
    close_shared_workers()  # the plan's chip is closed: the plan is dropped with it
    assert hot_scale.executor_plan is None
    out[:] = 0
    assert hot_scale(a, 2.0, out) is out  # a new Worker (whose creation drops plans)
    np.testing.assert_array_equal(out, a * 2)
    hot_scale(a, 2.0, out)  # then a new plan
    assert hot_scale.executor_plan is not None
    seen: list[tuple[Any, ...]] = []
    previous = set_jit_executor(lambda fn, args, kwargs: seen.append(args))
    try:
        assert hot_scale.executor_plan is None  # another executor: the old one's plans go
        hot_scale(a, 2.0, out)
        assert len(seen) == 1
    finally:
        set_jit_executor(previous)
    hot_scale(a, 2.0, out)
    hot_scale(a, 2.0, out)
    assert hot_scale.executor_plan is not None
    mode_gate._reset_for_tests()  # no mode held: a call must claim it again
    assert hot_scale.executor_plan is None
    hot_scale(a, 2.0, out)
    assert mode_gate.current() is mode_gate.ProcessMode.PROGRAM


_FACTOR = 2.0


@pl.jit
def captured_scale(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(a, _FACTOR)
    return out


def test_the_hot_path_checks_captured_constants(monkeypatch: pytest.MonkeyPatch) -> None:
    from pypto.runtime import api

    a = np.arange(R * C, dtype=np.float32).reshape(R, C).copy()
    out = np.zeros_like(a)
    captured_scale(a, out)
    captured_scale(a, out)
    assert isinstance(captured_scale.executor_plan, api._CapturedCheck)
    np.testing.assert_array_equal(out, a * 2)
    monkeypatch.setattr(sys.modules[__name__], "_FACTOR", 3.0)
    with pytest.raises(RuntimeError, match="_FACTOR"):  # as the binder's lookup reports it
        captured_scale(a, out)
