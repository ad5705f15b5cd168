"""``pl.tile.matmul_bias`` and the GEMVs (``pl.tile.gemv``, ``gemv_acc``, ``gemv_bias``) on
a2a3sim against torch, in upstream's program forms (``tests/st/runtime/ops/test_gemv.py``):
operands loaded into Mat and passed as they are, several shapes, BF16/FP16/INT8 operands,
valid shapes narrowed on M, N and K, a store at a row offset, ``pl.load(..., clamp=True)``,
and a GEMV accumulated over two K halves with its accumulation phases."""

from __future__ import annotations

from typing import Any

import pto_backend
import pytest

import pypto.language as pl
from pypto.runtime import run

torch = pytest.importorskip("torch")

K, N, M = 64, 64, 16
VALID_N, VALID_M, VALID_K = 30, 8, 40

_DT = {
    torch.float32: pl.FP32,
    torch.bfloat16: pl.BF16,
    torch.float16: pl.FP16,
    torch.int8: pl.INT8,
    torch.int32: pl.INT32,
}


def _input(shape: list[int], dt: Any) -> Any:
    if dt in (torch.int8, torch.int32):
        return torch.randint(-4, 5, shape, dtype=dt)
    return torch.randn(shape, dtype=dt)


def _matmul_bias(*, m: int, k: int, n: int, ab: Any, narrow: str | None, out_m: int, off_row: int) -> Any:
    vm = [VALID_M, k] if narrow == "M" else [m, k]
    vk_a = [m, VALID_N] if narrow == "K" else [m, k]
    vk_b = [VALID_N, n] if narrow == "K" else [k, n]
    vn_b = [k, VALID_N] if narrow == "N" else [k, n]
    vn_bias = [1, VALID_N] if narrow == "N" else [1, n]
    a_v = vk_a if narrow == "K" else vm
    b_v = vk_b if narrow == "K" else vn_b
    off = [off_row, 0]

    @pl.program
    class MatmulBiasProgram:
        @pl.function(type=pl.FunctionType.InCore)
        def kernel(
            self,
            a: pl.Tensor[[m, k], ab],
            b: pl.Tensor[[k, n], ab],
            bias: pl.Tensor[[1, n], pl.FP32],
            out: pl.InOut[pl.Tensor[[out_m, n], pl.FP32]],
        ) -> pl.Tensor[[out_m, n], pl.FP32]:
            tile_a = pl.load(a, [0, 0], [m, k], valid_shape=a_v, target_memory=pl.MemorySpace.Mat)
            tile_b = pl.load(b, [0, 0], [k, n], valid_shape=b_v, target_memory=pl.MemorySpace.Mat)
            tile_bias = pl.load(bias, [0, 0], [1, n], valid_shape=vn_bias, target_memory=pl.MemorySpace.Mat)
            out = pl.store(pl.tile.matmul_bias(tile_a, tile_b, tile_bias), off, out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def orchestrator(
            self,
            a: pl.Tensor[[m, k], ab],
            b: pl.Tensor[[k, n], ab],
            bias: pl.Tensor[[1, n], pl.FP32],
            out: pl.InOut[pl.Tensor[[out_m, n], pl.FP32]],
        ) -> pl.Tensor[[out_m, n], pl.FP32]:
            out = self.kernel(a, b, bias, out)
            return out

    return MatmulBiasProgram


@pytest.mark.parametrize(
    ("m", "k", "n", "dt", "narrow", "out_m", "off_row"),
    [
        (16, 64, 64, torch.float32, None, 16, 0),
        (64, 128, 64, torch.float32, None, 64, 0),
        (16, 128, 256, torch.bfloat16, None, 16, 0),  # a 1 KiB bias row: a2a3's whole bias table
        (M, K, N, torch.float32, "M", M, 0),
        (M, K, N, torch.float32, "N", M, 0),
        (M, K, N, torch.float32, "K", M, 0),
        (M, K, N, torch.float32, None, 2 * M, M),
    ],
)
def test_matmul_bias(
    *, m: int, k: int, n: int, dt: Any, narrow: str | None, out_m: int, off_row: int
) -> None:
    if dt is torch.bfloat16:
        pto_backend.needs_bfloat16()
    a, b, bias = torch.randn(m, k, dtype=dt), torch.randn(k, n, dtype=dt), torch.randn(1, n)
    out = torch.zeros(out_m, n)
    program = _matmul_bias(m=m, k=k, n=n, ab=_DT[dt], narrow=narrow, out_m=out_m, off_row=off_row)
    run(program, a, b, bias, out)
    a32, b32 = a.double(), b.double()
    full = ((a32[:, :VALID_N] @ b32[:VALID_N, :]) if narrow == "K" else (a32 @ b32)) + bias.double()
    want = torch.zeros(out_m, n, dtype=torch.float64)
    rows = VALID_M if narrow == "M" else m
    cols = VALID_N if narrow == "N" else n
    want[off_row : off_row + rows, :cols] = full[:rows, :cols]
    torch.testing.assert_close(out, want.float(), rtol=1e-3, atol=1e-3)


def _gemv(*, k: int, n: int, valid_k: int, valid_n: int, ab: Any, out_dt: Any, bias: bool, phase: str) -> Any:
    a_valid, b_valid = [1, valid_k], [valid_k, valid_n]
    if not bias:

        @pl.program
        class GemvProgram:
            @pl.function(type=pl.FunctionType.InCore)
            def kernel(
                self,
                a: pl.Tensor[[1, k], ab],
                b: pl.Tensor[[k, valid_n], ab],
                out: pl.Out[pl.Tensor[[1, valid_n], out_dt]],
            ) -> pl.Tensor[[1, valid_n], out_dt]:
                tile_a = pl.load(a, [0, 0], [1, k], valid_shape=a_valid, target_memory=pl.MemorySpace.Mat)
                tile_b = pl.load(
                    b, [0, 0], [k, n], valid_shape=b_valid, target_memory=pl.MemorySpace.Mat, clamp=True
                )
                out = pl.store(pl.tile.gemv(tile_a, tile_b, acc_phase=phase), [0, 0], out)
                return out

            @pl.function(type=pl.FunctionType.Orchestration)
            def orchestrator(
                self,
                a: pl.Tensor[[1, k], ab],
                b: pl.Tensor[[k, valid_n], ab],
                out: pl.Out[pl.Tensor[[1, valid_n], out_dt]],
            ) -> pl.Tensor[[1, valid_n], out_dt]:
                out = self.kernel(a, b, out)
                return out

        return GemvProgram

    @pl.program
    class GemvBiasProgram:
        @pl.function(type=pl.FunctionType.InCore)
        def kernel(
            self,
            a: pl.Tensor[[1, k], ab],
            b: pl.Tensor[[k, valid_n], ab],
            bias: pl.Tensor[[1, valid_n], out_dt],
            out: pl.Out[pl.Tensor[[1, valid_n], out_dt]],
        ) -> pl.Tensor[[1, valid_n], out_dt]:
            tile_a = pl.load(a, [0, 0], [1, k], valid_shape=a_valid, target_memory=pl.MemorySpace.Mat)
            tile_b = pl.load(
                b, [0, 0], [k, n], valid_shape=b_valid, target_memory=pl.MemorySpace.Mat, clamp=True
            )
            tile_bias = pl.load(
                bias, [0, 0], [1, n], valid_shape=[1, valid_n], target_memory=pl.MemorySpace.Mat, clamp=True
            )
            result = pl.tile.gemv_bias(tile_a, tile_b, tile_bias, acc_phase=phase)
            out = pl.store(result, [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def orchestrator(
            self,
            a: pl.Tensor[[1, k], ab],
            b: pl.Tensor[[k, valid_n], ab],
            bias: pl.Tensor[[1, valid_n], out_dt],
            out: pl.Out[pl.Tensor[[1, valid_n], out_dt]],
        ) -> pl.Tensor[[1, valid_n], out_dt]:
            out = self.kernel(a, b, bias, out)
            return out

    return GemvBiasProgram


@pytest.mark.parametrize(
    ("k", "n", "dt", "narrow", "phase", "bias"),
    [
        (64, 64, torch.float32, None, "unspecified", False),
        (64, 64, torch.float32, None, "unspecified", True),
        (128, 32, torch.float32, None, "final", True),
        (64, 64, torch.float32, "K", "unspecified", False),
        (64, 64, torch.float32, "N", "partial", True),
        (64, 64, torch.float32, "KN", "unspecified", False),
        (64, 64, torch.float16, None, "unspecified", True),
        (64, 64, torch.bfloat16, None, "unspecified", False),
        (64, 64, torch.int8, None, "unspecified", True),
    ],
)
def test_gemv(*, k: int, n: int, dt: Any, narrow: str | None, phase: str, bias: bool) -> None:
    if dt is torch.bfloat16:
        pto_backend.needs_bfloat16()
    out_dt = torch.int32 if dt is torch.int8 else torch.float32
    valid_k = VALID_K if narrow in ("K", "KN") else k
    valid_n = VALID_N if narrow in ("N", "KN") else n
    a, b = _input([1, k], dt), _input([k, valid_n], dt)
    program = _gemv(
        k=k, n=n, valid_k=valid_k, valid_n=valid_n, ab=_DT[dt], out_dt=_DT[out_dt], bias=bias, phase=phase
    )
    out = torch.zeros(1, valid_n, dtype=out_dt)
    want = (a[:, :valid_k].double() @ b[:valid_k, :].double()).to(out_dt)
    if bias:
        row = _input([1, valid_n], out_dt)
        run(program, a, b, row, out)
        want = want + row
    else:
        run(program, a, b, out)
    torch.testing.assert_close(out, want, rtol=1e-3, atol=1e-3)


@pl.program
class GemvAccumulated:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(
        self,
        a: pl.Tensor[[1, 2 * K], pl.FP16],
        b: pl.Tensor[[2 * K, N], pl.FP16],
        out: pl.Out[pl.Tensor[[1, N], pl.FP32]],
    ) -> pl.Tensor[[1, N], pl.FP32]:
        a0 = pl.load(a, [0, 0], [1, K], target_memory=pl.MemorySpace.Mat)
        b0 = pl.load(b, [0, 0], [K, N], target_memory=pl.MemorySpace.Mat)
        acc = pl.tile.gemv(a0, b0, acc_phase="partial")
        a1 = pl.load(a, [0, K], [1, K], target_memory=pl.MemorySpace.Mat)
        b1 = pl.load(b, [K, 0], [K, N], target_memory=pl.MemorySpace.Mat)
        acc = pl.tile.gemv_acc(acc, a1, b1, acc_phase="final")
        out = pl.store(acc, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def orchestrator(
        self,
        a: pl.Tensor[[1, 2 * K], pl.FP16],
        b: pl.Tensor[[2 * K, N], pl.FP16],
        out: pl.Out[pl.Tensor[[1, N], pl.FP32]],
    ) -> pl.Tensor[[1, N], pl.FP32]:
        out = self.kernel(a, b, out)
        return out


def test_gemv_acc_adds_the_second_half_of_k() -> None:
    a, b = torch.randn(1, 2 * K, dtype=torch.float16), torch.randn(2 * K, N, dtype=torch.float16)
    out = torch.zeros(1, N)
    run(GemvAccumulated, a, b, out)
    torch.testing.assert_close(out, (a.double() @ b.double()).float(), rtol=1e-3, atol=1e-3)
