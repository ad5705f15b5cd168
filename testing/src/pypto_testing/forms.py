"""Language-form programs that more than one package's tests use: one definition of each.

pypto-ir's tests check what a form becomes (its IR, printed text and generated C++);
pypto-runtime's tests run the same program on the simulated chip against torch. Importing this
module needs pypto-ir only.
"""

from __future__ import annotations

import linecache
from typing import Any

import pypto.language as pl

__all__ = [
    "KernelWhile",
    "TwoEntries",
    "add_method",
    "cube_matmul",
    "from_source",
    "matmul_method",
    "qk_method",
]


def from_source(src: str, filename: str, **names: Any) -> dict[str, Any]:
    """Run program text ``src`` as if it were file ``filename`` (registered with linecache, where
    the parser reads a function's source and an error's line) in a module scope of ``pl`` and
    ``names``; returns that scope: for programs written once with a piece varied."""
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    scope: dict[str, Any] = {"pl": pl, **names}
    exec(compile(src, filename, "exec"), scope)
    return scope


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


def add_method(r: int, c: int) -> Any:
    """An InCore kernel for a ``@pl.program`` class (``residual = add_method(16, 32)``):
    ``out = a + b`` for FP32 ``[r, c]`` tensors. The class attribute's name is the kernel's name."""

    class Methods:  # defined in a class body, @pl.function makes a method for a @pl.program
        @pl.function(type=pl.FunctionType.InCore)
        def add(
            self,
            a: pl.Tensor[[r, c], pl.FP32],
            b: pl.Tensor[[r, c], pl.FP32],
            out: pl.Out[pl.Tensor[[r, c], pl.FP32]],
        ) -> pl.Tensor[[r, c], pl.FP32]:
            return pl.store(pl.add(pl.load(a, [0, 0], [r, c]), pl.load(b, [0, 0], [r, c])), [0, 0], out)

    return Methods.add


def matmul_method(m: int, k: int, n: int) -> Any:
    """An InCore kernel for a ``@pl.program`` class (``project = matmul_method(16, 32, 32)``):
    ``out = a @ b`` for FP32 ``a: [m, k]``, ``b: [k, n]``, both loaded into Mat, moved to
    Left / Right, one ``matmul``. The class attribute's name is the kernel's name."""

    class Methods:  # defined in a class body, @pl.function makes a method for a @pl.program
        @pl.function(type=pl.FunctionType.InCore)
        def matmul(
            self,
            a: pl.Tensor[[m, k], pl.FP32],
            b: pl.Tensor[[k, n], pl.FP32],
            out: pl.Out[pl.Tensor[[m, n], pl.FP32]],
        ) -> pl.Tensor[[m, n], pl.FP32]:
            a_l1 = pl.load(a, [0, 0], [m, k], target_memory=pl.MemorySpace.Mat)
            b_l1 = pl.load(b, [0, 0], [k, n], target_memory=pl.MemorySpace.Mat)
            lhs = pl.move(a_l1, target_memory=pl.MemorySpace.Left)
            rhs = pl.move(b_l1, target_memory=pl.MemorySpace.Right)
            return pl.store(pl.matmul(lhs, rhs), [0, 0], out)

    return Methods.matmul


def qk_method(m: int, n: int, d: int, dtype: Any = pl.FP32) -> Any:
    """An InCore kernel for a ``@pl.program`` class: ``out = q @ k.T`` (FP32) for ``q: [m, d]``
    and ``k: [n, d]`` of ``dtype``; ``k`` is transposed on L1 (``pl.tile.transpose_view`` of its
    Mat tile) on its way to Right."""

    class Methods:  # defined in a class body, @pl.function makes a method for a @pl.program
        @pl.function(type=pl.FunctionType.InCore)
        def qk(
            self,
            q: pl.Tensor[[m, d], dtype],
            k: pl.Tensor[[n, d], dtype],
            out: pl.Out[pl.Tensor[[m, n], pl.FP32]],
        ) -> pl.Tensor[[m, n], pl.FP32]:
            q_l1 = pl.load(q, [0, 0], [m, d], target_memory=pl.MemorySpace.Mat)
            k_l1 = pl.load(k, [0, 0], [n, d], target_memory=pl.MemorySpace.Mat)
            lhs = pl.move(q_l1, target_memory=pl.MemorySpace.Left)
            rhs = pl.move(pl.tile.transpose_view(k_l1), target_memory=pl.MemorySpace.Right)
            return pl.store(pl.matmul(lhs, rhs), [0, 0], out)

    return Methods.qk
