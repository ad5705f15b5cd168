"""The parser's model-program forms: run-time extents of created tensors and windows (typed as
named dynamic dims, refused in kernels), unpacking a kernel's results, pl.tensor.* and the
scalar pl.min/pl.max, pl.tile.transpose_view's type rule."""

from __future__ import annotations

import pytest
from pypto_ir_test_helpers import program

import pypto.language as pl
from pypto.ir import KernelError
from pypto.ir.nodes import Assign, ExprStmt
from pypto.ir.types import DynDim, TensorType


@pl.function(type=pl.FunctionType.InCore)
def _two_out(
    x: pl.Tensor[[16, 16], pl.FP32],
    a: pl.Out[pl.Tensor[[16, 16], pl.FP32]],
    b: pl.Out[pl.Tensor[[16, 16], pl.FP32]],
) -> tuple[pl.Tensor[[16, 16], pl.FP32], pl.Tensor[[16, 16], pl.FP32]]:
    t = pl.load(x, [0, 0], [16, 16])
    a = pl.store(t, [0, 0], a)
    b = pl.store(pl.add(t, t), [0, 0], b)
    return a, b


def test_runtime_extents_are_named_dynamic_dims_and_unpacking_names_the_written_tensors() -> None:
    P = program(
        "[16, 16]",
        main=[
            "n = pl.tensor.read(cfg, [0])",
            "xi = pl.slice(x, [16, n], [pl.max(n - 16, 0), 0])",
            "tmp = pl.create_tensor([16, n], dtype=pl.FP32)",
            "_first, second = _two_out(xi, tmp, out)",
            "return second",
        ],
        ins=("x: pl.Tensor[[64, 16], pl.FP32]", "cfg: pl.Tensor[[1], pl.INT64]"),
        out="out",
        _two_out=_two_out,
    )()

    main = P.functions["main"]
    assigns = {s.var.name: s for s in main.body if isinstance(s, Assign)}
    tmp_t = assigns["tmp"].var.type
    assert isinstance(tmp_t, TensorType)
    assert tmp_t.shape == (16, DynDim("n"))
    assert assigns["xi"].value.op == "tensor.view"
    assert len(assigns["xi"].value.args) == 3  # source, offsets, run-time extents
    calls = [s for s in main.body if isinstance(s, ExprStmt)]
    assert [c.value.callee for c in calls] == ["_two_out"]
    ret = main.body[-1]
    assert [v.name for v in ret.values] == ["out"]  # `second` is the Out tensor the kernel wrote


def test_runtime_extents_are_refused_in_a_kernel() -> None:
    main = [
        "n = pl.tensor.read(cfg, [0])",
        "with pl.at(level=pl.Level.CORE_GROUP):",
        "    pl.create_tensor([16, n], dtype=pl.FP32)",
        "return x",
    ]
    bad = program("[16, 16]", main=main, ins=("x", "cfg: pl.Tensor[[1], pl.INT64]"), out=None)
    with pytest.raises(KernelError, match="entries must be integer constants in a kernel"):
        bad()


def test_unpacking_something_other_than_a_kernel_call_is_refused() -> None:
    bad = program("[16, 16]", main=["_a, _b = pl.tensor.dim(x, 0)", "return x"], out=None)
    with pytest.raises(KernelError, match="only the results of a kernel call can be unpacked"):
        bad()


def test_transpose_view_swaps_the_shape_and_refuses_other_spaces() -> None:
    from pypto.ir.ops import OpError, infer
    from pypto.ir.types import MemorySpace, TileType

    t = TileType((128, 64), pl.BF16, MemorySpace.Mat)
    assert infer("tile.transpose_view", [t], {}) == TileType((64, 128), pl.BF16, MemorySpace.Mat)
    with pytest.raises(OpError, match="Mat/Vec"):
        infer("tile.transpose_view", [TileType((16, 16), pl.FP32, MemorySpace.Acc)], {})


def test_slice_valid_shape_of_a_rank_1_window_and_tensor_view_annotations() -> None:
    rows = pl.dynamic("ROWS")

    @pl.function(type=pl.FunctionType.InCore)
    def first_row(
        x: pl.Tensor[[rows, 16], pl.FP32, pl.TensorView(valid_shape=[rows, 8], layout=pl.TensorLayout.ND)],
        y: pl.Out[pl.Tensor[[1, 16], pl.FP32]],
    ) -> pl.Tensor[[1, 16], pl.FP32]:
        return pl.store(pl.load(x, [0, 0], [1, 16]), [0, 0], y)

    P = program(
        "[1, 16]",
        main=[
            "n = pl.tensor.read(table, [0])",
            "part = pl.slice(table, [4], [n])  # a rank-1 window: one offset",
            "pl.static_print(part)",
            "xi = pl.slice(x, [16, 16], [0, 0], valid_shape=[16, n])",
            "y = first_row(xi, y)",
            "return y",
        ],
        ins=("x: pl.Tensor[[32, 16], pl.FP32]", "table: pl.Tensor[[8], pl.INT32]"),
        first_row=first_row,
    )()

    body = P.functions["main"].body
    views = {
        s.var.name: s.value
        for s in body
        if isinstance(s, Assign) and getattr(s.value, "op", None) == "tensor.view"
    }
    assert views["part"].type == TensorType((4,), pl.INT32)
    assert views["xi"].type == TensorType((16, 16), pl.FP32)  # the window keeps `shape`
    ann = pl.Tensor[[4, 4], pl.FP32, pl.TensorView(layout=pl.TensorLayout.NZ)]
    assert ann.layout is pl.NZ
    with pytest.raises(TypeError, match=r"pl\.TensorView\(layout\)"):
        pl.TensorView(layout="ND")


@pl.jit
def _tile_valid_shape(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [16, 16])
        s = pl.slice(t, [8, 8], [0, 0], valid_shape=[8, 4])
        pl.store(s, [0, 0], y)
    return y


def test_slice_valid_shape_of_a_tile_narrows_the_sub_tile() -> None:
    import numpy as np

    x, y = np.zeros((16, 16), np.float32), np.zeros((8, 8), np.float32)
    text = str(_tile_valid_shape.specialize(x, y).program)
    assert "tile.set_validshape(tile.slice(t, [0, 0], shape=[8, 8]), 8, 4)" in text


def test_an_annotated_branch_yield_binds_the_name(tmp_path) -> None:
    from pypto.ir import compile as ir_compile
    from pypto.ir.nodes import If

    P = program(
        "[16, 16]",
        kernel=[
            "if flag == 0:",
            "    n: pl.Scalar[pl.INDEX] = pl.yield_(4)",
            "else:",
            "    n: pl.Scalar[pl.INDEX] = pl.yield_(16)",
            "t = pl.load(x, [0, 0], [16, 16], valid_shape=[16, n])",
            "return pl.store(t, [0, 0], y)",
        ],
        ins=("x", "flag: pl.Scalar[pl.INDEX]"),
    )()

    assert any(isinstance(s, If) for s in P.functions["k"].body)
    ir_compile(P, tmp_path / "out")  # the whole pipeline accepts it


@pl.function(type=pl.FunctionType.InCore)
def _blocked(
    x: pl.Tensor[[16, 16], pl.FP32], y: pl.Out[pl.Tensor[[16, 16], pl.FP32]]
) -> pl.Tensor[[16, 16], pl.FP32]:
    idx = pl.tile.get_block_idx()
    t = pl.load(x, [0, 0], [16, 16])
    return pl.store(pl.add(t, pl.cast(idx, pl.FP32)), [0, 0], y)


def _spmd_program(core_num: object):
    main = ["with pl.spmd(core_num=core_num):", "    y = _blocked(x, y)", "return y"]
    return program("[16, 16]", main=main, _blocked=_blocked, core_num=core_num)()


def test_spmd_is_a_loop_passing_each_block_its_index_and_count() -> None:
    from pypto.ir.nodes import For

    prog = _spmd_program(3)
    kernel = prog.functions["_blocked"]
    assert [p.name for p in kernel.params][-2:] == ["pypto_block_idx", "pypto_block_num"]
    loop = next(s for s in prog.functions["main"].body if isinstance(s, For))
    assert loop.stop.value == 3
    call = next(s.value for s in loop.body if isinstance(s, Assign))
    assert call.args[-2] is loop.var
    assert call.args[-1].value == 3


@pytest.mark.parametrize("bad", [0, True, "4"])
def test_spmd_core_num_must_be_a_positive_int(bad: object) -> None:
    with pytest.raises(KernelError, match=r"pl\.spmd\(core_num\): expected an int >= 1"):
        _spmd_program(bad)


def test_block_queries_belong_in_kernels() -> None:
    bad = program("[16, 16]", main=["pl.static_print(pl.tile.get_block_idx())", "return x"], out=None)
    with pytest.raises(KernelError, match=r"get_block_idx\(\) is read in a kernel launched by pl\.spmd"):
        bad()
