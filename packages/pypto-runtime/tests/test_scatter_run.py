"""``pl.scatter`` / ``pl.tensor.scatter`` (torch.Tensor.scatter's index form on 2-D tensors) and
``pl.tile.scatter`` (PTO-ISA TSCATTER's index form: flat positions in the destination tile),
checked on a2a3sim against torch, in upstream PyPTO's program forms (its ``test_scatter.py``:
the index-form cases). The base holds a negative sentinel per element and the values are
positive, so a scatter that writes nothing, or writes the wrong place, cannot pass."""

from __future__ import annotations

from typing import Any

import pto_backend
import pytest

import pypto.language as pl
from pypto.ir.errors import KernelError
from pypto.runtime import run

torch = pytest.importorskip("torch")


def _program(shape: tuple[int, int], ishape: tuple[int, int], dim: int, dtype: Any, idt: Any):
    rows, cols = shape
    irows, icols = ishape

    @pl.program
    class Scatter:
        @pl.function(type=pl.FunctionType.Opaque)
        def main(
            self,
            base: pl.Tensor[[rows, cols], dtype],
            idx: pl.Tensor[[irows, icols], idt],
            val: pl.Tensor[[irows, icols], dtype],
            output: pl.Out[pl.Tensor[[rows, cols], dtype]],
        ) -> pl.Tensor[[rows, cols], dtype]:
            with pl.at(level=pl.Level.CORE_GROUP):
                out = pl.tensor.scatter(base, dim=dim, index=idx, src=val)
                output = pl.assemble(output, out, [0, 0])
            return output

    return Scatter


def _expected(base: torch.Tensor, dim: int, idx: torch.Tensor, val: torch.Tensor) -> torch.Tensor:
    """base with val written in row-major order of val (a later element wins a shared position)."""
    out = base.clone()
    for i in range(idx.shape[0]):
        for j in range(idx.shape[1]):
            at = (int(idx[i, j]), j) if dim % 2 == 0 else (i, int(idx[i, j]))
            out[at] = val[i, j]
    return out


_DTYPES = {pl.FP32: torch.float32, pl.INT32: torch.int32, pl.FP16: torch.float16, pl.BF16: torch.bfloat16}
_DTYPES.update({pl.INT16: torch.int16, pl.INT8: torch.int8})


@pytest.mark.parametrize(
    ("shape", "ishape", "dim", "dtype", "idt"),
    [
        pytest.param((8, 16), (8, 8), -1, pl.FP32, pl.INT32, id="fp32"),
        pytest.param((8, 16), (8, 8), -1, pl.INT32, pl.INT32, id="int32"),
        pytest.param((16, 32), (16, 16), -1, pl.FP16, pl.INT16, id="fp16"),
        pytest.param((16, 32), (16, 16), -1, pl.BF16, pl.INT16, id="bf16"),
        pytest.param((16, 32), (16, 16), -1, pl.INT16, pl.INT16, id="int16"),
        pytest.param((8, 32), (8, 16), -1, pl.INT8, pl.INT32, id="int8-int32-index"),
        pytest.param((1, 16), (1, 8), -1, pl.FP32, pl.INT32, id="one-row"),
        pytest.param((8, 16), (4, 16), 0, pl.FP32, pl.INT32, id="dim-0"),
        pytest.param((8, 16), (4, 1), -2, pl.FP16, pl.INT32, id="dim-0-one-column"),
    ],
)
def test_the_index_form_writes_src_at_the_indexed_positions_and_keeps_the_rest(
    shape, ishape, dim, dtype, idt
) -> None:
    if dtype == pl.BF16:
        pto_backend.needs_bfloat16()
    g = torch.Generator().manual_seed(sum(shape) + sum(ishape))
    t = _DTYPES[dtype]
    rows, cols = shape
    base = -(torch.arange(rows * cols).reshape(rows, cols) % 100 + 1).to(t)
    val = (torch.arange(ishape[0] * ishape[1]).reshape(ishape) % 50 + 1).to(t)
    extent = shape[dim]
    # distinct positions on each line along dim, so that every element of val lands
    if dim % 2 == 1:
        idx = torch.stack([torch.randperm(extent, generator=g)[: ishape[1]] for _ in range(ishape[0])])
    else:
        idx = torch.stack([torch.randperm(extent, generator=g)[: ishape[0]] for _ in range(ishape[1])], dim=1)
    idx = idx.to(_DTYPES[idt])
    out = torch.zeros(shape, dtype=t)
    run(_program(shape, ishape, dim, dtype, idt), base, idx, val, out)
    torch.testing.assert_close(out, _expected(base, dim, idx, val), rtol=0, atol=0)
    torch.testing.assert_close(out, base.scatter(dim, idx.long(), val), rtol=0, atol=0)  # torch agrees


def test_a_repeated_position_takes_the_last_value() -> None:
    base = -torch.arange(1.0, 129.0).reshape(8, 16)
    idx = torch.tensor([[3, 3, 0, 5, 5, 5, 15, 0]] * 8, dtype=torch.int32)
    val = torch.arange(1.0, 65.0).reshape(8, 8)
    out = torch.zeros(8, 16)
    run(_program((8, 16), (8, 8), -1, pl.FP32, pl.INT32), base, idx, val, out)
    torch.testing.assert_close(out, _expected(base, -1, idx, val), rtol=0, atol=0)


@pl.program
class TopLevelSpelling:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(
        self,
        base: pl.Tensor[[8, 16], pl.FP32],
        idx: pl.Tensor[[8, 8], pl.INT32],
        val: pl.Tensor[[8, 8], pl.FP32],
        output: pl.Out[pl.Tensor[[8, 16], pl.FP32]],
    ) -> pl.Tensor[[8, 16], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            out = pl.scatter(base, dim=-1, index=idx, src=val)
            output = pl.assemble(output, out, [0, 0])
        return output


def test_the_top_level_spelling() -> None:
    base = -torch.arange(1.0, 129.0).reshape(8, 16)
    idx = torch.stack([torch.randperm(16)[:8] for _ in range(8)]).int()
    val = torch.arange(1.0, 65.0).reshape(8, 8)
    out = torch.zeros(8, 16)
    run(TopLevelSpelling, base, idx, val, out)
    torch.testing.assert_close(out, base.scatter(1, idx.long(), val), rtol=0, atol=0)


@pl.program
class TileForm:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(
        self,
        x: pl.Tensor[[4, 16], pl.FP32],
        v: pl.Tensor[[2, 8], pl.FP32],
        at: pl.Tensor[[2, 8], pl.INT32],
        y: pl.Out[pl.Tensor[[4, 16], pl.FP32]],
    ) -> pl.Tensor[[4, 16], pl.FP32]:
        dst = pl.load(x, [0, 0], [4, 16])
        src = pl.load(v, [0, 0], [2, 8])
        flat = pl.load(at, [0, 0], [2, 8])
        return pl.store(pl.tile.scatter(dst, src, flat), [0, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def orchestrator(
        self,
        x: pl.Tensor[[4, 16], pl.FP32],
        v: pl.Tensor[[2, 8], pl.FP32],
        at: pl.Tensor[[2, 8], pl.INT32],
        y: pl.Out[pl.Tensor[[4, 16], pl.FP32]],
    ) -> pl.Tensor[[4, 16], pl.FP32]:
        return self.kernel(x, v, at, y)


def test_the_tile_form_writes_flat_positions_and_refuses_one_outside_the_tile() -> None:
    x = -torch.arange(1.0, 65.0).reshape(4, 16)
    v = torch.arange(1.0, 17.0).reshape(2, 8)
    at = torch.randperm(64)[:16].reshape(2, 8).int()
    y = torch.zeros(4, 16)
    run(TileForm, x, v, at, y)
    want = x.flatten().clone()
    want[at.flatten().long()] = v.flatten()
    torch.testing.assert_close(y, want.reshape(4, 16), rtol=0, atol=0)
    pto_backend.simpler_check_only("a scatter position outside the destination")
    at[1, 7] = 64
    with pytest.raises(
        Exception, match=r"TSCATTER: index 64 at \[1, 7\] lies outside the destination's 4 x 16"
    ):
        run(TileForm, x, v, at, torch.zeros(4, 16))


def test_a_16_bit_input_larger_than_int16_positions_is_refused() -> None:
    with pytest.raises(KernelError, match=r"pl.scatter: a FP16 input of 65536 elements is too large"):
        run(_program((64, 1024), (64, 8), -1, pl.FP16, pl.INT32), *(torch.zeros(1),) * 4)
