"""Host tensor description (numpy, torch CPU) and parameter checks, without copies."""

from __future__ import annotations

import numpy as np
import pytest

from pypto.ir.dtypes import DataType
from pypto.ir.param_info import ParamInfo
from pypto.runtime.host_tensors import TensorBindingError, allocate_like, check_against, describe


def test_numpy_contiguous_and_views() -> None:
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    v = describe(a, what="a")
    assert v.ptr == a.ctypes.data
    assert (v.shape, v.strides, v.dtype, v.span_bytes) == ((4, 6), (6, 1), DataType.FP32, 96)
    assert v.is_contiguous
    s = a[1:3, ::2]
    w = describe(s, what="s")
    assert w.ptr == s.ctypes.data
    assert w.strides == (6, 2)
    assert not w.is_contiguous
    assert w.span_bytes == ((1 * 6 + 2 * 2) + 1) * 4


def test_numpy_rejections() -> None:
    a = np.arange(8, dtype=np.float32)
    with pytest.raises(TensorBindingError, match="negative"):
        describe(a[::-1], what="x")
    with pytest.raises(TensorBindingError, match="unsupported"):
        describe(np.zeros(3, np.complex64), what="x")
    with pytest.raises(TensorBindingError, match="0-d"):
        describe(np.float32(1.0).reshape(()), what="x")
    with pytest.raises(TensorBindingError, match="expected a host tensor"):
        describe([1, 2], what="x")


def test_check_against_binds_dynamic_dims() -> None:
    p = ParamInfo("x", "In", (-1, 8), "FP32")
    bound: dict[str, int] = {}
    check_against(describe(np.zeros((5, 8), np.float32), what="x"), p, bound, what="x")
    assert bound == {"x.0": 5}
    with pytest.raises(TensorBindingError, match="dimension 1 must be 8"):
        check_against(describe(np.zeros((5, 7), np.float32), what="x"), p, {}, what="x")
    with pytest.raises(TensorBindingError, match="expected dtype FP32, got FP16"):
        check_against(describe(np.zeros((5, 8), np.float16), what="x"), p, {}, what="x")
    out = ParamInfo("y", "Out", (2,), "FP32")
    ro = np.zeros(2, np.float32)
    ro.setflags(write=False)
    with pytest.raises(TensorBindingError, match="read-only"):
        check_against(describe(ro, what="y"), out, {}, what="y")


def test_allocate_numpy() -> None:
    out = allocate_like((3, 4), DataType.FP16, [np.zeros(1, np.float32)])
    assert isinstance(out, np.ndarray)
    assert out.shape == (3, 4)
    assert out.dtype == np.float16


def test_torch_cpu_tensor_without_copy() -> None:
    torch = pytest.importorskip("torch", reason="torch is optional for pypto-runtime")
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)[:, 1:]
    v = describe(t, what="t")
    assert v.ptr == t.data_ptr()
    assert v.strides == (4, 1)
    assert v.dtype is DataType.FP32
    out = allocate_like((2,), DataType.BF16, [t])
    assert isinstance(out, torch.Tensor)
    assert out.dtype == torch.bfloat16
    with pytest.raises(TensorBindingError, match="requires grad while autograd is enabled"):
        describe(torch.zeros(2, requires_grad=True), what="g")
    with torch.no_grad():  # borrowed as it is, as kernel mode does
        g = torch.zeros(2, requires_grad=True)
        assert describe(g, what="g").ptr == g.data_ptr()


def test_broadcast_views_are_refused_naming_the_axis() -> None:
    base = np.zeros(16, np.float32)
    view = np.lib.stride_tricks.as_strided(base, (4, 16), (0, 4))
    with pytest.raises(
        TensorBindingError, match=r"^v: stride 0 on axis 0, a broadcast \(expanded\) view whose 4"
    ):
        describe(view, what="v")
    torch = pytest.importorskip("torch", reason="torch is optional for pypto-runtime")
    with pytest.raises(TensorBindingError, match=r"^t: stride 0 on axis 1.*pass \.contiguous\(\)"):
        describe(torch.zeros(4, 1).expand(4, 8), what="t")
    assert describe(np.zeros((1, 8), np.float32)[:, :], what="one row").shape == (1, 8)  # extent 1: fine
