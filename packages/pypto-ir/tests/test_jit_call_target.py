"""A ``@pl.jit`` function's call target: the executor's plan or its general path.

The function is a ``functools.partial`` whose ``func`` is that target (pypto.ir.execution), so
these check what the swap of the target must keep: the plan's fallback, the host-trace rule,
copying and pickling as a function, a user error's trimmed traceback and the collection of a
function whose plan refers back to it.
"""

from __future__ import annotations

import copy
import gc
import pickle
import threading
import weakref
from typing import Any

import pytest
from pypto_ir_test_programs import scale

import pypto.language as pl
from pypto.ir import execution
from pypto.language.host_trace import HostTrace
from pypto.language.tracebacks import mark_user_error


@pytest.fixture
def executor(monkeypatch: pytest.MonkeyPatch) -> Any:
    """An executor that records its calls and sets a plan recording its own (falling back on
    keywords, as the runtime's does)."""
    general: list[Any] = []
    planned: list[Any] = []

    def run(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
        general.append((args, kwargs))

        def plan(*a: Any, **k: Any) -> Any:
            if k:
                return fn.general_call(*a, **k)
            planned.append(a)
            return "planned"

        execution.set_executor_plan(fn, plan)
        return "general"

    monkeypatch.setattr(execution, "_executor", None)
    previous = execution.set_jit_executor(run)
    yield general, planned
    execution.set_jit_executor(previous)


def test_the_plan_is_the_call_target_and_falls_back_to_the_general_path(executor: Any) -> None:
    general, planned = executor
    assert scale.func == scale.general_call
    assert scale.args == ()
    assert not scale.keywords
    assert scale(1, 2, 3) == "general"
    assert scale.func is scale.executor_plan is not None
    assert scale(4, 5, 6) == "planned"
    assert scale(7, 8, 9, config="cfg") == "general"  # keywords: the plan passes it on
    assert general == [((1, 2, 3), {}), ((7, 8, 9), {"config": "cfg"})]
    assert planned == [(4, 5, 6)]
    execution.clear_executor_plans()
    assert scale.executor_plan is None
    assert scale.func == scale.general_call
    assert scale(1, 2, 3) == "general"


def test_no_plan_while_a_host_body_is_traced(executor: Any) -> None:
    general, planned = executor
    scale(1, 2, 3)
    assert scale.executor_plan is not None
    with HostTrace(1) as trace:
        assert scale.executor_plan is None  # tracing drops every plan ...
        execution.set_executor_plan(scale, lambda *a: "planned")
        assert scale.executor_plan is None  # ... and keeps none while it lasts
        scale(1, 2, 3)  # recorded by the trace, neither run nor planned
        # another thread (not tracing) takes the general path too, which runs it
        done: list[Any] = []
        t = threading.Thread(target=lambda: done.append(scale(4, 5, 6)))
        t.start()
        t.join()
        assert done == ["general"]
        assert scale.executor_plan is None
    assert len(trace.dispatches) == 1
    assert trace.dispatches[0].fn is scale
    assert general == [((1, 2, 3), {}), ((4, 5, 6), {})]
    assert planned == []
    scale(1, 2, 3)
    assert scale.executor_plan is not None  # after the trace, plans are kept again
    with pytest.raises(RuntimeError, match="no suspend_executor_plans"):
        execution.resume_executor_plans()


def test_a_jit_function_copies_and_pickles_as_a_function() -> None:
    assert copy.copy(scale) is scale
    assert copy.deepcopy(scale) is scale
    assert pickle.loads(pickle.dumps(scale)) is scale  # by reference, as a function
    assert scale.__module__ == scale.fn.__module__

    @pl.jit
    def local(a: pl.Tensor) -> None:
        pass

    with pytest.raises((pickle.PicklingError, AttributeError), match="local"):
        pickle.dumps(local)


def test_a_user_error_of_the_general_path_keeps_no_pypto_frame(monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        raise mark_user_error(ValueError("scale: parameter 'a' is wrong"))

    monkeypatch.setattr(execution, "_executor", None)
    monkeypatch.delenv("PYPTO_FULL_TRACEBACK", raising=False)
    previous = execution.set_jit_executor(failing)
    try:
        with pytest.raises(ValueError, match="is wrong") as info:
            scale(1, 2, 3)
    finally:
        execution.set_jit_executor(previous)
    frames = [tb.tb_frame.f_code.co_name for tb in _walk(info.value.__traceback__)]
    assert "failing" not in frames
    assert frames[-1] == "general_call"
    assert info.value.__suppress_context__


def _walk(tb: Any) -> Any:
    while tb is not None:
        yield tb
        tb = tb.tb_next


def test_a_function_whose_plan_refers_to_it_is_collected(executor: Any) -> None:
    @pl.jit
    def local(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]) -> None:
        pass

    local(1, 2, 3)
    assert local.executor_plan is not None  # the plan's closure holds the function: a cycle
    ref = weakref.ref(local)
    del local
    gc.collect()
    assert ref() is None
