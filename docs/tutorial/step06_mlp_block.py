"""Step 6: a multi-kernel program: a transformer MLP block with intermediate tensors.

y = LayerNorm(x + gelu(x @ w1) @ w2), over row blocks of x.

Kernels are now written once as ``@pl.jit.incore`` functions and called from the
orchestration (the ``@pl.jit`` function) like Python functions; each call is one task. The
orchestration passes tensor *windows* (``x[r0:r1, :]``): a kernel sees its window as a whole
tensor, and the runtime derives the dependencies between tasks from the windows they read
and write, so row blocks flow through the four kernels independently of each other.
Intermediate results live in tensors created with ``pl.create_tensor`` (device memory the
runtime allocates for the run).

    python docs/tutorial/step06_mlp_block.py
"""

from __future__ import annotations

import sys

import numpy as np
from _check import compare  # the shared compare-and-report of every step

import pypto.language as pl
import pypto.runtime  # noqa: F401  (installs the program-mode executor behind @pl.jit calls)

ROWS, D = 64, 64  # x is [ROWS, D]; w1 and w2 are [D, D]
T = 32  # rows per block
TK = 32  # K step of the matmul
EPS = 1e-5
K0 = float(np.sqrt(2.0 / np.pi))
Mat, Left, Right = pl.MemorySpace.Mat, pl.MemorySpace.Left, pl.MemorySpace.Right


@pl.jit.incore
def matmul(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):  # [T, D] @ [D, D] on the cube unit
    ta = pl.move(pl.load(a, [0, 0], [T, TK], target_memory=Mat), target_memory=Left)
    tb = pl.move(pl.load(b, [0, 0], [TK, D], target_memory=Mat), target_memory=Right)
    acc: pl.Tile[[T, D], pl.FP32] = pl.matmul(ta, tb)
    for k in pl.range(1, D // TK):
        ta = pl.move(pl.load(a, [0, k * TK], [T, TK], target_memory=Mat), target_memory=Left)
        tb = pl.move(pl.load(b, [k * TK, 0], [TK, D], target_memory=Mat), target_memory=Right)
        acc = pl.matmul_acc(acc, ta, tb)
    pl.store(acc, [0, 0], out)
    return out


@pl.jit.incore
def gelu(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.load(x, [0, 0], [T, D])
    u = pl.mul(pl.add(t, pl.mul(pl.mul(pl.mul(t, t), t), 0.044715)), K0)
    pl.store(pl.sub(t, pl.mul(t, pl.recip(pl.add(pl.exp(pl.mul(u, 2.0)), 1.0)))), [0, 0], out)
    return out


@pl.jit.incore
def add_layer_norm(x: pl.Tensor, r: pl.Tensor, gamma: pl.Tensor, beta: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.add(pl.load(x, [0, 0], [T, D]), pl.load(r, [0, 0], [T, D]))
    tmp = pl.create_tile([T, D], dtype=pl.FP32, target_memory=pl.MemorySpace.Vec)
    total: pl.Tile[[T, 1], pl.FP32] = pl.row_sum(t, tmp)
    xc = pl.row_expand_sub(t, pl.mul(total, 1.0 / D))
    sq: pl.Tile[[T, 1], pl.FP32] = pl.row_sum(pl.mul(xc, xc), tmp)
    normed = pl.row_expand_mul(xc, pl.rsqrt(pl.add(pl.mul(sq, 1.0 / D), EPS)))
    g = pl.load(gamma, [0, 0], [1, D])
    b = pl.load(beta, [0, 0], [1, D])
    pl.store(pl.col_expand_add(pl.col_expand_mul(normed, g), b), [0, 0], out)
    return out


@pl.jit
def mlp_block(  # noqa: PLR0917  (a kernel's signature is its tensors, positional)
    x: pl.Tensor, w1: pl.Tensor, w2: pl.Tensor, gamma: pl.Tensor, beta: pl.Tensor, y: pl.Out[pl.Tensor]
):
    h = pl.create_tensor([ROWS, D], dtype=pl.FP32)  # x @ w1
    g = pl.create_tensor([ROWS, D], dtype=pl.FP32)  # gelu(h)
    o = pl.create_tensor([ROWS, D], dtype=pl.FP32)  # g @ w2
    for i in pl.range(ROWS // T):
        r0 = i * T
        matmul(x[r0 : r0 + T, :], w1, h[r0 : r0 + T, :])
        gelu(h[r0 : r0 + T, :], g[r0 : r0 + T, :])
        matmul(g[r0 : r0 + T, :], w2, o[r0 : r0 + T, :])
        add_layer_norm(x[r0 : r0 + T, :], o[r0 : r0 + T, :], gamma, beta, y[r0 : r0 + T, :])
    return y


def reference(x, w1, w2, gamma, beta):  # type: ignore[no-untyped-def]
    x, w1, w2 = (v.astype(np.float64) for v in (x, w1, w2))
    h = x @ w1
    g = 0.5 * h * (1.0 + np.tanh(K0 * (h + 0.044715 * h**3)))
    t = x + g @ w2
    return (t - t.mean(1, keepdims=True)) / np.sqrt(t.var(1, keepdims=True) + EPS) * gamma + beta


def main() -> int:
    rng = np.random.default_rng(6)
    x = rng.standard_normal((ROWS, D)).astype(np.float32)
    w1, w2 = ((rng.standard_normal((D, D)) / np.sqrt(D)).astype(np.float32) for _ in range(2))
    gamma = rng.standard_normal((1, D)).astype(np.float32)
    beta = rng.standard_normal((1, D)).astype(np.float32)
    want = reference(x, w1, w2, gamma, beta)

    y = np.full((ROWS, D), np.nan, np.float32)
    mlp_block(x, w1, w2, gamma, beta, y)
    return compare("step06", y, want, rtol=1e-4, atol=1e-4)


if __name__ == "__main__":
    sys.exit(main())
