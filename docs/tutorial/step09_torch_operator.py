"""Step 9: your kernel as a PyTorch operator: a fused residual-add + LayerNorm.

``pypto.torch.register(fn, "ns::name")`` turns a ``@pl.jit`` function into
``torch.ops.ns.name``. The operator compiles the kernel once per set of tensor shapes and
dtypes (every scalar stays a run-time value: one artifact for every ``eps``) and launches it
in *kernel mode* on the caller's torch tensors, without copies. It is checked here against
``torch.nn.functional.layer_norm``.

A process runs program-mode work (steps 1-8) or kernel-mode work (this step), never both:
this step runs in its own process.

    python docs/tutorial/step09_torch_operator.py
"""

from __future__ import annotations

import sys

import torch

import pypto.language as pl
import pypto.torch

ROWS, HIDDEN = 32, 64
TILE = 16


@pl.jit
def add_layer_norm(  # noqa: PLR0917  (a kernel's signature is its tensors, positional)
    x: pl.Tensor, residual: pl.Tensor, gamma: pl.Tensor, beta: pl.Tensor, eps: pl.FP32, out: pl.Out[pl.Tensor]
):
    for i in pl.range(ROWS // TILE):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="add_layer_norm"):
            t = pl.add(
                pl.load(x, [i * TILE, 0], [TILE, HIDDEN]), pl.load(residual, [i * TILE, 0], [TILE, HIDDEN])
            )
            tmp = pl.create_tile([TILE, HIDDEN], dtype=pl.FP32, target_memory=pl.MemorySpace.Vec)
            total: pl.Tile[[TILE, 1], pl.FP32] = pl.row_sum(t, tmp)
            xc = pl.row_expand_sub(t, pl.mul(total, 1.0 / HIDDEN))
            sq: pl.Tile[[TILE, 1], pl.FP32] = pl.row_sum(pl.mul(xc, xc), tmp)
            normed = pl.row_expand_mul(xc, pl.rsqrt(pl.add(pl.mul(sq, 1.0 / HIDDEN), eps)))
            g = pl.load(gamma, [0], [HIDDEN])  # gamma and beta are rank 1: [1, HIDDEN] tiles
            b = pl.load(beta, [0], [HIDDEN])
            pl.store(pl.col_expand_add(pl.col_expand_mul(normed, g), b), [i * TILE, 0], out)
    return out


add_layer_norm_op = pypto.torch.register(add_layer_norm, "tutorial::add_layer_norm")


class AddNorm(torch.nn.Module):
    """A module that uses the operator, as a model would."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = torch.nn.LayerNorm(HIDDEN, eps=1e-6)  # holds the parameters

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        return add_layer_norm_op(x, residual, self.norm.weight, self.norm.bias, self.norm.eps, out)


def main() -> int:
    torch.manual_seed(9)
    x, residual = torch.randn(ROWS, HIDDEN), torch.randn(ROWS, HIDDEN)
    module = AddNorm()
    with torch.no_grad():
        module.norm.weight.normal_()
        module.norm.bias.normal_()
        got = module(x, residual)  # kernel mode starts at the first call
        want = torch.nn.functional.layer_norm(
            x + residual, (HIDDEN,), module.norm.weight, module.norm.bias, module.norm.eps
        )
    err = float((got - want).abs().max())
    try:
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    except AssertionError as exc:
        print(f"step09 MISMATCH: max abs err {err:.3e}\n{exc}")
        return 1
    print(f"step09 ok: max abs err {err:.3e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
