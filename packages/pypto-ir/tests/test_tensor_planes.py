"""Tensor-level values of rank 3 in kernels (ir/passes/tensor_planes.py): the type rules of a
batched ``pl.matmul`` and of ``pl.transpose``, the lowering (a flattened tile loaded and stored
plane by plane, one cube product a batch, element-wise ops on the flattened tile) and what is
refused. Runs against torch are in pypto-runtime's test_tensor_batch_matmul_run.py."""

from __future__ import annotations

from collections import Counter

import pytest
from pypto_ir_test_helpers import HostArray, call_ops, to_tiles

import pypto.language as pl
from pypto.ir.dtypes import DataType
from pypto.ir.errors import KernelError
from pypto.ir.nodes import Assign, Call, ExprStmt, walk_stmts
from pypto.ir.ops import infer
from pypto.ir.ops.spec import OpError
from pypto.ir.passes import tensor_planes
from pypto.ir.types import TensorType

F32 = DataType.FP32


def _lower(fn, *shapes):  # type: ignore[no-untyped-def]
    return to_tiles(fn, *map(HostArray, shapes))


def _calls(fn, op: str) -> list[Call]:  # type: ignore[no-untyped-def]
    return [
        s.value
        for s in walk_stmts(fn.body)
        if isinstance(s, (Assign, ExprStmt)) and isinstance(s.value, Call) and s.value.op == op
    ]


@pytest.mark.parametrize(
    ("lhs", "rhs", "want"),
    [
        ((16, 64), (1, 64, 32), (1, 16, 32)),  # a 2-D operand serves every batch
        ((2, 16, 64), (2, 64, 32), (2, 16, 32)),
        ((2, 1, 16, 64), (3, 64, 32), (2, 3, 16, 32)),  # batch dims broadcast as numpy does
        ((16, 64), (64, 32), (16, 32)),
    ],
)
def test_a_batched_matmul_broadcasts_its_batch_dims(lhs, rhs, want) -> None:  # type: ignore[no-untyped-def]
    got = infer("tensor.matmul", [TensorType(lhs, F32), TensorType(rhs, F32)], {})
    assert got == TensorType(want, F32)


def test_batch_dims_that_do_not_broadcast_are_refused() -> None:
    with pytest.raises(OpError, match=r"batch dims \[2\] and \[3\] do not broadcast"):
        infer("tensor.matmul", [TensorType((2, 16, 64), F32), TensorType((3, 64, 32), F32)], {})


def test_transpose_swaps_the_last_two_axes() -> None:
    got = infer("tensor.transpose", [TensorType((2, 12, 8), F32)], {})
    assert got == TensorType((2, 8, 12), F32)


@pl.jit
def batched(x: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.assemble(out, pl.matmul(x, w, b_trans=True), [0, 0, 0])
    return out


def test_a_batched_product_is_one_cube_product_a_batch_stored_plane_by_plane() -> None:
    k = _lower(batched, (3, 16, 32), (3, 24, 32), (3, 16, 24)).functions["batched_k0"]
    ops = Counter(call_ops(k))
    assert ops["tile.matmul"] == 3
    assert ops["tile.store"] == 3
    stores = _calls(k, "tile.store")
    assert [[int(o.value) for o in s.args[1]] for s in stores] == [[0, 0, 0], [1, 0, 0], [2, 0, 0]]  # type: ignore[union-attr]
    # the x planes go from device memory to Mat one at a time
    plane_loads = [c for c in _calls(k, "tile.load") if c.args[0].name == "x"]  # type: ignore[union-attr]
    assert [c.attr("shape") for c in plane_loads] == [(1, 16, 32)] * 3


def test_one_batch_is_one_product_and_one_store() -> None:
    k = _lower(batched, (16, 32), (1, 24, 32), (1, 16, 24)).functions["batched_k0"]
    assert Counter(call_ops(k))["tile.matmul"] == 1
    assert Counter(call_ops(k))["tile.store"] == 1


@pl.jit
def element_wise(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.assemble(out, pl.exp(pl.add(a, b)), [0, 0, 0])
    return out


def test_element_wise_ops_work_on_the_flattened_tile() -> None:
    k = _lower(element_wise, (4, 8, 16), (4, 8, 16), (4, 8, 16)).functions["element_wise_k0"]
    (add,) = _calls(k, "tile.add")
    assert add.type.shape == (32, 16)  # type: ignore[union-attr]
    assert Counter(call_ops(k))["tile.load"] == 8  # each operand's four planes


@pl.jit
def part(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.assemble(out, pl.part_add(a, b), [0, 0, 0])
    return out


def test_an_op_that_is_not_plane_wise_is_refused() -> None:
    with pytest.raises(KernelError, match=r"pl.part_add on a tensor-level value of rank 3"):
        _lower(part, (2, 8, 16), (2, 8, 16), (2, 8, 16))
    _lower(part, (1, 8, 16), (1, 8, 16), (1, 8, 16))  # one plane: the 2-D op


@pl.jit
def flip(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.assemble(out, pl.transpose(a, 0, 1), [0, 0, 0])
    return out


def test_transpose_of_leading_axes_is_refused() -> None:
    with pytest.raises(
        KernelError, match=r"swaps the last two axes \(1 and 2\) of a rank-3 operand, got axes \[0, 1\]"
    ):
        _lower(flip, (2, 8, 16), (8, 2, 16))


def test_too_many_planes_are_refused() -> None:
    n = tensor_planes.MAX_PLANES + 1
    with pytest.raises(KernelError, match=rf"has {n} \[M, N\] planes; at most {n - 1}"):
        _lower(element_wise, (n, 1, 16), (n, 1, 16), (n, 1, 16))


def test_a_product_too_large_for_one_tile_is_stored_a_batch_at_a_time() -> None:
    # upstream's not_fit case: each batch a blocked nest, its blocks stored from Acc
    k = _lower(batched, (4, 64, 128), (4, 512, 128), (4, 64, 512)).functions["batched_k0"]
    stores = _calls(k, "tile.store")
    assert [[int(o.value) for o in s.args[1]] for s in stores] == [[b, 0, 0] for b in range(4)]  # type: ignore[union-attr]
    assert {s.args[0].type.memory.value for s in stores} == {"Acc"}  # type: ignore[union-attr]
    assert "tile.transpose" not in call_ops(k)  # w's panels are read in L1 as their transpose
    assert all(c.type.shape != (256, 512) for c in _calls(k, "tile.create"))  # type: ignore[union-attr]


@pl.jit
def batched_exp(x: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.assemble(out, pl.exp(pl.matmul(x, w, b_trans=True)), [0, 0, 0])
    return out


def test_a_product_too_large_for_one_tile_read_by_a_vector_op_is_refused() -> None:
    with pytest.raises(
        KernelError, match=r"the batched product \[4, 128, 256\] is held as one \[512, 256\] tile"
    ):
        _lower(batched_exp, (4, 128, 16), (4, 256, 16), (4, 128, 256))


@pl.jit
def on_chip(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.add(a, a)
        t = pl.assemble(t, pl.neg(a), [0, 0, 0])
        out = pl.assemble(out, t, [0, 0, 0])
    return out


def test_a_rank_3_value_into_an_on_chip_value_is_refused() -> None:
    with pytest.raises(
        KernelError, match=r"a tensor-level value of shape \[2, 8, 8\] goes into a tensor in device memory"
    ):
        _lower(on_chip, (2, 8, 8), (2, 8, 8))


@pl.jit
def b_trans(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.assemble(out, pl.matmul(a, b, b_trans=True), [0, 0])
    return out


def test_a_transposed_operand_the_kernel_only_reads_is_read_in_l1_as_its_transpose() -> None:
    k = _lower(b_trans, (16, 64), (32, 64), (16, 32)).functions["b_trans_k0"]
    ops = call_ops(k)
    assert "tile.transpose" not in ops  # no Vec transpose, no move from Vec to L1
    (view,) = _calls(k, "tile.transpose_view")
    assert view.args[0].type.memory.value == "Mat"  # type: ignore[union-attr]
    assert view.type.shape == (64, 32)  # type: ignore[union-attr]


def test_each_batch_of_a_transposed_operand_is_read_in_l1() -> None:
    k = _lower(batched, (3, 16, 32), (3, 24, 32), (3, 16, 24)).functions["batched_k0"]
    assert Counter(call_ops(k))["tile.transpose_view"] == 3


@pl.jit
def written_then_used(a: pl.Tensor, b: pl.InOut[pl.Tensor], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        bt = pl.transpose(b)
        b = pl.assemble(b, pl.neg(pl.slice(b, [32, 64], [0, 0])), [0, 0])
        out = pl.assemble(out, pl.matmul(a, bt), [0, 0])
    return out


def test_a_transpose_of_a_tensor_the_kernel_writes_is_made_where_it_is_written() -> None:
    k = _lower(written_then_used, (16, 64), (32, 64), (16, 32)).functions["written_then_used_k0"]
    ops = call_ops(k)
    assert "tile.transpose_view" not in ops
    assert ops.index("tile.transpose") < ops.index("tile.store")  # read before b is written


@pl.jit
def vector_and_cube(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor], out2: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        bt = pl.transpose(b)
        for _ in pl.range(2):
            out2 = pl.assemble(out2, pl.exp(bt), [0, 0])  # a vector reader inside a loop
        out = pl.assemble(out, pl.matmul(a, bt), [0, 0])
        out2 = pl.assemble(out2, pl.add(bt, bt), [0, 0])  # and after it
    return out, out2


def test_a_vector_reader_gets_the_vec_transpose_where_it_reads() -> None:
    k = _lower(vector_and_cube, (16, 64), (32, 64), (16, 32), (64, 32)).functions["vector_and_cube_k0"]
    ops = Counter(call_ops(k))
    assert ops["tile.transpose_view"] == 1  # the matmul's
    assert ops["tile.transpose"] == 2  # in the loop, and again after it (the loop's does not reach out)


@pl.jit
def in_branches(a: pl.Tensor, cfg: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        at = pl.transpose(a)
        if pl.tensor.read(cfg, [0, 0]) > 0:  # a run-time condition
            out = pl.assemble(out, pl.exp(at), [0, 0])
        else:
            out = pl.assemble(out, pl.neg(at), [0, 0])
    return out


def test_each_branch_makes_its_own_vec_transpose() -> None:
    # the then branch's tile would not be defined in the else branch (the verifier checks)
    k = _lower(in_branches, (16, 32), (1, 1), (32, 16)).functions["in_branches_k0"]
    assert Counter(call_ops(k))["tile.transpose"] == 2


@pl.jit
def softmax(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        m = pl.row_max(x)
        e = pl.exp(pl.sub(x, m))  # [B, S, S] minus [B, S, 1]: the row broadcast, as for 2-D
        out = pl.assemble(out, pl.div(e, pl.row_sum(e)), [0, 0, 0])
    return out


def test_row_reductions_and_row_broadcasts_work_on_the_flattened_tile() -> None:
    k = _lower(softmax, (4, 8, 16), (4, 8, 16)).functions["softmax_k0"]
    ops = call_ops(k)
    (row_max,) = _calls(k, "tile.row_max")
    assert row_max.type.shape == (32, 1)  # type: ignore[union-attr]
    assert {"tile.row_expand_sub", "tile.row_expand_div", "tile.row_sum"} <= set(ops)


@pytest.mark.parametrize(
    ("op", "want"),
    [("row_sum", TensorType((2, 8, 1), F32)), ("row_argmax", TensorType((2, 8, 1), DataType.INT32))],
)
def test_row_reductions_of_a_rank_3_tensor_reduce_each_planes_rows(op: str, want: TensorType) -> None:
    assert infer(f"tensor.{op}", [TensorType((2, 8, 16), F32)], {}) == want


def test_column_reductions_of_a_rank_3_tensor_are_refused() -> None:
    with pytest.raises(OpError, match=r"pl.col_sum: needs a 2-D tensor, got shape \[2, 8, 16\]"):
        infer("tensor.col_sum", [TensorType((2, 8, 16), F32)], {})
