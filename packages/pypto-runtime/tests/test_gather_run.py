"""``pl.gather`` / ``pl.tensor.gather`` (torch.gather's index form on 2-D tensors) and
``pl.tile.gather`` (PTO-ISA TGATHER's index form: flat positions in the source tile), checked on
a2a3sim against ``torch.gather``, in upstream PyPTO's program forms (its ``test_gather.py``: the
2-D index-form cases)."""

from __future__ import annotations

from typing import Any

import pto_backend
import pytest

import pypto.language as pl
from pypto.runtime import run

torch = pytest.importorskip("torch")


def _program(
    shape: tuple[int, int], ishape: tuple[int, int], dim: int, dtype: Any = pl.FP32, idt: Any = pl.INT32
):
    rows, cols = shape
    irows, icols = ishape

    @pl.program
    class Gather:
        @pl.function(type=pl.FunctionType.Opaque)
        def main(
            self,
            inp: pl.Tensor[[rows, cols], dtype],
            idx: pl.Tensor[[irows, icols], idt],
            output: pl.Out[pl.Tensor[[irows, icols], dtype]],
        ) -> pl.Tensor[[irows, icols], dtype]:
            with pl.at(level=pl.Level.CORE_GROUP):
                out = pl.tensor.gather(inp, dim=dim, index=idx)
                output = pl.assemble(output, out, [0, 0])
            return output

    return Gather


@pl.program
class TopLevelSpelling:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(
        self,
        inp: pl.Tensor[[4, 16], pl.FP32],
        idx: pl.Tensor[[4, 8], pl.INT32],
        output: pl.Out[pl.Tensor[[4, 8], pl.FP32]],
    ) -> pl.Tensor[[4, 8], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            out = pl.gather(inp, dim=-1, index=idx)
            output = pl.assemble(output, out, [0, 0])
        return output


def _swap(rows: int, cols: int) -> torch.Tensor:
    """j ^ 1 on every row: adjacent pairs swapped (a rope rotation's pattern)."""
    return (torch.arange(cols, dtype=torch.int32) ^ 1).expand(rows, cols).contiguous()


def _expand(rows: int, cols: int) -> torch.Tensor:
    """j >> 1: every column twice (a rope interleave's pattern)."""
    return (torch.arange(cols, dtype=torch.int32) >> 1).expand(rows, cols).contiguous()


@pytest.mark.parametrize(
    ("shape", "ishape", "dim", "make"),
    [
        pytest.param((4, 16), (4, 8), -1, None, id="last-dim"),
        pytest.param((4, 16), (2, 8), -1, None, id="fewer-index-rows"),
        pytest.param((4, 32), (4, 64), -1, lambda: _expand(4, 64), id="expand"),
        pytest.param((4, 64), (4, 64), -1, lambda: _swap(4, 64), id="swap"),
        pytest.param((16, 64), (16, 64), 1, lambda: _swap(16, 64), id="swap-16-rows"),
        pytest.param((1, 16), (1, 8), -1, None, id="one-row"),
        pytest.param((8, 16), (4, 16), 0, None, id="dim-0"),
        pytest.param((8, 16), (4, 1), -2, None, id="dim-0-one-column"),
    ],
)
def test_the_index_form_matches_torch_gather(shape, ishape, dim, make) -> None:
    g = torch.Generator().manual_seed(sum(shape) + sum(ishape))
    inp = torch.randn(shape, generator=g)
    extent = shape[dim]
    idx = make() if make else torch.randint(0, extent, ishape, generator=g, dtype=torch.int32)
    out = torch.full(ishape, -7.0)
    run(_program(shape, ishape, dim), inp, idx, out)
    torch.testing.assert_close(out, torch.gather(inp, dim, idx.long()), rtol=0, atol=0)


def test_the_top_level_spelling() -> None:
    inp = torch.randn(4, 16)
    idx = torch.randint(0, 16, (4, 8), dtype=torch.int32)
    out = torch.zeros(4, 8)
    run(TopLevelSpelling, inp, idx, out)
    torch.testing.assert_close(out, torch.gather(inp, 1, idx.long()), rtol=0, atol=0)


def test_int16_indices_with_a_16_bit_input() -> None:
    if pto_backend.official():
        pytest.skip(
            "official CPU backend: its TGATHER takes 32-bit indices only, as a2a3 hardware "
            "(a5 takes 16-bit ones; docs/pto-isa-backends.md)"
        )
    inp = torch.randn(4, 16).half()
    idx = torch.randint(0, 16, (4, 16), dtype=torch.int16)
    out = torch.zeros(4, 16).half()
    run(_program((4, 16), (4, 16), -1, pl.FP16, pl.INT16), inp, idx, out)
    torch.testing.assert_close(out, torch.gather(inp, 1, idx.long()), rtol=0, atol=0)


@pl.program
class StridedSource:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(
        self,
        inp: pl.Tensor[[16, 128], pl.FP32],
        idx: pl.Tensor[[16, 64], pl.INT32],
        output: pl.Out[pl.Tensor[[16, 64], pl.FP32]],
    ) -> pl.Tensor[[16, 64], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            local = pl.create_tensor([16, 128], dtype=pl.FP32)
            local = pl.assemble(local, inp, [0, 0])
            rope = local[:, 64:128]
            out = pl.tensor.gather(rope, dim=-1, index=idx)
            output = pl.assemble(output, out, [0, 0])
        return output


def test_a_column_slice_of_a_wider_local_tensor() -> None:
    inp = torch.randn(16, 128)
    idx = _swap(16, 64)
    out = torch.zeros(16, 64)
    run(StridedSource, inp, idx, out)
    torch.testing.assert_close(out, torch.gather(inp[:, 64:], 1, idx.long()), rtol=0, atol=0)


@pl.program
class LocalSourceUnchanged:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(
        self,
        src: pl.Tensor[[16, 64], pl.FP32],
        idx: pl.Tensor[[16, 8], pl.INT32],
        src_echo: pl.Out[pl.Tensor[[16, 64], pl.FP32]],
        gathered: pl.Out[pl.Tensor[[16, 8], pl.FP32]],
    ) -> tuple[pl.Tensor[[16, 64], pl.FP32], pl.Tensor[[16, 8], pl.FP32]]:
        with pl.at(level=pl.Level.CORE_GROUP):
            local = pl.create_tensor([16, 64], dtype=pl.FP32)
            local = pl.assemble(local, src, [0, 0])
            g = pl.tensor.gather(local, dim=-1, index=idx)
            gathered = pl.assemble(gathered, g, [0, 0])
            src_echo = pl.assemble(src_echo, local, [0, 0])
        return src_echo, gathered


def test_a_local_source_is_read_not_changed() -> None:
    src = torch.randn(16, 64)
    idx = torch.randint(0, 64, (16, 8), dtype=torch.int32)
    echo, got = torch.zeros(16, 64), torch.zeros(16, 8)
    run(LocalSourceUnchanged, src, idx, echo, got)
    torch.testing.assert_close(got, torch.gather(src, 1, idx.long()), rtol=0, atol=0)
    torch.testing.assert_close(echo, src, rtol=0, atol=0)


@pl.program
class TileForm:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(
        self,
        x: pl.Tensor[[4, 16], pl.FP32],
        flat: pl.Tensor[[2, 16], pl.INT32],
        y: pl.Out[pl.Tensor[[2, 16], pl.FP32]],
    ) -> pl.Tensor[[2, 16], pl.FP32]:
        src = pl.load(x, [0, 0], [4, 16])
        at = pl.load(flat, [0, 0], [2, 16])
        tmp = pl.create_tile([1, 8], dtype=pl.INT32, target_memory=pl.MemorySpace.Vec)
        return pl.store(pl.tile.gather(src, at, tmp), [0, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def orchestrator(
        self,
        x: pl.Tensor[[4, 16], pl.FP32],
        flat: pl.Tensor[[2, 16], pl.INT32],
        y: pl.Out[pl.Tensor[[2, 16], pl.FP32]],
    ) -> pl.Tensor[[2, 16], pl.FP32]:
        return self.kernel(x, flat, y)


def test_the_tile_form_reads_flat_positions_and_gives_0_outside_the_tile() -> None:
    x = torch.randn(4, 16)
    flat = torch.randint(0, 64, (2, 16), dtype=torch.int32)
    flat[0, :4] = torch.tensor([-1, 64, 1000, 63], dtype=torch.int32)
    y = torch.full((2, 16), -7.0)
    run(TileForm, x, flat, y)
    inside = (flat >= 0) & (flat < 64)
    want = torch.where(inside, x.flatten()[flat.clamp(0, 63).long()], torch.zeros(()))
    torch.testing.assert_close(y, want, rtol=0, atol=0)
