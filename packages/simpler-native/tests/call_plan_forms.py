"""The CallPlan forms the simpler-native tests build (test_call_plan.py, test_direct_call.py):
plans over float32 tensor slots, the dynamic-dimension marker, plans that read arrays by their
fields. A module of its own, not a test module, so that a combined run of several packages'
tests (whose folders each have a test_call_plan.py) finds it by its own name."""

from __future__ import annotations

from typing import Any

import numpy as np

from simpler import CallPlan
from simpler._dtypes import dtype_code
from simpler.task_args import encode_scalar

DYN = -1
SCALAR_CODES = [
    dtype_code(n)
    for n in (
        "FLOAT32",
        "FLOAT16",
        "BFLOAT16",
        "INT32",
        "INT16",
        "INT8",
        "UINT8",
        "INT64",
        "UINT64",
        "UINT16",
        "UINT32",
        "BOOL",
    )
]


def fmt(dtype: Any) -> str:
    return memoryview(np.empty(1, dtype)).format


def plan(
    tensors: list[tuple[Any, ...]],
    scalars: list[tuple[int, int]] = (),
    fixed: list[Any] = (),
    nparams: int | None = None,
) -> CallPlan:
    n = nparams if nparams is not None else len(tensors) + len(scalars) + len(fixed)
    return CallPlan(np.ndarray, n, tensors, list(scalars), list(fixed), encode_scalar)


def f32(slot: int, shape: list[int], writes: bool = False) -> tuple[Any, ...]:
    return (slot, dtype_code("FLOAT32"), fmt(np.float32), 4, shape, writes)


def fields(p: CallPlan, dtypes: list[Any]) -> CallPlan:
    """``p`` reading arrays by their fields (CallPlan.use_array_fields), checked on probes."""
    probe = np.zeros((2, 3), np.float32)
    ro = np.zeros((2, 3), np.float32)
    ro.flags.writeable = False
    assert p.use_array_fields(probe, ro, probe[1:], [np.dtype(d) for d in dtypes])
    assert p.reads_fields
    return p
