"""Model-kernel forms inside pl.at scopes, run on the simulated chip and checked against torch:
scope-local pl.create_tensor (an on-chip tile, or device memory when it is too large), values
carried through loops and branches as tensor-level values, tensor-level pl.matmul_acc, windows
of on-chip values, and inline helpers that assemble into a pl.Out parameter."""

from __future__ import annotations

import pytest

import pypto.language as pl

# torch is optional for pypto-runtime: these run in the combined `tests` session, which has it.
torch = pytest.importorskip("torch")

ROWS, DEPTH, WIDTH, DEPTH_STEP, WIDTH_STEP = 8, 96, 64, 32, 32


@pl.jit
def blocked_projection(x: pl.Tensor, w: pl.Tensor, y: pl.Out[pl.Tensor]):
    for n0 in pl.parallel(0, WIDTH, WIDTH_STEP):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="proj"):
            acc = pl.create_tensor([ROWS, WIDTH_STEP], dtype=pl.FP32)
            for kb in pl.pipeline(0, DEPTH // DEPTH_STEP, stage=2):
                k0 = kb * DEPTH_STEP
                xs = x[:, k0 : k0 + DEPTH_STEP]
                ws = w[k0 : k0 + DEPTH_STEP, n0 : n0 + WIDTH_STEP]
                if k0 == 0:
                    acc = pl.matmul(xs, ws, out_dtype=pl.FP32)
                else:
                    acc = pl.matmul_acc(acc, xs, ws)
            y = pl.assemble(y, acc, [0, n0])
    return y


def test_scope_local_accumulator_carried_through_a_pipeline_and_a_branch() -> None:
    torch.manual_seed(21)
    x, w = torch.randn(ROWS, DEPTH), torch.randn(DEPTH, WIDTH)
    y = torch.full((ROWS, WIDTH), float("nan"))
    blocked_projection(x, w, y)
    torch.testing.assert_close(y, (x.double() @ w.double()).float(), rtol=1e-4, atol=1e-4)


@pl.jit
def gated(x: pl.Tensor, wa: pl.Tensor, wb: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="first"):
        a = pl.create_tensor([ROWS, WIDTH], dtype=pl.FP32)
        for kb in pl.range(DEPTH // DEPTH_STEP):
            k0 = kb * DEPTH_STEP
            a = pl.matmul_acc(a, x[:, k0 : k0 + DEPTH_STEP], wa[k0 : k0 + DEPTH_STEP, :])
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="second"):
        b = pl.matmul(x, wb)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="combine"):
        out = pl.assemble(out, pl.mul(pl.recip(pl.add(pl.exp(pl.neg(a)), 1.0)), b), [0, 0])
    return out


def test_scratch_starts_at_zero_and_loop_results_reach_later_scopes() -> None:
    torch.manual_seed(22)
    x, wa, wb = torch.randn(ROWS, DEPTH), torch.randn(DEPTH, WIDTH), torch.randn(DEPTH, WIDTH)
    out = torch.zeros(ROWS, WIDTH)
    gated(x, wa, wb, out)
    a, b = x.double() @ wa.double(), x.double() @ wb.double()
    torch.testing.assert_close(out, (torch.sigmoid(a) * b).float(), rtol=1e-4, atol=1e-4)


COLS, COL_STEP = 128, 32


@pl.jit
def row_rms(x: pl.Tensor, gamma: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="rms"):
        total = pl.full([1, ROWS], dtype=pl.FP32, value=0.0)  # a tile, rebound to tensor-level sums
        for cb in pl.range(COLS // COL_STEP):
            c0 = cb * COL_STEP
            part = x[:, c0 : c0 + COL_STEP]
            total = pl.add(total, pl.reshape(pl.row_sum(pl.mul(part, part)), [1, ROWS]))
        inv = pl.reshape(pl.rsqrt(pl.add(pl.mul(total, 1.0 / COLS), 1e-5)), [ROWS, 1])
        for cb in pl.range(COLS // COL_STEP):
            c0 = cb * COL_STEP
            scaled = pl.col_expand_mul(
                pl.row_expand_mul(x[:, c0 : c0 + COL_STEP], inv), gamma[:, c0 : c0 + COL_STEP]
            )
            out = pl.assemble(out, scaled, [0, c0])
    return out


def test_a_tile_carried_as_a_tensor_level_sum() -> None:
    torch.manual_seed(23)
    x, gamma = torch.randn(ROWS, COLS), torch.randn(1, COLS)
    out = torch.zeros(ROWS, COLS)
    row_rms(x, gamma, out)
    xd = x.double()
    want = xd * torch.rsqrt(xd.pow(2).mean(dim=1, keepdim=True) + 1e-5) * gamma.double()
    torch.testing.assert_close(out, want.float(), rtol=1e-4, atol=1e-4)


HEADS, HEAD_DIM = 4, 32


@pl.jit
def rotate_halves(q: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="rotate"):
        block = pl.reshape(q[0:1, :], [HEADS, HEAD_DIM])  # a tensor-level value held on chip
        lo = block[:, 0 : HEAD_DIM // 2]  # windows of it: sub-tiles
        hi = block[:, HEAD_DIM // 2 : HEAD_DIM]
        out = pl.assemble(out, pl.neg(hi), [0, 0])
        out = pl.assemble(out, lo, [0, HEAD_DIM // 2])
    return out


def test_windows_of_an_on_chip_value_are_its_sub_tiles() -> None:
    torch.manual_seed(24)
    q = torch.randn(2, HEADS * HEAD_DIM)
    out = torch.zeros(HEADS, HEAD_DIM)
    rotate_halves(q, out)
    block = q[0].reshape(HEADS, HEAD_DIM)
    torch.testing.assert_close(out, torch.cat([-block[:, HEAD_DIM // 2 :], block[:, : HEAD_DIM // 2]], dim=1))


BIG_ROWS, BIG_COLS = 64, 1024  # 256 KiB of FP32: more than any platform's Vec buffer


@pl.jit
def staged_copy(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="staged"):
        stage = pl.create_tensor([BIG_ROWS, BIG_COLS], dtype=pl.FP32)  # device memory
        for cb in pl.range(BIG_COLS // 256):
            c0 = cb * 256
            stage = pl.assemble(stage, pl.mul(x[:, c0 : c0 + 256], 3.0), [0, c0])
        for cb in pl.range(BIG_COLS // 256):
            c0 = cb * 256
            out = pl.assemble(out, pl.add(stage[:, c0 : c0 + 256], 1.0), [0, c0])
    return out


def test_a_scope_local_tensor_too_large_for_a_tile_lives_in_device_memory() -> None:
    torch.manual_seed(25)
    x = torch.randn(BIG_ROWS, BIG_COLS)
    out = torch.zeros(BIG_ROWS, BIG_COLS)
    staged_copy(x, out)
    torch.testing.assert_close(out, x * 3.0 + 1.0)


@pl.jit.inline
def doubled_into(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="double"):
        for cb in pl.range(COLS // COL_STEP):
            c0 = cb * COL_STEP
            y = pl.assemble(y, pl.mul(x[:, c0 : c0 + COL_STEP], 2.0), [0, c0])
    return y


@pl.jit
def through_helper(x: pl.Tensor, written: pl.Tensor, out: pl.Out[pl.Tensor]):
    written = doubled_into(x, written)  # a bare pl.Tensor the helper declares pl.Out: InOut
    tmp = pl.create_tensor([ROWS, COLS], dtype=pl.FP32)
    tmp = doubled_into(written, tmp)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="sum"):
        out = pl.assemble(out, pl.add(tmp, x), [0, 0])
    return out


def test_inline_helpers_assemble_into_their_out_parameters() -> None:
    torch.manual_seed(26)
    x = torch.randn(ROWS, COLS)
    written = torch.zeros(ROWS, COLS)
    out = torch.zeros(ROWS, COLS)
    through_helper(x, written, out)
    torch.testing.assert_close(written, 2 * x)
    torch.testing.assert_close(out, 5 * x)


@pl.jit
def staged_halves(x: pl.Tensor, y: pl.Out[pl.Tensor], z: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="stage"):
        # a small scope-local tensor written in parts (its tile), added into, then read whole
        # and through a window
        stage = pl.create_tensor([ROWS, 2 * WIDTH_STEP], dtype=pl.FP32)
        stage = pl.assemble(stage, x[:, 0:WIDTH_STEP], [0, WIDTH_STEP])
        stage = pl.assemble(stage, pl.exp(x[:, WIDTH_STEP : 2 * WIDTH_STEP]), [0, 0])
        stage = pl.assemble(stage, x[:, 0:WIDTH_STEP], [0, 0], atomic=pl.AtomicType.Add)
        y = pl.assemble(y, stage, [0, 0])
        z = pl.assemble(z, pl.neg(stage[:, WIDTH_STEP : 2 * WIDTH_STEP]), [0, 0])
    return y, z


def test_a_small_scope_local_tensor_is_assembled_into_in_its_tile() -> None:
    torch.manual_seed(23)
    x = torch.randn(ROWS, 2 * WIDTH_STEP)
    y, z = torch.zeros(ROWS, 2 * WIDTH_STEP), torch.zeros(ROWS, WIDTH_STEP)
    staged_halves(x, y, z)
    lo, hi = x[:, :WIDTH_STEP], x[:, WIDTH_STEP:]
    torch.testing.assert_close(y, torch.cat([torch.exp(hi) + lo, lo], dim=1), rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(z, -lo, rtol=0, atol=0)


@pl.jit
def written_by_statements(x: pl.Tensor, col: pl.Tensor, y: pl.Out[pl.Tensor], z: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="statements"):
        # writes as statements (no name rebound) into scope-local tensors, then read
        u = pl.create_tensor([ROWS, WIDTH_STEP], dtype=pl.FP32)
        pl.assemble(u, x, [0, 0])
        y = pl.assemble(y, u, [0, 0])
        w = pl.create_tensor([ROWS, WIDTH_STEP], dtype=pl.FP32)
        pl.expand_clone(col, w)
        z = pl.assemble(z, w, [0, 0])
    return y, z


def test_a_write_as_a_statement_reaches_the_scope_local_tensors_readers() -> None:
    torch.manual_seed(29)
    x, col = torch.randn(ROWS, WIDTH_STEP), torch.randn(ROWS, 1)
    y, z = torch.zeros(ROWS, WIDTH_STEP), torch.zeros(ROWS, WIDTH_STEP)
    written_by_statements(x, col, y, z)
    torch.testing.assert_close(y, x, rtol=0, atol=0)
    torch.testing.assert_close(z, col.expand(ROWS, WIDTH_STEP), rtol=0, atol=0)
