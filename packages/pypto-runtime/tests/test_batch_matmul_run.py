"""``pl.batch_matmul`` on a2a3sim against ``torch.bmm``, in upstream's program forms
(``tests/st/runtime/ops/test_batch_matmul.py``): N-D tiles loaded into Mat, multiplied batch by
batch and stored; the right or the left operand a ``pl.tile.transpose_view`` of one; batch dims
that broadcast (a 2-D operand for every batch, a batch dim of 1); and Vec FP16 operands whose
annotated FP32 result is stored into an FP16 tensor (``test_unified_ops.py``'s form)."""

from __future__ import annotations

from typing import Any

import pytest

import pypto.language as pl
from pypto.runtime import run

torch = pytest.importorskip("torch")


def _plain(b: int, m: int, k: int, n: int) -> Any:
    @pl.program
    class BatchMatmulTileProgram:
        @pl.function(type=pl.FunctionType.InCore)
        def batch_matmul_tile(
            self,
            a: pl.Tensor[[b, m, k], pl.FP32],
            bt: pl.Tensor[[b, k, n], pl.FP32],
            c: pl.Out[pl.Tensor[[b, m, n], pl.FP32]],
        ) -> pl.Tensor[[b, m, n], pl.FP32]:
            tile_a = pl.load(a, offsets=[0, 0, 0], shapes=[b, m, k], target_memory=pl.MemorySpace.Mat)
            tile_b = pl.load(bt, offsets=[0, 0, 0], shapes=[b, k, n], target_memory=pl.MemorySpace.Mat)
            tile_c = pl.batch_matmul(tile_a, tile_b)
            out_c = pl.store(tile_c, offsets=[0, 0, 0], output_tensor=c)
            return out_c

        @pl.function(type=pl.FunctionType.Orchestration)
        def orchestrator(
            self,
            a: pl.Tensor[[b, m, k], pl.FP32],
            bt: pl.Tensor[[b, k, n], pl.FP32],
            c: pl.Out[pl.Tensor[[b, m, n], pl.FP32]],
        ) -> pl.Tensor[[b, m, n], pl.FP32]:
            out_c = self.batch_matmul_tile(a, bt, c)
            return out_c

    return BatchMatmulTileProgram


def _b_transposed(b: int, m: int, k: int, n: int) -> Any:
    @pl.program
    class BatchMatmulBTransProgram:
        @pl.function(type=pl.FunctionType.InCore)
        def batch_matmul_bt(
            self,
            a: pl.Tensor[[b, m, k], pl.FP32],
            bt: pl.Tensor[[b, n, k], pl.FP32],
            c: pl.Out[pl.Tensor[[b, m, n], pl.FP32]],
        ) -> pl.Tensor[[b, m, n], pl.FP32]:
            tile_a = pl.load(a, offsets=[0, 0, 0], shapes=[b, m, k], target_memory=pl.MemorySpace.Mat)
            tile_b = pl.load(bt, offsets=[0, 0, 0], shapes=[b, n, k], target_memory=pl.MemorySpace.Mat)
            tile_b_t = pl.tile.transpose_view(tile_b)
            tile_c = pl.batch_matmul(tile_a, tile_b_t)
            out_c = pl.store(tile_c, offsets=[0, 0, 0], output_tensor=c)
            return out_c

        @pl.function(type=pl.FunctionType.Orchestration)
        def orchestrator(
            self,
            a: pl.Tensor[[b, m, k], pl.FP32],
            bt: pl.Tensor[[b, n, k], pl.FP32],
            c: pl.Out[pl.Tensor[[b, m, n], pl.FP32]],
        ) -> pl.Tensor[[b, m, n], pl.FP32]:
            out_c = self.batch_matmul_bt(a, bt, c)
            return out_c

    return BatchMatmulBTransProgram


def _a_transposed(b: int, m: int, k: int, n: int) -> Any:
    @pl.program
    class BatchMatmulATransProgram:
        @pl.function(type=pl.FunctionType.InCore)
        def batch_matmul_at(
            self,
            a: pl.Tensor[[b, k, m], pl.FP32],
            bt: pl.Tensor[[b, k, n], pl.FP32],
            c: pl.Out[pl.Tensor[[b, m, n], pl.FP32]],
        ) -> pl.Tensor[[b, m, n], pl.FP32]:
            tile_a = pl.load(a, offsets=[0, 0, 0], shapes=[b, k, m], target_memory=pl.MemorySpace.Mat)
            tile_a_t = pl.tile.transpose_view(tile_a)
            tile_b = pl.load(bt, offsets=[0, 0, 0], shapes=[b, k, n], target_memory=pl.MemorySpace.Mat)
            tile_c = pl.batch_matmul(tile_a_t, tile_b)
            out_c = pl.store(tile_c, offsets=[0, 0, 0], output_tensor=c)
            return out_c

        @pl.function(type=pl.FunctionType.Orchestration)
        def orchestrator(
            self,
            a: pl.Tensor[[b, k, m], pl.FP32],
            bt: pl.Tensor[[b, k, n], pl.FP32],
            c: pl.Out[pl.Tensor[[b, m, n], pl.FP32]],
        ) -> pl.Tensor[[b, m, n], pl.FP32]:
            out_c = self.batch_matmul_at(a, bt, c)
            return out_c

    return BatchMatmulATransProgram


@pytest.mark.parametrize(
    ("b", "m", "k", "n"),
    [(4, 32, 32, 32), (1, 128, 64, 128)],
)
def test_batch_matmul_tile(b: int, m: int, k: int, n: int) -> None:
    x, y, c = torch.randn(b, m, k), torch.randn(b, k, n), torch.zeros(b, m, n)
    run(_plain(b, m, k, n), x, y, c)
    torch.testing.assert_close(c, torch.bmm(x.double(), y.double()).float(), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize(("b", "m", "k", "n"), [(2, 64, 32, 128), (2, 32, 64, 48)])
def test_batch_matmul_b_transpose(b: int, m: int, k: int, n: int) -> None:
    x, y, c = torch.randn(b, m, k), torch.randn(b, n, k), torch.zeros(b, m, n)
    run(_b_transposed(b, m, k, n), x, y, c)
    want = torch.bmm(x.double(), y.double().transpose(-2, -1)).float()
    torch.testing.assert_close(c, want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize(("b", "m", "k", "n"), [(2, 128, 32, 64), (2, 48, 64, 32)])
def test_batch_matmul_a_transpose(b: int, m: int, k: int, n: int) -> None:
    x, y, c = torch.randn(b, k, m), torch.randn(b, k, n), torch.zeros(b, m, n)
    run(_a_transposed(b, m, k, n), x, y, c)
    want = torch.bmm(x.double().transpose(-2, -1), y.double()).float()
    torch.testing.assert_close(c, want, rtol=1e-5, atol=1e-4)


@pl.program
class Broadcast:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(
        self,
        a: pl.Tensor[[2, 1, 16, 32], pl.FP32],
        w: pl.Tensor[[3, 32, 16], pl.FP32],
        v: pl.Tensor[[32, 16], pl.FP32],
        c: pl.Out[pl.Tensor[[2, 3, 16, 16], pl.FP32]],
        d: pl.Out[pl.Tensor[[3, 16, 16], pl.FP32]],
    ) -> tuple[pl.Tensor[[2, 3, 16, 16], pl.FP32], pl.Tensor[[3, 16, 16], pl.FP32]]:
        ta = pl.load(a, [0, 0, 0, 0], [2, 1, 16, 32], target_memory=pl.MemorySpace.Mat)
        tw = pl.load(w, [0, 0, 0], [3, 32, 16], target_memory=pl.MemorySpace.Mat)
        c = pl.store(pl.batch_matmul(ta, tw), [0, 0, 0, 0], c)  # [2, 1] x [3] batches -> [2, 3]
        tv = pl.load(v, [0, 0], [32, 16], target_memory=pl.MemorySpace.Mat)
        per_batch = pl.tile.batch_matmul(
            pl.load(a, [1, 0, 0, 0], [1, 1, 16, 32], target_memory=pl.MemorySpace.Mat), tw
        )
        d = pl.store(per_batch, [0, 0, 0], d)
        first = pl.batch_matmul(ta, tv)  # a 2-D operand serves every batch
        d = pl.store(first[1], [0, 0, 0], d)  # plane 1 over plane 0 of the store above
        return c, d

    @pl.function(type=pl.FunctionType.Orchestration)
    def orchestrator(
        self,
        a: pl.Tensor[[2, 1, 16, 32], pl.FP32],
        w: pl.Tensor[[3, 32, 16], pl.FP32],
        v: pl.Tensor[[32, 16], pl.FP32],
        c: pl.Out[pl.Tensor[[2, 3, 16, 16], pl.FP32]],
        d: pl.Out[pl.Tensor[[3, 16, 16], pl.FP32]],
    ) -> tuple[pl.Tensor[[2, 3, 16, 16], pl.FP32], pl.Tensor[[3, 16, 16], pl.FP32]]:
        c, d = self.kernel(a, w, v, c, d)
        return c, d


def test_batch_dims_broadcast_and_a_plane_is_read_by_index() -> None:
    a, w, v = torch.randn(2, 1, 16, 32), torch.randn(3, 32, 16), torch.randn(32, 16)
    c, d = torch.zeros(2, 3, 16, 16), torch.zeros(3, 16, 16)
    run(Broadcast, a, w, v, c, d)
    a64, w64 = a.double(), w.double()
    torch.testing.assert_close(c, torch.matmul(a64, w64).float(), rtol=1e-5, atol=1e-4)
    want_d = torch.matmul(a64[1, 0], w64).float()
    want_d[0] = (a64[1, 0] @ v.double()).float()
    torch.testing.assert_close(d, want_d, rtol=1e-5, atol=1e-4)


@pl.program
class VecOperands:
    """upstream's ``test_unified_ops.py`` form: Vec tiles loaded by default, the result annotated
    as an N-D FP32 tile and stored into an FP16 tensor."""

    @pl.function(type=pl.FunctionType.InCore)
    def unified(
        self,
        t1: pl.Tensor[[2, 64, 64], pl.FP16],
        t2: pl.Tensor[[2, 64, 64], pl.FP16],
        out: pl.Out[pl.Tensor[[2, 64, 64], pl.FP16]],
    ) -> pl.Tensor[[2, 64, 64], pl.FP16]:
        a: pl.Tile[[2, 64, 64], pl.FP16] = pl.tile.load(t1, offsets=[0, 0, 0], shapes=[2, 64, 64])
        b: pl.Tile[[2, 64, 64], pl.FP16] = pl.tile.load(t2, offsets=[0, 0, 0], shapes=[2, 64, 64])
        c: pl.Tile[[2, 64, 64], pl.FP32] = pl.batch_matmul(a, b)
        result: pl.Tensor[[2, 64, 64], pl.FP16] = pl.tile.store(c, offsets=[0, 0, 0], output_tensor=out)
        return result

    @pl.function(type=pl.FunctionType.Orchestration)
    def orchestrator(
        self,
        t1: pl.Tensor[[2, 64, 64], pl.FP16],
        t2: pl.Tensor[[2, 64, 64], pl.FP16],
        out: pl.Out[pl.Tensor[[2, 64, 64], pl.FP16]],
    ) -> pl.Tensor[[2, 64, 64], pl.FP16]:
        out = self.unified(t1, t2, out)
        return out


def test_vec_operands_and_an_fp16_store() -> None:
    a, b = torch.randn(2, 64, 64, dtype=torch.float16), torch.randn(2, 64, 64, dtype=torch.float16)
    out = torch.zeros(2, 64, 64, dtype=torch.float16)
    run(VecOperands, a, b, out)
    torch.testing.assert_close(out, torch.bmm(a.double(), b.double()).half(), rtol=1e-3, atol=1e-2)
