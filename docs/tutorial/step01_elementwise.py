"""Step 1: an element-wise kernel with a scalar, out = alpha * x + y.

The smallest complete PyPTO program: a ``@pl.jit`` function (the orchestration, which runs on
the chip's AICPU) with one ``pl.at`` scope (the on-core kernel, which runs on an AICore). The
first version writes whole tensors at the tensor level; the second spells out the tiles that
the first one is lowered to.

    python docs/tutorial/step01_elementwise.py
"""

from __future__ import annotations

import sys

import numpy as np
from _check import Check  # the shared compare-and-report of every step

import pypto.language as pl
import pypto.runtime  # noqa: F401  (installs the program-mode executor behind @pl.jit calls)


@pl.jit
def axpy(x: pl.Tensor, y: pl.Tensor, alpha: pl.FP32, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="axpy"):
        out[:] = pl.add(pl.mul(x, alpha), y)  # tensor-level: the compiler makes the tiles
    return out


@pl.jit
def axpy_tiles(x: pl.Tensor, y: pl.Tensor, alpha: pl.FP32, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="axpy_tiles"):
        tx = pl.load(x, [0, 0], [16, 64])  # tensor window [0:16, 0:64] -> a Vec tile
        ty = pl.load(y, [0, 0], [16, 64])
        pl.store(pl.add(pl.mul(tx, alpha), ty), [0, 0], out)  # tile -> tensor window
    return out


def main() -> int:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((16, 64)).astype(np.float32)
    y = rng.standard_normal((16, 64)).astype(np.float32)
    want = 0.5 * x + y

    check = Check("step01")
    for fn in (axpy, axpy_tiles):
        out = np.full_like(x, np.nan)  # NaN: a kernel that writes nothing cannot pass
        result = fn(x, y, 0.5, out)  # compile (or reuse), run on a2a3sim, write `out` in place
        assert result is out, "an Out parameter is the caller's own array"
        if not check(out, want, rtol=1e-6, atol=1e-6, where=f" in {fn.__name__}"):
            break
    return check.status()


if __name__ == "__main__":
    sys.exit(main())
