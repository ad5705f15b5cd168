"""``pl.addc`` / ``pl.subc`` / ``pl.addsc`` / ``pl.subsc`` (PTO-ISA TADDC, TSUBC, TADDSC, TSUBSC)
on a2a3sim against torch: ``lhs + rhs + rhs2``, ``lhs - rhs + rhs2`` (the ISA page's definition,
which the third operand is always added to), and the forms with a scalar in the middle."""

from __future__ import annotations

from typing import Any

import pytest

import pypto.language as pl
from pypto.runtime import run

torch = pytest.importorskip("torch")


def _program(dt: Any):
    @pl.program
    class ThreeOperands:
        @pl.function(type=pl.FunctionType.InCore)
        def kernel(
            self,
            a: pl.Tensor[[3, 4, 16], dt],
            y: pl.Out[pl.Tensor[[16, 16], dt]],
        ) -> pl.Tensor[[16, 16], dt]:
            x = pl.load(a, [0, 0, 0], [1, 4, 16])
            u = pl.load(a, [1, 0, 0], [1, 4, 16])
            v = pl.load(a, [2, 0, 0], [1, 4, 16])
            y = pl.store(pl.addc(x, u, v), [0, 0], y)
            y = pl.store(pl.tile.subc(x, u, v), [4, 0], y)
            y = pl.store(pl.addsc(x, 3, v), [8, 0], y)
            return pl.store(pl.tile.subsc(x, 3, v), [12, 0], y)

        @pl.function(type=pl.FunctionType.Orchestration)
        def orchestrator(
            self, a: pl.Tensor[[3, 4, 16], dt], y: pl.Out[pl.Tensor[[16, 16], dt]]
        ) -> pl.Tensor[[16, 16], dt]:
            return self.kernel(a, y)

    return ThreeOperands


@pytest.mark.parametrize(
    ("dt", "t"), [(pl.FP32, torch.float32), (pl.INT32, torch.int32), (pl.FP16, torch.float16)]
)
def test_the_third_operand_is_added_in_every_form(dt: Any, t: Any) -> None:
    a = torch.randint(-40, 40, (3, 4, 16)).to(t)
    y = torch.zeros(16, 16, dtype=t)
    run(_program(dt), a, y)
    x, u, v = a[0], a[1], a[2]
    want = torch.cat([x + u + v, x - u + v, x + 3 + v, x - 3 + v])
    torch.testing.assert_close(y, want, rtol=0, atol=0)
