"""``pl.tile.ci`` / ``pl.tile.arange`` (PTO-ISA TCI) and their tensor form ``pl.arange`` /
``pl.tensor.ci`` / ``pl.tensor.arange``: index rows, checked on a2a3sim against ``torch.arange``
in upstream PyPTO's program forms (its ``test_ci.py``)."""

from __future__ import annotations

import pytest

import pypto.language as pl
from pypto.runtime import run

torch = pytest.importorskip("torch")

N = 32


@pl.program
class IndexRows:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(
        self, s: pl.Tensor[[1], pl.INT32], y: pl.Out[pl.Tensor[[5, N], pl.INT32]]
    ) -> pl.Tensor[[5, N], pl.INT32]:
        y = pl.store(pl.tile.ci(0, [1, N], dtype=pl.INT32), offsets=[0, 0], output_tensor=y)
        y = pl.store(pl.tile.ci(10, [1, N], dtype=pl.INT32), [1, 0], y)
        y = pl.store(pl.tile.ci(N - 1, [1, N], dtype=pl.INT32, descending=True), [2, 0], y)
        y = pl.store(pl.tile.arange(-4, [1, N]), [3, 0], y)
        start: pl.Scalar[pl.INT32] = pl.tensor.read(s, [0])
        y = pl.store(pl.tile.ci(start, [1, N], dtype=pl.INT32, descending=True), [4, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def orchestrator(
        self, s: pl.Tensor[[1], pl.INT32], y: pl.Out[pl.Tensor[[5, N], pl.INT32]]
    ) -> pl.Tensor[[5, N], pl.INT32]:
        return self.kernel(s, y)


@pytest.mark.parametrize("start", [7, -100])
def test_ascending_descending_the_alias_and_a_runtime_start(start: int) -> None:
    y = torch.zeros(5, N, dtype=torch.int32)
    run(IndexRows, torch.tensor([start], dtype=torch.int32), y)
    k = torch.arange(N, dtype=torch.int32)
    torch.testing.assert_close(y, torch.stack([k, 10 + k, N - 1 - k, k - 4, start - k]), rtol=0, atol=0)


@pl.program
class TensorRows:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, y: pl.Out[pl.Tensor[[4, N], pl.INT32]]) -> pl.Tensor[[4, N], pl.INT32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            y = pl.assemble(y, pl.tensor.ci(0, [1, N], dtype=pl.INT32), [0, 0])
            y = pl.assemble(y, pl.tensor.ci(N - 1, [1, N], dtype=pl.INT32, descending=True), [1, 0])
            y = pl.assemble(y, pl.tensor.arange(3, [1, N], dtype=pl.INT32), [2, 0])
            y = pl.assemble(y, pl.arange(-3, [1, N]), [3, 0])
        return y


def test_the_tensor_form_and_its_spellings() -> None:
    y = torch.zeros(4, N, dtype=torch.int32)
    run(TensorRows, y)
    k = torch.arange(N, dtype=torch.int32)
    torch.testing.assert_close(y, torch.stack([k, N - 1 - k, 3 + k, k - 3]), rtol=0, atol=0)


def _of_dtype(dtype: pl.DataType, start: int, descending: bool) -> object:
    @pl.program
    class OfDtype:
        @pl.function(type=pl.FunctionType.InCore)
        def kernel(self, y: pl.Out[pl.Tensor[[1, N], dtype]]) -> pl.Tensor[[1, N], dtype]:
            seq: pl.Tile[[1, N], dtype] = pl.tile.ci(start, [1, N], dtype=dtype, descending=descending)
            return pl.store(seq, [0, 0], y)

        @pl.function(type=pl.FunctionType.Orchestration)
        def orchestrator(self, y: pl.Out[pl.Tensor[[1, N], dtype]]) -> pl.Tensor[[1, N], dtype]:
            return self.kernel(y)

    return OfDtype


@pytest.mark.parametrize(
    ("dtype", "torch_dtype", "start", "descending", "bits"),
    [
        (pl.INT16, "int16", 32750, False, 16),  # wraps past 32767
        (pl.UINT16, "uint16", 5, True, 16),  # wraps below 0
        (pl.UINT32, "uint32", 4000000000, False, 32),
    ],
)
def test_integer_rows_wrap_in_their_dtype(
    dtype: pl.DataType, torch_dtype: str, start: int, descending: bool, bits: int
) -> None:
    y = torch.zeros(1, N, dtype=getattr(torch, torch_dtype))
    run(_of_dtype(dtype, start, descending), y)
    k = torch.arange(N, dtype=torch.int64)
    want = (start - k if descending else start + k) % (1 << bits)
    if dtype == pl.INT16:
        want = torch.where(want >= 1 << 15, want - (1 << 16), want)
    assert y.to(torch.int64).reshape(-1).tolist() == want.tolist()
