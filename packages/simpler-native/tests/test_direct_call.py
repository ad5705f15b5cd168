"""simpler.DirectCall: a BoundCall called as its function is (``target(*args, **kwargs)``), with
a fallback for what the bound call does not take. pypto's ``@pl.jit`` function is a
``functools.partial`` of one, swapped by its owner at any time: the target keeps itself alive
while its call runs with the GIL released, reports a failed run as the bound call does, and is
collected in a cycle with a fallback that refers back to its owner."""

from __future__ import annotations

import functools
import gc
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from call_plan_forms import DYN, f32, fields, plan
from worker_failure_cases import CASES

import simpler
from pypto_testing.concurrency import run_while_changing
from simpler._dtypes import dtype_code
from simpler.errors import DeviceError
from simpler.worker import finish_plan_run


def _vadd(worker: simpler.Worker, register: Callable[[str], Any]) -> Callable[[], simpler.BoundCall]:
    """A maker of BoundCalls of one vadd_tiles target (a new object each call)."""
    chip, program, settings_ = worker.plan_target(register("vadd_tiles"))
    p = fields(
        plan([f32(0, [DYN]), f32(1, [DYN]), f32(2, [DYN], writes=True)], [(3, dtype_code("UINT32"))]),
        [np.float32] * 3,
    )
    return lambda: simpler.BoundCall(
        p, chip, program, settings_, -1.0, [2], False, _DECLINED, finish_plan_run
    )


_DECLINED = object()


def test_a_direct_call_runs_or_falls_back(worker: simpler.Worker, register: Callable[[str], Any]) -> None:
    fallen: list[Any] = []

    def fallback(*args: Any, **kwargs: Any) -> str:
        fallen.append((args, kwargs))
        return "general"

    bound = _vadd(worker, register)()
    direct = simpler.DirectCall(bound, fallback)
    assert direct.bound is bound
    assert direct.fallback is fallback
    a = np.arange(1000, dtype=np.float32)
    b = np.ones(1000, np.float32)
    c = np.zeros_like(a)
    assert direct(a, b, c, 256) is c
    np.testing.assert_array_equal(c, a + b)
    assert fallen == []
    assert direct(a, b, c, -1) == "general"  # declined by the plan: nothing ran
    assert direct(a, b, c, 256, config=1) == "general"  # a keyword: not the bound call's
    assert direct(a, b) == "general"
    assert fallen == [((a, b, c, -1), {}), ((a, b, c, 256), {"config": 1}), ((a, b), {})]

    def raising(*args: Any, **kwargs: Any) -> None:
        raise KeyError("from the fallback")

    with pytest.raises(KeyError, match="from the fallback"):
        simpler.DirectCall(bound, raising)(a, b)
    with pytest.raises(TypeError, match="expected a callable, got int"):
        simpler.DirectCall(bound, 42)
    with pytest.raises(TypeError, match=r"expected a simpler\.BoundCall, got object"):
        simpler.DirectCall(object(), fallback)


def test_a_failed_run_raises_as_the_bound_call_reports_it(
    worker: simpler.Worker, register: Callable[[str], Any]
) -> None:
    chip, program, settings_ = worker.plan_target(register("failures"))
    p = plan([f32(0, [16])], [(1, dtype_code("INT64"))])
    case, message = CASES[1]  # a kernel that throws
    bound = simpler.BoundCall(p, chip, program, settings_, -1.0, [], False, object(), finish_plan_run)
    direct = simpler.DirectCall(bound, lambda *a, **k: pytest.fail("a run that ran must not fall back"))
    x = np.zeros(16, np.float32)
    with pytest.raises(DeviceError, match=message):
        direct(x, case)
    with pytest.raises(DeviceError, match=message):
        bound((x, case))  # the same report
    with pytest.raises(DeviceError, match=CASES[0][1]):  # the chip runs on after a failed run
        direct(x, CASES[0][0])


def test_a_partial_of_direct_calls_survives_concurrent_swaps(
    worker: simpler.Worker, register: Callable[[str], Any]
) -> None:
    # each swap drops the previous target's (and its BoundCall's) last reference while another
    # thread may be inside its call with the GIL released
    fallback = functools.partial(lambda *a, **k: "general")
    make = _vadd(worker, register)
    fn = functools.partial(simpler.DirectCall(make(), fallback))

    def swap() -> None:
        fn.__setstate__((simpler.DirectCall(make(), fallback), (), None, None))

    def call(seed: int) -> None:
        a = np.full(512, seed, np.float32)
        b = np.ones(512, np.float32)
        c = np.zeros_like(a)
        for _ in range(300):
            c[:] = 0
            assert fn(a, b, c, 128) is c
            np.testing.assert_array_equal(c, a + 1)

    run_while_changing(swap, call)


def test_a_direct_call_in_a_cycle_is_collected(
    worker: simpler.Worker, register: Callable[[str], Any]
) -> None:
    class Owner:
        def general(self, *args: Any, **kwargs: Any) -> str:
            return "general"

    owner = Owner()
    owner.target = simpler.DirectCall(_vadd(worker, register)(), owner.general)  # owner -> target -> owner
    ref = weakref.ref(owner)
    assert owner.target(1, 2) == "general"
    del owner
    gc.collect()
    assert ref() is None
