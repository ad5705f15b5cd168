"""``pl.sort32``, ``pl.mrgsort`` (single-list form) and ``pl.tile.gather_mask`` / ``pl.gather``'s
mask form: result types, the kernel's instructions (TSORT32, TMRGSORT with a constant or run-time
run length, TGATHER with its MaskPattern), the printed text parsing back, the tensor forms
lowered to the tile ones, and what the rules refuse. Runs are in pypto-runtime's
test_sort_run.py."""

from __future__ import annotations

import re

import pytest

import pypto.language as pl
from pypto.ir.codegen import generate_kernel
from pypto.ir.errors import KernelError
from pypto.ir.nodes import Assign, Call, Program, structural_equal, walk_stmts
from pypto.ir.pipeline import lower


@pl.program
class _SortRow:
    @pl.function(type=pl.FunctionType.InCore)
    def k(
        self,
        src: pl.Tensor[[1, 2048], pl.FP32],
        idx: pl.Tensor[[1, 2048], pl.UINT32],
        v: pl.Out[pl.Tensor[[1, 2048], pl.FP32]],
        i: pl.Out[pl.Tensor[[1, 2048], pl.UINT32]],
    ) -> tuple[pl.Tensor[[1, 2048], pl.FP32], pl.Tensor[[1, 2048], pl.UINT32]]:
        s = pl.load(src, [0, 0], [1, 2048])
        x = pl.load(idx, [0, 0], [1, 2048])
        pairs = pl.tile.sort32(s, x)
        first = pl.tile.mrgsort(pairs, block_len=64)
        for n, (acc,) in pl.range(2, init_values=(first,)):
            merged = pl.tile.mrgsort(acc, block_len=1 << (8 + n * 2))
            out = pl.yield_(merged)
        vals = pl.tile.gather_mask(out, mask_pattern=pl.tile.MaskPattern.P0101)
        ids = pl.tile.gather_mask(out, pl.tile.MaskPattern.P1010, output_dtype=pl.UINT32)
        return pl.store(vals, [0, 0], v), pl.store(ids, [0, 0], i)

    @pl.function(type=pl.FunctionType.Orchestration)
    def orchestrator(
        self,
        src: pl.Tensor[[1, 2048], pl.FP32],
        idx: pl.Tensor[[1, 2048], pl.UINT32],
        v: pl.Out[pl.Tensor[[1, 2048], pl.FP32]],
        i: pl.Out[pl.Tensor[[1, 2048], pl.UINT32]],
    ) -> tuple[pl.Tensor[[1, 2048], pl.FP32], pl.Tensor[[1, 2048], pl.UINT32]]:
        v, i = self.k(src, idx, v, i)
        return v, i


_K = _SortRow.functions["k"]


def _calls(fn: object, op: str) -> list[Assign]:
    body = getattr(fn, "ir", fn).body
    return [
        s
        for s in walk_stmts(body)
        if isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == op
    ]


def test_result_types() -> None:
    (pairs,) = _calls(_K, "tile.sort32")
    assert pairs.var.type.shape == (1, 4096)  # type: ignore[attr-defined]
    assert pairs.var.type.dtype is pl.FP32  # type: ignore[attr-defined]
    vals, ids = _calls(_K, "tile.gather_mask")
    assert vals.var.type.shape == (1, 2048)  # type: ignore[attr-defined]
    assert vals.var.type.dtype is pl.FP32  # type: ignore[attr-defined]
    assert ids.var.type.dtype is pl.UINT32  # type: ignore[attr-defined]
    first, merged = _calls(_K, "tile.mrgsort")
    assert first.value.attr("static_block_len") == 64  # type: ignore[union-attr]
    assert merged.value.attr("static_block_len") is None  # type: ignore[union-attr]  # a run-time length


def test_the_kernel_spells_the_pto_isa_instructions() -> None:
    text = generate_kernel(lower(_SortRow).program.functions["k"]).text
    assert "TSORT32(pairs, s, x);" in text
    assert "pairs(s.GetValidRow(), (s.GetValidCol() * 2));" in text  # twice the valid columns
    assert "TMRGSORT(first, pairs, static_cast<std::uint32_t>(INT64_C(64)));" in text
    assert "TMRGSORT(merged, acc, static_cast<std::uint32_t>(" in text
    assert re.search(
        r"TGATHER<decltype\(vals\), std::remove_reference_t<decltype\((\w+)\)>, MaskPattern::P0101>\(vals, \1\);",
        text,
    )
    assert re.search(
        r"TGATHER<decltype\(ids\), std::remove_reference_t<decltype\((\w+)\)>, MaskPattern::P1010>\(ids, \1\);",
        text,
    )
    assert re.search(r"vals\(\w+\.GetValidRow\(\), 2048\);", text)  # the source's rows, the pattern's columns


def test_print_parses_back_to_the_same_function() -> None:
    printed = _K.as_python()
    assert "pl.mrgsort(pairs, block_len=64)" in printed
    assert "pl.tile.gather_mask(acc, mask_pattern=2, output_dtype=pl.UINT32)" in printed
    assert structural_equal(pl.parse(printed), _K)


@pl.function(type=pl.FunctionType.Opaque)
def _tensor_sort(
    src: pl.Tensor[[1, 256], pl.FP32],
    idx: pl.Tensor[[1, 256], pl.UINT32],
    v: pl.Out[pl.Tensor[[1, 256], pl.FP32]],
) -> pl.Tensor[[1, 256], pl.FP32]:
    with pl.at(level=pl.Level.CORE_GROUP):
        pairs = pl.sort32(src, idx)
        merged = pl.mrgsort(pairs, block_len=128)
        vals = pl.gather(merged, mask_pattern=pl.tile.MaskPattern.P0101)
        v = pl.assemble(v, vals, [0, 0])
    return v


def test_tensor_forms_are_typed_and_printed_as_such() -> None:
    printed = _tensor_sort.ir.as_python()
    assert "pl.sort32(src, idx)" in printed
    assert "pl.gather(merged, mask_pattern=1)" in printed
    (pairs,) = _calls(_tensor_sort, "tensor.sort32")
    assert pairs.var.type.shape == (1, 512)  # type: ignore[attr-defined]
    assert structural_equal(pl.parse(printed), _tensor_sort.ir)


@pl.function(type=pl.FunctionType.InCore)
def _four_lists(
    a: pl.Tensor[[1, 128], pl.FP32],
    ix: pl.Tensor[[1, 128], pl.UINT32],
    y: pl.Out[pl.Tensor[[1, 256], pl.FP32]],
) -> pl.Tensor[[1, 256], pl.FP32]:
    v0, i0 = pl.load(a, [0, 0], [1, 32]), pl.load(ix, [0, 0], [1, 32])
    v1, i1 = pl.load(a, [0, 32], [1, 32]), pl.load(ix, [0, 32], [1, 32])
    v2, i2 = pl.load(a, [0, 64], [1, 32]), pl.load(ix, [0, 64], [1, 32])
    v3, i3 = pl.load(a, [0, 96], [1, 32]), pl.load(ix, [0, 96], [1, 32])
    p0, p1, p2, p3 = (
        pl.tile.sort32(v0, i0),
        pl.tile.sort32(v1, i1),
        pl.tile.sort32(v2, i2),
        pl.tile.sort32(v3, i3),
    )
    tmp = pl.tile.create([1, 256], dtype=pl.FP32)
    merged = pl.tile.mrgsort(p0, p1, p2, p3, tmp, exhausted=True)
    return pl.store(merged, [0, 0], y)


def test_the_multi_list_form_of_tiles() -> None:
    (m,) = _calls(_four_lists, "tile.mrgsort_lists")
    assert m.var.type.shape == (1, 256)  # type: ignore[attr-defined]
    assert m.value.attr("exhausted") is True  # type: ignore[union-attr]
    text = generate_kernel(_four_lists.ir).text
    assert "MrgSortExecutedNumList merged_executed{};" in text
    assert re.search(
        r"TMRGSORT<decltype\(merged\), (std::remove_reference_t<decltype\(\w+\)>, ){5}true>"
        r"\(merged, merged_executed, tmp, p0, p1, p2, p3\);",
        text,
    )
    printed = _four_lists.ir.as_python()
    assert "pl.mrgsort(p0, p1, p2, p3, tmp=tmp, exhausted=True)" in printed
    assert structural_equal(pl.parse(printed), _four_lists.ir)


@pl.function(type=pl.FunctionType.Opaque)
def _two_lists(
    a: pl.Tensor[[1, 128], pl.FP32], b: pl.Tensor[[1, 64], pl.FP32], y: pl.Out[pl.Tensor[[1, 192], pl.FP32]]
) -> pl.Tensor[[1, 192], pl.FP32]:
    with pl.at(level=pl.Level.CORE_GROUP):
        y = pl.assemble(y, pl.mrgsort(a, b, exhausted=True), [0, 0])
    return y


def test_the_multi_list_form_of_tensors_lowers_with_a_scratch_row() -> None:
    printed = _two_lists.ir.as_python()
    assert "pl.mrgsort(a, b, exhausted=True)" in printed
    assert structural_equal(pl.parse(printed), _two_lists.ir)
    prog = Program("two_lists", (_two_lists.ir,), "_two_lists")
    kernel = next(f for f in lower(prog).program.functions.values() if f.func_type.is_kernel)
    (merge,) = _calls(kernel, "tile.mrgsort_lists")
    tmp = merge.value.args[-1]  # type: ignore[union-attr]
    assert tmp.type.shape == (1, 192)  # type: ignore[union-attr]  # one row holding every pair
    assert merge.var.type.shape == (1, 192)  # type: ignore[attr-defined]
    assert merge.value.attr("exhausted") is True  # type: ignore[union-attr]


def _refused(line: str, match: str, *, src_t: str = "pl.Tensor[[1, 256], pl.FP32]") -> None:
    text = f"""
@pl.function(type=pl.FunctionType.InCore)
def k(a: {src_t}, ix: pl.Tensor[[1, 256], pl.UINT32], y: pl.Out[pl.Tensor[[1, 512], pl.FP32]]) -> pl.Tensor[[1, 512], pl.FP32]:
    t = pl.load(a, [0, 0], [1, 256])
    x = pl.load(ix, [0, 0], [1, 256])
    p = pl.tile.sort32(t, x)
    r = {line}
    return pl.store(p, [0, 0], y)
"""
    with pytest.raises(KernelError, match=match):
        pl.parse(text)


@pytest.mark.parametrize(
    ("line", "match"),
    [
        ("pl.tile.mrgsort(p, block_len=32)", r"block_len must be a positive multiple of 64 .* got 32"),
        ("pl.tile.mrgsort(p, block_len=256)", r"src's 512 columns must be 1 to 255 groups of four runs"),
        ("pl.tile.mrgsort(p)", r"give block_len=n to merge the sorted runs of one row .* or two to four"),
        ("pl.tile.mrgsort(p, p)", r"merging tiles takes tmp=, a scratch FP32 row"),
        ("pl.tile.mrgsort(p, x, tmp=p)", r"src1 must hold FP32 sorted pairs, got UINT32"),
        ("pl.tile.mrgsort(p, p, tmp=x)", r"tmp must be an FP32 row of whole pairs"),
        ("pl.tile.mrgsort(p, p, block_len=64)", r"block_len= .* does not take src1"),
        ("pl.tile.mrgsort(p, block_len=64, exhausted=True)", r"block_len= .* does not take exhausted"),
        ("pl.tile.mrgsort(x, block_len=64)", r"src must hold FP32 sorted pairs .* got UINT32"),
        ("pl.tile.gather_mask(p, 9)", r"mask_pattern must be a pl.tile.MaskPattern .* got 9"),
        ("pl.tile.gather_mask(p, 1, output_dtype=pl.FP16)", r"output_dtype reinterprets the bits.* got FP16"),
        ("pl.gather(p, 0, mask_pattern=1)", r"mask_pattern= \(the mask form\) does not take dim"),
        ("pl.tile.sort32(x, x)", r"src must be FP32, got UINT32"),
        ("pl.tile.sort32(t, t)", r"idx must be UINT32"),
    ],
)
def test_what_the_rules_refuse(line: str, match: str) -> None:
    _refused(line, match)


def test_fp16_values_are_refused_with_the_reason() -> None:
    _refused(
        "p",
        r"src must be FP32, got FP16 \(a sorted pair is an FP32 value",
        src_t="pl.Tensor[[1, 256], pl.FP16]",
    )
