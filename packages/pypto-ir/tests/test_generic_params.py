"""Specialising a ``@pl.jit`` function generically: ``pl.TensorSpec`` arguments with run-time
dims, and ``pl.dtype_var`` annotations bound to the call's dtype (no compile: IR only)."""

from __future__ import annotations

import numpy as np
import pytest

import pypto.language as pl
from pypto.ir import KernelError

T = 16
DT = pl.dtype_var("DT", pl.FP32, pl.FP16)
M = pl.dynamic("M")


@pl.jit
def rows_scaled(x: pl.Tensor[[M, T], DT], out: pl.Out[pl.Tensor[[M, T], DT]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [T, T], valid_shape=[M, T])
        if DT != pl.FP32:
            t = pl.cast(t, target_type=pl.FP32)
        y = pl.mul(t, 2.0)
        if DT is not pl.FP32:
            y = pl.cast(y, target_type=DT)
        pl.store(y, [0, 0], out)
    return out


@pl.jit
def copy(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.load(x, [0, 0], [T, T], valid_shape=[pl.dim(x, 0), pl.dim(x, 1)]), [0, 0], out)
    return out


def _ops(spec: pl.Specialization) -> str:
    return str(spec.program)


def test_a_dtype_variable_is_the_call_dtype_in_the_body() -> None:
    x32, x16 = np.zeros((8, T), np.float32), np.zeros((8, T), np.float16)
    s32 = rows_scaled.specialize(x32, np.zeros_like(x32))
    s16 = rows_scaled.specialize(x16, np.zeros_like(x16))
    assert [p.dtype for p in s32.params] == [pl.FP32, pl.FP32]
    assert [p.dtype for p in s16.params] == [pl.FP16, pl.FP16]
    assert "cast" not in _ops(s32)  # DT != pl.FP32 decided when specialising
    assert "cast" in _ops(s16)
    assert s32.key != s16.key
    x3 = np.zeros((3, T), np.float16)
    assert rows_scaled.specialize(x3, np.zeros_like(x3)) is s16  # M is run-time
    decl = rows_scaled.declared_params()
    assert decl[0].dtype is None  # the dtype comes from the call
    assert decl[0].shape is not None


def test_a_dtype_variable_refuses_other_and_mixed_dtypes() -> None:
    with pytest.raises(
        TypeError, match=r"parameter 'x' is annotated with dtype variable DT \(FP32, FP16\) but"
    ):
        rows_scaled.specialize(np.zeros((8, T), np.int32), np.zeros((8, T), np.int32))
    with pytest.raises(
        TypeError, match=r"dtype variable DT is FP32 in parameter 'x' but FP16 in parameter 'out'"
    ):
        rows_scaled.specialize(np.zeros((8, T), np.float32), np.zeros((8, T), np.float16))
    with pytest.raises(ValueError, match=r"pl.dtype_var\(name\): expected an identifier"):
        pl.dtype_var("1x")
    assert repr(pl.Tensor[[M, T], DT].dtype) == "DT"


def test_a_tensor_spec_keeps_its_dims_run_time() -> None:
    a, b = pl.dynamic("a"), pl.dynamic("b")
    spec = copy.specialize(pl.TensorSpec((a, b), pl.FP32), pl.TensorSpec((pl.dynamic("c"), 16), pl.FP32))
    assert [p.shape for p in spec.params] == [(-1, -1), (-1, 16)]
    same = copy.specialize(pl.TensorSpec((a, b), pl.FP32), pl.TensorSpec((pl.dynamic("c"), 16), pl.FP32))
    assert same is spec
    static = copy.specialize(np.zeros((16, 16), np.float32), np.zeros((16, 16), np.float32))
    assert [p.shape for p in static.params] == [(16, 16), (16, 16)]


def test_tensor_level_ops_refuse_run_time_dims_of_unrelated_tensors() -> None:
    @pl.jit
    def neg(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.neg(x)
        return out

    specs = (
        pl.TensorSpec((pl.dynamic("x_0"), pl.dynamic("x_1")), pl.FP32),
        pl.TensorSpec((pl.dynamic("out_0"), pl.dynamic("out_1")), pl.FP32),
    )
    # the window write trusts run-time extents (as upstream); the tensor-level op is refused
    # when the kernel lowers
    neg.specialize(*specs)
    with pytest.raises(
        KernelError, match=r"error: tensor-level ops need static shapes, but x has shape \[x_0, x_1\]"
    ):
        neg.lower(*specs)
