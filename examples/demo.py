"""The main job of the stack: compile a PyPTO kernel, run it on the simulated chip, check it.

A fused linear layer, y = relu(x @ w + bias), written with ``pypto.language``: a cube (AIC)
kernel does the matmul, a vector (AIV) kernel adds the bias and applies relu, and the
orchestration chains them through an intermediate tensor. The program is compiled (or found
in the artifact store), run on the a2a3sim simulated chip on numpy arrays with no copies, and
compared with numpy.

    python examples/demo.py            # or: nox -s demo

Needs pypto-runtime (with pypto-ir and simpler-native) and numpy; nothing else.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

import pypto.language as pl
import pypto.runtime as rt

N = 32  # tile edge: every tensor is N x N FP32


@pl.jit.incore
def matmul_kernel(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    """Cube (AIC): load both operands through L1 (Mat) into L0A/L0B (Left/Right), multiply."""
    ta = pl.move(
        pl.load(a, [0, 0], [N, N], target_memory=pl.MemorySpace.Mat), target_memory=pl.MemorySpace.Left
    )
    tb = pl.move(
        pl.load(b, [0, 0], [N, N], target_memory=pl.MemorySpace.Mat), target_memory=pl.MemorySpace.Right
    )
    pl.store(pl.matmul(ta, tb), [0, 0], out)
    return out


@pl.jit.incore
def bias_relu_kernel(x: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    """Vector (AIV): relu(x + bias)."""
    pl.store(pl.relu(pl.add(pl.load(x, [0, 0], [N, N]), pl.load(bias, [0, 0], [N, N]))), [0, 0], out)
    return out


@pl.jit
def fused_linear(x: pl.Tensor, w: pl.Tensor, bias: pl.Tensor, y: pl.Out[pl.Tensor]):
    """The orchestration: two kernels chained through an intermediate tensor."""
    mid = pl.create_tensor([N, N], dtype=pl.FP32)
    mid = matmul_kernel(x, w, mid)
    y = bias_relu_kernel(mid, bias, y)
    return y


def main() -> int:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, N)).astype(np.float32)
    w = (rng.standard_normal((N, N)) / np.sqrt(N)).astype(np.float32)
    bias = rng.standard_normal((N, N)).astype(np.float32)
    y = np.full((N, N), np.nan, np.float32)

    t0 = time.perf_counter()
    prog = rt.compile(fused_linear, x, w, bias, y)
    t_compile = time.perf_counter() - t0
    kernels = [f"{k.name} ({k.core_type})" for k in prog.metadata.kernels]
    print(f"compiled  {prog.metadata.name}: {len(kernels)} kernels: {', '.join(kernels)}")
    print(f"artifact  {os.fspath(prog)}  ({t_compile:.2f} s; a second run finds it in the store)")

    t0 = time.perf_counter()
    result = fused_linear(x, w, bias, y, config=rt.RunConfig(platform="a2a3sim"))
    t_run = time.perf_counter() - t0
    assert result is y, "the Out tensor is the caller's own array, written in place"

    want = np.maximum(x @ w + bias, 0.0)
    err = float(np.abs(y - want).max())
    ok = bool(np.allclose(y, want, rtol=1e-5, atol=1e-5))
    print(f"ran       on a2a3sim in {t_run * 1e3:.1f} ms (first call includes loading the binaries)")
    print(f"y[0, :6]  {np.array2string(y[0, :6], precision=4)}")
    print(f"numpy     {np.array2string(want[0, :6], precision=4)}")
    print(f"max |y - numpy| = {err:.2e}  ->  {'MATCH' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
