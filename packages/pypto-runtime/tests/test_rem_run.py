"""``pl.rem`` / ``pl.rems`` (PTO-ISA TREM / TREMS: the remainder with the divisor's sign) on
a2a3sim against ``torch.remainder``, every sign combination, in upstream PyPTO's tile form
(``pl.rem(lhs, rhs, tmp)``, ``pl.tile.rems(lhs, scalar, tmp)``)."""

from __future__ import annotations

from typing import Any

import pto_backend
import pytest

import pypto.language as pl
from pypto.runtime import run

torch = pytest.importorskip("torch")

_TORCH = {pl.FP32: torch.float32, pl.FP16: torch.float16, pl.BF16: torch.bfloat16}
_TORCH.update({pl.INT32: torch.int32, pl.INT16: torch.int16})


def _program(dt: Any, divisor: int):
    @pl.program
    class Remainders:
        @pl.function(type=pl.FunctionType.InCore)
        def kernel(
            self, a: pl.Tensor[[4, 16], dt], b: pl.Tensor[[4, 16], dt], y: pl.Out[pl.Tensor[[8, 16], dt]]
        ) -> pl.Tensor[[8, 16], dt]:
            ta = pl.load(a, [0, 0], [4, 16])
            tb = pl.load(b, [0, 0], [4, 16])
            tmp = pl.create_tile([4, 16], dtype=dt, target_memory=pl.MemorySpace.Vec)
            y = pl.store(pl.rem(ta, tb, tmp), [0, 0], y)
            return pl.store(pl.tile.rems(ta, divisor, tmp), [4, 0], y)

        @pl.function(type=pl.FunctionType.Orchestration)
        def orchestrator(
            self, a: pl.Tensor[[4, 16], dt], b: pl.Tensor[[4, 16], dt], y: pl.Out[pl.Tensor[[8, 16], dt]]
        ) -> pl.Tensor[[8, 16], dt]:
            return self.kernel(a, b, y)

    return Remainders


@pytest.mark.parametrize("dt", [pl.FP32, pl.FP16, pl.BF16, pl.INT32, pl.INT16])
@pytest.mark.parametrize("divisor", [3, -5])
def test_the_remainder_takes_the_divisors_sign(dt: Any, divisor: int) -> None:
    if dt == pl.BF16:
        pto_backend.needs_bfloat16()
    t = _TORCH[dt]
    g = torch.Generator().manual_seed(abs(divisor))
    a = torch.randint(-60, 61, (4, 16), generator=g)
    b = torch.randint(1, 10, (4, 16), generator=g) * (torch.randint(0, 2, (4, 16), generator=g) * 2 - 1)
    if t.is_floating_point:
        a = a / 4  # quarters: exact in every float type, remainders too
    a, b = a.to(t), b.to(t)
    y = torch.zeros(8, 16, dtype=t)
    run(_program(dt, divisor), a, b, y)
    torch.testing.assert_close(y[:4], torch.remainder(a, b), rtol=0, atol=0)
    torch.testing.assert_close(y[4:], torch.remainder(a, divisor), rtol=0, atol=0)


def test_an_integer_zero_divisor_fails_the_task() -> None:
    pto_backend.simpler_check_only("an integer remainder by zero")
    a = torch.arange(64, dtype=torch.int32).reshape(4, 16)
    b = torch.ones(4, 16, dtype=torch.int32)
    b[2, 5] = 0
    with pytest.raises(Exception, match=r"TREM: integer division by zero \(result set to 0\)"):
        run(_program(pl.INT32, 3), a, b, torch.zeros(8, 16, dtype=torch.int32))
