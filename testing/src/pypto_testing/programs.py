"""Example programs shared by the packages' tests: one definition of each.

They are written in the style of PyPTO's beginner and intermediate teaching examples (element-wise
chunks, a scalar parameter, an activation, a softmax, a normalisation, cube matmuls, two kernels
joined by an intermediate tensor, a task graph, a dynamic dimension). pypto-ir's tests compile each
one to files and check the kernels' core types; pypto-runtime's tests run them on the simulated chip
against the numpy reference in :data:`EXAMPLES`. Importing this module needs pypto-ir (not
pypto-runtime or simpler).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pypto.language as pl

__all__ = ["COLS", "EXAMPLES", "ROWS", "TILE", "Example", "M", "matmul_32"]

ROWS, COLS, TILE = 256, 64, 64


@pl.jit
def add_one_tile(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [64, 64])
        y = pl.load(b, [0, 0], [64, 64])
        pl.store(pl.add(x, y), [0, 0], c)
    return c


@pl.jit
def scale_sum(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    """(a + b) * 2 with a tile-scalar op."""
    with pl.at(level=pl.Level.CORE_GROUP):
        s = pl.add(pl.load(a, [0, 0], [32, 32]), pl.load(b, [0, 0], [32, 32]))
        pl.store(pl.mul(s, 2.0), [0, 0], c)
    return c


@pl.jit
def column_stats(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [16, 32])
        mean: pl.Tile[[1, 32], pl.FP32] = pl.mul(pl.col_sum(t), 1.0 / 16)
        spread = pl.sub(pl.col_max(t), pl.col_min(t))
        pl.store(pl.col_expand_div(pl.col_expand_sub(t, mean), spread), [0, 0], out)
    return out


@pl.jit
def join_cols(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t: pl.Tile[[16, 32], pl.FP32] = pl.concat(pl.load(a, [0, 0], [16, 16]), pl.load(b, [0, 0], [16, 16]))
        pl.store(t, [0, 0], c)
    return c


@pl.jit
def add_chunks(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(ROWS // TILE):
            x = pl.load(a, [i * TILE, 0], [TILE, COLS])
            y = pl.load(b, [i * TILE, 0], [TILE, COLS])
            pl.store(pl.add(x, y), [i * TILE, 0], c)
    return c


@pl.jit
def scalar_param(a: pl.Tensor, alpha: pl.FP32, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.mul(a, alpha)
    return c


@pl.jit
def silu(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [16, 64])
        d = pl.add(pl.exp(pl.mul(t, -1.0)), 1.0)
        pl.store(pl.mul(t, pl.recip(d)), [0, 0], out)
    return out


@pl.jit
def row_softmax(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [32, 64])
        tmp = pl.create_tile([32, 64], dtype=pl.FP32, target_memory=pl.MemorySpace.Vec)
        m: pl.Tile[[32, 1], pl.FP32] = pl.row_max(t, tmp)
        e = pl.exp(pl.row_expand_sub(t, m))
        s: pl.Tile[[32, 1], pl.FP32] = pl.row_sum(e, tmp)
        pl.store(pl.row_expand_div(e, s), [0, 0], out)
    return out


@pl.jit
def rms_norm(x: pl.Tensor, gamma: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        tx = pl.load(x, [0, 0], [16, 64])
        tg = pl.load(gamma, [0, 0], [1, 64])
        tmp = pl.create_tile([16, 64], dtype=pl.FP32, target_memory=pl.MemorySpace.Vec)
        ms: pl.Tile[[16, 1], pl.FP32] = pl.row_sum(pl.mul(tx, tx), tmp)
        flat: pl.Tile[[1, 16], pl.FP32] = pl.reshape(ms, [1, 16])
        flat = pl.sqrt(pl.add(pl.mul(flat, 1.0 / 64), 1e-6))
        rms = pl.reshape(flat, [16, 1])
        pl.store(pl.col_expand_mul(pl.row_expand_div(tx, rms), tg), [0, 0], out)
    return out


@pl.jit
def cube_matmul(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        l1a = pl.load(a, [0, 0], [32, 32], target_memory=pl.MemorySpace.Mat)
        l1b = pl.load(b, [0, 0], [32, 32], target_memory=pl.MemorySpace.Mat)
        left = pl.move(l1a, target_memory=pl.MemorySpace.Left)
        right = pl.move(l1b, target_memory=pl.MemorySpace.Right)
        pl.store(pl.matmul(left, right), [0, 0], c)
    return c


@pl.jit
def split_k(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        a0 = pl.move(
            pl.load(a, [0, 0], [32, 16], target_memory=pl.MemorySpace.Mat), target_memory=pl.MemorySpace.Left
        )
        b0 = pl.move(
            pl.load(b, [0, 0], [16, 32], target_memory=pl.MemorySpace.Mat), target_memory=pl.MemorySpace.Right
        )
        acc: pl.Tile[[32, 32], pl.FP32] = pl.matmul(a0, b0)
        a1 = pl.move(
            pl.load(a, [0, 16], [32, 16], target_memory=pl.MemorySpace.Mat), target_memory=pl.MemorySpace.Left
        )
        b1 = pl.move(
            pl.load(b, [16, 0], [16, 32], target_memory=pl.MemorySpace.Mat),
            target_memory=pl.MemorySpace.Right,
        )
        acc = pl.matmul_acc(acc, a1, b1)
        pl.store(acc, [0, 0], c)
    return c


@pl.jit.incore
def matmul_32(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    """``out = a @ b`` for FP32 [32, 32] tensors: one cube kernel (``fused_linear``'s first)."""
    ta = pl.move(
        pl.load(a, [0, 0], [32, 32], target_memory=pl.MemorySpace.Mat), target_memory=pl.MemorySpace.Left
    )
    tb = pl.move(
        pl.load(b, [0, 0], [32, 32], target_memory=pl.MemorySpace.Mat), target_memory=pl.MemorySpace.Right
    )
    pl.store(pl.matmul(ta, tb), [0, 0], out)
    return out


@pl.jit.incore
def _bias_relu_kernel(x: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    pl.store(pl.relu(pl.add(pl.load(x, [0, 0], [32, 32]), pl.load(bias, [0, 0], [32, 32]))), [0, 0], out)
    return out


@pl.jit
def fused_linear(x: pl.Tensor, w: pl.Tensor, bias: pl.Tensor, y: pl.Out[pl.Tensor]):
    mid = pl.create_tensor([32, 32], dtype=pl.FP32)
    mid = matmul_32(x, w, mid)
    y = _bias_relu_kernel(mid, bias, y)
    return y


@pl.jit
def two_stages(x: pl.Tensor, scratch: pl.Out[pl.Tensor], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="stage1") as first:
        scratch[:] = pl.add(x, x)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="stage2", deps=[first]):
        out[:] = pl.mul(scratch, scratch)
    return scratch, out


M = pl.dynamic("M")


@pl.jit
def dynamic_rows(a: pl.Tensor[[M, 32], pl.FP32], c: pl.Out[pl.Tensor[[M, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(M // 16):
            pl.store(pl.exp(pl.load(a, [i * 16, 0], [16, 32])), [i * 16, 0], c)
    return c


Shape = tuple[int, ...]


@dataclass(frozen=True)
class Example:
    """One example program: its inputs (an FP32 tensor's shape, or a scalar's value) in parameter
    order, its Out tensors' shapes, its kernels' core types in func_id order, and the numpy
    reference of its outputs (None: compiled, not run, by the tests)."""

    fn: Any
    inputs: tuple[Shape | float, ...]
    outputs: tuple[Shape, ...]
    cores: tuple[str, ...]
    reference: Callable[..., Any] | None = None


def _silu(x: Any) -> Any:
    import numpy as np

    return x / (1 + np.exp(-x))


def _softmax(a: Any) -> Any:
    import numpy as np

    e = np.exp(a - a.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _rms(x: Any, g: Any) -> Any:
    import numpy as np

    return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-6) * g


def _linear_relu(x: Any, w: Any, b: Any) -> Any:
    import numpy as np

    return np.maximum(x @ w + b, 0)


EXAMPLES: dict[str, Example] = {
    "add_one_tile": Example(add_one_tile, ((64, 64), (64, 64)), ((64, 64),), ("AIV",), lambda a, b: a + b),
    "add_chunks": Example(
        add_chunks, ((ROWS, COLS), (ROWS, COLS)), ((ROWS, COLS),), ("AIV",), lambda a, b: a + b
    ),
    "scale_sum": Example(scale_sum, ((32, 32), (32, 32)), ((32, 32),), ("AIV",), lambda a, b: (a + b) * 2),
    "scalar_param": Example(scalar_param, ((16, 16), 0.5), ((16, 16),), ("AIV",), lambda a, s: a * s),
    "silu": Example(silu, ((16, 64),), ((16, 64),), ("AIV",), _silu),
    "row_softmax": Example(row_softmax, ((32, 64),), ((32, 64),), ("AIV",), _softmax),
    "rms_norm": Example(rms_norm, ((16, 64), (1, 64)), ((16, 64),), ("AIV",), _rms),
    "column_stats": Example(column_stats, ((16, 32),), ((16, 32),), ("AIV",)),
    "join_cols": Example(join_cols, ((16, 16), (16, 16)), ((16, 32),), ("AIV",)),
    "cube_matmul": Example(cube_matmul, ((32, 32), (32, 32)), ((32, 32),), ("AIC",), lambda a, b: a @ b),
    "split_k": Example(split_k, ((32, 32), (32, 32)), ((32, 32),), ("AIC",), lambda a, b: a @ b),
    "fused_linear": Example(
        fused_linear, ((32, 32), (32, 32), (32, 32)), ((32, 32),), ("AIC", "AIV"), _linear_relu
    ),
    "two_stages": Example(
        two_stages, ((16, 16),), ((16, 16), (16, 16)), ("AIV", "AIV"), lambda x: (x + x, (x + x) ** 2)
    ),
    "dynamic_rows": Example(dynamic_rows, ((64, 32),), ((64, 32),), ("AIV",)),
}
