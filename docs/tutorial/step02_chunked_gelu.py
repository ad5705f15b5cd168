"""Step 2: loops over chunks: a tanh-GELU over a tensor bigger than one tile.

A tile is small (it lives in the AICore's 192 KiB unified buffer), so a kernel walks a big
tensor in chunks. Two places for the loop:

- inside the ``pl.at`` scope: one task that loops on one core;
- around the ``pl.at`` scope, in the orchestration: one task per chunk, which the scheduler
  spreads over the vector cores (the chunks write disjoint windows, so they are independent).

There is no ``pl.tanh``; GELU's tanh is composed from ``exp`` and ``recip``:
0.5 * x * (1 + tanh(u)) = x - x / (exp(2u) + 1).

    python docs/tutorial/step02_chunked_gelu.py
"""

from __future__ import annotations

import sys

import numpy as np
from _check import Check  # the shared compare-and-report of every step

import pypto.language as pl
import pypto.runtime  # noqa: F401  (installs the program-mode executor behind @pl.jit calls)

ROWS, COLS = 128, 64  # the tensor
TILE = 32  # rows per chunk: a [32, 64] FP32 tile is 8 KiB
K0 = float(np.sqrt(2.0 / np.pi))  # module constants are folded into the kernel


@pl.jit.inline
def gelu_tile(t):
    u = pl.mul(pl.add(t, pl.mul(pl.mul(pl.mul(t, t), t), 0.044715)), K0)
    return pl.sub(t, pl.mul(t, pl.recip(pl.add(pl.exp(pl.mul(u, 2.0)), 1.0))))


@pl.jit
def gelu_loop_in_kernel(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="gelu_all"):
        for i in pl.range(ROWS // TILE):  # a device loop, on the core
            t = pl.load(x, [i * TILE, 0], [TILE, COLS])
            pl.store(gelu_tile(t), [i * TILE, 0], out)
    return out


@pl.jit
def gelu_task_per_chunk(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    for i in pl.range(ROWS // TILE):  # an orchestration loop: one task per iteration
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="gelu_chunk"):
            t = pl.load(x, [i * TILE, 0], [TILE, COLS])
            pl.store(gelu_tile(t), [i * TILE, 0], out)
    return out


def gelu_ref(x: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    return (0.5 * x64 * (1.0 + np.tanh(K0 * (x64 + 0.044715 * x64**3)))).astype(np.float32)


def main() -> int:
    x = (np.random.default_rng(2).standard_normal((ROWS, COLS)) * 3).astype(np.float32)
    want = gelu_ref(x)
    check = Check("step02")
    for fn in (gelu_loop_in_kernel, gelu_task_per_chunk):
        out = np.full_like(x, np.nan)
        fn(x, out)
        if not check(out, want, rtol=1e-5, atol=1e-5, where=f" in {fn.__name__}"):
            break
    return check.status()


if __name__ == "__main__":
    sys.exit(main())
