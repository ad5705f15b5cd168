"""A whole single-head decoder program on a2a3sim, checked against torch: RMSNorm with a gain
(row_sum, rsqrt, row_expand_mul, col_expand_mul), rotary embedding on column halves, causal
attention (q @ k^T through transpose_view, row_max / row_expand_sub / exp / row_sum /
row_expand_div softmax), a SiLU-gated MLP (neg, exp, recip), residual adds and an LM head.
Twelve kernel calls chained through orchestration-created tensors; one kernel is called three
times on different tensors."""

from __future__ import annotations

import pytest

import pypto.language as pl
from pypto.runtime import RunConfig, run
from pypto_testing.forms import add_method, matmul_method, qk_method

torch = pytest.importorskip("torch")

S = 16  # tokens
D = 32  # model width = head width (one head)
H = 16  # half the head width: the rotary pairs
F = 64  # MLP width
V = 48  # vocabulary
EPS = 1e-5
SCALE = D**-0.5  # attention temperature


@pl.program
class Decoder:
    @pl.function(type=pl.FunctionType.InCore)
    def rms_norm(
        self,
        x: pl.Tensor[[S, D], pl.FP32],
        gain: pl.Tensor[[1, D], pl.FP32],
        out: pl.Out[pl.Tensor[[S, D], pl.FP32]],
    ) -> pl.Tensor[[S, D], pl.FP32]:
        t = pl.load(x, [0, 0], [S, D])
        mean_sq = pl.mul(pl.row_sum(pl.mul(t, t)), 1.0 / D)
        inv = pl.rsqrt(pl.add(mean_sq, EPS))
        scaled = pl.row_expand_mul(t, inv)
        return pl.store(pl.col_expand_mul(scaled, pl.load(gain, [0, 0], [1, D])), [0, 0], out)

    project = matmul_method(S, D, D)

    @pl.function(type=pl.FunctionType.InCore)
    def rotate(
        self,
        x: pl.Tensor[[S, D], pl.FP32],
        cos: pl.Tensor[[S, H], pl.FP32],
        sin: pl.Tensor[[S, H], pl.FP32],
        out: pl.Out[pl.Tensor[[S, D], pl.FP32]],
    ) -> pl.Tensor[[S, D], pl.FP32]:
        lo = pl.load(x, [0, 0], [S, H])
        hi = pl.load(x, [0, H], [S, H])
        c = pl.load(cos, [0, 0], [S, H])
        s = pl.load(sin, [0, 0], [S, H])
        out = pl.store(pl.sub(pl.mul(lo, c), pl.mul(hi, s)), [0, 0], out)
        out = pl.store(pl.add(pl.mul(hi, c), pl.mul(lo, s)), [0, H], out)
        return out

    scores = qk_method(S, S, D)

    @pl.function(type=pl.FunctionType.InCore)
    def softmax(
        self,
        scores: pl.Tensor[[S, S], pl.FP32],
        mask: pl.Tensor[[S, S], pl.FP32],
        out: pl.Out[pl.Tensor[[S, S], pl.FP32]],
    ) -> pl.Tensor[[S, S], pl.FP32]:
        z = pl.add(pl.mul(pl.load(scores, [0, 0], [S, S]), SCALE), pl.load(mask, [0, 0], [S, S]))
        e = pl.exp(pl.row_expand_sub(z, pl.row_max(z)))
        return pl.store(pl.row_expand_div(e, pl.row_sum(e)), [0, 0], out)

    mix = matmul_method(S, S, D)

    residual = add_method(S, D)

    @pl.function(type=pl.FunctionType.InCore)
    def up_and_gate(
        self,
        x: pl.Tensor[[S, D], pl.FP32],
        w_gate: pl.Tensor[[D, F], pl.FP32],
        w_up: pl.Tensor[[D, F], pl.FP32],
        gate: pl.Out[pl.Tensor[[S, F], pl.FP32]],
        up: pl.Out[pl.Tensor[[S, F], pl.FP32]],
    ) -> tuple[pl.Tensor[[S, F], pl.FP32], pl.Tensor[[S, F], pl.FP32]]:
        x_l1 = pl.load(x, [0, 0], [S, D], target_memory=pl.MemorySpace.Mat)
        g_l1 = pl.load(w_gate, [0, 0], [D, F], target_memory=pl.MemorySpace.Mat)
        u_l1 = pl.load(w_up, [0, 0], [D, F], target_memory=pl.MemorySpace.Mat)
        lhs = pl.move(x_l1, target_memory=pl.MemorySpace.Left)
        gate = pl.store(pl.matmul(lhs, pl.move(g_l1, target_memory=pl.MemorySpace.Right)), [0, 0], gate)
        up = pl.store(pl.matmul(lhs, pl.move(u_l1, target_memory=pl.MemorySpace.Right)), [0, 0], up)
        return gate, up

    @pl.function(type=pl.FunctionType.InCore)
    def silu_gate(
        self,
        gate: pl.Tensor[[S, F], pl.FP32],
        up: pl.Tensor[[S, F], pl.FP32],
        out: pl.Out[pl.Tensor[[S, F], pl.FP32]],
    ) -> pl.Tensor[[S, F], pl.FP32]:
        g = pl.load(gate, [0, 0], [S, F])
        sig = pl.recip(pl.add(pl.exp(pl.neg(g)), 1.0))
        return pl.store(pl.mul(pl.mul(g, sig), pl.load(up, [0, 0], [S, F])), [0, 0], out)

    down = matmul_method(S, F, D)
    lm_head = matmul_method(S, D, V)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(  # noqa: PLR0917 -- a program's entry takes each of its tensors positionally
        self,
        x: pl.Tensor[[S, D], pl.FP32],
        mask: pl.Tensor[[S, S], pl.FP32],
        cos: pl.Tensor[[S, H], pl.FP32],
        sin: pl.Tensor[[S, H], pl.FP32],
        gains: pl.Tensor[[3, D], pl.FP32],
        w_attn: pl.Tensor[[4 * D, D], pl.FP32],
        w_gate: pl.Tensor[[D, F], pl.FP32],
        w_up: pl.Tensor[[D, F], pl.FP32],
        w_down: pl.Tensor[[F, D], pl.FP32],
        w_vocab: pl.Tensor[[D, V], pl.FP32],
        logits: pl.Out[pl.Tensor[[S, V], pl.FP32]],
    ) -> pl.Tensor[[S, V], pl.FP32]:
        n1 = self.rms_norm(x, pl.slice(gains, [1, D], [0, 0]), pl.create_tensor([S, D], dtype=pl.FP32))
        q = self.project(n1, pl.slice(w_attn, [D, D], [0, 0]), pl.create_tensor([S, D], dtype=pl.FP32))
        k = self.project(n1, pl.slice(w_attn, [D, D], [D, 0]), pl.create_tensor([S, D], dtype=pl.FP32))
        v = self.project(n1, pl.slice(w_attn, [D, D], [2 * D, 0]), pl.create_tensor([S, D], dtype=pl.FP32))
        q_rot = self.rotate(q, cos, sin, pl.create_tensor([S, D], dtype=pl.FP32))
        k_rot = self.rotate(k, cos, sin, pl.create_tensor([S, D], dtype=pl.FP32))
        sc = self.scores(q_rot, k_rot, pl.create_tensor([S, S], dtype=pl.FP32))
        probs = self.softmax(sc, mask, pl.create_tensor([S, S], dtype=pl.FP32))
        heads = self.mix(probs, v, pl.create_tensor([S, D], dtype=pl.FP32))
        o = self.project(heads, pl.slice(w_attn, [D, D], [3 * D, 0]), pl.create_tensor([S, D], dtype=pl.FP32))
        h = self.residual(x, o, pl.create_tensor([S, D], dtype=pl.FP32))
        n2 = self.rms_norm(h, pl.slice(gains, [1, D], [1, 0]), pl.create_tensor([S, D], dtype=pl.FP32))
        gate, up = self.up_and_gate(
            n2, w_gate, w_up, pl.create_tensor([S, F], dtype=pl.FP32), pl.create_tensor([S, F], dtype=pl.FP32)
        )
        act = self.silu_gate(gate, up, pl.create_tensor([S, F], dtype=pl.FP32))
        mlp = self.down(act, w_down, pl.create_tensor([S, D], dtype=pl.FP32))
        h2 = self.residual(h, mlp, pl.create_tensor([S, D], dtype=pl.FP32))
        n3 = self.rms_norm(h2, pl.slice(gains, [1, D], [2, 0]), pl.create_tensor([S, D], dtype=pl.FP32))
        logits = self.lm_head(n3, w_vocab, logits)
        return logits


def _reference(inputs: list[torch.Tensor]) -> torch.Tensor:
    x, mask, cos, sin, gains, w_attn, w_gate, w_up, w_down, w_vocab = inputs

    def norm(t, g):
        return t * torch.rsqrt((t * t).mean(-1, keepdim=True) + EPS) * g

    def rope(t):
        lo, hi = t[:, :H], t[:, H:]
        return torch.cat([lo * cos - hi * sin, hi * cos + lo * sin], dim=-1)

    wq, wk, wv, wo = w_attn.split(D)
    n1 = norm(x, gains[0])
    q, k, v = rope(n1 @ wq), rope(n1 @ wk), n1 @ wv
    probs = torch.softmax(q @ k.T * SCALE + mask, dim=-1)
    h = x + (probs @ v) @ wo
    n2 = norm(h, gains[1])
    h2 = h + (torch.nn.functional.silu(n2 @ w_gate) * (n2 @ w_up)) @ w_down
    return norm(h2, gains[2]) @ w_vocab


def test_single_head_decoder_matches_torch() -> None:
    gen = torch.Generator().manual_seed(7)

    def weights(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen) * shape[0] ** -0.5

    pos = torch.arange(S, dtype=torch.float32)[:, None]
    angles = pos * 500.0 ** (-torch.arange(H, dtype=torch.float32) / H)
    inputs = [
        torch.randn(S, D, generator=gen),
        torch.full((S, S), -1e9).triu(1),
        torch.cos(angles),
        torch.sin(angles),
        1.0 + 0.1 * torch.randn(3, D, generator=gen),
        torch.cat([weights(D, D) for _ in range(4)]),
        weights(D, F),
        weights(D, F),
        weights(F, D),
        weights(D, V),
    ]
    logits = torch.zeros(S, V)
    run(Decoder, *inputs, logits, config=RunConfig())
    expected = _reference(inputs)
    assert expected.abs().max() > 0.5  # the check below compares real values, not zeros
    torch.testing.assert_close(logits, expected, rtol=1e-4, atol=1e-4)
