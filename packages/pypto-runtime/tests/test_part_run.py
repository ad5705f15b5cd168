"""``pl.part_add`` / ``part_mul`` / ``part_max`` / ``part_min`` (PTO-ISA TPART*): over the first
operand's valid shape, the op where the second is valid too and the first operand's element
where it is not; on a2a3sim against torch, in upstream PyPTO's cases (its ``test_part_ops.py``:
both operands whole, the second's valid columns or rows narrowed, the tensor form), plus a
first operand narrowed (the result, and so the store, covers only its valid shape)."""

from __future__ import annotations

import pytest

import pypto.language as pl
from pypto.runtime import run

torch = pytest.importorskip("torch")

M, N = 16, 16
_GOLDEN = {"part_add": torch.add, "part_mul": torch.mul, "part_max": torch.maximum, "part_min": torch.minimum}


def _program(name: str):
    op = getattr(pl.tile, name)
    whole = getattr(pl.tensor, name)

    @pl.program
    class Partial:
        @pl.function(type=pl.FunctionType.InCore)
        def kernel(
            self,
            src0: pl.Tensor[[M, N], pl.FP32],
            src1: pl.Tensor[[M, N], pl.FP32],
            out: pl.Out[pl.Tensor[[5 * M, N], pl.FP32]],
        ) -> pl.Tensor[[5 * M, N], pl.FP32]:
            t0 = pl.load(src0, [0, 0], [M, N])
            out = pl.store(op(t0, pl.load(src1, [0, 0], [M, N])), [0, 0], out)
            out = pl.store(op(t0, pl.load(src1, [0, 0], [M, N], valid_shape=[M, 8])), [M, 0], out)
            out = pl.store(op(t0, pl.load(src1, [0, 0], [M, N], valid_shape=[8, N])), [2 * M, 0], out)
            narrow = pl.load(src0, [0, 0], [M, N], valid_shape=[5, 12])
            return pl.store(op(narrow, pl.load(src1, [0, 0], [M, N])), [3 * M, 0], out)

        @pl.function(type=pl.FunctionType.Opaque)
        def main(
            self,
            src0: pl.Tensor[[M, N], pl.FP32],
            src1: pl.Tensor[[M, N], pl.FP32],
            out: pl.Out[pl.Tensor[[5 * M, N], pl.FP32]],
        ) -> pl.Tensor[[5 * M, N], pl.FP32]:
            out = self.kernel(src0, src1, out)
            with pl.at(level=pl.Level.CORE_GROUP):
                out = pl.assemble(out, whole(src0, src1), [4 * M, 0])
            return out

    return Partial


@pytest.mark.parametrize("name", sorted(_GOLDEN))
def test_the_op_where_both_are_valid_and_the_first_operand_elsewhere(name: str) -> None:
    src0 = torch.arange(M * N, dtype=torch.float32).reshape(M, N).remainder(13) - 6
    src1 = torch.arange(M * N, dtype=torch.float32).reshape(M, N).remainder(7) - 3
    out = torch.full((5 * M, N), 99.0)
    run(_program(name), src0, src1, out)
    full = _GOLDEN[name](src0, src1)

    def narrowed(rows: int, cols: int) -> torch.Tensor:
        want = src0.clone()
        want[:rows, :cols] = full[:rows, :cols]
        return want

    torch.testing.assert_close(out[:M], full, rtol=0, atol=0)
    torch.testing.assert_close(out[M : 2 * M], narrowed(M, 8), rtol=0, atol=0)
    torch.testing.assert_close(out[2 * M : 3 * M], narrowed(8, N), rtol=0, atol=0)
    lhs_narrow = out[3 * M : 4 * M]
    torch.testing.assert_close(lhs_narrow[:5, :12], full[:5, :12], rtol=0, atol=0)
    assert (lhs_narrow[5:] == 99.0).all()  # outside the first operand's valid shape: not stored
    assert (lhs_narrow[:, 12:] == 99.0).all()
    torch.testing.assert_close(out[4 * M :], full, rtol=0, atol=0)


def test_int16_tiles() -> None:
    @pl.program
    class Int16Max:
        @pl.function(type=pl.FunctionType.InCore)
        def kernel(
            self,
            a: pl.Tensor[[4, 16], pl.INT16],
            b: pl.Tensor[[4, 16], pl.INT16],
            y: pl.Out[pl.Tensor[[4, 16], pl.INT16]],
        ) -> pl.Tensor[[4, 16], pl.INT16]:
            ta = pl.load(a, [0, 0], [4, 16])
            tb = pl.load(b, [0, 0], [4, 16], valid_shape=[3, 16])
            return pl.store(pl.part_max(ta, tb), [0, 0], y)

        @pl.function(type=pl.FunctionType.Orchestration)
        def orchestrator(
            self,
            a: pl.Tensor[[4, 16], pl.INT16],
            b: pl.Tensor[[4, 16], pl.INT16],
            y: pl.Out[pl.Tensor[[4, 16], pl.INT16]],
        ) -> pl.Tensor[[4, 16], pl.INT16]:
            return self.kernel(a, b, y)

    a = torch.randint(-100, 100, (4, 16), dtype=torch.int16)
    b = torch.randint(-100, 100, (4, 16), dtype=torch.int16)
    y = torch.zeros(4, 16, dtype=torch.int16)
    run(Int16Max, a, b, y)
    want = torch.maximum(a, b)
    want[3] = a[3]
    torch.testing.assert_close(y, want, rtol=0, atol=0)
