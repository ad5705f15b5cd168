"""``pl.gather`` / ``pl.scatter`` (torch's index forms on 2-D tensors) and ``pl.tile.gather`` /
``pl.tile.scatter`` (PTO-ISA TGATHER and TSCATTER, index forms): what the parser and type rules
accept and refuse, how the tensor forms are lowered (flat positions in the tile), the printed
text, and the kernel's instruction. Runs against torch are in pypto-runtime's
test_gather_run.py and test_scatter_run.py."""

from __future__ import annotations

from typing import Any

import pytest
from pypto_ir_test_helpers import HostArray

import pypto.language as pl
from pypto.ir.codegen import generate_kernel
from pypto.ir.errors import KernelError
from pypto.ir.nodes import Assign, Call, structural_equal, walk_stmts
from pypto.ir.pipeline import lower


def _tile_kernel(src_dtype: Any = pl.FP32, idx_dtype: Any = pl.INT32) -> Any:
    @pl.function(type=pl.FunctionType.InCore)
    def k(
        x: pl.Tensor[[4, 16], src_dtype],
        i: pl.Tensor[[2, 16], idx_dtype],
        y: pl.Out[pl.Tensor[[2, 16], src_dtype]],
    ) -> pl.Tensor[[2, 16], src_dtype]:
        src = pl.load(x, [0, 0], [4, 16])
        at = pl.load(i, [0, 0], [2, 16])
        tmp = pl.create_tile([1, 8], dtype=pl.INT32, target_memory=pl.MemorySpace.Vec)
        g = pl.tile.gather(src, at, tmp)
        return pl.store(g, [0, 0], y)

    return k


def test_the_tile_form_is_one_tgather_with_the_indices_valid_shape() -> None:
    text = generate_kernel(_tile_kernel().ir).text
    assert "TGATHER(g, src, at, tmp);" in text
    assert " g(at.GetValidRow(), at.GetValidCol());" in text or "g.SetValidShape(at.GetValidRow()" in text


def test_int16_indices_go_with_a_16_bit_source_only() -> None:
    assert "TGATHER(" in generate_kernel(_tile_kernel(pl.FP16, pl.INT16).ir).text
    with pytest.raises(
        KernelError,
        match=r"pl.tile.gather: indices must be INT32 \(or INT16 with a 16-bit src\), got INT16 with a FP32 src",
    ):
        _ = _tile_kernel(pl.FP32, pl.INT16).ir
    with pytest.raises(KernelError, match=r"pl.tile.gather: src must be an operand of .*FP16.*, got INT8"):
        _ = _tile_kernel(pl.INT8, pl.INT32).ir


def test_the_tile_form_takes_keywords_and_needs_tmp() -> None:
    @pl.function(type=pl.FunctionType.InCore)
    def k(
        x: pl.Tensor[[4, 16], pl.FP32],
        i: pl.Tensor[[2, 16], pl.INT32],
        y: pl.Out[pl.Tensor[[2, 16], pl.FP32]],
    ):
        src = pl.load(x, [0, 0], [4, 16])
        at = pl.load(i, [0, 0], [2, 16])
        tmp = pl.create_tile([1, 8], dtype=pl.INT32, target_memory=pl.MemorySpace.Vec)
        g = pl.tile.gather(src, indices=at, tmp=tmp)
        return pl.store(g, [0, 0], y)

    assert "TGATHER(" in generate_kernel(k.ir).text

    @pl.function(type=pl.FunctionType.InCore)
    def no_tmp(
        x: pl.Tensor[[4, 16], pl.FP32],
        i: pl.Tensor[[2, 16], pl.INT32],
        y: pl.Out[pl.Tensor[[2, 16], pl.FP32]],
    ):
        g = pl.tile.gather(pl.load(x, [0, 0], [4, 16]), pl.load(i, [0, 0], [2, 16]))
        return pl.store(g, [0, 0], y)

    with pytest.raises(
        KernelError, match=r"pl.tile.gather: takes \(src, indices, tmp\); tmp, a scratch Vec tile, is missing"
    ):
        _ = no_tmp.ir


def _gathered(dim: int) -> Any:
    @pl.jit
    def gathered(inp: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="k"):
            out = pl.assemble(out, pl.gather(inp, dim=dim, index=idx), [0, 0])
        return out

    return gathered


def _lowered(shape: tuple[int, ...], ishape: tuple[int, ...], dim: int, idx: str = "int32") -> Any:
    arrays = (HostArray(shape, "float32"), HostArray(ishape, idx), HostArray(ishape, "float32"))
    return lower(_gathered(dim).specialize(*arrays).program).program


_INDEX_OPS = (
    "tile.cast",
    "tile.ci",
    "tile.reshape",
    "tile.muls",
    "tile.row_expand_add",
    "tile.col_expand_add",
    "tile.gather",
)


@pytest.mark.parametrize(
    ("shape", "ishape", "dim", "want"),
    [
        ((4, 16), (4, 8), -1, ["tile.ci", "tile.reshape", "tile.muls", "tile.row_expand_add", "tile.gather"]),
        ((1, 16), (1, 8), 1, ["tile.gather"]),
        ((8, 16), (4, 16), 0, ["tile.muls", "tile.ci", "tile.col_expand_add", "tile.gather"]),
        ((8, 16), (4, 1), -2, ["tile.muls", "tile.gather"]),
    ],
)
def test_the_tensor_form_becomes_flat_positions_and_one_tile_gather(shape, ishape, dim, want) -> None:
    (k,) = [f for f in _lowered(shape, ishape, dim).funcs if f.name == "k"]
    ops = [s.value.op for s in walk_stmts(k.body) if isinstance(s, Assign) and isinstance(s.value, Call)]
    assert [o for o in ops if o in _INDEX_OPS] == want


def test_int16_indices_are_widened_before_the_positions_are_formed() -> None:
    @pl.jit
    def g16(inp: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="k"):
            out = pl.assemble(out, pl.tensor.gather(inp, dim=1, index=idx), [0, 0])
        return out

    prog = lower(
        g16.specialize(
            HostArray((4, 16), "float16"), HostArray((4, 16), "int16"), HostArray((4, 16), "float16")
        ).program
    ).program
    (k,) = [f for f in prog.funcs if f.name == "k"]
    ops = [s.value.op for s in walk_stmts(k.body) if isinstance(s, Assign) and isinstance(s.value, Call)]
    assert next(o for o in ops if o in _INDEX_OPS) == "tile.cast"


@pytest.mark.parametrize(
    ("shape", "ishape", "dim", "idx", "why"),
    [
        (
            (4, 16),
            (4, 8),
            2,
            "int32",
            r"pl.gather: dim must be a constant axis of a 2-D tensor \(-2, -1, 0 or 1\), got 2",
        ),
        ((4, 16), (8, 8), 1, "int32", r"pl.gather: index has 8 entries on axis 0, input only 4"),
        (
            (4, 16),
            (4, 8),
            1,
            "int16",
            r"pl.gather: index must be INT32 \(or INT16 with a 16-bit input\), got INT16 with a FP32 input",
        ),
        ((4, 16), (4, 8), 1, "float32", r"pl.gather: index must be INT32 .*got FP32"),
    ],
)
def test_bad_tensor_forms_are_refused_naming_the_argument(shape, ishape, dim, idx, why) -> None:
    with pytest.raises(KernelError, match=why):
        _lowered(shape, ishape, dim, idx)


def test_other_ranks_and_the_scatter_mask_form_are_refused_with_what_to_do() -> None:
    with pytest.raises(
        KernelError, match=r"pl.gather: the index form takes 2-D tensors here, got input \[2, 3, 16\]"
    ):
        _lowered((2, 3, 16), (2, 3, 8), -1)

    @pl.jit
    def masked(inp: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out = pl.assemble(out, pl.scatter(inp, mask_pattern=1), [0, 0])
        return out

    with pytest.raises(
        KernelError, match=r"pl.scatter: the mask form \(mask_pattern=...\) is not built here"
    ):
        _ = masked.specialize(HostArray((4, 16), "float32"), HostArray((4, 16), "float32")).program


def test_print_parses_back_to_the_same_function() -> None:
    k = _tile_kernel()
    printed = k.ir.as_python()
    assert "pl.gather(src, at, tmp)" in printed
    assert structural_equal(pl.parse(printed), k.ir)

    @pl.function(type=pl.FunctionType.Opaque)
    def main(
        inp: pl.Tensor[[4, 16], pl.FP32],
        idx: pl.Tensor[[4, 8], pl.INT32],
        out: pl.Out[pl.Tensor[[4, 8], pl.FP32]],
    ) -> pl.Tensor[[4, 8], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            out = pl.assemble(out, pl.tensor.gather(inp, dim=-1, index=idx), [0, 0])
        return out

    printed = main.ir.as_python()
    assert "pl.gather(inp, dim=-1, index=idx)" in printed
    assert structural_equal(pl.parse(printed), main.ir)


# ---- scatter ---------------------------------------------------------------------------------


def _scatter_kernel(dtype: Any = pl.FP32, idx_dtype: Any = pl.INT32, ishape: tuple[int, int] = (2, 8)) -> Any:
    rows, cols = ishape

    @pl.function(type=pl.FunctionType.InCore)
    def k(
        x: pl.Tensor[[4, 16], dtype],
        v: pl.Tensor[[2, 8], dtype],
        i: pl.Tensor[[rows, cols], idx_dtype],
        y: pl.Out[pl.Tensor[[4, 16], dtype]],
    ) -> pl.Tensor[[4, 16], dtype]:
        dst = pl.load(x, [0, 0], [4, 16])
        src = pl.load(v, [0, 0], [2, 8])
        at = pl.load(i, [0, 0], [rows, cols])
        s = pl.tile.scatter(dst, src, at)
        return pl.store(s, [0, 0], y)

    return k


def test_the_tile_form_is_one_tscatter_into_the_destination() -> None:
    text = generate_kernel(_scatter_kernel().ir).text
    assert "TSCATTER(s, src, at);" in text
    assert "TSCATTER(" in generate_kernel(_scatter_kernel(pl.FP16, pl.INT16).ir).text


@pytest.mark.parametrize(
    ("dtype", "idx_dtype", "ishape", "why"),
    [
        (pl.FP32, pl.INT16, (2, 8), r"indexes must be INT32 for a FP32 dst .* got INT16"),
        (pl.FP16, pl.INT32, (2, 8), r"indexes must be INT16 for a FP16 dst .* got INT32"),
        (
            pl.FP32,
            pl.INT32,
            (2, 16),
            r"indexes must have src's shape \[2, 8\] \(one position per element\), got \[2, 16\]",
        ),
    ],
)
def test_bad_tile_scatters_are_refused_naming_the_operand(dtype, idx_dtype, ishape, why) -> None:
    with pytest.raises(KernelError, match=r"pl.tile.scatter: " + why):
        _ = _scatter_kernel(dtype, idx_dtype, ishape).ir


def _scattered(dim: int) -> Any:
    @pl.jit
    def scattered(inp: pl.Tensor, idx: pl.Tensor, val: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="k"):
            out = pl.assemble(out, pl.scatter(inp, dim=dim, index=idx, src=val), [0, 0])
        return out

    return scattered


def _scatter_ops(
    shape: tuple[int, int], ishape: tuple[int, int], dim: int, dtype: str = "float32"
) -> list[str]:
    arrays = (
        HostArray(shape, dtype),
        HostArray(ishape, "int32"),
        HostArray(ishape, dtype),
        HostArray(shape, dtype),
    )
    prog = lower(_scattered(dim).specialize(*arrays).program).program
    (k,) = [f for f in prog.funcs if f.name == "k"]
    ops = [s.value.op for s in walk_stmts(k.body) if isinstance(s, Assign) and isinstance(s.value, Call)]
    return [o for o in ops if o in (*_INDEX_OPS, "tile.scatter")]


def test_the_tensor_form_becomes_flat_positions_and_one_tile_scatter() -> None:
    assert _scatter_ops((8, 16), (8, 8), -1) == [
        "tile.ci",
        "tile.reshape",
        "tile.muls",
        "tile.row_expand_add",
        "tile.scatter",
    ]
    # a 2-byte destination takes INT16 positions
    assert _scatter_ops((8, 16), (4, 16), 0, "float16") == [
        "tile.muls",
        "tile.ci",
        "tile.col_expand_add",
        "tile.cast",
        "tile.scatter",
    ]


@pytest.mark.parametrize(
    ("shape", "ishape", "dim", "why"),
    [
        ((8, 16), (8, 8), 3, r"pl.scatter: dim must be a constant axis of a 2-D tensor"),
        ((8, 16), (16, 8), 1, r"pl.scatter: index has 16 entries on axis 0, input only 8"),
        ((2, 3, 16), (2, 3, 8), -1, r"pl.scatter: the index form takes 2-D tensors here"),
    ],
)
def test_bad_tensor_scatters_are_refused_naming_the_argument(shape, ishape, dim, why) -> None:
    with pytest.raises(KernelError, match=why):
        _scatter_ops(shape, ishape, dim)


def test_scatter_prints_and_parses_back() -> None:
    k = _scatter_kernel()
    printed = k.ir.as_python()
    assert "pl.scatter(dst, src, at)" in printed
    assert structural_equal(pl.parse(printed), k.ir)

    @pl.function(type=pl.FunctionType.Opaque)
    def main(
        inp: pl.Tensor[[8, 16], pl.FP32],
        idx: pl.Tensor[[8, 8], pl.INT32],
        val: pl.Tensor[[8, 8], pl.FP32],
        out: pl.Out[pl.Tensor[[8, 16], pl.FP32]],
    ) -> pl.Tensor[[8, 16], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            out = pl.assemble(out, pl.tensor.scatter(inp, dim=-1, index=idx, src=val), [0, 0])
        return out

    printed = main.ir.as_python()
    assert "pl.scatter(inp, dim=-1, index=idx, src=val)" in printed
    assert structural_equal(pl.parse(printed), main.ir)
