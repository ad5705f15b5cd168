"""Bitwise ops, comparisons into predicate masks, selection, the max/min/expdif broadcasts and the
product reductions on the simulated chip, checked against torch."""

from __future__ import annotations

import numpy as np
import pto_backend
import pytest
from runtime_programs import normal

import pypto.language as pl
import simpler

torch = pytest.importorskip("torch")  # pypto-runtime's own session has no torch

R, C = 16, 40  # 40 columns: a mask row is 5 bytes, the last one partly used


def _ints(seed: int, lo: int = -3000, hi: int = 3000) -> np.ndarray:
    return np.random.default_rng(seed).integers(lo, hi, (R, C), dtype=np.int32)


@pl.jit
def bit_ops(a: pl.Tensor, b: pl.Tensor, o1: pl.Out[pl.Tensor], o2: pl.Out[pl.Tensor], o3: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [16, 40])
        y = pl.load(b, [0, 0], [16, 40])
        scratch = pl.tile.create([1, 32], dtype=pl.INT32)
        mixed = pl.xor(pl.and_(x, y), pl.ors(x, 6), scratch)
        pl.store(pl.not_(pl.or_(mixed, pl.tile.xors(y, 0x5A5))), [0, 0], o1)
        pl.store(pl.shr(pl.shls(x, 3), pl.ands(y, 15)), [0, 0], o2)
        pl.store(pl.shrs(pl.shl(x, pl.ands(y, 7)), 2), [0, 0], o3)
    return o1, o2, o3


def test_bitwise_tile_ops_match_torch() -> None:
    a, b = _ints(1), _ints(2)
    outs = [np.zeros_like(a) for _ in range(3)]
    bit_ops(a, b, *outs)
    x, y = torch.from_numpy(a), torch.from_numpy(b)
    mixed = torch.bitwise_xor(x & y, x | 6)
    torch.testing.assert_close(torch.from_numpy(outs[0]), torch.bitwise_not(mixed | (y ^ 0x5A5)))
    # right shifts of negative values are arithmetic, as torch's on signed integers
    torch.testing.assert_close(torch.from_numpy(outs[1]), (x << 3) >> (y & 15))
    torch.testing.assert_close(torch.from_numpy(outs[2]), (x << (y & 7)) >> 2)


@pl.jit
def shift_by(a: pl.Tensor, k: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        n = pl.read(k, [0])
        pl.store(pl.shls(pl.load(a, [0, 0], [16, 40]), n), [0, 0], o)
    return o


def test_a_shift_amount_outside_the_type_fails_the_task() -> None:
    a = _ints(3)
    o = np.zeros_like(a)
    shift_by(a, np.array([31], np.int32), o)
    torch.testing.assert_close(torch.from_numpy(o), torch.from_numpy(a) << 31)
    # TSHLS's page: the scalar is zero or positive; past the type's width it is C++ undefined
    # behaviour on the official CPU backend, which shifts unchecked
    pto_backend.simpler_check_only("a shift amount outside the type's width")
    with pytest.raises(simpler.DeviceError, match=r"TSHLS: shift amount outside \[0, 32\)"):
        shift_by(a, np.array([32], np.int32), o)


@pl.jit
def tensor_bits(a: pl.Tensor, b: pl.Tensor, o1: pl.Out[pl.Tensor], o2: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        o1[:] = pl.tensor.xors(pl.tensor.shl(a, pl.tensor.ands(b, 3)), 0x33)
        o2[:] = pl.not_(pl.tensor.shrs(pl.or_(a, b), 1))
    return o1, o2


def test_tensor_level_bitwise_ops_match_torch() -> None:
    a, b = _ints(4), _ints(5)
    o1, o2 = np.zeros_like(a), np.zeros_like(a)
    tensor_bits(a, b, o1, o2)
    x, y = torch.from_numpy(a), torch.from_numpy(b)
    torch.testing.assert_close(torch.from_numpy(o1), (x << (y & 3)) ^ 0x33)
    torch.testing.assert_close(torch.from_numpy(o2), ~((x | y) >> 1))


# upstream's cmp_type codes and the torch comparison of each
MODES = [(0, torch.eq), (1, torch.ne), (2, torch.lt), (3, torch.le), (4, torch.gt), (5, torch.ge)]


def _select_kernel(mode: int) -> pl.JITFunction:
    @pl.jit
    def select(a: pl.Tensor, b: pl.Tensor, o1: pl.Out[pl.Tensor], o2: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [0, 0], [16, 40])
            y = pl.load(b, [0, 0], [16, 40])
            scratch = pl.tile.create([1, 32], dtype=pl.UINT8)
            pl.store(pl.sel(pl.cmp(x, y, cmp_type=mode), x, y, scratch), [0, 0], o1)
            pl.store(pl.sels(pl.tile.cmps(x, 0.0, cmp_type=mode), y, scratch, -7.5), [0, 0], o2)
        return o1, o2

    return select


@pytest.mark.parametrize(("mode", "compare"), MODES)
def test_cmp_masks_select_as_torch_where(mode: int, compare) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(mode)
    a = rng.standard_normal((R, C)).astype(np.float32)
    b = np.where(rng.random((R, C)) < 0.3, a, rng.standard_normal((R, C)).astype(np.float32))  # some ties
    a[0, 0] = 0.0  # an exact tie with the scalar
    o1, o2 = np.zeros_like(a), np.zeros_like(a)
    _select_kernel(mode)(a, b, o1, o2)
    x, y = torch.from_numpy(a), torch.from_numpy(b)
    torch.testing.assert_close(torch.from_numpy(o1), torch.where(compare(x, y), x, y))
    torch.testing.assert_close(torch.from_numpy(o2), torch.where(compare(x, torch.tensor(0.0)), y, -7.5))


@pl.jit
def mask_bits(a: pl.Tensor, m: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.tile.cmps(pl.load(a, [0, 0], [16, 40]), 0, cmp_type=4), [0, 0], m)
    return m


def test_the_mask_packs_one_bit_per_value_low_bit_first() -> None:
    a = _ints(6, -2, 3)
    m = np.full((R, 32), 0xEE, np.uint8)  # the mask tile is [16, 32]: 40 bits padded to 32 bytes
    mask_bits(a, m)
    packed = np.packbits(a > 0, axis=1, bitorder="little")  # [16, 5]
    np.testing.assert_array_equal(m[:, :5], packed)
    assert (m[:, 5:] == 0xEE).all()  # only the mask's valid part (5 bytes a row) is stored


@pl.jit
def tensor_cmp(a: pl.Tensor, b: pl.Tensor, o1: pl.Out[pl.Tensor], o2: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        o1[:] = pl.cmp(a, b, cmp_type=3)
        o2[:] = pl.tensor.cmp(a, 100, cmp_type=1)
    return o1, o2


def test_tensor_cmp_is_zero_one_in_the_operand_dtype() -> None:
    a, b = _ints(7, -5, 5), _ints(8, -5, 5)
    a[3, :] = 100
    o1, o2 = np.full_like(a, 9), np.full_like(a, 9)
    tensor_cmp(a, b, o1, o2)
    x, y = torch.from_numpy(a), torch.from_numpy(b)
    torch.testing.assert_close(torch.from_numpy(o1), (x <= y).to(torch.int32))
    torch.testing.assert_close(torch.from_numpy(o2), (x != 100).to(torch.int32))


@pl.jit
def broadcasts(
    a: pl.Tensor, v: pl.Tensor, o1: pl.Out[pl.Tensor], o2: pl.Out[pl.Tensor], o3: pl.Out[pl.Tensor]
):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [16, 40])
        col = pl.load(v, [0, 0], [1, 40])
        soft = pl.row_expand_expdif(x, pl.row_max(x))
        pl.store(pl.row_expand_div(soft, pl.row_sum(soft)), [0, 0], o1)
        pl.store(pl.col_expand_min(pl.row_expand_max(x, pl.row_min(x)), col), [0, 0], o2)
        pl.store(pl.col_expand_expdif(x, col), [0, 0], o3)
    return o1, o2, o3


def test_max_min_expdif_broadcasts_match_torch() -> None:
    a, v = normal(9, (R, C), (1, C))
    outs = [np.zeros_like(a) for _ in range(3)]
    broadcasts(a, v, *outs)
    x, col = torch.from_numpy(a), torch.from_numpy(v)
    torch.testing.assert_close(torch.from_numpy(outs[0]), torch.softmax(x, dim=1))
    row_min = x.min(dim=1, keepdim=True).values
    torch.testing.assert_close(torch.from_numpy(outs[1]), torch.minimum(torch.maximum(x, row_min), col))
    torch.testing.assert_close(torch.from_numpy(outs[2]), torch.exp(x - col))


@pl.jit
def products(a: pl.Tensor, rows: pl.Out[pl.Tensor], cols: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [16, 40])
        pl.store(pl.row_prod(x), [0, 0], rows)
        pl.store(pl.col_prod(x), [0, 0], cols)
    return rows, cols


def test_row_and_column_products_match_torch() -> None:
    a = np.random.default_rng(10).uniform(0.8, 1.25, (R, C)).astype(np.float32)
    rows, cols = np.zeros((R, 1), np.float32), np.zeros((1, C), np.float32)
    products(a, rows, cols)
    x = torch.from_numpy(a)
    torch.testing.assert_close(torch.from_numpy(rows), x.prod(dim=1, keepdim=True), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(torch.from_numpy(cols), x.prod(dim=0, keepdim=True), rtol=1e-5, atol=1e-6)


@pl.jit
def arg_extremes(
    a: pl.Tensor, r1: pl.Out[pl.Tensor], r2: pl.Out[pl.Tensor], c1: pl.Out[pl.Tensor], c2: pl.Out[pl.Tensor]
):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [16, 40])
        pl.store(pl.row_argmax(x), [0, 0], r1)
        pl.store(pl.row_argmin(x), [0, 0], r2)
        pl.store(pl.col_argmax(x), [0, 0], c1)
        c2[:] = pl.col_argmin(a)
    return r1, r2, c1, c2


def test_arg_reductions_give_the_first_extreme_index_as_torch() -> None:
    a = np.random.default_rng(11).integers(-4, 4, (R, C)).astype(np.float32)  # many ties
    a[2, 7] = np.nan  # a NaN is the extreme of its row and column, for max and min alike
    r1, r2 = np.full((R, 1), -1, np.int32), np.full((R, 1), -1, np.int32)
    c1, c2 = np.full((1, C), -1, np.int32), np.full((1, C), -1, np.int32)
    arg_extremes(a, r1, r2, c1, c2)
    x = torch.from_numpy(a)
    x_max = x_min = x
    if pto_backend.official():
        # the pages do not rank NaN; the official CPU backend compares strictly, so a NaN after
        # the first element is never the extreme: it ranks as -inf for max and +inf for min
        x_max, x_min = x.nan_to_num(nan=-float("inf")), x.nan_to_num(nan=float("inf"))
    torch.testing.assert_close(torch.from_numpy(r1), x_max.argmax(dim=1, keepdim=True).to(torch.int32))
    torch.testing.assert_close(torch.from_numpy(r2), x_min.argmin(dim=1, keepdim=True).to(torch.int32))
    torch.testing.assert_close(torch.from_numpy(c1), x_max.argmax(dim=0, keepdim=True).to(torch.int32))
    torch.testing.assert_close(torch.from_numpy(c2), x_min.argmin(dim=0, keepdim=True).to(torch.int32))


@pl.jit
def packed_rows(a: pl.Tensor, v: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [16, 40], valid_shape=[12, 37])
        block = pl.load(v, [0, 0], [16, 8], valid_shape=[12, 8])  # a 32-byte block a row: 8 FP32 values
        scratch = pl.tile.create([16, 40], dtype=pl.FP32)
        pl.store(pl.fillpad(pl.tile.row_expand_add(x, block, tmp=scratch)), [0, 0], o)
    return o


def test_row_expand_add_repeats_a_packed_block_across_the_columns() -> None:
    a, v = normal(12, (R, C), (R, 8))
    o = np.full_like(a, 99.0)
    packed_rows(a, v, o)
    x, block = torch.from_numpy(a), torch.from_numpy(v)
    want = torch.zeros((R, C))
    want[:12, :37] = x[:12, :37] + block[:12].repeat(1, 5)[:, :37]
    torch.testing.assert_close(torch.from_numpy(o), want)


@pl.jit
def wide_mask(a: pl.Tensor, m: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [2, 64])
        mask = pl.load(m, [0, 0], [2, 2])  # two INT32 carriers a row: 64 mask bits
        scratch = pl.tile.create([1, 8], dtype=pl.FP32)
        pl.store(pl.sels(mask, x, scratch, -3.0), [0, 0], o)
    return o


def test_an_int32_mask_carrier_is_read_as_its_little_endian_bytes() -> None:
    a = np.arange(128, dtype=np.float32).reshape(2, 64)
    m = np.array([[0x000000FF, 0x80000001], [0xFFFFFFFF, 0]], dtype=np.uint32).view(np.int32)
    o = np.zeros_like(a)
    wide_mask(a, m, o)
    bits = np.unpackbits(m.view(np.uint8), axis=1, bitorder="little").astype(bool)  # [2, 64]
    np.testing.assert_array_equal(o, np.where(bits, a, -3.0))


@pl.jit
def leaky(a: pl.Tensor, s: pl.Tensor, o1: pl.Out[pl.Tensor], o2: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [16, 40])
        pl.store(pl.lrelu(x, 0.125), [0, 0], o1)
        pl.store(
            pl.prelu(x, pl.load(s, [0, 0], [16, 40]), pl.tile.create([16, 40], dtype=pl.FP32)), [0, 0], o2
        )
    return o1, o2


def test_leaky_relus_match_torch() -> None:
    rng = np.random.default_rng(13)
    a = rng.standard_normal((R, C)).astype(np.float32)
    s = rng.uniform(0.0, 2.0, (R, C)).astype(np.float32)  # slopes above 1 too
    o1, o2 = np.zeros_like(a), np.zeros_like(a)
    leaky(a, s, o1, o2)
    x = torch.from_numpy(a)
    torch.testing.assert_close(torch.from_numpy(o1), torch.nn.functional.leaky_relu(x, 0.125))
    torch.testing.assert_close(torch.from_numpy(o2), torch.where(x > 0, x, x * torch.from_numpy(s)))


@pl.jit
def narrow_casts(a: pl.Tensor, o16: pl.Out[pl.Tensor], o8: pl.Out[pl.Tensor], back: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [16, 40])
        i16 = pl.cast(x, pl.INT16)
        pl.store(i16, [0, 0], o16)
        pl.store(pl.cast(x, pl.UINT8), [0, 0], o8)
        pl.store(pl.cast(i16, pl.FP32), [0, 0], back)
    return o16, o8, back


def test_casts_to_the_narrower_integer_types_round_and_saturate() -> None:
    a = np.random.default_rng(14).uniform(-70000, 70000, (R, C)).astype(np.float32)
    a[0, :4] = [2.5, 3.5, -2.5, 255.6]  # ties round away from zero (the default mode, "round")
    o16, o8, back = np.zeros((R, C), np.int16), np.zeros((R, C), np.uint8), np.zeros((R, C), np.float32)
    narrow_casts(a, o16, o8, back)
    x = torch.from_numpy(np.sign(a) * np.floor(np.abs(a) + np.float32(0.5)))  # exact on these values
    want16 = x.clamp(-32768, 32767)
    torch.testing.assert_close(torch.from_numpy(o16), want16.to(torch.int16))
    torch.testing.assert_close(torch.from_numpy(o8), x.clamp(0, 255).to(torch.uint8))
    torch.testing.assert_close(torch.from_numpy(back), want16)


@pl.jit
def remainders(a: pl.Tensor, b: pl.Tensor, o1: pl.Out[pl.Tensor], o2: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.fmod(pl.load(a, [0, 0], [16, 40]), pl.load(b, [0, 0], [16, 40])), [0, 0], o1)
        o2[:] = pl.fmods(a, -2.5)
    return o1, o2


def test_fmod_keeps_the_sign_of_the_dividend_as_torch() -> None:
    rng = np.random.default_rng(15)
    a = rng.uniform(-20, 20, (R, C)).astype(np.float32)
    b = rng.choice([-3.0, -1.5, 0.75, 4.0], (R, C)).astype(np.float32)
    o1, o2 = np.zeros_like(a), np.zeros_like(a)
    remainders(a, b, o1, o2)
    x = torch.from_numpy(a)
    torch.testing.assert_close(torch.from_numpy(o1), torch.fmod(x, torch.from_numpy(b)))
    torch.testing.assert_close(torch.from_numpy(o2), torch.fmod(x, -2.5))
