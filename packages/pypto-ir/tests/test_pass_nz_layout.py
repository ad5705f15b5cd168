"""NZ layout lowering: logical [R, C] / [B, R, C] -> unpadded blocked form in element units."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto.ir.dtypes import DataType
from pypto.ir.errors import KernelError
from pypto.ir.param_info import Layout, ParamInfo
from pypto.ir.passes import nz_layout


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


@settings(max_examples=40, deadline=None)
@given(
    r=st.integers(1, 16).map(lambda k: 16 * k),
    c=st.integers(1, 16).map(lambda k: 16 * k),
    b=st.one_of(st.none(), st.integers(1, 4)),
    dtype=st.sampled_from([DataType.FP16, DataType.BF16, DataType.INT8, DataType.FP32]),
)
def test_blocked_form_preserves_elements_bytes_and_dtype(
    r: int, c: int, b: int | None, dtype: DataType
) -> None:
    logical = (r, c) if b is None else (b, r, c)
    p = ParamInfo("w", "In", logical, dtype, Layout.NZ)
    q = nz_layout.lower_param(p)
    assert q.dtype is dtype
    assert q.layout is Layout.NZ
    assert q.is_blocked
    assert not p.is_blocked
    assert q.shape[-4:] == (c // 16, r // 16, 16, 16)  # type: ignore[index]
    assert _numel(q.shape) == _numel(logical)  # type: ignore[arg-type]
    assert _numel(q.shape) * dtype.itemsize == _numel(logical) * dtype.itemsize  # type: ignore[arg-type]
    assert ParamInfo.from_json(q.to_json()) == q


def test_dynamic_batch_and_rows_stay_dynamic() -> None:
    assert nz_layout.blocked_shape((-1, 64, 32)) == (-1, 2, 4, 16, 16)
    assert nz_layout.blocked_shape((-1, 32)) == (2, -1, 16, 16)


def test_nd_and_scalar_params_are_unchanged() -> None:
    p = ParamInfo("x", "In", (3, 5), "FP32")
    assert nz_layout.lower_param(p) is p
    s = ParamInfo("s", "In", None, "FP32")
    assert nz_layout.lower_param(s) is s


@pytest.mark.parametrize("shape", [(20, 32), (32, 8), (2, 16, 17)])
def test_unpadded_form_needs_multiples_of_16(shape: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match="multiple of 16"):
        nz_layout.lower_param(ParamInfo("w", "In", shape, "FP16", Layout.NZ))


def test_a_blocked_shape_is_never_taken_as_logical() -> None:
    q = nz_layout.lower_param(ParamInfo("w", "In", (32, 64), "FP16", Layout.NZ))
    with pytest.raises(ValueError, match="already the blocked NZ form"):
        nz_layout.lower_param(q)


@pl.jit
def nz_tensor_op(w: pl.Tensor[[32, 32], pl.FP16, pl.NZ], out: pl.Out[pl.Tensor[[32, 32], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(w, w)
    return out


class HostArray:
    def __init__(self, shape: tuple[int, ...], dtype: str = "float16") -> None:
        self.shape = shape
        self.dtype = dtype


def test_tensor_level_ops_on_nz_tensors_load_with_the_nz_layout() -> None:
    from pypto.ir.codegen import generate_kernel
    from pypto.ir.nodes import Assign, Call, walk_stmts
    from pypto.ir.pipeline import lower

    prog = lower(nz_tensor_op.specialize(HostArray((32, 32)), HostArray((32, 32))).program).program
    k = prog.functions["nz_tensor_op_k0"]
    loads = [
        s.value
        for s in walk_stmts(k.body)
        if isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == "tile.load"
    ]
    assert [c.attr("layout") for c in loads] == [Layout.NZ]
    text = generate_kernel(k).text
    assert "pt::load_nz(" in text
    assert "pt::store(out" in text


@pl.jit
def nz_bad_rows(w: pl.Tensor[[24, 32], pl.FP16, pl.NZ], out: pl.Out[pl.Tensor[[24, 32], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.load(w, [0, 0], [8, 32]), [0, 0], out)
    return out


def test_nz_parameter_that_cannot_be_blocked_is_rejected() -> None:
    from pypto.ir.pipeline import lower

    prog = nz_bad_rows.specialize(HostArray((24, 32)), HostArray((24, 32))).program
    with pytest.raises(KernelError, match="rows must be a multiple of 16"):
        lower(prog)


@pl.jit
def nz_batched(
    w: pl.Tensor[[pl.dynamic("B"), 32, 64], pl.FP16, pl.NZ], out: pl.Out[pl.Tensor[[32, 64], pl.FP16]]
):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.load(w, [1, 0, 16], [1, 32, 16]), [0, 0], out[:, 0:16])
    return out


def test_compiled_metadata_keeps_logical_params_and_blocked_lowered_params(tmp_path, cpp_check) -> None:  # type: ignore[no-untyped-def]
    from pypto.ir.compile import _compile_to_files

    r = _compile_to_files(
        nz_batched.specialize(HostArray((3, 32, 64)), HostArray((32, 64))),
        tmp_path,
        contract="KERNEL",
        platform="a2a3sim",
    )
    w, lw = r.metadata.params[0], r.metadata.lowered_params[0]
    assert w.shape == (-1, 32, 64)
    assert not w.is_blocked
    assert lw.shape == (-1, 4, 2, 16, 16)
    assert lw.is_blocked
    assert r.metadata.kernels[0].params[0].layout is Layout.NZ
    kernel = (tmp_path / r.metadata.kernels[0].source).read_text()
    assert "pt::load_nz(" in kernel
    cpp_check([f for f in r.files if f.suffix == ".cpp"])
