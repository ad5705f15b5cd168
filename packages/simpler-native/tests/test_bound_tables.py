"""The DataType table and the limits simpler's Python uses come from the binding (C++ headers)."""

from __future__ import annotations

import numpy as np
import pytest

import simpler
from simpler import _dtypes, _native, buffers, config, kernel


def test_data_type_table_is_the_bindings() -> None:
    names, bits = kernel.DATA_TYPE_NAMES, kernel.DATA_TYPE_BITS
    assert len(names) == len(bits) == len(kernel.DataType)
    for code, member in enumerate(kernel.DataType):
        assert member.value == code
        assert member.name == names[code]
        assert _dtypes.dtype_name(code) == names[code]
        assert _dtypes.dtype_itemsize_bits(code) == bits[code]
        assert _dtypes.dtype_code(names[code]) == code
    assert simpler.DataType is kernel.DataType
    assert bits[names.index("FLOAT32")] == 32
    assert bits[names.index("FP4E2M1")] == 4


@pytest.mark.parametrize(
    ("spelling", "name"),
    [
        ("fp32", "FLOAT32"),
        ("half", "FLOAT16"),
        ("bf16", "BFLOAT16"),
        ("u32", "UINT32"),
        ("torch.int64", "INT64"),
    ],
)
def test_aliases_resolve_through_the_table(spelling: str, name: str) -> None:
    assert _dtypes.dtype_code(spelling) == kernel.DATA_TYPE_NAMES.index(name)


def test_numpy_dtypes_resolve() -> None:
    for dt, name in ((np.float32, "FLOAT32"), (np.bool_, "BOOL"), (np.uint16, "UINT16")):
        assert _dtypes.dtype_code(np.dtype(dt)) == kernel.DATA_TYPE_NAMES.index(name)


def test_limits_are_the_bindings() -> None:
    assert simpler.MAX_CALLABLES == kernel.MAX_CALLABLES == _native.kernel.MAX_CALLABLES
    assert buffers._MAX_DIMS == kernel.MAX_TENSOR_DIMS
    assert config.RING_COUNT == _native.RING_COUNT == len(_native.RunSettings().task_window)


def test_limit_messages_quote_the_bound_values() -> None:
    with pytest.raises(
        ValueError, match=rf"aic_threads\): expected an int in \[0, {_native.MAX_CORE_THREADS}\]"
    ):
        simpler.Worker(aic_threads=_native.MAX_CORE_THREADS + 1)
    n = _native.MAX_AICPU_THREADS
    with pytest.raises(ValueError, match=rf"aicpu_thread_num: expected an int in \[1, {n}\], got {n + 1}"):
        simpler.CallConfig(aicpu_thread_num=n + 1).validate()
    buf = simpler.Buffer.allocate(64)
    dims = kernel.MAX_TENSOR_DIMS
    with pytest.raises(ValueError, match=rf"expected 1..{dims} dimensions, got {dims + 1}"):
        buf.tensor((1,) * (dims + 1), "INT8")
