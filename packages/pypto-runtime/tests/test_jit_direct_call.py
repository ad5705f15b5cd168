"""A ``@pl.jit`` function's repeat call through its ``simpler.DirectCall`` target: the target is
swapped (plans dropped and set again) while other threads call, a run's failure and a user
error read as on the general path, and a function whose plan refers back to it is collected."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import pypto.language as pl
import simpler
from pypto.ir.execution import clear_executor_plans
from pypto_testing.concurrency import run_while_changing

pytestmark = pytest.mark.usefixtures("module_store")

R, C = 16, 64


def _scale_fn(a: pl.Tensor, alpha: pl.FP32, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(a, alpha)
    return out


direct_scale = pl.jit(_scale_fn)


def test_calls_stay_right_while_the_target_is_swapped() -> None:
    a0 = np.arange(R * C, dtype=np.float32).reshape(R, C)
    direct_scale(a0, 2.0, np.zeros_like(a0))
    direct_scale(a0, 2.0, np.zeros_like(a0))
    assert isinstance(direct_scale.func, simpler.DirectCall)

    def call(k: int) -> None:
        a = a0 + k
        out = np.zeros_like(a)
        for _ in range(200):
            out[:] = 0
            assert direct_scale(a, 2.0, out) is out
            np.testing.assert_array_equal(out, a * 2)

    run_while_changing(clear_executor_plans, call)  # each drop frees the target a caller may be inside of


def test_an_error_reads_as_on_the_general_path() -> None:
    a = np.ones((R, C), np.float32)
    out = np.zeros_like(a)
    direct_scale(a, 2.0, out)
    direct_scale(a, 2.0, out)
    assert isinstance(direct_scale.func, simpler.DirectCall)
    with pytest.raises(TypeError, match="dtype") as hot:  # declined natively, reported by the binder
        direct_scale(a, 2.0, out.astype(np.float64))
    clear_executor_plans()
    with pytest.raises(TypeError, match="dtype") as general:
        direct_scale(a, 2.0, out.astype(np.float64))
    assert str(hot.value) == str(general.value)
    assert hot.value.__suppress_context__
    assert general.value.__suppress_context__


def test_a_planned_function_is_collected() -> None:
    fn = pl.jit(_scale_fn)  # its own JITFunction of a compiled program (the store has it)
    a = np.ones((R, C), np.float32)
    fn(a, 2.0, np.zeros_like(a))
    assert isinstance(fn.func, simpler.DirectCall)  # which refers back to fn: a cycle
    ref = weakref.ref(fn)
    del fn
    gc.collect()
    assert ref() is None
