"""TaskArgs scalar encoding, Buffer/Tensor views and CallConfig validation (no chip needed)."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simpler import ArgDirection as D
from simpler import Buffer, CallConfig, DataType, TaskArgs
from simpler.task_args import encode_scalar


@settings(max_examples=50, deadline=None)
@given(st.integers(-(1 << 31), (1 << 31) - 1))
def test_int32_sign_extends(v: int) -> None:
    assert encode_scalar(v, DataType.INT32) == v & ((1 << 64) - 1)


@settings(max_examples=50, deadline=None)
@given(st.floats(width=32, allow_nan=False))
def test_float32_bits_in_low_word(v: float) -> None:
    assert encode_scalar(v, "FLOAT32") == int.from_bytes(struct.pack("<f", v), "little")


def test_scalar_range_and_type_checks() -> None:
    with pytest.raises(ValueError, match=r"300 is out of range for UINT8 \[0, 255\]"):
        encode_scalar(300, DataType.UINT8)
    with pytest.raises(ValueError, match=r"expected an int for INT32, got 1\.5"):
        encode_scalar(1.5, DataType.INT32)
    with pytest.raises(ValueError, match=r"expected an int for INT64, got 2\.0"):
        encode_scalar(2.0, DataType.INT64)  # no silent float -> int, even when integral
    with pytest.raises(ValueError, match="out of range for FLOAT16"):
        encode_scalar(1e6, DataType.FLOAT16)
    assert encode_scalar(np.int16(-2), DataType.INT16) == (1 << 64) - 2
    assert encode_scalar(1.0, DataType.FLOAT16) == 0x3C00
    assert encode_scalar(1.0, DataType.BFLOAT16) == 0x3F80
    assert encode_scalar(True, DataType.BOOL) == 1


def test_tensors_before_scalars_and_directions() -> None:
    buf = Buffer.allocate(64)
    args = TaskArgs().add_tensor(buf.tensor((16,), DataType.FLOAT32), D.InOut).add_scalar(1, DataType.INT32)
    with pytest.raises(ValueError, match="tensors must come before scalars"):
        args.add_tensor(buf.tensor((16,), DataType.FLOAT32), D.In)
    with pytest.raises(ValueError, match="expected In, Out or InOut"):
        TaskArgs().add_tensor(buf.tensor((16,), DataType.FLOAT32), D.Scalar)
    mat = args.materialize()
    assert mat.tensor_count == 1
    assert mat.scalar_count == 1
    assert mat.tensors[0] == (buf.ptr, 64, 0, (16,), (1,), 0)


def test_buffer_wrap_keeps_owner_and_views_are_checked() -> None:
    a = np.arange(12, dtype=np.float32)
    buf = Buffer.wrap(a.ctypes.data, a.nbytes, owner=a)
    assert buf.owner is a
    assert buf.borrowed
    t = buf.tensor((3, 4), "FLOAT32")
    assert t.strides == (4, 1)
    v = buf.tensor((2, 2), "FLOAT32", strides=(4, 1), byte_offset=16)
    assert v.descriptor()[5] == 4
    with pytest.raises(ValueError, match="needs 52 bytes, but the buffer holds 48"):
        buf.tensor((3, 4), "FLOAT32", byte_offset=4)
    with pytest.raises(ValueError, match="multiple of the FLOAT32 element size"):
        buf.tensor((2,), "FLOAT32", byte_offset=2)
    with pytest.raises(ValueError, match="nonzero 64-bit address"):
        Buffer.wrap(0, 4)
    with pytest.raises(ValueError, match="expected a DataType"):
        buf.tensor((2,), "complex128")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"task_window": 6}, r"task_window\[0\]: expected a power of two in \[4, 2\^31-1\], got 6"),
        ({"task_window": (4, 8, 16, 2)}, r"task_window\[3\]: .* got 2"),
        ({"heap": 1000}, r"heap\[0\]: expected at least 1024 bytes, got 1000"),
        ({"dep_pool": 3}, r"dep_pool\[0\]: expected a value in \[4, 2\^31-1\], got 3"),
        ({"workspace_budget_bytes": 100}, "workspace_budget_bytes: expected None or an int >= 1024"),
        ({"swimlane": True}, "output_prefix: swimlane output needs an output_prefix"),
        ({"dep_graph": True}, "output_prefix: dep_graph output needs an output_prefix"),
        ({"aicpu_thread_num": 0}, r"aicpu_thread_num: expected an int in \[1, 4\]"),
        ({"heap": (1024, 2048)}, "expected one value or 4"),
    ],
)
def test_call_config_validate(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        CallConfig(**kwargs).validate()  # type: ignore[arg-type]


def test_call_config_scalar_broadcasts() -> None:
    cfg = CallConfig(task_window=8, heap=2048, dep_pool=(4, 8, 16, 32)).validate()
    assert cfg.rings() == ((8,) * 4, (2048,) * 4, (4, 8, 16, 32))
