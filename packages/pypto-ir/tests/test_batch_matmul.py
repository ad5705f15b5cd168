"""``pl.batch_matmul``: one ``pl.matmul`` a batch, of planes extracted from the N-D Mat tiles (by
rows, or by columns from a ``pl.tile.transpose_view``), the result stored plane by plane; and
what it refuses. Runs are in pypto-runtime's test_batch_matmul_run.py."""

from __future__ import annotations

import pytest

import pypto.language as pl
from pypto.ir.errors import KernelError
from pypto.ir.nodes import Assign, Call, ExprStmt, structural_equal, walk_stmts

_SRC = """
@pl.function(type=pl.FunctionType.InCore)
def k(
    a: pl.Tensor[[2, 16, 32], pl.FP32],
    b: pl.Tensor[[2, 32, 16], pl.FP32],
    c: pl.Out[pl.Tensor[[2, 16, 16], pl.FP32]],
) -> pl.Tensor[[2, 16, 16], pl.FP32]:
    ta = pl.load(a, [0, 0, 0], [2, 16, 32], target_memory=pl.MemorySpace.Mat)
    tb = pl.load(b, [0, 0, 0], [2, 32, 16], target_memory=pl.MemorySpace.Mat)
    {body}
    return pl.store(tc, [0, 0, 0], c)
"""


def _calls(fn: object, op: str) -> list[Call]:
    out = []
    for s in walk_stmts(fn.body):  # type: ignore[attr-defined]
        value = s.value if isinstance(s, (Assign, ExprStmt)) else None
        if isinstance(value, Call) and value.op == op:
            out.append(value)
    return out


def test_one_product_a_batch_of_extracted_planes_each_stored() -> None:
    fn = pl.parse(_SRC.format(body="tc = pl.batch_matmul(ta, tb)"))
    extracts = _calls(fn, "tile.extract")
    assert [(c.args[1][0].value, c.attr("memory").value) for c in extracts] == [  # type: ignore[index, union-attr]
        (0, "Left"),
        (0, "Right"),
        (16, "Left"),
        (32, "Right"),
    ]
    assert len(_calls(fn, "tile.matmul")) == 2
    assert len(_calls(fn, "tile.store")) == 2
    assert structural_equal(pl.parse(fn.as_python()), fn)


def test_a_transposed_operand_gives_its_planes_by_columns() -> None:
    src = _SRC.replace("b: pl.Tensor[[2, 32, 16]", "b: pl.Tensor[[2, 16, 32]").replace(
        "tb = pl.load(b, [0, 0, 0], [2, 32, 16]", "tb = pl.load(b, [0, 0, 0], [2, 16, 32]"
    )
    fn = pl.parse(src.format(body="tc = pl.batch_matmul(ta, pl.tile.transpose_view(tb))"))
    rights = [c for c in _calls(fn, "tile.extract") if c.attr("memory").value == "Right"]  # type: ignore[union-attr]
    assert [(c.args[1][0].value, c.args[1][1].value) for c in rights] == [(0, 0), (0, 16)]  # type: ignore[index, union-attr]


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (
            "tc = pl.batch_matmul(ta, ta)",
            r"pl.batch_matmul: cannot multiply \[.., 16, 32\] by \[.., 16, 32\]",
        ),
        (
            "tc = pl.batch_matmul(pl.tile.create([16, 16], pl.FP32, target_memory=pl.MemorySpace.Acc), tb)",
            r"pl.batch_matmul: lhs must be a tile in Mat \(or Vec\), got Tile\[\[16, 16\], FP32, Acc\]",
        ),
        (
            "tc = pl.batch_matmul(ta, pl.load(b, [0, 0, 0], [2, 32, 16], target_memory=pl.MemorySpace.Mat))\n"
            "    tc = pl.batch_matmul(pl.load(a, [0, 0, 0], [2, 16, 32], target_memory=pl.MemorySpace.Mat), tc)",
            r"a pl.batch_matmul result is held as its \[M, N\] Acc planes",
        ),
        (
            "tc = pl.batch_matmul(ta, tb)\n    x = pl.add(tc, tc)",
            r"pl.add: a pl.batch_matmul result is held as its \[M, N\] Acc planes; store it with pl.store",
        ),
    ],
)
def test_what_it_refuses(body: str, match: str) -> None:
    with pytest.raises(KernelError, match=match):
        pl.parse(_SRC.format(body=body))


def test_the_result_takes_an_n_d_annotation_of_its_shape() -> None:
    pl.parse(_SRC.format(body="tc: pl.Tile[[2, 16, 16], pl.FP32] = pl.batch_matmul(ta, tb)"))
    with pytest.raises(KernelError, match=r"'tc' is annotated .* but the value is \[2, 16, 16\] FP32 in Acc"):
        pl.parse(_SRC.format(body="tc: pl.Tile[[2, 16, 32], pl.FP32] = pl.batch_matmul(ta, tb)"))


def test_batch_dims_that_do_not_broadcast_are_refused() -> None:
    src = """
@pl.function(type=pl.FunctionType.InCore)
def k(a: pl.Tensor[[2, 16, 32], pl.FP32], b: pl.Tensor[[3, 32, 16], pl.FP32], c: pl.Out[pl.Tensor[[2, 16, 16], pl.FP32]]) -> pl.Tensor[[2, 16, 16], pl.FP32]:
    ta = pl.load(a, [0, 0, 0], [2, 16, 32], target_memory=pl.MemorySpace.Mat)
    tb = pl.load(b, [0, 0, 0], [3, 32, 16], target_memory=pl.MemorySpace.Mat)
    return pl.store(pl.batch_matmul(ta, tb), [0, 0, 0], c)
"""
    with pytest.raises(KernelError, match=r"pl.batch_matmul: batch dims \[2\] and \[3\] do not broadcast"):
        pl.parse(src)
