"""Step 7: dynamic shapes, and tails with ``valid_shape``.

``pl.dynamic("M")`` names a dimension whose extent is read from the tensor at run time: one
compiled program serves every M. M need not be a multiple of the tile, so the last block is
a *tail*: ``pl.load(..., valid_shape=[rows, cols])`` loads only the leading ``rows x cols``
region (run-time values allowed); the rest of the tile is padding. Ops read and write only
the valid region (a row reduction reduces the valid columns of the valid rows), and
``pl.store`` writes back only that region, so a tail never touches memory outside the tensor.

Here the rows and the row length are both dynamic: a row softmax of an [M, N] tensor, with
N at most one tile wide.

    python docs/tutorial/step07_dynamic_tails.py
"""

from __future__ import annotations

import sys

import numpy as np
from _check import Check  # the shared compare-and-report of every step

import pypto.language as pl
import pypto.runtime  # noqa: F401  (installs the program-mode executor behind @pl.jit calls)

M = pl.dynamic("M")
N = pl.dynamic("N")
T, W = 16, 64  # the tile: 16 rows, up to 64 columns


@pl.jit
def softmax_rows(x: pl.Tensor[[M, N], pl.FP32], out: pl.Out[pl.Tensor[[M, N], pl.FP32]]):
    for i in pl.range((M + T - 1) // T):  # one task per block of rows, the last one partial
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="softmax_block"):
            if (i + 1) * T <= M:  # a run-time branch, in the kernel
                rows = T  # a full block
            else:
                rows = M - i * T  # the tail
            t = pl.load(x, [i * T, 0], [T, W], valid_shape=[rows, N])  # valid region: [rows, N]
            tmp = pl.create_tile([T, W], dtype=pl.FP32, target_memory=pl.MemorySpace.Vec)
            m: pl.Tile[[T, 1], pl.FP32] = pl.row_max(t, tmp)  # over the N valid columns
            e = pl.exp(pl.row_expand_sub(t, m))
            s: pl.Tile[[T, 1], pl.FP32] = pl.row_sum(e, tmp)
            pl.store(pl.row_expand_div(e, s), [i * T, 0], out)  # writes the [rows, N] region
    return out


def main() -> int:
    rng = np.random.default_rng(7)
    check = Check("step07")
    for rows, cols in ((16, 64), (37, 50), (5, 9)):  # one artifact for all three
        x = (rng.standard_normal((rows, cols)) * 3).astype(np.float32)
        e = np.exp(x - x.max(axis=1, keepdims=True))
        want = e / e.sum(axis=1, keepdims=True)
        out = np.full_like(x, np.nan)
        softmax_rows(x, out)
        if not check(out, want, rtol=1e-5, atol=1e-6, where=f" at [{rows}, {cols}]"):
            break
    return check.status()


if __name__ == "__main__":
    sys.exit(main())
