"""``pl.expand_clone(src, target)`` on the simulated chip against torch's ``expand``: upstream
PyPTO's cases (its ``test_broadcast.py``: a [B, N, K] target from a source of its own shape or
of extent 1 on one axis, in an InCore kernel of its own), then rank-2 targets, a computed
source (of ``pl.exp``, of ``pl.tensor.full``), an on-chip target, windows and other dtypes in one
``pl.at`` scope."""

from __future__ import annotations

import pto_backend
import pytest

import pypto.language as pl
from pypto.runtime import run

torch = pytest.importorskip("torch")

B, N, K = 8, 8, 8
SHAPES = {"same": [B, N, K], "d0": [1, N, K], "d1": [B, 1, K], "d2": [B, N, 1]}


@pl.program
class ExpandClone:
    """Upstream's kernel once per source shape, as it writes it; one program for the four."""

    @pl.function(type=pl.FunctionType.InCore)
    def same_k(
        self, x: pl.Tensor[[B, N, K], pl.FP32], y: pl.Out[pl.Tensor[[B, N, K], pl.FP32]]
    ) -> pl.Tensor[[B, N, K], pl.FP32]:
        out: pl.Tensor[[B, N, K], pl.FP32] = pl.expand_clone(x, y)
        return out

    @pl.function(type=pl.FunctionType.InCore)
    def d0_k(
        self, x: pl.Tensor[[1, N, K], pl.FP32], y: pl.Out[pl.Tensor[[B, N, K], pl.FP32]]
    ) -> pl.Tensor[[B, N, K], pl.FP32]:
        out: pl.Tensor[[B, N, K], pl.FP32] = pl.expand_clone(x, y)
        return out

    @pl.function(type=pl.FunctionType.InCore)
    def d1_k(
        self, x: pl.Tensor[[B, 1, K], pl.FP32], y: pl.Out[pl.Tensor[[B, N, K], pl.FP32]]
    ) -> pl.Tensor[[B, N, K], pl.FP32]:
        out: pl.Tensor[[B, N, K], pl.FP32] = pl.expand_clone(x, y)
        return out

    @pl.function(type=pl.FunctionType.InCore)
    def d2_k(
        self, x: pl.Tensor[[B, N, 1], pl.FP32], y: pl.Out[pl.Tensor[[B, N, K], pl.FP32]]
    ) -> pl.Tensor[[B, N, K], pl.FP32]:
        out: pl.Tensor[[B, N, K], pl.FP32] = pl.expand_clone(x, y)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def orchestrator(  # noqa: PLR0917 -- an orchestration takes each tensor positionally
        self,
        x0: pl.Tensor[[B, N, K], pl.FP32],
        x1: pl.Tensor[[1, N, K], pl.FP32],
        x2: pl.Tensor[[B, 1, K], pl.FP32],
        x3: pl.Tensor[[B, N, 1], pl.FP32],
        y0: pl.Out[pl.Tensor[[B, N, K], pl.FP32]],
        y1: pl.Out[pl.Tensor[[B, N, K], pl.FP32]],
        y2: pl.Out[pl.Tensor[[B, N, K], pl.FP32]],
        y3: pl.Out[pl.Tensor[[B, N, K], pl.FP32]],
    ) -> tuple[
        pl.Tensor[[B, N, K], pl.FP32],
        pl.Tensor[[B, N, K], pl.FP32],
        pl.Tensor[[B, N, K], pl.FP32],
        pl.Tensor[[B, N, K], pl.FP32],
    ]:
        y0 = self.same_k(x0, y0)
        y1 = self.d0_k(x1, y1)
        y2 = self.d1_k(x2, y2)
        y3 = self.d2_k(x3, y3)
        return y0, y1, y2, y3


@pytest.fixture(scope="module")
def upstream_runs(module_settings: None) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """Each case's (x, y): one run of ExpandClone."""
    gen = torch.Generator().manual_seed(3)
    xs = [torch.randn(shape, generator=gen) for shape in SHAPES.values()]
    ys = [torch.full((B, N, K), 99.0) for _ in SHAPES]
    run(ExpandClone, *xs, *ys)
    return dict(zip(SHAPES, zip(xs, ys, strict=True), strict=True))


@pytest.mark.parametrize("case", SHAPES)
def test_upstreams_rank_3_cases(
    case: str, upstream_runs: dict[str, tuple[torch.Tensor, torch.Tensor]]
) -> None:
    x, y = upstream_runs[case]
    torch.testing.assert_close(y, x.expand(B, N, K), rtol=0, atol=0)


M, C = 16, 32


@pl.jit
def forms(  # noqa: PLR0917 -- a kernel takes each of its tensors positionally
    row: pl.Tensor,
    col: pl.Tensor,
    ints: pl.Tensor,
    halves: pl.Tensor,
    a: pl.Out[pl.Tensor],
    b: pl.Out[pl.Tensor],
    d: pl.Out[pl.Tensor],
    e: pl.Out[pl.Tensor],
    w: pl.Out[pl.Tensor],
    h: pl.Out[pl.Tensor],
    f: pl.Out[pl.Tensor],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        a = pl.expand_clone(row, a)  # [1, C] down the rows
        b = pl.tensor.expand_clone(col, b)  # [M, 1] along the columns
        d = pl.expand_clone(pl.exp(row), d)  # a computed source
        t = pl.create_tensor([8, 16], dtype=pl.FP32)
        t = pl.expand_clone(col[0:8, :], t)  # an on-chip target, a window as the source
        e = pl.assemble(e, t, [0, 0])
        pl.expand_clone(ints, w[1:3, :, :])  # a window of a rank-3 target, as a statement
        h = pl.expand_clone(halves, h)
        f = pl.expand_clone(pl.tensor.full([1, C], dtype=pl.FP32, value=2.5), f)  # pl.tensor.full
    return a, b, d, e, w, h, f


def test_rank_2_targets_windows_and_other_dtypes() -> None:
    pto_backend.needs_bfloat16()
    gen = torch.Generator().manual_seed(4)
    row, col = torch.randn(1, C, generator=gen), torch.randn(M, 1, generator=gen)
    ints = torch.randint(-9, 9, (2, 1, 16), dtype=torch.int32, generator=gen)
    halves = torch.randn(1, 8, 16, generator=gen).to(torch.bfloat16)
    a, b, d, e = (torch.zeros(M, C) for _ in range(4))
    w = torch.full((4, 8, 16), 7, dtype=torch.int32)
    h = torch.zeros(3, 8, 16, dtype=torch.bfloat16)
    f = torch.zeros(M, C)
    forms(row, col, ints, halves, a, b, d, e, w, h, f)
    torch.testing.assert_close(a, row.expand(M, C), rtol=0, atol=0)
    torch.testing.assert_close(b, col.expand(M, C), rtol=0, atol=0)
    torch.testing.assert_close(d, row.exp().expand(M, C), rtol=2e-7, atol=0)
    torch.testing.assert_close(e[:8, :16], col[:8].expand(8, 16), rtol=0, atol=0)
    assert not e[8:].any()
    assert not e[:, 16:].any()
    torch.testing.assert_close(w[1:3], ints.expand(2, 8, 16), rtol=0, atol=0)
    assert (w[0] == 7).all()
    assert (w[3] == 7).all()
    torch.testing.assert_close(h, halves.expand(3, 8, 16), rtol=0, atol=0)
    torch.testing.assert_close(f, torch.full((M, C), 2.5), rtol=0, atol=0)
