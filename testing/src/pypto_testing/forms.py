"""Language-form programs that more than one package's tests use: one definition of each.

pypto-ir's tests check what a form becomes (its IR, printed text and generated C++);
pypto-runtime's tests run the same program on the simulated chip against torch. Importing this
module needs pypto-ir only.
"""

from __future__ import annotations

import pypto.language as pl

__all__ = ["KernelWhile", "TwoEntries", "cube_matmul"]


@pl.program
class KernelWhile:
    """``out = x * (sum of the k that ran)``: a kernel ``while`` over ``k = 1..cfg[0, 0]`` that
    skips ``k == 2`` (``continue``) and stops after ``k == 5`` (``break``)."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        x: pl.Tensor[[16, 32], pl.FP32],
        cfg: pl.Tensor[[1, 4], pl.INT64],
        out: pl.Out[pl.Tensor[[16, 32], pl.FP32]],
    ) -> pl.Tensor[[16, 32], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            n = pl.read(cfg, [0, 0])
            t = pl.load(x, [0, 0], [16, 32])
            acc = pl.mul(t, 0.0)
            k: pl.Scalar[pl.INT64] = 0
            while k < n:
                k = k + 1
                if k == 2:
                    continue  # skips k == 2
                acc = pl.add(acc, pl.mul(t, k))
                if k >= 5:
                    break  # stops after k == 5
            out = pl.store(acc, [0, 0], out)
        return out


@pl.program
class TwoEntries:
    """A program with two entries over two kernels: ``negate`` (``neg_k``; the first, so the
    default entry) and ``absolute`` (``abs_k``), both ``[16, 16]`` FP32 in, out."""

    @pl.function(type=pl.FunctionType.InCore)
    def neg_k(self, a: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
        pl.store(pl.neg(pl.load(a, [0, 0], [16, 16])), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.InCore)
    def abs_k(self, a: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
        pl.store(pl.abs(pl.load(a, [0, 0], [16, 16])), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def negate(self, a: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
        out = self.neg_k(a, out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def absolute(self, a: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
        out = self.abs_k(a, out)
        return out


def cube_matmul(m: int, k: int, n: int, name_hint: str) -> pl.JITFunction:
    """``c = a @ b`` for FP32 ``a: [m, k]`` and ``b: [k, n]`` in one cube kernel named
    ``name_hint``: both operands loaded into Mat, moved to Left / Right, one ``matmul``."""

    @pl.jit
    def matmul(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint=name_hint):
            left = pl.move(
                pl.load(a, [0, 0], [m, k], target_memory=pl.MemorySpace.Mat),
                target_memory=pl.MemorySpace.Left,
            )
            right = pl.move(
                pl.load(b, [0, 0], [k, n], target_memory=pl.MemorySpace.Mat),
                target_memory=pl.MemorySpace.Right,
            )
            pl.store(pl.matmul(left, right), [0, 0], c)
        return c

    return matmul
