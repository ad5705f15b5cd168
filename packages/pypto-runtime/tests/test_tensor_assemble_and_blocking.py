"""Tensor-level pl.assemble (plain and atomic), values passed between pl.at scopes, and
tensor-level matmuls too large for one set of cube tiles, run on the simulated chip and checked
against numpy (the BF16 chain, which needs torch for its BF16 tensors, is in
testing/tests/test_blocked_bf16_chain.py)."""

from __future__ import annotations

import numpy as np
import pytest
from runtime_programs import normal

import pypto.language as pl

ROWS, COLS, DEPTH, PARTS = 32, 48, 192, 3  # split-K: DEPTH = PARTS slices of 64


@pl.jit
def split_depth(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="clear"):
        c = pl.assemble(c, pl.full([ROWS, COLS], dtype=pl.FP32, value=0.0), [0, 0])
    for p in pl.parallel(PARTS):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="part"):
            d0 = p * (DEPTH // PARTS)
            piece = pl.matmul(a[:, d0 : d0 + DEPTH // PARTS], b[d0 : d0 + DEPTH // PARTS, :])
            c = pl.assemble(c, piece, [0, 0], atomic=pl.AtomicType.Add)
    return c


def test_atomic_assemble_sums_every_part_after_the_in_kernel_clear() -> None:
    a, b = normal(11, (ROWS, DEPTH), (DEPTH, COLS))
    c = np.full((ROWS, COLS), np.nan, np.float32)  # the kernel clears it first
    split_depth(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


@pl.jit
def halves(x: pl.Tensor, y: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.assemble(out, pl.add(x, y), [0, 0])
        out = pl.assemble(out, pl.mul(x, y), [16, 0])
    return out


def test_tensor_assemble_writes_tensor_level_values_into_windows() -> None:
    x, y = normal(12, (16, 40), (16, 40))
    out = np.zeros((32, 40), np.float32)
    halves(x, y, out)
    np.testing.assert_allclose(out[:16], x + y, rtol=1e-6)
    np.testing.assert_allclose(out[16:], x * y, rtol=1e-6)


@pl.jit
def two_stages(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="product"):
        prod = pl.matmul(a, b)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="epilogue"):
        out[:] = pl.relu(pl.sub(prod, bias))
    return out


def test_a_value_computed_in_one_scope_is_read_by_the_next() -> None:
    a, b, bias = normal(13, (48, 32), (32, 24), (48, 24))
    out = np.zeros((48, 24), np.float32)
    two_stages(a, b, bias, out)
    np.testing.assert_allclose(out, np.maximum(a.astype(np.float64) @ b - bias, 0.0), rtol=1e-4, atol=1e-4)


@pl.jit
def big_product(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        prod = pl.matmul(a, b)  # [192, 256] FP32: larger than L0C, lowered by blocks
        out = pl.assemble(out, prod, [32, 0])
    return out


def test_blocked_matmul_stores_each_block_into_its_window() -> None:
    a, b = normal(14, (192, 96), (96, 256))
    out = np.full((224, 256), -1.0, np.float32)
    big_product(a, b, out)
    np.testing.assert_allclose(out[32:], a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    assert np.all(out[:32] == -1.0)  # outside the window: untouched


@pl.jit
def accumulate_big(a: pl.Tensor, b: pl.Tensor, out: pl.InOut[pl.Tensor]):
    for h in pl.parallel(2):
        with pl.at(level=pl.Level.CORE_GROUP):
            part = pl.matmul(a[:, h * 64 : h * 64 + 64], b[h * 64 : h * 64 + 64, :])  # [160, 256]
            out = pl.assemble(out, part, [0, 0], atomic=pl.AtomicType.Add)
    return out


def test_blocked_atomic_assemble_adds_onto_what_the_tensor_holds() -> None:
    a, b, start = normal(16, (160, 128), (128, 256), (160, 256))
    out = start.copy()
    accumulate_big(a, b, out)
    np.testing.assert_allclose(out, start + a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


@pl.jit
def mixed(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(
        level=pl.Level.CORE_GROUP,
        optimizations=[pl.split(pl.SplitMode.LEFT_RIGHT), pl.cross_core_slot(slot_num=3)],
        no_dep_args=[bias],
    ):
        out[:] = pl.add(pl.matmul(a, b), bias)
    return out


@pytest.mark.parametrize("shape", [(32, 64, 48)])
def test_scope_hints_leave_the_numbers_alone(shape: tuple[int, int, int]) -> None:
    m, k, n = shape
    rng = np.random.default_rng(17)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    bias = rng.standard_normal((m, n)).astype(np.float32)
    out = np.zeros((m, n), np.float32)
    mixed(a, b, bias, out)
    want = a.astype(np.float64) @ b.astype(np.float64) + bias
    np.testing.assert_allclose(out, want, rtol=1e-3, atol=1e-3)


@pl.jit
def mixed_operands(x: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        half = pl.full([24, 40], dtype=pl.FP32, value=0.5)  # a tile
        row = pl.load(x, [0, 0], [24, 40])  # a tile
        scaled = pl.mul(x, half)  # tensor x tile: a tensor-level op
        out[:] = pl.add(pl.matmul(row, w), pl.sub(row, scaled))  # tile @ tensor, tile - tensor
    return out


def test_tiles_mix_with_tensor_level_operands() -> None:
    x, w = normal(18, (24, 40), (40, 40))
    out = np.zeros((24, 40), np.float32)
    mixed_operands(x, w, out)
    np.testing.assert_allclose(out, x.astype(np.float64) @ w + (x - 0.5 * x), rtol=1e-4, atol=1e-4)
