"""``pl.tri`` / ``pl.tile.tri`` (PTO-ISA TTRI): triangular masks, checked on the simulated chips
against ``torch.tril``/``torch.triu`` of ones, in upstream PyPTO's own program form."""

from __future__ import annotations

import pto_backend
import pytest

import pypto.language as pl
from pypto.ir.errors import PyptoCompileError
from pypto.runtime import RunConfig, run

torch = pytest.importorskip("torch")

M, N = 16, 32


def _mask(upper: bool, diagonal: int, rows: int = M, cols: int = N) -> torch.Tensor:
    ones = torch.ones(rows, cols)
    return torch.triu(ones, diagonal) if upper else torch.tril(ones, diagonal)


@pl.program
class Masks:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(
        self,
        d: pl.Tensor[[1], pl.INT32],
        y: pl.InOut[pl.Tensor[[5, M, N], pl.FP32]],
    ) -> pl.Tensor[[5, M, N], pl.FP32]:
        y = pl.store(pl.tri(0, [M, N], dtype=pl.FP32), [0, 0, 0], y)
        y = pl.store(pl.tile.tri(-3, [M, N], dtype=pl.FP32, upper=True), [1, 0, 0], y)
        # past either edge: all ones, all zeros
        y = pl.store(pl.tri(N + 2, [M, N], dtype=pl.FP32), [2, 0, 0], y)
        diagonal: pl.Scalar[pl.INT32] = pl.tensor.read(d, [0])
        y = pl.store(pl.tile.tri(diagonal, [M, N], dtype=pl.FP32, upper=True), [3, 0, 0], y)
        # only the [5, 7] corner is written, and stored
        y = pl.store(pl.tri(1, [M, N], valid_shape=[5, 7], dtype=pl.FP32), [4, 0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def orchestrator(
        self, d: pl.Tensor[[1], pl.INT32], y: pl.InOut[pl.Tensor[[5, M, N], pl.FP32]]
    ) -> pl.Tensor[[5, M, N], pl.FP32]:
        return self.kernel(d, y)


@pytest.mark.parametrize("diagonal", [2, -20])
def test_lower_upper_past_the_edges_a_runtime_diagonal_and_a_valid_region(diagonal: int) -> None:
    y = torch.full((5, M, N), -1.0)
    run(Masks, torch.tensor([diagonal], dtype=torch.int32), y)
    torch.testing.assert_close(y[0], _mask(False, 0), rtol=0, atol=0)
    torch.testing.assert_close(y[1], _mask(True, -3), rtol=0, atol=0)
    torch.testing.assert_close(y[2], torch.ones(M, N), rtol=0, atol=0)
    torch.testing.assert_close(y[3], _mask(True, diagonal), rtol=0, atol=0)
    corner = torch.full((M, N), -1.0)
    corner[:5, :7] = _mask(False, 1, 5, 7)
    torch.testing.assert_close(y[4], corner, rtol=0, atol=0)


def _of_dtype(dtype: pl.DataType, upper: bool) -> object:
    @pl.program
    class OfDtype:
        @pl.function(type=pl.FunctionType.InCore)
        def kernel(self, y: pl.InOut[pl.Tensor[[M, N], dtype]]) -> pl.Tensor[[M, N], dtype]:
            t: pl.Tile[[M, N], dtype] = pl.tile.tri(1, [M, N], dtype=dtype, upper=upper)
            return pl.store(t, [0, 0], y)

        @pl.function(type=pl.FunctionType.Orchestration)
        def orchestrator(self, y: pl.InOut[pl.Tensor[[M, N], dtype]]) -> pl.Tensor[[M, N], dtype]:
            return self.kernel(y)

    return OfDtype


@pytest.mark.parametrize(
    ("dtype", "torch_dtype", "platform"),
    [
        (pl.INT32, "int32", "a2a3sim"),
        (pl.INT16, "int16", "a2a3sim"),
        (pl.FP16, "float16", "a2a3sim"),
        (pl.INT8, "int8", "a5sim"),
        (pl.BF16, "bfloat16", "a5sim"),
    ],
)
def test_every_element_type_holds_ones_and_zeros(dtype: pl.DataType, torch_dtype: str, platform: str) -> None:
    if dtype == pl.INT8 and pto_backend.official():
        pytest.skip(
            "official CPU backend: its TTRI takes no int8, as a5 hardware's does (docs/pto-isa-backends.md)"
        )
    if dtype == pl.BF16:
        pto_backend.needs_bfloat16()
    want = getattr(torch, torch_dtype)
    for upper in (False, True):
        y = torch.full((M, N), 7, dtype=want)
        run(_of_dtype(dtype, upper), y, config=RunConfig(platform=platform))
        torch.testing.assert_close(y, _mask(upper, 1).to(want), rtol=0, atol=0)


def test_a5_only_element_types_are_refused_for_a2a3_naming_the_dtype() -> None:
    with pytest.raises(PyptoCompileError, match=r"pl.tri: dtype INT8 is not supported on a2a3 hardware"):
        run(_of_dtype(pl.INT8, False), torch.zeros(M, N, dtype=torch.int8))
