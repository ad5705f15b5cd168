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


OPS = ("part_add", "part_mul", "part_max", "part_min")  # the order of their blocks in out
B = 5 * M  # each op's rows of out


@pl.program
class Partial:
    """Each op in upstream's forms (tile operands whole, the second's valid columns, then rows,
    narrowed; the first's narrowed; the tensor form), B rows of out an op: one program for the
    four, as compiling one is most of a run's time."""

    @pl.function(type=pl.FunctionType.InCore)
    def kernel(
        self,
        src0: pl.Tensor[[M, N], pl.FP32],
        src1: pl.Tensor[[M, N], pl.FP32],
        out: pl.Out[pl.Tensor[[4 * B, N], pl.FP32]],
    ) -> pl.Tensor[[4 * B, N], pl.FP32]:
        t0 = pl.load(src0, [0, 0], [M, N])
        t1 = pl.load(src1, [0, 0], [M, N])
        cols = pl.load(src1, [0, 0], [M, N], valid_shape=[M, 8])
        rows = pl.load(src1, [0, 0], [M, N], valid_shape=[8, N])
        narrow = pl.load(src0, [0, 0], [M, N], valid_shape=[5, 12])
        out = pl.store(pl.tile.part_add(t0, t1), [0, 0], out)
        out = pl.store(pl.tile.part_add(t0, cols), [M, 0], out)
        out = pl.store(pl.tile.part_add(t0, rows), [2 * M, 0], out)
        out = pl.store(pl.tile.part_add(narrow, t1), [3 * M, 0], out)
        out = pl.store(pl.tile.part_mul(t0, t1), [B, 0], out)
        out = pl.store(pl.tile.part_mul(t0, cols), [B + M, 0], out)
        out = pl.store(pl.tile.part_mul(t0, rows), [B + 2 * M, 0], out)
        out = pl.store(pl.tile.part_mul(narrow, t1), [B + 3 * M, 0], out)
        out = pl.store(pl.tile.part_max(t0, t1), [2 * B, 0], out)
        out = pl.store(pl.tile.part_max(t0, cols), [2 * B + M, 0], out)
        out = pl.store(pl.tile.part_max(t0, rows), [2 * B + 2 * M, 0], out)
        out = pl.store(pl.tile.part_max(narrow, t1), [2 * B + 3 * M, 0], out)
        out = pl.store(pl.tile.part_min(t0, t1), [3 * B, 0], out)
        out = pl.store(pl.tile.part_min(t0, cols), [3 * B + M, 0], out)
        out = pl.store(pl.tile.part_min(t0, rows), [3 * B + 2 * M, 0], out)
        return pl.store(pl.tile.part_min(narrow, t1), [3 * B + 3 * M, 0], out)

    @pl.function(type=pl.FunctionType.Opaque)
    def main(
        self,
        src0: pl.Tensor[[M, N], pl.FP32],
        src1: pl.Tensor[[M, N], pl.FP32],
        out: pl.Out[pl.Tensor[[4 * B, N], pl.FP32]],
    ) -> pl.Tensor[[4 * B, N], pl.FP32]:
        out = self.kernel(src0, src1, out)
        with pl.at(level=pl.Level.CORE_GROUP):
            out = pl.assemble(out, pl.tensor.part_add(src0, src1), [4 * M, 0])
            out = pl.assemble(out, pl.tensor.part_mul(src0, src1), [B + 4 * M, 0])
            out = pl.assemble(out, pl.tensor.part_max(src0, src1), [2 * B + 4 * M, 0])
            out = pl.assemble(out, pl.tensor.part_min(src0, src1), [3 * B + 4 * M, 0])
        return out


SRC0 = torch.arange(M * N, dtype=torch.float32).reshape(M, N).remainder(13) - 6
SRC1 = torch.arange(M * N, dtype=torch.float32).reshape(M, N).remainder(7) - 3


@pytest.fixture(scope="module")
def out(module_settings: None) -> torch.Tensor:
    result = torch.full((4 * B, N), 99.0)
    run(Partial, SRC0, SRC1, result)
    return result


@pytest.mark.parametrize("name", OPS)
def test_the_op_where_both_are_valid_and_the_first_operand_elsewhere(name: str, out: torch.Tensor) -> None:
    full = _GOLDEN[name](SRC0, SRC1)
    mine = out[OPS.index(name) * B :][:B]

    def narrowed(rows: int, cols: int) -> torch.Tensor:
        want = SRC0.clone()
        want[:rows, :cols] = full[:rows, :cols]
        return want

    torch.testing.assert_close(mine[:M], full, rtol=0, atol=0)
    torch.testing.assert_close(mine[M : 2 * M], narrowed(M, 8), rtol=0, atol=0)
    torch.testing.assert_close(mine[2 * M : 3 * M], narrowed(8, N), rtol=0, atol=0)
    lhs_narrow = mine[3 * M : 4 * M]
    torch.testing.assert_close(lhs_narrow[:5, :12], full[:5, :12], rtol=0, atol=0)
    assert (lhs_narrow[5:] == 99.0).all()  # outside the first operand's valid shape: not stored
    assert (lhs_narrow[:, 12:] == 99.0).all()
    torch.testing.assert_close(mine[4 * M :], full, rtol=0, atol=0)


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
