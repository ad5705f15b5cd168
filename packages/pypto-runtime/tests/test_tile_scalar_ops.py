"""Tile-scalar arithmetic (``pl.tile.adds/subs/muls/divs``, ``pl.maximums/minimums``), ``pl.expands``
and ``pl.set_validshape`` on the simulated chip, checked against numpy."""

from __future__ import annotations

import numpy as np
import pto_backend
import pytest

import pypto.language as pl
import simpler

R, C = 16, 32


@pl.jit
def affine(a: pl.Tensor, o: pl.Out[pl.Tensor], clipped: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 32])
        u = pl.tile.divs(pl.tile.muls(pl.tile.subs(pl.tile.adds(t, 1.5), 0.25), 3.0), 4.0)
        pl.store(u, [0, 0], o)
        pl.store(pl.minimums(pl.maximums(t, -0.5), 0.75), [0, 0], clipped)
    return o, clipped


def test_tile_scalar_arithmetic_matches_numpy() -> None:
    a = np.random.default_rng(3).standard_normal((R, C)).astype(np.float32)
    o, clipped = np.zeros_like(a), np.zeros_like(a)
    affine(a, o, clipped)
    np.testing.assert_allclose(
        o, (a + np.float32(1.5) - np.float32(0.25)) * np.float32(3) / np.float32(4), rtol=1e-6
    )
    np.testing.assert_array_equal(clipped, np.clip(a, -0.5, 0.75))


@pl.jit
def int_ops(a: pl.Tensor, k: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        s = pl.read(k, [0])
        t = pl.load(a, [0, 0], [16, 32])
        pl.store(pl.tile.divs(pl.tile.subs(t, 3), s), [0, 0], o)
    return o


def test_integer_tiles_with_a_run_time_scalar_divide_toward_zero() -> None:
    a = np.arange(-256, 256, dtype=np.int32).reshape(R, C)
    o = np.zeros_like(a)
    int_ops(a, np.array([7], np.int32), o)
    np.testing.assert_array_equal(o, np.fix((a - 3) / 7).astype(np.int32))


def test_an_integer_zero_divisor_fails_the_task() -> None:
    # TDIVS's page: division by zero is target-defined; the official CPU backend divides in
    # C++ and an integer division by zero stops the process (SIGFPE)
    pto_backend.simpler_check_only("an integer division by a zero scalar")
    a = np.ones((R, C), np.int32)
    with pytest.raises(simpler.DeviceError, match="TDIVS: integer division by zero"):
        int_ops(a, np.array([0], np.int32), np.zeros_like(a))


@pl.jit
def tensor_level(a: pl.Tensor, o: pl.Out[pl.Tensor], filled: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        o[:] = pl.tensor.muls(pl.tensor.adds(a, 2.0), 0.5)
        filled[:] = pl.expands(a, -3.0)
    return o, filled


def test_tensor_forms_and_expands_of_a_tensor() -> None:
    a = np.linspace(-4, 4, R * C, dtype=np.float32).reshape(R, C)
    o, filled = np.zeros_like(a), np.zeros_like(a)
    tensor_level(a, o, filled)
    np.testing.assert_allclose(o, (a + 2) * 0.5, rtol=1e-6)
    np.testing.assert_array_equal(filled, np.full_like(a, -3.0))


@pl.jit
def expand_like(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 32], valid_shape=[3, 7])
        pl.store(pl.tile.expands(t, 9.0), [0, 0], o)
    return o


def test_expands_takes_the_targets_valid_shape() -> None:
    a = np.zeros((R, C), np.float32)
    o = np.full_like(a, -1.0)
    expand_like(a, o)
    want = np.full_like(a, -1.0)
    want[:3, :7] = 9.0  # only the target's valid region is stored
    np.testing.assert_array_equal(o, want)


@pl.jit
def narrowed(a: pl.Tensor, cfg: pl.Tensor, o: pl.Out[pl.Tensor], padded: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        n = pl.cast(pl.read(cfg, [0]), pl.INDEX)
        t = pl.load(a, [0, 0], [16, 32])
        v = pl.set_validshape(t, 4, n)
        pl.store(pl.tile.muls(v, 2.0), [0, 0], o)
        pl.store(pl.tile.fillpad(v, pad_value=pl.PadValue.zero), [0, 0], padded)
    return o, padded


def test_set_validshape_limits_later_ops_to_the_new_region() -> None:
    a = np.arange(R * C, dtype=np.float32).reshape(R, C)
    o, padded = np.full_like(a, -1.0), np.full_like(a, -1.0)
    narrowed(a, np.array([5], np.int32), o, padded)
    want = np.full_like(a, -1.0)
    want[:4, :5] = 2 * a[:4, :5]  # the multiply and the store cover the 4 x 5 valid region only
    np.testing.assert_array_equal(o, want)
    want_padded = np.zeros_like(a)
    want_padded[:4, :5] = a[:4, :5]  # the values kept, the rest set to the pad value
    np.testing.assert_array_equal(padded, want_padded)


def test_a_valid_shape_outside_the_tile_fails_the_task() -> None:
    a = np.zeros((R, C), np.float32)
    with pytest.raises(
        simpler.DeviceError, match=r"valid shape \[4, 40\] outside the static shape \[16, 32\]"
    ):
        narrowed(a, np.array([40], np.int32), np.zeros_like(a), np.zeros_like(a))
