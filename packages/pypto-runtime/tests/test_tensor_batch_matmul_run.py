"""Tensor-level values of rank 3 in a kernel, on a2a3sim against torch: ``pl.matmul`` /
``pl.matmul_acc`` with a rank-3 operand (``b_trans=True``), in upstream's program forms
(``tests/st/runtime/ops/test_tensor_batch_matmul.py``: the 2-D by 3-D MoE W2 product and its
two-chunk accumulation, 3-D by 3-D, a grouped ``pl.slice`` of a 3-D weight, an ``pl.add``
result as the transposed operand); then element-wise ops, a window write, an atomic
``pl.assemble`` of rank-3 values, and upstream's ``not_fit`` case (a ``[4, 64, 512]`` product too
large to hold, computed a batch at a time as it is stored). Each program is one kernel (one
compile); the ``not_fit`` product is in the second, whose other work takes no cube buffers (a
blocked nest gets what the kernel's other matmuls leave of them)."""

from __future__ import annotations

import pytest

import pypto.language as pl
from pypto.runtime import run

torch = pytest.importorskip("torch")

M, K, N = 16, 64, 64
KH = K // 2
B, G, G0, K3, N3 = 2, 4, 1, 80, 48  # the 3-D by 3-D forms: K and N not multiples of 32
B4, M4, K4, N4 = 4, 64, 128, 512  # not_fit: a batch's product needs more than one set of cube tiles


@pl.program
class TensorBatchMatmul:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(  # noqa: PLR0917 - a program takes its tensors positionally
        self,
        a: pl.Tensor[[M, K], pl.FP32],
        b: pl.Tensor[[1, N, K], pl.FP32],
        x: pl.Tensor[[B, M, K3], pl.FP32],
        w: pl.Tensor[[G, N3, K3], pl.FP32],
        w1: pl.Tensor[[B, N3, K3], pl.FP32],
        c2d: pl.Out[pl.Tensor[[1, M, N], pl.FP32]],
        cacc: pl.Out[pl.Tensor[[1, M, N], pl.FP32]],
        c3d: pl.Out[pl.Tensor[[B, M, N3], pl.FP32]],
        csliced: pl.Out[pl.Tensor[[B, M, N3], pl.FP32]],
        cmixed: pl.Out[pl.Tensor[[B, M, N3], pl.FP32]],
    ) -> tuple[
        pl.Tensor[[1, M, N], pl.FP32],
        pl.Tensor[[1, M, N], pl.FP32],
        pl.Tensor[[B, M, N3], pl.FP32],
        pl.Tensor[[B, M, N3], pl.FP32],
        pl.Tensor[[B, M, N3], pl.FP32],
    ]:
        # 2-D by 3-D (one batch), then the same product as two K chunks
        matmul_out: pl.Tensor[[1, M, N], pl.FP32] = pl.matmul(a, b, b_trans=True, out_dtype=pl.FP32)
        c2d = pl.assemble(c2d, matmul_out, offset=[0, 0, 0])
        a0: pl.Tensor[[M, KH], pl.FP32] = pl.slice(a, [M, KH], [0, 0])
        a1: pl.Tensor[[M, KH], pl.FP32] = pl.slice(a, [M, KH], [0, KH])
        b0: pl.Tensor[[1, N, KH], pl.FP32] = pl.slice(b, [1, N, KH], [0, 0, 0])
        b1: pl.Tensor[[1, N, KH], pl.FP32] = pl.slice(b, [1, N, KH], [0, 0, KH])
        acc: pl.Tensor[[1, M, N], pl.FP32] = pl.matmul(a0, b0, b_trans=True, out_dtype=pl.FP32)
        acc_final: pl.Tensor[[1, M, N], pl.FP32] = pl.matmul_acc(acc, a1, b1, b_trans=True)
        cacc = pl.assemble(cacc, acc_final, offset=[0, 0, 0])
        # 3-D by 3-D: the first B weights, then the B weights from group G0 (a grouped slice)
        w_first = pl.slice(w, [B, N3, K3], [0, 0, 0])
        cm = pl.matmul(x, w_first, b_trans=True, out_dtype=pl.FP32)
        c3d = pl.assemble(c3d, cm, offset=[0, 0, 0])
        w_group = pl.slice(w, [B, N3, K3], [G0, 0, 0])
        cs = pl.matmul(x, w_group, b_trans=True, out_dtype=pl.FP32)
        csliced = pl.assemble(csliced, cs, offset=[0, 0, 0])
        # a vector result as the transposed operand
        bt = pl.add(w_first, w1)
        cx = pl.matmul(x, bt, b_trans=True, out_dtype=pl.FP32)
        cmixed = pl.assemble(cmixed, cx, offset=[0, 0, 0])
        return c2d, cacc, c3d, csliced, cmixed

    @pl.function(type=pl.FunctionType.Orchestration)
    def orchestrator(  # noqa: PLR0917 - a program takes its tensors positionally
        self,
        a: pl.Tensor[[M, K], pl.FP32],
        b: pl.Tensor[[1, N, K], pl.FP32],
        x: pl.Tensor[[B, M, K3], pl.FP32],
        w: pl.Tensor[[G, N3, K3], pl.FP32],
        w1: pl.Tensor[[B, N3, K3], pl.FP32],
        c2d: pl.Out[pl.Tensor[[1, M, N], pl.FP32]],
        cacc: pl.Out[pl.Tensor[[1, M, N], pl.FP32]],
        c3d: pl.Out[pl.Tensor[[B, M, N3], pl.FP32]],
        csliced: pl.Out[pl.Tensor[[B, M, N3], pl.FP32]],
        cmixed: pl.Out[pl.Tensor[[B, M, N3], pl.FP32]],
    ) -> tuple[
        pl.Tensor[[1, M, N], pl.FP32],
        pl.Tensor[[1, M, N], pl.FP32],
        pl.Tensor[[B, M, N3], pl.FP32],
        pl.Tensor[[B, M, N3], pl.FP32],
        pl.Tensor[[B, M, N3], pl.FP32],
    ]:
        c2d, cacc, c3d, csliced, cmixed = self.kernel(a, b, x, w, w1, c2d, cacc, c3d, csliced, cmixed)
        return c2d, cacc, c3d, csliced, cmixed


def _bt(lhs: torch.Tensor, rhs: torch.Tensor) -> torch.Tensor:
    """``lhs @ rhs^T`` (last two axes), in double, as FP32."""
    return torch.matmul(lhs.double(), rhs.double().transpose(-2, -1)).float()


@pytest.fixture(scope="module")
def matmuls() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    ins = {
        "a": torch.randn(M, K),
        "b": torch.randn(1, N, K),
        "x": torch.randn(B, M, K3),
        "w": torch.randn(G, N3, K3),
        "w1": torch.randn(B, N3, K3),
    }
    outs = {
        "c2d": torch.zeros(1, M, N),
        "cacc": torch.zeros(1, M, N),
        "c3d": torch.zeros(B, M, N3),
        "csliced": torch.zeros(B, M, N3),
        "cmixed": torch.zeros(B, M, N3),
    }
    run(TensorBatchMatmul, *ins.values(), *outs.values())
    return {**ins, **outs}


def _close(got: torch.Tensor, want: torch.Tensor) -> None:
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


def test_2d_by_3d(matmuls: dict[str, torch.Tensor]) -> None:
    _close(matmuls["c2d"], _bt(matmuls["a"].unsqueeze(0), matmuls["b"]))


def test_2d_by_3d_accumulated_in_two_chunks(matmuls: dict[str, torch.Tensor]) -> None:
    _close(matmuls["cacc"], _bt(matmuls["a"].unsqueeze(0), matmuls["b"]))


def test_3d_by_3d(matmuls: dict[str, torch.Tensor]) -> None:
    _close(matmuls["c3d"], _bt(matmuls["x"], matmuls["w"][:B]))


def test_3d_by_grouped_slice(matmuls: dict[str, torch.Tensor]) -> None:
    _close(matmuls["csliced"], _bt(matmuls["x"], matmuls["w"][G0 : G0 + B]))


def test_vector_result_as_transposed_operand(matmuls: dict[str, torch.Tensor]) -> None:
    _close(matmuls["cmixed"], _bt(matmuls["x"], matmuls["w"][:B] + matmuls["w1"]))


@pl.program
class Planes:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(  # noqa: PLR0917 - a program takes its tensors positionally
        self,
        p: pl.Tensor[[3, 8, 32], pl.FP32],
        q: pl.Tensor[[3, 8, 32], pl.FP32],
        big: pl.Tensor[[2, 12, 8], pl.FP32],
        x4: pl.Tensor[[B4, M4, K4], pl.FP32],
        w4: pl.Tensor[[B4, N4, K4], pl.FP32],
        p1: pl.Tensor[[1, 8, 32], pl.FP32],
        y: pl.Out[pl.Tensor[[3, 8, 32], pl.FP32]],
        z: pl.InOut[pl.Tensor[[4, 8, 32], pl.FP32]],
        t: pl.Out[pl.Tensor[[2, 8, 12], pl.FP32]],
        c4: pl.Out[pl.Tensor[[B4, M4, N4], pl.FP32]],
        e1: pl.Out[pl.Tensor[[3, 8, 32], pl.FP32]],
        e2: pl.Out[pl.Tensor[[3, 8, 32], pl.FP32]],
        sm: pl.Out[pl.Tensor[[3, 8, 32], pl.FP32]],
    ) -> tuple[
        pl.Tensor[[3, 8, 32], pl.FP32],
        pl.Tensor[[4, 8, 32], pl.FP32],
        pl.Tensor[[2, 8, 12], pl.FP32],
        pl.Tensor[[B4, M4, N4], pl.FP32],
        pl.Tensor[[3, 8, 32], pl.FP32],
        pl.Tensor[[3, 8, 32], pl.FP32],
        pl.Tensor[[3, 8, 32], pl.FP32],
    ]:
        y = pl.assemble(y, pl.mul(pl.exp(p), pl.sub(q, p)), [0, 0, 0])  # element-wise, plane-wise
        z[1:3, :, :] = pl.maximum(pl.slice(p, [2, 8, 32], [1, 0, 0]), q[0:2, :, :])  # a window write
        z = pl.assemble(z, pl.neg(q), [1, 0, 0], atomic=pl.AtomicType.Add)  # added to planes 1-3
        t = pl.assemble(t, pl.transpose(big, 1, 2), [0, 0, 0])
        cm = pl.matmul(x4, w4, b_trans=True, out_dtype=pl.FP32)  # upstream's not_fit case
        c4 = pl.assemble(c4, cm, offset=[0, 0, 0])
        e1 = pl.expand_clone(pl.exp(p1), e1)  # a computed source repeated along the first axis
        e2 = pl.expand_clone(pl.sub(q, p), e2)  # a computed source, a plane a step
        e = pl.exp(pl.sub(q, pl.row_max(q)))  # a softmax over the last axis: row ops, each plane's rows
        sm = pl.assemble(sm, pl.div(e, pl.row_sum(e)), [0, 0, 0])
        return y, z, t, c4, e1, e2, sm

    @pl.function(type=pl.FunctionType.Orchestration)
    def orchestrator(  # noqa: PLR0917 - a program takes its tensors positionally
        self,
        p: pl.Tensor[[3, 8, 32], pl.FP32],
        q: pl.Tensor[[3, 8, 32], pl.FP32],
        big: pl.Tensor[[2, 12, 8], pl.FP32],
        x4: pl.Tensor[[B4, M4, K4], pl.FP32],
        w4: pl.Tensor[[B4, N4, K4], pl.FP32],
        p1: pl.Tensor[[1, 8, 32], pl.FP32],
        y: pl.Out[pl.Tensor[[3, 8, 32], pl.FP32]],
        z: pl.InOut[pl.Tensor[[4, 8, 32], pl.FP32]],
        t: pl.Out[pl.Tensor[[2, 8, 12], pl.FP32]],
        c4: pl.Out[pl.Tensor[[B4, M4, N4], pl.FP32]],
        e1: pl.Out[pl.Tensor[[3, 8, 32], pl.FP32]],
        e2: pl.Out[pl.Tensor[[3, 8, 32], pl.FP32]],
        sm: pl.Out[pl.Tensor[[3, 8, 32], pl.FP32]],
    ) -> tuple[
        pl.Tensor[[3, 8, 32], pl.FP32],
        pl.Tensor[[4, 8, 32], pl.FP32],
        pl.Tensor[[2, 8, 12], pl.FP32],
        pl.Tensor[[B4, M4, N4], pl.FP32],
        pl.Tensor[[3, 8, 32], pl.FP32],
        pl.Tensor[[3, 8, 32], pl.FP32],
        pl.Tensor[[3, 8, 32], pl.FP32],
    ]:
        y, z, t, c4, e1, e2, sm = self.kernel(p, q, big, x4, w4, p1, y, z, t, c4, e1, e2, sm)
        return y, z, t, c4, e1, e2, sm


@pytest.fixture(scope="module")
def planes() -> dict[str, torch.Tensor]:
    torch.manual_seed(1)
    ins = {
        "p": torch.randn(3, 8, 32),
        "q": torch.randn(3, 8, 32),
        "big": torch.randn(2, 12, 8),
        "x4": torch.randn(B4, M4, K4),
        "w4": torch.randn(B4, N4, K4),
        "p1": torch.randn(1, 8, 32),
    }
    outs = {
        "y": torch.zeros(3, 8, 32),
        "z": torch.randn(4, 8, 32),
        "t": torch.zeros(2, 8, 12),
        "c4": torch.zeros(B4, M4, N4),
        "e1": torch.zeros(3, 8, 32),
        "e2": torch.zeros(3, 8, 32),
        "sm": torch.zeros(3, 8, 32),
    }
    z0 = outs["z"].clone()
    run(Planes, *ins.values(), *outs.values())
    return {**ins, **outs, "z0": z0}


def test_element_wise_window_write_atomic_and_transpose(planes: dict[str, torch.Tensor]) -> None:
    p, q = planes["p"], planes["q"]
    want_z = planes["z0"].clone()
    want_z[1:3] = torch.maximum(p[1:3], q[0:2])
    want_z[1:4] -= q
    torch.testing.assert_close(planes["y"], torch.exp(p) * (q - p), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(planes["z"], want_z)
    torch.testing.assert_close(planes["t"], planes["big"].transpose(1, 2))


def test_a_product_too_large_to_hold_is_stored_a_batch_at_a_time(planes: dict[str, torch.Tensor]) -> None:
    _close(planes["c4"], _bt(planes["x4"], planes["w4"]))


def test_expand_clone_of_a_computed_rank_3_source(planes: dict[str, torch.Tensor]) -> None:
    torch.testing.assert_close(planes["e1"], torch.exp(planes["p1"]).expand(3, 8, 32), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(planes["e2"], planes["q"] - planes["p"])


def test_softmax_over_the_last_axis(planes: dict[str, torch.Tensor]) -> None:
    torch.testing.assert_close(planes["sm"], torch.softmax(planes["q"], dim=-1), rtol=1e-5, atol=1e-6)
