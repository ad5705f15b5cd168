"""Upstream's op keywords on the simulated chip, checked against torch: ``high_precision=``,
matmul ``a_trans``/``b_trans``/``out_dtype``, ``pl.slice`` with ``valid_shape``/``pad_value``
(sub-tiles and windows) and ``pl.fillpad`` on tensors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from runtime_programs import normal

import pypto.language as pl

torch = pytest.importorskip("torch")  # pypto-runtime's own session has no torch


@pl.jit
def precise(a: pl.Tensor, b: pl.Tensor, o: pl.Out[pl.Tensor], ot: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 32])
        q = pl.div(t, pl.load(b, [0, 0], [16, 32]), high_precision=True)
        pl.store(pl.recip(pl.log(q, high_precision=True), high_precision=True), [0, 0], o)
        ot[:] = pl.rsqrt(pl.tensor.div(a, b, high_precision=True), high_precision=True)
    return o, ot


def test_high_precision_computes_the_same_values() -> None:
    rng = np.random.default_rng(0)
    a = rng.uniform(2.0, 9.0, (16, 32)).astype(np.float32)
    b = rng.uniform(0.1, 0.9, (16, 32)).astype(np.float32)
    o, ot = np.zeros_like(a), np.zeros_like(a)
    precise(a, b, o, ot)
    x, y = torch.from_numpy(a), torch.from_numpy(b)
    torch.testing.assert_close(torch.from_numpy(o), 1 / torch.log(x / y))
    torch.testing.assert_close(torch.from_numpy(ot), torch.rsqrt(x / y))


@pl.jit
def attention_scores(q: pl.Tensor, k: pl.Tensor, qt: pl.Tensor, s: pl.Out[pl.Tensor], h: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        s[:] = pl.matmul(q, k, out_dtype=pl.FP32, a_trans=False, b_trans=True, c_matrix_nz=False)
        h[:] = pl.matmul(qt, k, out_dtype=pl.FP16, a_trans=True, b_trans=True)
    return s, h


def test_matmul_with_transposed_operands_and_a_narrower_out_dtype() -> None:
    q, k = normal(1, (16, 32), (24, 32))
    s, h = np.zeros((16, 24), np.float32), np.zeros((16, 24), np.float16)
    attention_scores(q, k, np.ascontiguousarray(q.T), s, h)
    want = torch.from_numpy(q) @ torch.from_numpy(k).T
    torch.testing.assert_close(torch.from_numpy(s), want, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(torch.from_numpy(h), want.to(torch.float16))


@pl.jit
def acc_trans(acc: pl.Tensor, a: pl.Tensor, b: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        o[:] = pl.matmul_acc(acc, a, b, b_trans=True)
    return o


def test_matmul_acc_with_a_transposed_rhs() -> None:
    acc, a, b = normal(2, (16, 16), (16, 32), (16, 32))
    o = np.zeros_like(acc)
    acc_trans(acc, a, b, o)
    want = torch.from_numpy(acc) + torch.from_numpy(a) @ torch.from_numpy(b).T
    torch.testing.assert_close(torch.from_numpy(o), want, rtol=1e-5, atol=1e-5)


@pl.jit
def padded_sub_tile(a: pl.Tensor, o: pl.Out[pl.Tensor], m: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 32])
        s = pl.slice(t, [8, 16], [4, 8], valid_shape=[5, 6], pad_value=-math.inf)
        pl.store(pl.set_validshape(s, 8, 16), [0, 0], o)  # the whole sub-tile, padding included
        pl.store(pl.row_max(pl.fillpad(s, pad_value=0)), [0, 0], m)
    return o, m


def test_a_sub_tile_keeps_its_valid_shape_and_holds_the_pad_value_outside_it() -> None:
    a = np.random.default_rng(3).standard_normal((16, 32)).astype(np.float32) - 5.0  # all negative
    o, m = np.zeros((8, 16), np.float32), np.zeros((8, 1), np.float32)
    padded_sub_tile(a, o, m)
    want = torch.full((8, 16), -math.inf)
    want[:5, :6] = torch.from_numpy(a[4:9, 8:14])
    torch.testing.assert_close(torch.from_numpy(o), want)
    # refilled with zeros, every row's maximum is 0: the valid values are all negative
    torch.testing.assert_close(torch.from_numpy(m), torch.zeros((8, 1)))


@pl.jit
def padded_window(a: pl.Tensor, o: pl.Out[pl.Tensor], z: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        w = pl.slice(a, [8, 32], [8, 0], valid_shape=[6, 20], pad_value=pl.PadValue.max)
        o[:] = pl.fillpad(pl.col_expand_min(w, pl.col_min(w)), pl.PadValue.max)
        z[:] = pl.fillpad(w, 0)
    return o, z


def test_a_window_with_a_valid_shape_is_read_as_that_valid_region() -> None:
    a = np.random.default_rng(4).standard_normal((16, 32)).astype(np.float32)
    o, z = np.zeros((8, 32), np.float32), np.zeros((8, 32), np.float32)
    padded_window(a, o, z)
    valid = torch.from_numpy(a[8:14, :20])
    want_o = torch.full((8, 32), math.inf)
    want_o[:6, :20] = torch.minimum(valid, valid.min(dim=0, keepdim=True).values)
    torch.testing.assert_close(torch.from_numpy(o), want_o)
    want_z = torch.zeros((8, 32))
    want_z[:6, :20] = valid
    torch.testing.assert_close(torch.from_numpy(z), want_z)


@pl.jit
def fill_whole(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        o[:] = pl.tensor.fillpad(pl.exp(a), pad_value=-math.inf)
    return o


def test_fillpad_of_a_whole_tensor_changes_nothing() -> None:
    a = np.random.default_rng(5).standard_normal((16, 32)).astype(np.float32)
    o = np.zeros_like(a)
    fill_whole(a, o)
    torch.testing.assert_close(torch.from_numpy(o), torch.exp(torch.from_numpy(a)))


@pl.jit
def past_the_end(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [32, 32], valid_shape=[20, 32])  # the tensor has 20 rows
        pl.store(pl.fillpad(t, pad_value=pl.PadValue.max), [0, 0], o)
    return o


def test_a_load_window_past_the_tensor_end_reads_only_its_valid_part() -> None:
    a = np.random.default_rng(6).standard_normal((20, 32)).astype(np.float32)
    o = np.zeros((32, 32), np.float32)
    past_the_end(a, o)
    want = torch.full((32, 32), math.inf)
    want[:20] = torch.from_numpy(a)
    torch.testing.assert_close(torch.from_numpy(o), want)
