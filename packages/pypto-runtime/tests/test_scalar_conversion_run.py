"""A floating-point scalar operand of an integer tile or tensor is converted to the element dtype
first, toward zero and saturating (NaN -> 0), as upstream does (`scalar.to(dtype)`); checked on
a2a3sim against torch."""

from __future__ import annotations

import pytest

import pypto.language as pl
from pypto.runtime import run

torch = pytest.importorskip("torch")


@pl.program
class IntTileFloatScalar:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(
        self,
        x: pl.Tensor[[8, 16], pl.INT16],
        s: pl.Scalar[pl.FP32],
        y: pl.Out[pl.Tensor[[3, 8, 16], pl.INT16]],
    ) -> pl.Tensor[[3, 8, 16], pl.INT16]:
        t = pl.load(x, [0, 0], [8, 16])
        y = pl.store(pl.tile.subs(t, 2.0), [0, 0, 0], y)  # a float literal
        y = pl.store(pl.tile.muls(t, s), [1, 0, 0], y)  # a float runtime scalar
        y = pl.store(pl.maximums(t, -2.9), [2, 0, 0], y)  # -2.9 -> -2
        return y


def _to_int16(v: float) -> int:
    """torch's float -> int16 conversion toward zero, saturated as the kernels convert (sk::trunc_saturate)."""
    return int(max(-32768.0, min(32767.0, float(torch.tensor(v).trunc()))))


@pytest.mark.parametrize("s", [2.7, -3.5, 1e9, -1e9])
def test_a_float_scalar_with_integer_elements_is_converted_toward_zero_and_saturated(s: float) -> None:
    x = torch.randint(-100, 100, (8, 16), dtype=torch.int16)
    y = torch.zeros(3, 8, 16, dtype=torch.int16)
    run(IntTileFloatScalar, x, s, y)
    k = _to_int16(s)
    torch.testing.assert_close(y[0], x - 2)
    # the scalar saturates; the product then wraps in int16, as torch's does
    torch.testing.assert_close(y[1], x * torch.tensor(k, dtype=torch.int16))
    torch.testing.assert_close(y[2], torch.maximum(x, torch.tensor(-2, dtype=torch.int16)))


@pl.program
class HostWrite:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self, v: pl.Scalar[pl.FP32], y: pl.InOut[pl.Tensor[[1, 2], pl.INT32]]
    ) -> pl.Tensor[[1, 2], pl.INT32]:
        pl.write(y, [0, 0], v)
        pl.write(y, [0, 1], -7.9)
        return y


@pytest.mark.parametrize(("v", "want"), [(5.99, 5), (-5.99, -5), (3e10, 2**31 - 1), (float("nan"), 0)])
def test_an_orchestration_write_of_a_float_into_an_integer_tensor_converts_it(v: float, want: int) -> None:
    y = torch.zeros(1, 2, dtype=torch.int32)
    run(HostWrite, v, y)
    assert y.tolist() == [[want, -7]]
