"""A kernel with ``pl.func_attr`` runs on the simulated chip with the numbers it has without them
(the attributes are hints for device backends), checked against numpy."""

from __future__ import annotations

import numpy as np

import pypto.language as pl


@pl.jit.incore
def scaled(x: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    pl.func_attr({"stationary": w, "split": pl.SplitMode.LEFT_RIGHT, "unroll": 2})
    t = pl.load(x, [0, 0], [16, 32])
    u = pl.load(w, [0, 0], [16, 32])
    pl.store(pl.tile.adds(pl.mul(t, u), 0.5), [0, 0], out)
    return out


@pl.jit
def run(x: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    out = scaled(x, w, out)
    return out


def test_a_kernel_with_attributes_computes_the_same_numbers() -> None:
    rng = np.random.default_rng(11)
    x, w = (rng.standard_normal((16, 32)).astype(np.float32) for _ in range(2))
    out = np.zeros_like(x)
    run(x, w, out)
    np.testing.assert_allclose(out, x * w + np.float32(0.5), rtol=1e-6)
