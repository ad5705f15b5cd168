"""An omitted Out parameter: @pl.jit and a compiled program follow one rule."""

from __future__ import annotations

import numpy as np
import pytest

import pypto.language as pl
import pypto.runtime as rt


@pl.jit
def doubled(a: pl.Tensor[[16, 16], pl.FP32], c: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.mul(a, 2.0)
    return c


@pl.jit
def doubled_any(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.mul(a, 2.0)
    return c


def test_jit_allocates_an_out_whose_annotation_fixes_shape_and_dtype() -> None:
    a = np.arange(256, dtype=np.float32).reshape(16, 16)
    c = doubled(a)
    assert isinstance(c, np.ndarray)
    assert c.shape == (16, 16)
    assert c.dtype == np.float32
    np.testing.assert_array_equal(c, 2 * a)
    # The compiled program of the same function allocates the same way.
    np.testing.assert_array_equal(rt.compile(doubled, a, np.zeros_like(a))(a), 2 * a)


def test_jit_allocates_like_the_inputs() -> None:
    torch = pytest.importorskip("torch", reason="torch is optional for pypto-runtime")
    c = doubled(torch.ones(16, 16))
    assert isinstance(c, torch.Tensor)
    assert bool((c == 2).all())


def test_an_out_whose_shape_comes_from_the_call_must_be_passed() -> None:
    a = np.ones((16, 16), np.float32)
    with pytest.raises(
        TypeError, match=r"missing a required argument: 'c'; an Out parameter \('c'\) is allocated"
    ):
        doubled_any(a)
    c = np.zeros_like(a)
    assert doubled_any(a, c) is c
