"""Step 4: a LayerNorm, y = (x - mean) / sqrt(var + eps) * gamma + beta over each row.

Everything from steps 1-3 together: chunks of rows, one task per chunk, row reductions,
arithmetic on the ``[R, 1]`` row statistics, and both kinds of broadcast (the statistics over
columns, ``gamma``/``beta`` over rows).

    python docs/tutorial/step04_layernorm.py
"""

from __future__ import annotations

import sys

import numpy as np
from _check import compare  # the shared compare-and-report of every step

import pypto.language as pl
import pypto.runtime  # noqa: F401  (installs the program-mode executor behind @pl.jit calls)

ROWS, HIDDEN = 64, 128
TILE = 16  # rows per task
EPS = 1e-5


@pl.jit
def layer_norm(x: pl.Tensor, gamma: pl.Tensor, beta: pl.Tensor, y: pl.Out[pl.Tensor]):
    for i in pl.range(ROWS // TILE):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="layer_norm"):
            t = pl.load(x, [i * TILE, 0], [TILE, HIDDEN])
            g = pl.load(gamma, [0, 0], [1, HIDDEN])
            b = pl.load(beta, [0, 0], [1, HIDDEN])
            tmp = pl.create_tile([TILE, HIDDEN], dtype=pl.FP32, target_memory=pl.MemorySpace.Vec)
            total: pl.Tile[[TILE, 1], pl.FP32] = pl.row_sum(t, tmp)
            mean = pl.mul(total, 1.0 / HIDDEN)
            xc = pl.row_expand_sub(t, mean)
            sq: pl.Tile[[TILE, 1], pl.FP32] = pl.row_sum(pl.mul(xc, xc), tmp)
            rstd = pl.rsqrt(pl.add(pl.mul(sq, 1.0 / HIDDEN), EPS))
            normed = pl.row_expand_mul(xc, rstd)
            pl.store(pl.col_expand_add(pl.col_expand_mul(normed, g), b), [i * TILE, 0], y)
    return y


def main() -> int:
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((ROWS, HIDDEN)) * 2 + 1).astype(np.float32)
    gamma = rng.standard_normal((1, HIDDEN)).astype(np.float32)
    beta = rng.standard_normal((1, HIDDEN)).astype(np.float32)
    mean = x.mean(axis=1, keepdims=True)
    want = (x - mean) / np.sqrt(x.var(axis=1, keepdims=True) + EPS) * gamma + beta

    y = np.full_like(x, np.nan)
    layer_norm(x, gamma, beta, y)
    return compare("step04", y, want, rtol=1e-4, atol=1e-4)


if __name__ == "__main__":
    sys.exit(main())
