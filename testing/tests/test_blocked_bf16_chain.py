"""A chain of tensor-level matmuls too large for one set of cube tiles, with a BF16 cast between
them, on the simulated chip against torch (BF16 host tensors need torch; pypto-runtime's own
tests run without it)."""

from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from simpler import toolchain


@pl.jit
def chained(a: pl.Tensor, b: pl.Tensor, e: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        mid = pl.cast(pl.matmul(a, b), pl.BF16, mode="rint")  # [128, 384]: blocked, kept in L1
        out[:] = pl.matmul(mid, e)  # its left operand (96 KiB) is larger than L0A: blocked too
    return out


def test_blocked_chain_keeps_the_cast_intermediate_on_chip() -> None:
    if toolchain.kernel_toolchain().pto_backend == "pto-isa":
        pytest.skip(
            "official CPU backend: bfloat16_t is a _Float16 placeholder here (docs/pto-isa-backends.md)"
        )
    torch.manual_seed(15)
    a = torch.randn(128, 48, dtype=torch.bfloat16)
    b = torch.randn(48, 384, dtype=torch.bfloat16)
    e = torch.randn(384, 32, dtype=torch.bfloat16)
    out = torch.zeros(128, 32, dtype=torch.float32)
    chained(a, b, e, out)
    mid = (a.float() @ b.float()).to(torch.bfloat16).float()  # round-half-even to BF16
    want = mid @ e.float()
    rel = ((out - want).norm() / want.norm()).item()
    assert rel < 1e-3, rel
