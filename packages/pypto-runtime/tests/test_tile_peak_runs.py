"""A kernel whose tiles add up to more than the Unified Buffer but fit it at their peak (the
tiles live at the same time) compiles and computes the right numbers on the simulated chip."""

from __future__ import annotations

import numpy as np

import pypto.language as pl

N = 128  # a [128, 128] FP32 tile is 64 KiB: four are 256 KiB, three fill the 192 KiB UB


@pl.jit
def four_tiles_three_live(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="peak3"):
        t = pl.load(a, [0, 0], [N, N])
        u = pl.add(t, t)
        v = pl.mul(u, t)  # t, u, v live
        w = pl.sub(v, u)  # u, v, w live: t's buffer is free again
        pl.store(w, [0, 0], out)
    return out


def test_four_tiles_of_which_three_are_live_run_on_a2a3sim() -> None:
    rng = np.random.default_rng(3)
    a = rng.uniform(-2.0, 2.0, (N, N)).astype(np.float32)
    out = np.zeros_like(a)
    four_tiles_three_live(a, out)
    u = a + a
    np.testing.assert_allclose(out, u * a - u, rtol=1e-6, atol=1e-6)
