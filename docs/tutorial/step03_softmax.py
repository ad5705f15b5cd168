"""Step 3: reductions and broadcasting: a row softmax with a per-column scale.

Reductions turn a ``[R, C]`` tile into a row vector ``[R, 1]`` (``pl.row_sum``,
``pl.row_max``, ``pl.row_min``) or a column vector ``[1, C]`` (``pl.col_sum``, ...).
Broadcasting is explicit: ``pl.row_expand_<op>(tile, [R, 1])`` applies the op with the row
vector repeated over the columns, ``pl.col_expand_<op>(tile, [1, C])`` with the column vector
repeated over the rows. A rank-1 tensor window is loaded as a ``[1, n]`` tile.

    python docs/tutorial/step03_softmax.py
"""

from __future__ import annotations

import sys

import numpy as np
from _check import compare  # the shared compare-and-report of every step

import pypto.language as pl
import pypto.runtime  # noqa: F401  (installs the program-mode executor behind @pl.jit calls)

R, C = 32, 64


@pl.jit
def scaled_softmax(x: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="softmax"):
        t = pl.load(x, [0, 0], [R, C])
        scale = pl.load(w, [0, 0], [1, C])  # w is [1, C]
        tmp = pl.create_tile([R, C], dtype=pl.FP32, target_memory=pl.MemorySpace.Vec)  # scratch
        m: pl.Tile[[R, 1], pl.FP32] = pl.row_max(t, tmp)  # the annotation states the shape
        e = pl.exp(pl.row_expand_sub(t, m))  # subtract each row's max: no overflow
        s: pl.Tile[[R, 1], pl.FP32] = pl.row_sum(e, tmp)
        p = pl.row_expand_div(e, s)  # [R, C] / [R, 1]
        pl.store(pl.col_expand_mul(p, scale), [0, 0], out)  # [R, C] * [1, C]
    return out


def main() -> int:
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((R, C)) * 4).astype(np.float32)
    w = rng.uniform(0.5, 2.0, (1, C)).astype(np.float32)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True) * w

    out = np.full_like(x, np.nan)
    scaled_softmax(x, w, out)
    return compare("step03", out, want, rtol=1e-5, atol=1e-6)


if __name__ == "__main__":
    sys.exit(main())
