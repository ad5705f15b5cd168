"""Element-wise math ops on the simulated chip, checked against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import pypto.language as pl
from pypto.ir.errors import KernelError


@pl.jit
def trig(a: pl.Tensor, s: pl.Out[pl.Tensor], c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 32])
        pl.store(pl.sin(t), [0, 0], s)
        pl.store(pl.cos(t), [0, 0], c)
    return s, c


@pl.jit
def rotate(x: pl.Tensor, y: pl.Tensor, theta: pl.Tensor, out_x: pl.Out[pl.Tensor], out_y: pl.Out[pl.Tensor]):
    # x' = x cos(theta) - y sin(theta); y' = x sin(theta) + y cos(theta), tensor-level form.
    with pl.at(level=pl.Level.CORE_GROUP):
        out_x[:] = pl.sub(pl.mul(x, pl.cos(theta)), pl.mul(y, pl.sin(theta)))
        out_y[:] = pl.add(pl.mul(x, pl.sin(theta)), pl.mul(y, pl.cos(theta)))
    return out_x, out_y


def test_sin_cos_match_numpy() -> None:
    a = np.linspace(-7.0, 7.0, 16 * 32, dtype=np.float32).reshape(16, 32)
    s, c = np.zeros_like(a), np.zeros_like(a)
    trig(a, s, c)
    np.testing.assert_allclose(s, np.sin(a), atol=1e-6)
    np.testing.assert_allclose(c, np.cos(a), atol=1e-6)


def test_rotation_from_sin_and_cos() -> None:
    rng = np.random.default_rng(7)
    x, y = (rng.standard_normal((16, 64)).astype(np.float32) for _ in range(2))
    theta = rng.uniform(-np.pi, np.pi, (16, 64)).astype(np.float32)
    ox, oy = np.zeros_like(x), np.zeros_like(x)
    rotate(x, y, theta, ox, oy)
    np.testing.assert_allclose(ox, x * np.cos(theta) - y * np.sin(theta), atol=1e-5)
    np.testing.assert_allclose(oy, x * np.sin(theta) + y * np.cos(theta), atol=1e-5)


@pl.jit
def int_sin(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.sin(a)
    return c


def test_sin_of_integers_is_refused() -> None:
    a = np.zeros((16, 16), np.int32)
    with pytest.raises(KernelError, match="sin"):
        int_sin(a, np.zeros_like(a))
