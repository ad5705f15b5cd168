"""``pl.tile.transpose_view`` of a Mat (L1) tile run on a2a3sim, on either PTO-ISA backend: the
key block's NZ bytes read as a ZN tile (TRESHAPE over the same storage) are ``k.T`` as the right
operand of ``q @ k.T``. FP32 has NZ boxes of 16 x 8 and ZN boxes of 8 x 16, so the transposed
grid differs from the original; FP16's boxes are 16 x 16."""

from __future__ import annotations

import pytest

import pypto.language as pl
from pypto.runtime import RunConfig, run
from pypto_testing.forms import qk_method

torch = pytest.importorskip("torch")


@pl.program
class QKtF32:
    qk = qk_method(16, 48, 64)


@pl.program
class KtKF16:
    @pl.function(type=pl.FunctionType.InCore)
    def ktk(
        self, k: pl.Tensor[[32, 16], pl.FP16], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]
    ) -> pl.Tensor[[16, 16], pl.FP32]:
        k_l1 = pl.load(k, [0, 0], [32, 16], target_memory=pl.MemorySpace.Mat)
        kt = pl.tile.transpose_view(k_l1)
        a = pl.move(kt, target_memory=pl.MemorySpace.Left)  # a ZN source into Left
        b = pl.move(k_l1, target_memory=pl.MemorySpace.Right)
        return pl.store(pl.matmul(a, b), [0, 0], out)


def test_fp32_key_block_transposed_on_l1() -> None:
    q = torch.randn(16, 64)
    k = torch.randn(48, 64)
    out = torch.zeros(16, 48)
    run(QKtF32, q, k, out, config=RunConfig())
    torch.testing.assert_close(out, q @ k.T, rtol=1e-5, atol=1e-4)


def test_fp16_transpose_view_as_the_left_operand() -> None:
    k = torch.randn(32, 16).half()
    out = torch.zeros(16, 16)
    run(KtKF16, k, out, config=RunConfig())
    torch.testing.assert_close(out, k.float().T @ k.float(), rtol=1e-5, atol=1e-4)
