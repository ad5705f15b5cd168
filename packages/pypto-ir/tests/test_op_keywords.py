"""The front end of upstream's op keywords (``high_precision=``, matmul ``a_trans``/``b_trans``/
``out_dtype``/``c_matrix_nz``, ``pl.create_tile(transpose=)``, ``pl.slice`` ``valid_shape``/
``pad_value``/``drop_dims``/``clamp``, ``pl.fillpad`` on tensors) and of the bitwise, compare
and select ops: types, recorded attributes, errors and printed text. Their numbers on the
simulated chip are checked in pypto-runtime's tests/test_op_keywords_run.py and
tests/test_bitwise_compare_ops.py."""

from __future__ import annotations

import math

import pytest
from pypto_ir_test_helpers import HostArray, scope_kernel, tile_op_on_itself

import pypto.language as pl
from pypto.ir.dtypes import DataType
from pypto.ir.errors import KernelError
from pypto.ir.nodes import Assign, Call, stmt_exprs, walk_stmts
from pypto.ir.types import MemorySpace, PadValue, TensorType, TileType

X = HostArray((16, 32))
XI = HostArray((16, 32), "int32")


def _calls(fn: pl.JITFunction, *args: object) -> dict[str, Call]:
    """The op calls of the specialised program, by the name they are assigned to."""
    out: dict[str, Call] = {}
    for f in fn.specialize(*args).program.functions.values():
        for s in walk_stmts(f.body):
            if isinstance(s, Assign) and isinstance(s.value, Call):
                out[s.var.name] = s.value
    return out


# ----------------------------------------------------------------------------- high_precision


@pl.jit
def precise(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 32])
        q = pl.div(t, pl.load(b, [0, 0], [16, 32]), high_precision=True)
        lg = pl.log(q, high_precision=False)
        rc = pl.tile.recip(lg, high_precision=True)
        pl.store(rc, [0, 0], out)
    return out


def test_high_precision_is_recorded_when_true_and_the_types_are_unchanged() -> None:
    calls = _calls(precise, X, X, X)
    assert calls["q"].attr("high_precision") is True
    assert calls["lg"].attr("high_precision") is None
    assert calls["rc"].attr("high_precision") is True
    assert calls["rc"].type == TileType((16, 32), DataType.FP32, MemorySpace.Vec)
    assert "pl.div(t, " in precise.specialize(X, X, X).program.as_python()
    assert "high_precision=True" in precise.specialize(X, X, X).program.as_python()


@pl.jit
def precise_scalar_div(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.div(pl.load(a, [0, 0], [16, 32]), 2.0, high_precision=True), [0, 0], out)
    return out


@pl.jit
def precise_tile_rsqrt(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.rsqrt(pl.load(a, [0, 0], [16, 32]), high_precision=True), [0, 0], out)
    return out


@pl.jit
def precise_tensor_rsqrt(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.rsqrt(a, high_precision=True)
    return out


@pl.jit
def precise_not_bool(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.log(a, high_precision=1)
    return out


@pl.jit
def rsqrt_scratch(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 32])
        r = pl.tile.rsqrt(t, tmp=pl.tile.create([16, 32], dtype=pl.FP32))
        pl.store(r, [0, 0], out)
    return out


@pl.jit
def rsqrt_bad_scratch(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 32])
        pl.store(pl.rsqrt(t, tmp=pl.tile.create([16, 16], dtype=pl.FP32)), [0, 0], out)
    return out


@pl.jit
def rsqrt_tensor_scratch(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.rsqrt(a, tmp=pl.load(a, [0, 0], [16, 32]))
    return out


def test_a_tile_rsqrt_takes_a_scratch_tile_of_its_shape() -> None:
    call = _calls(rsqrt_scratch, X, X)["r"]
    assert call.op == "tile.rsqrt"
    assert len(call.args) == 2
    with pytest.raises(KernelError, match=r"pl\.rsqrt: tmp must have the operand's shape and dtype"):
        rsqrt_bad_scratch.specialize(X, X)
    with pytest.raises(KernelError, match=r"pl\.rsqrt: tmp is a scratch tile of the tile form"):
        rsqrt_tensor_scratch.specialize(X, X)


def test_high_precision_errors_name_the_argument() -> None:
    with pytest.raises(KernelError, match=r"pl\.div: high_precision=True needs a tile or tensor divisor"):
        precise_scalar_div.specialize(X, X)
    with pytest.raises(KernelError, match=r"pl\.rsqrt: high_precision=True is taken at tensor level only"):
        precise_tile_rsqrt.specialize(X, X)
    precise_tensor_rsqrt.specialize(X, X)  # the tensor form takes it
    with pytest.raises(KernelError, match=r"pl\.log: high_precision must be True or False, got 1"):
        precise_not_bool.specialize(X, X)


# ----------------------------------------------------------------------------- matmul keywords


@pl.jit
def mm_trans(q: pl.Tensor, k: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        s = pl.matmul(q, k, out_dtype=pl.FP16, a_trans=False, b_trans=True, c_matrix_nz=False)
        out[:] = s
    return out


def test_b_trans_multiplies_by_the_transposed_rhs_and_out_dtype_casts_the_product() -> None:
    h = "float16"
    calls = _calls(mm_trans, HostArray((16, 32), h), HostArray((24, 32), h), HostArray((16, 24), h))
    assert calls["s"].op == "tensor.cast"
    assert calls["s"].type == TensorType((16, 24), DataType.FP16)
    product = calls["s"].args[0]
    assert isinstance(product, Call)
    assert product.op == "tensor.matmul"
    assert isinstance(product.args[1], Call)
    assert product.args[1].op == "tensor.transpose"


@pl.jit
def mm_tile_trans(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        lhs = pl.move(pl.load(a, [0, 0], [16, 16], target_memory=pl.MemorySpace.Mat), pl.MemorySpace.Left)
        rhs = pl.move(pl.load(b, [0, 0], [16, 16], target_memory=pl.MemorySpace.Mat), pl.MemorySpace.Right)
        pl.store(pl.matmul(lhs, rhs, b_trans=True), [0, 0], out)
    return out


@pl.jit
def mm_nz(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.matmul(a, b, c_matrix_nz=True)
    return out


def test_matmul_keyword_errors() -> None:
    h = HostArray((16, 16), "float16")
    with pytest.raises(
        KernelError, match=r"pl\.matmul: b_trans=True applies to tensor operands; .*transpose_view"
    ):
        mm_tile_trans.specialize(h, h, HostArray((16, 16)))
    with pytest.raises(KernelError, match=r"pl\.matmul: c_matrix_nz=True .* is not available"):
        mm_nz.specialize(h, h, HostArray((16, 16)))


# ----------------------------------------------------------------------------- create_tile(transpose=)


@pl.jit
def transposed_l1(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        kt = pl.create_tile([16, 32], dtype=pl.FP16, target_memory=pl.MemorySpace.Mat, transpose=True)  # noqa: F841 (the test reads the IR)
        pl.store(pl.load(a, [0, 0], [16, 32]), [0, 0], out)
    return out


@pl.jit
def transposed_vec(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        kt = pl.create_tile([16, 32], dtype=pl.FP32, transpose=True)  # noqa: F841 (the test reads the IR)
        pl.store(pl.load(a, [0, 0], [16, 32]), [0, 0], out)
    return out


def test_create_tile_transpose_is_recorded_for_mat_tiles_only() -> None:
    assert _calls(transposed_l1, X, X)["kt"].attr("transpose") is True
    with pytest.raises(
        KernelError, match=r"pl\.create_tile: transpose=True describes a 2-D Mat .* in Vec memory"
    ):
        transposed_vec.specialize(X, X)


# ----------------------------------------------------------------------------- slice, fillpad


@pl.jit
def padded_windows(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        w = pl.slice(a, [8, 32], [8, 0], valid_shape=[8, 8], pad_value=-math.inf)
        out[:] = pl.fillpad(w, 0)
    return out


def test_a_window_records_its_constant_valid_shape_and_pad_value() -> None:
    calls = _calls(padded_windows, X, HostArray((8, 32)))
    view = calls["w"]
    assert view.op == "tensor.view"
    assert view.attr("valid_shape") == [8, 8]
    assert view.attr("pad") is PadValue.min
    text = padded_windows.specialize(X, HostArray((8, 32))).program.as_python()
    assert "pl.slice(a, [8, 32], [8, 0], valid_shape=[8, 8], pad_value=pl.PadValue.min)" in text
    assert "pl.fillpad(w, pad_value=pl.PadValue.zero)" in text


def _slice_kernel(kw: str) -> pl.JITFunction:
    return scope_kernel(
        ["t = pl.load(a, [0, 0], [16, 32])", f"pl.store(pl.slice(t, [8, 16], [0, 0], {kw}), [0, 0], out)"],
        f"<slice {kw}>",
        math=math,
    )


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        (
            "pad_value=pl.PadValue.max",
            r"pl\.slice: pad_value fills the part outside valid_shape; give valid_shape",
        ),
        ("valid_shape=[8, 8], pad_value=1", r"pl\.slice pad_value must be a pl\.PadValue .* got 1"),
        ("valid_shape=[9, 8]", r"pl\.slice valid_shape rows 9 is outside \[0, 8\]"),
        ("valid_shape=[8]", r"pl\.slice valid_shape of a tile is \[rows, cols\], got 1 values"),
        ("drop_dims=[0]", r"pl\.slice: drop_dims is not available"),
        ("clamp=True", r"pl\.slice: clamp=True is not available"),
    ],
)
def test_slice_keyword_errors(kw: str, message: str) -> None:
    with pytest.raises(KernelError, match=message):
        _slice_kernel(kw).specialize(X, HostArray((8, 16)))


def test_a_sub_tile_with_a_valid_shape_and_pad_value_is_narrowed_filled_and_narrowed_again() -> None:
    spec = _slice_kernel("valid_shape=[4, 5], pad_value=math.inf").specialize(X, HostArray((8, 16)))
    ops: list[str] = []

    def visit(e: object) -> None:
        if isinstance(e, Call):
            ops.append(e.op)
            for a in e.args:
                visit(a)

    for f in spec.program.functions.values():
        for s in walk_stmts(f.body):
            for e in stmt_exprs(s):
                visit(e)
    assert "tile.slice" in ops
    assert "tile.fillpad" in ops
    assert ops.count("tile.set_validshape") == 2


# ----------------------------------------------------------------------------- bitwise, compare, select


@pl.jit
def float_shift(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.shls(pl.load(a, [0, 0], [16, 32]), 1.5), [0, 0], out)
    return out


@pl.jit
def tensor_tmp(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 32])
        out[:] = pl.xor(a, a, t)
    return out


def test_bitwise_errors() -> None:
    with pytest.raises(KernelError, match=r"pl\.and_: lhs must have an integer dtype .* got FP32"):
        tile_op_on_itself(pl.and_).specialize(X, X)
    with pytest.raises(KernelError, match=r"pl\.shls: rhs must be an integer scalar, got FP32"):
        float_shift.specialize(XI, XI)
    with pytest.raises(KernelError, match=r"pl\.ors: rhs must be a scalar, .* for two tiles use pl\.or_"):
        tile_op_on_itself(pl.ors).specialize(XI, XI)
    with pytest.raises(KernelError, match=r"pl\.xor: tmp is a scratch tile of the tile form"):
        tensor_tmp.specialize(XI, XI)


@pl.jit
def masks(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [16, 40])
        m = pl.cmp(x, pl.load(b, [0, 0], [16, 40]), cmp_type=4)
        ms = pl.cmp(x, 0.5, cmp_type=1)
        pl.store(pl.sels(m, pl.sels(ms, x, x, 1.0), x, 0.0), [0, 0], out)
    return out


def test_a_tile_comparison_is_a_packed_uint8_mask_with_its_mode() -> None:
    w = HostArray((16, 40))
    calls = _calls(masks, w, w, w)
    assert calls["m"].type == TileType((16, 32), DataType.UINT8, MemorySpace.Vec)
    assert calls["m"].attr("cmp_type") == 4
    assert calls["ms"].op == "tile.cmp"  # a scalar rhs: the library's cmps
    text = masks.specialize(w, w, w).program.as_python()
    assert "pl.cmp(x, 0.5, cmp_type=1)" in text


def _mask_kernel(line: str) -> pl.JITFunction:
    loads = [
        "x = pl.load(a, [0, 0], [16, 32])",
        "y = pl.load(a, [0, 0], [16, 64])",
        "half = pl.load(a, [0, 0], [8, 32])",
    ]
    return scope_kernel([*loads, line, "pl.store(x, [0, 0], out)"], f"<mask {line}>")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("m = pl.cmp(x, x, cmp_type=6)", r"pl\.cmp: cmp_type must be one of 0 EQ, .* 5 GE, got 6"),
        ("m = pl.tile.cmps(x, x)", r"pl\.cmps: rhs must be a scalar, .* for two tiles use pl\.cmp"),
        ("m = pl.sel(x, x, x)", r"pl\.sel: mask must be a predicate mask of at least \[16, 4\] bytes"),
        (
            "m = pl.sel(pl.cmp(half, half), x, x)",
            r"pl\.sel: mask must be a predicate mask of at least \[16, 4\] bytes",
        ),
        ("m = pl.sels(pl.cmp(x, x), x, x, y)", r"pl\.sels: scalar must be a scalar"),
        (
            "m = pl.row_expand_expdif(pl.cast(x, pl.INT32), pl.cast(pl.row_max(x), pl.INT32))",
            r"pl\.row_expand_expdif: needs a floating-point operand, got INT32",
        ),
    ],
)
def test_compare_and_select_errors(line: str, message: str) -> None:
    with pytest.raises(KernelError, match=message):
        _mask_kernel(line).specialize(HostArray((16, 64)), HostArray((16, 32)))


@pl.jit
def valid_past_the_end(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.load(a, [0, 0], [32, 32], valid_shape=[24, 32]), [0, 0], out)
    return out


def test_a_load_window_is_checked_by_its_valid_shape() -> None:
    with pytest.raises(
        KernelError, match=r"pl\.load: the window \[0, 24\) on axis 0 exceeds the tensor extent 20"
    ):
        valid_past_the_end.specialize(HostArray((20, 32)), HostArray((32, 32)))
    valid_past_the_end.specialize(HostArray((24, 32)), HostArray((32, 32)))  # the valid part fits


@pl.jit
def typed_constant(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        r = pl.tile.subs(pl.load(a, [0, 0], [16, 32]), pl.const(2, pl.INT32))
        pl.store(r, [0, 0], out)
    return out


@pl.jit
def typed_constant_of_a_tensor(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.tensor.adds(a, pl.const(a, pl.FP32))
    return out


def test_const_is_a_typed_constant() -> None:
    from pypto.ir.nodes import Const

    k = _calls(typed_constant, XI, XI)["r"].args[1]
    assert isinstance(k, Const)
    assert (k.value, k.dtype) == (2, DataType.INT32)
    with pytest.raises(KernelError, match=r"pl\.const value must be a compile-time constant, got a"):
        typed_constant_of_a_tensor.specialize(X, X)
