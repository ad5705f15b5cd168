"""``pl.pipeline(..., stage=k)`` on a2a3sim: the loop computes what the same pl.range loop
computes (the stage is a hint the simulated core does not act on), compared with numpy."""

from __future__ import annotations

import numpy as np

import pypto.language as pl


@pl.jit
def strided_row_sums(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    # out = sum over the 6 row blocks of x (each [8, 40]) of 0.5 * block
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.full([8, 40], dtype=pl.FP32, value=0.0)
        for r in pl.pipeline(0, 48, 8, stage=2):
            acc = pl.add(acc, pl.mul(pl.load(x, [r, 0], [8, 40]), 0.5))
        pl.store(acc, [0, 0], out)
    return out


def test_pipelined_loop_matches_numpy() -> None:
    x = np.random.default_rng(11).standard_normal((48, 40)).astype(np.float32)
    out = np.zeros((8, 40), np.float32)
    strided_row_sums(x, out)
    np.testing.assert_allclose(out, 0.5 * x.reshape(6, 8, 40).sum(axis=0), rtol=1e-5, atol=1e-5)
