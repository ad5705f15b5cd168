"""Run upstream PyPTO's qwen3 decode layer on this stack and check it against a torch reference.

Upstream's ``examples/models/qwen3_jit/qwen3_decode.py`` only lowers its program (its
``__main__`` calls ``lower`` on empty tensors) and upstream ships no numerical reference for it.
This driver imports that program unchanged from an upstream checkout, runs it at its own full
size (``config.py``: batch 16, hidden 8192, intermediate 25600, a 4096-position KV cache; about
1.5 GB of BF16 weights) on a simulated chip, and compares the three tensors it writes (``out``,
``k_cache``, ``v_cache``) with a torch computation of the same layer written here.

What the program computes, and so what the reference computes: input RMSNorm (BF16), Q/K/V
projections (FP32 accumulation), RoPE of K (and of Q, into a scratch tensor nobody reads) at
position ``seq_lens[b] - 1`` with K and V written to that cache row, then output projection plus
residual, post RMSNorm, the SiLU-gated MLP and down projection plus residual. Upstream leaves
attention out: its ``attn_out`` is a fresh ``pl.create_tensor`` that nothing writes. Here such a
tensor comes from the run's intermediate heap, which is not cleared; in a fresh process that
memory is untouched (zero), and the reference takes ``attn_out`` as zero.

Usage (any working directory; ``--upstream`` is the checkout's root)::

    python testing/upstream/run_qwen3_decode.py --upstream /path/to/pypto

Prints the timings (imports, inputs, compile, run) and per tensor the largest absolute error
and how many elements differ from the reference; exits 1 unless every element is within
``|got - ref| <= tol * (1 + |ref|)`` with ``tol`` one BF16 unit in the last place at 1.0
(``--tol``, default 2**-7). The values are of order one (the hidden state has unit variance),
and an absolute term is needed: ``out`` is a residual sum whose small elements come from
cancellation, where another FP32 summation order, or one BF16 rounding of an intermediate going
the other way, moves them by many of their own BF16 ulps.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import torch


def _inputs(cfg: Any, seed: int) -> dict[str, torch.Tensor]:
    """The layer's 16 arguments at the sizes of ``cfg`` (upstream's ``config`` module)."""
    gen = torch.Generator().manual_seed(seed)
    b, h, kv, inter, seq, d = (
        cfg.BATCH,
        cfg.HIDDEN,
        cfg.KV_HIDDEN,
        cfg.INTERMEDIATE,
        cfg.MAX_SEQ,
        cfg.HEAD_DIM,
    )

    def bf16(*shape: int, scale: float) -> torch.Tensor:
        return (torch.randn(*shape, generator=gen) * scale).to(torch.bfloat16)

    def gamma() -> torch.Tensor:
        return 1.0 + 0.1 * torch.randn(1, h, generator=gen)

    angles = torch.randn(seq, d, generator=gen)
    return {
        "hidden_states": bf16(b, h, scale=1.0),
        "input_rms_weight": gamma(),
        "wq": bf16(h, h, scale=h**-0.5),
        "wk": bf16(h, kv, scale=h**-0.5),
        "wv": bf16(h, kv, scale=h**-0.5),
        "seq_lens": torch.randint(1, seq + 1, (b,), generator=gen, dtype=torch.int32),
        "rope_cos": torch.cos(angles),
        "rope_sin": torch.sin(angles),
        "k_cache": bf16(cfg.CACHE_ROWS, d, scale=1.0),
        "v_cache": bf16(cfg.CACHE_ROWS, d, scale=1.0),
        "wo": bf16(h, h, scale=h**-0.5),
        "post_rms_weight": gamma(),
        "w_gate": bf16(h, inter, scale=h**-0.5),
        "w_up": bf16(h, inter, scale=h**-0.5),
        "w_down": bf16(inter, h, scale=inter**-0.5),
        "out": torch.zeros(b, h, dtype=torch.bfloat16),
    }


def _reference(cfg: Any, a: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``out``, ``k_cache`` and ``v_cache`` after the layer, computed by torch in FP32."""

    def rmsnorm(x: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + cfg.EPS) * g

    x = a["hidden_states"].float()
    normed = rmsnorm(x, a["input_rms_weight"]).to(torch.bfloat16).float()
    k = normed @ a["wk"].float()
    v = normed @ a["wv"].float()
    k_cache, v_cache = a["k_cache"].clone(), a["v_cache"].clone()
    d, half, heads, seq = cfg.HEAD_DIM, cfg.HALF_DIM, cfg.NUM_KV_HEADS, cfg.MAX_SEQ
    for b in range(cfg.BATCH):
        pos = int(a["seq_lens"][b]) - 1
        cos, sin = a["rope_cos"][pos], a["rope_sin"][pos]
        for head in range(heads):
            kh = k[b, head * d : (head + 1) * d]
            lo = kh[:half] * cos[:half] - kh[half:] * sin[:half]
            hi = kh[half:] * cos[half:] + kh[:half] * sin[half:]
            row = (b * heads + head) * seq + pos
            k_cache[row] = torch.cat([lo, hi]).to(torch.bfloat16)
            v_cache[row] = v[b, head * d : (head + 1) * d].to(torch.bfloat16)
    attn_out = torch.zeros(cfg.BATCH, cfg.HIDDEN)  # see the module docstring
    resid1 = attn_out @ a["wo"].float() + x
    post = rmsnorm(resid1, a["post_rms_weight"]).to(torch.bfloat16).float()
    gate = post @ a["w_gate"].float()
    up = post @ a["w_up"].float()
    mlp = (gate * torch.sigmoid(gate) * up).to(torch.bfloat16).float()
    out = (mlp @ a["w_down"].float() + resid1).to(torch.bfloat16)
    return {"out": out, "k_cache": k_cache, "v_cache": v_cache}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", type=Path, required=True, help="root of an upstream PyPTO checkout")
    parser.add_argument("--platform", default="a2a3sim", help="platform to compile for (default a2a3sim)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    parser.add_argument(
        "--tol", type=float, default=2**-7, help="tolerance tol of |got - ref| <= tol * (1 + |ref|)"
    )
    opts = parser.parse_args(argv)
    example = opts.upstream / "examples" / "models" / "qwen3_jit" / "qwen3_decode.py"
    if not example.is_file():
        parser.error(f"--upstream: expected a checkout with {example.relative_to(opts.upstream)}, found none")
    sys.path.insert(0, str(opts.upstream))
    t = time.perf_counter()
    from examples.models.qwen3_jit import config as cfg
    from examples.models.qwen3_jit.qwen3_decode import qwen3_decode

    import pypto.runtime  # installs the jit executor and compiler
    import simpler  # noqa: F401  (imported here so that its import is not counted as compile time)

    print(f"imports: {time.perf_counter() - t:.1f} s")

    t = time.perf_counter()
    args = _inputs(cfg, opts.seed)
    print(
        f"inputs: {sum(x.nbytes for x in args.values()) / 2**30:.2f} GiB in {time.perf_counter() - t:.1f} s"
    )
    before = {name: args[name].clone() for name in ("k_cache", "v_cache")}
    t = time.perf_counter()
    program = qwen3_decode.compile(*args.values(), platform=opts.platform)
    print(f"compile: {time.perf_counter() - t:.1f} s (a store hit when compiled before)")
    t = time.perf_counter()
    program(*args.values(), config=pypto.runtime.RunConfig(platform=opts.platform))
    print(f"run on {opts.platform}: {time.perf_counter() - t:.1f} s")
    ref = _reference(cfg, {**args, **before})
    failed = []
    for name, want in ref.items():
        err = (args[name].float() - want.float()).abs()
        bound = opts.tol * (1.0 + want.float().abs())
        print(
            f"{name}: max abs error {err.max().item():.3g} (reference max {want.float().abs().max().item():.3g}),"
            f" {int((err > 0).sum())} of {err.numel()} elements differ,"
            f" largest error / bound {(err / bound).max().item():.2g}"
        )
        if bool((err > bound).any()):
            failed.append(name)
    if failed:
        print(f"FAILED: {', '.join(failed)} outside |got - ref| <= {opts.tol:.3g} * (1 + |ref|)")
        return 1
    print("PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
