"""Kernels whose tiles add up to more than the Unified Buffer but fit it at their peak (the
tiles live at the same time), and kernels whose results are made over operands read there for
the last time (pypto.ir.passes.memory_alloc, "Dying operands"), compile and compute the right
numbers on the simulated chip, whose checks refuse a tile read after another overwrote it."""

from __future__ import annotations

import numpy as np

import pypto.language as pl

N = 128  # a [128, 128] FP32 tile is 64 KiB: four are 256 KiB, three fill the 192 KiB UB
ROWS, COLS, BLOCK = 32, 64, 8


@pl.jit
def four_tiles_three_live(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="peak3"):
        t = pl.load(a, [0, 0], [N, N])
        u = pl.add(t, t)
        v = pl.mul(u, t)  # made over t, which it reads last
        w = pl.sub(v, u)  # made over v
        pl.store(w, [0, 0], out)
    return out


@pl.jit
def row_softmax(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="softmax_rows"):
        for i in pl.range(ROWS // BLOCK):
            t = pl.load(a, [i * BLOCK, 0], [BLOCK, COLS])
            tmp = pl.create_tile([BLOCK, COLS], dtype=pl.FP32, target_memory=pl.MemorySpace.Vec)
            m: pl.Tile[[BLOCK, 1], pl.FP32] = pl.row_max(t, tmp)
            e = pl.row_expand_expdif(t, m)  # over t
            s: pl.Tile[[BLOCK, 1], pl.FP32] = pl.row_sum(e, tmp)
            pl.store(pl.row_expand_mul(e, pl.recip(s)), [i * BLOCK, 0], out)  # over e; the reciprocal over s
    return out


@pl.jit
def carried_sum(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="carried_sum"):
        acc = pl.load(a, [0, 0], [BLOCK, COLS])
        for i in pl.range(1, ROWS // BLOCK):
            x = pl.load(a, [i * BLOCK, 0], [BLOCK, COLS])
            acc = pl.add(x, acc)  # x read for the last time, but acc lives in the loop's holder
        pl.store(acc, [0, 0], out)
    return out


def test_four_tiles_of_which_three_are_live_run_on_a2a3sim() -> None:
    rng = np.random.default_rng(3)
    a = rng.uniform(-2.0, 2.0, (N, N)).astype(np.float32)
    out = np.zeros_like(a)
    four_tiles_three_live(a, out)
    u = a + a
    np.testing.assert_allclose(out, u * a - u, rtol=1e-6, atol=1e-6)


def test_a_softmax_made_over_its_input_tiles_runs_on_a2a3sim() -> None:
    rng = np.random.default_rng(4)
    a = rng.standard_normal((ROWS, COLS)).astype(np.float32)
    out = np.zeros_like(a)
    row_softmax(a, out)
    e = np.exp(a.astype(np.float64) - a.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_a_loop_carried_sum_keeps_its_own_storage_on_a2a3sim() -> None:
    rng = np.random.default_rng(5)
    a = rng.uniform(-2.0, 2.0, (ROWS, COLS)).astype(np.float32)
    out = np.zeros((BLOCK, COLS), np.float32)
    carried_sum(a, out)
    np.testing.assert_allclose(out, a.reshape(-1, BLOCK, COLS).sum(axis=0), rtol=1e-5, atol=1e-5)
