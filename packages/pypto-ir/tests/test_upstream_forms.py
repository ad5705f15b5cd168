"""Upstream PyPTO's forms the parser accepts, and the mistakes it still rejects: a kernel's
dynamic result dims taken from the call's arguments, a tensor-level value converted to its
annotated dtype, tensor-level operands promoted and broadcast, a sub-tile with a run-time extent
or past the tile's end, ``pl.set_validshape`` of a tensor, window writes of narrowed and
lower-rank values, ``C[i][j]`` of a tensor. (pypto-runtime's test_upstream_forms_run.py runs
them.)"""

from __future__ import annotations

from typing import Any

import pytest

import pypto.language as pl
from pypto.ir import KernelError
from pypto.ir.nodes import Assign, Call, ExprStmt, For, TensorWrite, expr_vars, walk_stmts
from pypto.ir.types import DataType, TensorType

M = pl.dynamic("M")
N = pl.dynamic("N")


def _calls(fn, op: str) -> list[Call]:
    """The calls of ``op`` in ``fn``, operands of other calls included, in source order."""
    found: list[Call] = []

    def visit(e: object) -> None:
        if isinstance(e, tuple):
            for x in e:
                visit(x)
        elif isinstance(e, Call):
            for a in e.args:
                visit(a)
            if e.op == op:
                found.append(e)

    for s in walk_stmts(fn.body):
        if isinstance(s, (Assign, ExprStmt)):
            visit(s.value)
    return found


def _calls_in_stmts(body: tuple, op: str) -> list[Call]:
    class _Body:
        pass

    holder = _Body()
    holder.body = body  # type: ignore[attr-defined]
    return _calls(holder, op)


@pl.function
def tile_annotation_of_another_dtype(x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
    _t: pl.Tile[[64], pl.FP16] = pl.tile.load(x, [0], [64])
    return x


@pl.function
def tile_operands_of_two_dtypes(
    x: pl.Tensor[[16, 16], pl.FP32], y: pl.Tensor[[16, 16], pl.FP16]
) -> pl.Tensor[[16, 16], pl.FP32]:
    a = pl.load(x, [0, 0], [16, 16])
    b = pl.load(y, [0, 0], [16, 16])
    return pl.store(pl.add(a, b), [0, 0], x)


@pl.function
def run_time_start_and_stop(
    x: pl.Tensor[[64, 128], pl.FP32], i: pl.Scalar[pl.INDEX], n: pl.Scalar[pl.INDEX]
) -> pl.Tensor[[64, 128], pl.FP32]:
    t = pl.load(x, [0, 0], [64, 128])
    return pl.store(t[:, i:n], [0, 0], x)


def _narrowed_into(cols: int) -> Any:
    """``out[0:16, 0:cols] = src`` narrowed to [16, 4] (its IR)."""

    @pl.function
    def f(
        out: pl.Tensor[[64, 128], pl.FP32], src: pl.Tensor[[16, 8], pl.FP32]
    ) -> pl.Tensor[[64, 128], pl.FP32]:
        narrowed = pl.set_validshape(src, 16, 4)
        out[0:16, 0:cols] = narrowed
        return out

    return f.ir


@pl.function
def slice_is_not_an_index(
    out: pl.Tensor[[64, 128], pl.FP32], src: pl.Tensor[[32], pl.FP32]
) -> pl.Tensor[[64, 128], pl.FP32]:
    out[0:1, 0:32] = src  # a slice 0:1 is not an index: the value must be 2-D
    return out


@pl.function
def leading_dim_sliced(x: pl.Tensor[[8, 16, 32], pl.FP32]) -> pl.Tensor[[8, 16, 32], pl.FP32]:
    t = pl.load(x, [0, 0, 0], [4, 16, 32])
    return pl.store(t[0:2], [0, 0, 0], x)


@pl.function
def too_many_planes(x: pl.Tensor[[128, 2, 8], pl.FP32]) -> pl.Tensor[[128, 2, 8], pl.FP32]:
    t = pl.load(x, [0, 0, 0], [128, 2, 8])
    return pl.store(t, [0, 0, 0], x)


def _double(out_rows: int) -> Any:
    """``out = a + a`` through a kernel over dynamic [M, N], called with a [128, 64] input and a
    [out_rows, 64] output (127 gives M two sizes)."""

    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(
            self, a: pl.Tensor[[M, N], pl.FP32], out: pl.Out[pl.Tensor[[M, N], pl.FP32]]
        ) -> pl.Tensor[[M, N], pl.FP32]:
            out[:, :] = pl.add(a, a)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(
            self, a: pl.Tensor[[128, 64], pl.FP32], out: pl.Out[pl.Tensor[[out_rows, 64], pl.FP32]]
        ) -> pl.Tensor[[out_rows, 64], pl.FP32]:
            c: pl.Tensor[[out_rows, 64], pl.FP32] = self.k(a, out)
            return c

    return P


def test_kernel_result_takes_the_argument_dims_and_conflicts_are_rejected() -> None:
    P = _double(128)
    (assign,) = [s for s in P.functions["main"].body if isinstance(s, Assign)]
    assert assign.value.type == TensorType((128, 64), DataType.FP32)

    with pytest.raises(KernelError, match="conflicting bindings of dynamic dim 'M': 128 and 127"):
        _double(127)


def test_annotated_dtype_promotion_and_broadcast_insert_casts_and_expand_ops() -> None:
    @pl.function
    def f(
        h: pl.Tensor[[16, 32], pl.FP16], col: pl.Tensor[[16, 1], pl.FP32], row: pl.Tensor[[1, 32], pl.FP32]
    ) -> pl.Tensor[[16, 32], pl.FP32]:
        a: pl.Tensor[[16, 32], pl.FP32] = pl.mul(h, 0.5)
        b = pl.add(a, h)
        c = pl.sub(b, col)
        d = pl.mul(row, c)  # commutative: the vector may come first
        return d

    casts = _calls(f.ir, "tensor.cast")
    assert [dict(c.attrs)["dtype"] for c in casts] == [DataType.FP32, DataType.FP32]
    assert _calls(f.ir, "tensor.row_expand_sub")
    assert _calls(f.ir, "tensor.col_expand_mul")


def test_tile_annotations_and_tile_operands_are_not_converted() -> None:
    with pytest.raises(KernelError, match="annotated Tile"):
        tile_annotation_of_another_dtype.ir  # noqa: B018
    with pytest.raises(KernelError, match="operand dtypes differ"):
        tile_operands_of_two_dtypes.ir  # noqa: B018


def test_sub_tile_run_time_extent_is_its_valid_shape_and_a_constant_one_is_clamped() -> None:
    @pl.function
    def f(x: pl.Tensor[[64, 128], pl.FP32], n: pl.Scalar[pl.INDEX]) -> pl.Tensor[[64, 128], pl.FP32]:
        t = pl.load(x, [0, 0], [64, 128])
        a = t[:, :n]
        b = t[:, 96:256]
        x = pl.store(a, [0, 0], x)
        return pl.store(b, [0, 0], x)

    slices = _calls(f.ir, "tile.slice")
    assert [dict(s.attrs)["shape"] for s in slices] == [(64, 128), (64, 32)]
    (narrow,) = _calls(f.ir, "tile.set_validshape")
    assert [v.name for v in expr_vars(narrow.args[2])] == ["n"]
    with pytest.raises(KernelError, match="needs a constant start"):
        run_time_start_and_stop.ir  # noqa: B018


def test_narrowed_tensor_fills_a_window_of_its_valid_shape_only() -> None:
    (write,) = [s for s in walk_stmts(_narrowed_into(4).body) if isinstance(s, TensorWrite)]
    assert write.value.type.shape == (16, 4)
    with pytest.raises(KernelError, match=r"window of 'out' is \[16, 6\] but the value is \[16, 8\]"):
        _narrowed_into(6)


def test_lower_rank_value_needs_scalar_indexed_leading_dims() -> None:
    @pl.function
    def f(
        c: pl.Tensor[[4, 4, 16, 16], pl.FP32], rhs: pl.Tensor[[16, 16], pl.FP32], i: pl.Scalar[pl.INDEX]
    ) -> pl.Tensor[[4, 4, 16, 16], pl.FP32]:
        c[i, 1] = rhs
        return c

    assert [s for s in walk_stmts(f.ir.body) if isinstance(s, TensorWrite)]
    with pytest.raises(KernelError, match="shape mismatch"):
        slice_is_not_an_index.ir  # noqa: B018


def test_chained_index_of_a_tensor_is_one_index() -> None:
    @pl.function
    def f(
        c: pl.Tensor[[4, 4, 16, 16], pl.FP32], i: pl.Scalar[pl.INDEX], j: pl.Scalar[pl.INDEX]
    ) -> pl.Tensor[[1, 1, 16, 16], pl.FP32]:
        return c[i][j]

    (view,) = _calls(f.ir, "tensor.view")
    assert [a.name for a in view.args[1][:2]] == ["i", "j"]
    assert view.type.shape == (1, 1, 16, 16)


def test_nd_tile_is_held_flattened_and_its_leading_dims_are_indexed_by_scalars() -> None:
    @pl.function
    def f(x: pl.Tensor[[8, 16, 32], pl.FP32], i: pl.Scalar[pl.INDEX]) -> pl.Tensor[[8, 16, 32], pl.FP32]:
        t: pl.Tile[[4, 16, 32], pl.FP32] = pl.load(x, [4, 0, 0], [4, 16, 32])
        plane: pl.Tile[[16, 32], pl.FP32] = t[i]
        t[2, 3, :] = plane[1]
        return pl.store(t, [0, 0, 0], x)

    def offsets(c: Call, at: int) -> list[int]:
        return [o.value for o in c.args[at]]

    loads = _calls(f.ir, "tile.load")
    assert [offsets(c, 1) for c in loads] == [[4 + k, 0, 0] for k in range(4)]
    inserts = _calls(f.ir, "tile.assemble")
    assert [offsets(c, 2) for c in inserts[:4]] == [[16 * k, 0] for k in range(4)]
    assert offsets(inserts[4], 2) == [2 * 16 + 3, 0]
    assert len([s for s in walk_stmts(f.ir.body) if "tile.store" in str(s)]) == 4

    with pytest.raises(KernelError, match="index each of its 1 leading dim"):
        leading_dim_sliced.ir  # noqa: B018
    with pytest.raises(KernelError, match=r"has 128 \[R, C\] planes; at most 64"):
        too_many_planes.ir  # noqa: B018


@pl.function
def vec_tile_stored_into_another_dtype(
    x: pl.Tensor[[16, 16], pl.FP32], y: pl.Tensor[[16, 16], pl.FP16]
) -> pl.Tensor[[16, 16], pl.FP16]:
    t = pl.load(x, [0, 0], [16, 16])
    return pl.store(t, [0, 0], y)


def test_tile_matmul_moves_vec_operands_and_an_acc_store_converts() -> None:
    @pl.function
    def f(
        a: pl.Tensor[[16, 32], pl.FP16], b: pl.Tensor[[32, 16], pl.FP16], out: pl.Tensor[[16, 16], pl.FP16]
    ) -> pl.Tensor[[16, 16], pl.FP16]:
        c = pl.matmul(pl.load(a, [0, 0], [16, 32]), pl.load(b, [0, 0], [32, 16]))
        return pl.store(c, [0, 0], out)

    moves = [dict(c.attrs)["memory"].value for c in _calls(f.ir, "tile.move")]
    assert moves == ["Mat", "Left", "Mat", "Right", "Vec"]
    (cast,) = _calls(f.ir, "tile.cast")
    assert dict(cast.attrs)["dtype"] is DataType.FP16
    with pytest.raises(KernelError, match="the tile is FP32 but the tensor is FP16"):
        vec_tile_stored_into_another_dtype.ir  # noqa: B018


def test_block_index_in_an_spmd_dispatch_body_is_its_block() -> None:
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(
            self, a: pl.Tensor[[32, 16], pl.FP32], out: pl.Out[pl.Tensor[[32, 16], pl.FP32]]
        ) -> pl.Tensor[[32, 16], pl.FP32]:
            out[:, :] = pl.add(a, a)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(
            self, a: pl.Tensor[[32, 16], pl.FP32], out: pl.Out[pl.Tensor[[32, 16], pl.FP32]]
        ) -> pl.Tensor[[32, 16], pl.FP32]:
            with pl.spmd(4):
                out = self.k(a, out)
                i = pl.tile.get_block_idx()
                pl.write(out, [i, 0], 1.0)
            return out

    (loop,) = [s for s in P.functions["main"].body if isinstance(s, For)]
    (index,) = [s for s in loop.body if isinstance(s, Assign) and s.var.name == "i"]
    assert index.value is loop.var
    assert _calls_in_stmts(loop.body, "tensor.write")


@pl.function(type=pl.FunctionType.InCore)
def none_in_a_kernel(x: pl.Tensor[[16, 16], pl.FP32]) -> pl.Tensor[[16, 16], pl.FP32]:
    t = pl.load(x, [0, 0], [16, 16])
    nothing = None
    return pl.store(pl.add(t, nothing), [0, 0], x)


def test_none_is_a_task_id_in_an_orchestration_only() -> None:
    with pytest.raises(KernelError, match="constant None is not supported in kernels"):
        none_in_a_kernel.ir  # noqa: B018


def test_python_print_of_a_function_parses_back_to_it() -> None:
    from pypto import ir
    from pypto.ir.nodes import structural_equal

    @pl.function
    def original(x: pl.Tensor[[16, 128], pl.FP32]) -> pl.Tensor[[16, 128], pl.FP32]:
        target: pl.Tile[[16, 128], pl.FP32] = pl.load(x, [0, 0], [16, 128])
        source: pl.Tile[[16, 64], pl.FP32] = pl.load(x, [0, 64], [16, 64])
        result: pl.Tile[[16, 128], pl.FP32] = pl.tile.assemble(target, source, [0, 64])
        return pl.store(result, [0, 0], x)

    printed = ir.python_print(original)
    assert printed == original.ir.as_python()
    assert structural_equal(pl.parse(printed), original.ir)
    with pytest.raises(
        TypeError, match=r"python_print: expected a Program, a Function or a @pl\.function, got int"
    ):
        ir.python_print(3)


def test_binding_an_out_parameter_in_a_kernel_writes_it() -> None:
    @pl.function(type=pl.FunctionType.InCore)
    def k(
        a: pl.Tensor[[16, 32], pl.FP32], o: pl.Out[pl.Tensor[[16, 32], pl.FP32]]
    ) -> pl.Tensor[[16, 32], pl.FP32]:
        o = pl.add(a, a)
        b = pl.mul(o, 2.0)  # o still names the parameter
        return pl.store(pl.load(b, [0, 0], [16, 32]), [0, 0], o)

    (write,) = [s for s in walk_stmts(k.ir.body) if isinstance(s, TensorWrite)]
    assert write.target.name == "o"
    (mul,) = _calls(k.ir, "tensor.mul")
    assert mul.args[0] is write.target

    @pl.function(type=pl.FunctionType.InCore)
    def in_param(a: pl.Tensor[[16, 32], pl.FP32]) -> pl.Tensor[[16, 32], pl.FP32]:
        a = pl.add(a, a)  # an In parameter is rebound, not written
        return a

    assert not [s for s in walk_stmts(in_param.ir.body) if isinstance(s, TensorWrite)]

    @pl.function(type=pl.FunctionType.InCore)
    def assembled(
        a: pl.Tensor[[16, 32], pl.FP32], o: pl.InOut[pl.Tensor[[16, 32], pl.FP32]]
    ) -> pl.Tensor[[16, 32], pl.FP32]:
        o = pl.assemble(o, a, [0, 0])  # an op that returns the tensor it wrote is no new value
        return o

    assert not [s for s in walk_stmts(assembled.ir.body) if isinstance(s, TensorWrite)]
