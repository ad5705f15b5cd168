"""``pl.RUNTIME`` end to end on a2a3sim: one artifact serves every scalar value."""

from __future__ import annotations

import numpy as np
import pytest
from runtime_programs import scale

import pypto.language as pl
import pypto.runtime as rt
from pypto.ir.dtypes import DataType
from pypto.ir.param_info import ParamDirection, ParamInfo
from pypto.runtime import api
from pypto.runtime.artifact_runtime import default_runtime

RNG = np.random.default_rng(11)


def r(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def store_entries() -> list[str]:
    return [e.key for e in default_runtime().store.entries()]


@pl.jit
def shifted_rows(a: pl.Tensor, n: pl.Scalar[pl.INT32], c: pl.Out[pl.Tensor]):
    for i in pl.range(n):  # a runtime loop bound in the orchestration
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [i * 16, 0], [16, 64])
            pl.store(pl.add(t, n), [i * 16, 0], c)  # and a scalar operand in the kernel
    return c


@pl.jit
def affine(a: pl.Tensor, c: pl.Out[pl.Tensor], alpha: pl.Scalar[pl.FP32] = pl.RUNTIME):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64])
        pl.store(pl.add(pl.mul(t, alpha), alpha * 2.0), [0, 0], c)
    return c


@pl.jit
def window_at(a: pl.Tensor, row: pl.Scalar[pl.INT64], c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:, :] = a[row : row + 16, :]
    return c


@pl.jit
def bit_ops(a: pl.Tensor, n: pl.Scalar[pl.INT32], c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 64])
        pl.store(pl.add(t, ((n << 3) | (n & 5)) ^ (n >> 1)), [0, 0], c)
    return c


def test_shifts_and_bitwise_operators_of_a_runtime_scalar_compute_as_python() -> None:
    a = r(16, 64)
    prog = rt.compile(bit_ops, a, pl.RUNTIME, np.zeros_like(a))
    for n in (3, -5, 1000):  # a negative value shifts right with the sign, as Python's >>
        c = np.zeros_like(a)
        prog(a, n, c)
        np.testing.assert_allclose(c, a + np.float32(((n << 3) | (n & 5)) ^ (n >> 1)), rtol=1e-6)


def test_fp32_runtime_scalar_one_artifact_for_every_value() -> None:
    a = r(32, 32)
    prog = rt.compile(scale, a, pl.RUNTIME, np.zeros_like(a))
    for alpha in (1.5, 3.0, -0.25):
        c = np.zeros_like(a)
        prog(a, alpha, c)
        np.testing.assert_allclose(c, a * np.float32(alpha), rtol=1e-6)
    again = rt.compile(scale, a, out=np.zeros_like(a), alpha=pl.RUNTIME)  # keyword form
    assert again.artifact.key == prog.artifact.key
    assert again.path == prog.path
    assert store_entries() == [prog.artifact.key]
    folded = rt.compile(scale, a, 2.5, np.zeros_like(a))
    assert folded.artifact.key != prog.artifact.key


def test_int32_runtime_scalar_drives_the_loop_and_the_kernel() -> None:
    a = r(64, 64)
    prog = rt.compile(shifted_rows, a, pl.RUNTIME, np.zeros_like(a))
    assert prog.params[1] == ParamInfo("n", ParamDirection.IN, None, DataType.INT32)
    for n in (1, 2, 4):
        c = np.zeros_like(a)
        prog(a, n, c)
        want = np.zeros_like(a)
        want[: 16 * n] = a[: 16 * n] + n
        np.testing.assert_allclose(c, want, rtol=1e-6)
    assert len(store_entries()) == 1


def test_default_runtime_eager_calls_share_one_program() -> None:
    a = r(16, 64)
    for alpha in (0.5, 2.0, -1.0):
        c = np.zeros_like(a)
        affine(a, c, alpha)
        np.testing.assert_allclose(c, a * np.float32(alpha) + np.float32(alpha * 2.0), rtol=1e-6)
    spec = affine.specialize(a, np.zeros_like(a), 0.5)
    assert affine.specialize(a, np.zeros_like(a), -1.0) is spec  # one specialisation for all values
    assert len(spec.attached) == 1  # and one compiled program kept with it
    assert len(store_entries()) == 1
    with pytest.raises(TypeError, match=r"parameter 'alpha' is a runtime scalar.*pass its value"):
        affine(a, np.zeros_like(a))  # omitted: the default pl.RUNTIME has no value to run with


def test_runtime_marker_is_not_a_call_value() -> None:
    a = r(16, 16)
    prog = rt.compile(scale, a, pl.RUNTIME, np.zeros_like(a))
    with pytest.raises(TypeError, match=r"argument 'alpha': pl\.RUNTIME marks a runtime scalar"):
        prog(a, pl.RUNTIME, np.zeros_like(a))
    with pytest.raises(TypeError, match="'alpha'"):
        prog(a, np.zeros(3), np.zeros_like(a))


def test_kernel_contract_artifact_takes_the_scalar() -> None:
    a = r(16, 16)
    art = api.compile_artifact(scale, a, pl.RUNTIME, np.zeros_like(a), contract="KERNEL")
    assert art.params[1] == ParamInfo("alpha", ParamDirection.IN, None, DataType.FP32)
    assert art.params[1].is_scalar
    assert [p.name for p in art.params] == ["a", "alpha", "out"]
    same = api.compile_artifact(scale, a, out=np.zeros_like(a), alpha=pl.RUNTIME, contract="KERNEL")
    assert same.key == art.key


def test_window_at_a_runtime_offset() -> None:
    a = r(64, 64)
    prog = rt.compile(window_at, a, pl.RUNTIME, np.zeros((16, 64), np.float32))
    for row in (0, 8, 40):
        c = np.zeros((16, 64), np.float32)
        prog(a, row, c)
        np.testing.assert_array_equal(c, a[row : row + 16])
