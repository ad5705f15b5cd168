"""Step 5: a tiled matmul on the cube unit with ``matmul_acc``, and a vector epilogue.

y = relu(a @ b + bias), for a [M, K] and b [K, N], in output tiles of [TM, TN]:

- a *cube* task per output tile: the K dimension in steps of TK, each step loads an a-panel
  and a b-panel to L1 (``Mat``), moves them to the cube's operand buffers (``Left``,
  ``Right``) and accumulates in the ``Acc`` buffer: ``pl.matmul`` for the first step,
  ``pl.matmul_acc`` for the rest (the accumulator is carried by the loop);
- a *vector* task per output tile for the epilogue (bias, relu), because the cube unit does
  matmuls only. The two talk through ``h``, an intermediate tensor in device memory
  (``pl.create_tensor``); the runtime orders each epilogue after the cube task that wrote its
  window of ``h``.

    python docs/tutorial/step05_tiled_matmul.py
"""

from __future__ import annotations

import sys

import numpy as np
from _check import compare  # the shared compare-and-report of every step

import pypto.language as pl
import pypto.runtime  # noqa: F401  (installs the program-mode executor behind @pl.jit calls)

M, K, N = 64, 128, 64
TM, TK, TN = 32, 32, 32
Mat, Left, Right = pl.MemorySpace.Mat, pl.MemorySpace.Left, pl.MemorySpace.Right


@pl.jit
def linear_relu(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, y: pl.Out[pl.Tensor]):
    h = pl.create_tensor([M, N], dtype=pl.FP32)  # a @ b, before the epilogue
    for mi in pl.range(M // TM):
        for ni in pl.range(N // TN):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="mm"):  # an AIC (cube) task
                l1a = pl.load(a, [mi * TM, 0], [TM, TK], target_memory=Mat)  # device memory -> L1
                l1b = pl.load(b, [0, ni * TN], [TK, TN], target_memory=Mat)
                ta = pl.move(l1a, target_memory=Left)  # L1 -> L0A
                tb = pl.move(l1b, target_memory=Right)  # L1 -> L0B
                acc: pl.Tile[[TM, TN], pl.FP32] = pl.matmul(ta, tb)  # a new Acc (L0C) tile
                for ki in pl.range(1, K // TK):
                    l1a = pl.load(a, [mi * TM, ki * TK], [TM, TK], target_memory=Mat)
                    l1b = pl.load(b, [ki * TK, ni * TN], [TK, TN], target_memory=Mat)
                    ta = pl.move(l1a, target_memory=Left)
                    tb = pl.move(l1b, target_memory=Right)
                    acc = pl.matmul_acc(acc, ta, tb)  # acc += ta @ tb
                pl.store(acc, [mi * TM, ni * TN], h)
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="epilogue"):  # an AIV (vector) task
                t = pl.load(h, [mi * TM, ni * TN], [TM, TN])
                tbias = pl.load(bias, [0, ni * TN], [1, TN])
                pl.store(pl.relu(pl.col_expand_add(t, tbias)), [mi * TM, ni * TN], y)
    return y


def main() -> int:
    rng = np.random.default_rng(5)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = (rng.standard_normal((K, N)) / np.sqrt(K)).astype(np.float32)
    bias = rng.standard_normal((1, N)).astype(np.float32)
    want = np.maximum(a.astype(np.float64) @ b + bias, 0.0)

    y = np.full((M, N), np.nan, np.float32)
    linear_relu(a, b, bias, y)
    return compare("step05", y, want, rtol=1e-4, atol=1e-4)


if __name__ == "__main__":
    sys.exit(main())
