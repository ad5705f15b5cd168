"""``pl.RUNTIME``: scalar parameters whose value arrives at dispatch (one artifact for all values)."""

from __future__ import annotations

import copy
import pickle
from pathlib import Path
from typing import Any

import pytest
from pypto_ir_test_helpers import HostArray

import pypto.language as pl
from pypto.ir.artifact_key import ArtifactKey, ToolchainIdentity
from pypto.ir.compile import compile_to_files
from pypto.ir.contract import Contract
from pypto.ir.dtypes import DataType
from pypto.ir.errors import KernelError
from pypto.ir.nodes import For, Var
from pypto.ir.param_info import ParamDirection, ParamInfo
from pypto.ir.pipeline import lower
from pypto.language.typing import RuntimeScalarMarker, is_runtime
from pypto_testing.programs import scalar_param as scale  # c = a * alpha


def t(*shape: int, dtype: str = "float32") -> HostArray:
    return HostArray(shape, dtype)


A, C = t(16, 16), t(16, 16)


@pl.jit
def scale_default(a: pl.Tensor, c: pl.Out[pl.Tensor], alpha: pl.Scalar[pl.FP32] = pl.RUNTIME):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.add(pl.mul(a, alpha), alpha)
    return c


@pl.jit
def rows(a: pl.Tensor, n: pl.Scalar[pl.INT32], c: pl.Out[pl.Tensor]):
    for i in pl.range(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * 16, 0], [16, 64])
            pl.store(pl.add(x, 1.0), [i * 16, 0], c)
    return c


def material_key(spec: Any) -> ArtifactKey:
    return ArtifactKey.compute(
        toolchain=ToolchainIdentity.default(),
        source=spec.key_material["sources"],
        specialization=spec.key_material,
        contract=Contract.PROGRAM,
        platform="a2a3sim",
    )


# ----------------------------------------------------------------------------- the marker


def test_marker_is_an_exported_singleton() -> None:
    assert repr(pl.RUNTIME) == "pl.RUNTIME"
    assert isinstance(pl.RUNTIME, pl.RuntimeScalarMarker)
    assert pl.RuntimeScalarMarker is RuntimeScalarMarker
    assert RuntimeScalarMarker() is pl.RUNTIME
    assert copy.copy(pl.RUNTIME) is pl.RUNTIME
    assert copy.deepcopy(pl.RUNTIME) is pl.RUNTIME
    assert pickle.loads(pickle.dumps(pl.RUNTIME)) is pl.RUNTIME
    assert "RUNTIME" in pl.__all__
    assert "RuntimeScalarMarker" in pl.__all__
    assert is_runtime(pl.RUNTIME)
    assert not is_runtime(None)
    assert not is_runtime(1.5)


# ----------------------------------------------------------------------------- keys


def test_runtime_argument_keys_dtype_not_value() -> None:
    spec = scale.specialize(A, pl.RUNTIME, C)
    assert spec.key[1] == ("R", "FP32")
    assert scale.specialize(A, c=C, alpha=pl.RUNTIME) is spec  # keyword form: the same specialisation
    assert scale.specialize(a=A, alpha=pl.RUNTIME, c=C) is spec
    assert ["R", "FP32"] in spec.key_material["call_key"]
    assert spec.params[1] == ParamInfo("alpha", ParamDirection.IN, None, DataType.FP32)
    text = str(spec.program)
    assert "tensor.mul(a, alpha)" in text  # the parameter itself, not a constant


def test_folded_value_keys_differ_from_runtime() -> None:
    runtime = scale.specialize(A, pl.RUNTIME, C)
    folded = scale.specialize(A, 2.5, C)
    assert folded is not runtime
    assert folded.key != runtime.key
    assert folded.key[1] == ("S", "float", 2.5)
    assert "2.5" in str(folded.program)
    assert "tensor.mul(a, alpha)" not in str(folded.program)
    assert material_key(folded) != material_key(runtime)
    assert material_key(scale.specialize(A, 3.0, C)) != material_key(folded)


def test_default_runtime_shares_one_key_across_values() -> None:
    s1 = scale_default.specialize(A, C, 0.5)
    s2 = scale_default.specialize(A, C, alpha=3.0)
    s3 = scale_default.specialize(A, C)  # omitted: the default is pl.RUNTIME
    s4 = scale_default.specialize(A, C, pl.RUNTIME)
    assert s1 is s2 is s3 is s4
    assert s1.key[2] == ("R", "FP32")
    assert material_key(s1) == material_key(s2)
    assert "0.5" not in str(s1.key_material)
    assert "3.0" not in str(s1.key_material)
    assert scale_default.runtime_defaults == frozenset({"alpha"})
    with pytest.raises(TypeError, match="'alpha'"):
        scale_default.specialize(A, C, "not a scalar")  # a value is still checked, though not keyed


def test_two_values_give_the_same_artifact_key() -> None:
    keys = {material_key(rows.specialize(t(64, 64), pl.RUNTIME, t(64, 64))) for _ in range(2)}
    keys |= {material_key(scale.specialize(A, pl.RUNTIME, C))}
    assert len(keys) == 2  # one per function, whatever the values
    folded = {material_key(rows.specialize(t(64, 64), n, t(64, 64))) for n in (1, 2)}
    assert len(folded) == 2


# ----------------------------------------------------------------------------- errors


def test_runtime_scalar_needs_a_dtype_annotation() -> None:
    @pl.jit
    def untyped(a: pl.Tensor, alpha, c: pl.Out[pl.Tensor]):  # type: ignore[no-untyped-def]
        with pl.at(level=pl.Level.CORE_GROUP):
            c[:] = pl.mul(a, alpha)
        return c

    with pytest.raises(KernelError, match=r"parameter 'alpha' is a runtime scalar.*pl\.Scalar\[pl\.INT32\]"):
        untyped.specialize(A, pl.RUNTIME, C)

    @pl.jit
    def untyped_default(a: pl.Tensor, c: pl.Out[pl.Tensor], n=pl.RUNTIME):  # type: ignore[no-untyped-def]
        with pl.at(level=pl.Level.CORE_GROUP):
            c[:] = pl.add(a, 1.0)
        return c

    with pytest.raises(KernelError, match=r"parameter 'n'.*default is pl\.RUNTIME.*no scalar dtype"):
        untyped_default.specialize(A, C, 3)


def test_runtime_for_a_tensor_parameter_is_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"parameter 'a' is a tensor; pl\.RUNTIME"):
        scale.specialize(pl.RUNTIME, 1.0, C)
    with pytest.raises(TypeError, match=r"parameter 'c' is a tensor; pl\.RUNTIME"):
        scale.specialize(A, 1.0, c=pl.RUNTIME)

    @pl.jit
    def tensor_default(a: pl.Tensor, c: pl.Out[pl.Tensor] = pl.RUNTIME):
        with pl.at(level=pl.Level.CORE_GROUP):
            c[:] = pl.add(a, 1.0)
        return c

    with pytest.raises(TypeError, match=r"parameter 'c' is a tensor"):
        tensor_default.specialize(A, C)


def test_runtime_inside_a_kernel_expression_is_an_error() -> None:
    @pl.jit
    def uses_marker(a: pl.Tensor, c: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            c[:] = pl.mul(a, pl.RUNTIME)
        return c

    with pytest.raises(KernelError, match=r"pl\.RUNTIME has no value inside a kernel") as info:
        uses_marker.specialize(A, C)
    assert "pl.mul(a, pl.RUNTIME)" in info.value.render()


def test_shape_from_a_runtime_scalar_names_the_parameter() -> None:
    @pl.jit
    def dyn_shape(a: pl.Tensor, n: pl.Scalar[pl.INT32], c: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.load(a, [0, 0], [n, 64]), [0, 0], c)
        return c

    with pytest.raises(KernelError, match=r"parameter 'n' is a runtime scalar.*pl\.RUNTIME"):
        dyn_shape.specialize(t(64, 64), pl.RUNTIME, t(64, 64))
    dyn_shape.specialize(t(64, 64), 16, t(64, 64))  # folded: a constant shape


def test_defaults_are_bound() -> None:
    assert scale_default.bind(A, C) == (A, C, pl.RUNTIME)
    assert scale_default.bind(A, C, 2.0) == (A, C, 2.0)


# ----------------------------------------------------------------------------- codegen


def test_runtime_scalar_reaches_the_kernel(tmp_path: Path, cpp_check) -> None:  # type: ignore[no-untyped-def]
    r = compile_to_files(scale.specialize(A, pl.RUNTIME, C), tmp_path, contract="PROGRAM", platform="a2a3sim")
    orch = (tmp_path / r.metadata.orchestration.source).read_text()
    assert "const float alpha = args->scalar_as<float>(0);" in orch
    assert "scalar_bits(static_cast<float>(alpha))" in orch
    kernels = [f for f in r.files if f.suffix == ".cpp" and f.name != r.metadata.orchestration.source]
    assert any("sk::scalar_arg<float>" in f.read_text() for f in kernels)
    assert r.metadata.params[1] == ParamInfo("alpha", ParamDirection.IN, None, DataType.FP32)
    cpp_check([f for f in r.files if f.suffix == ".cpp"])


def test_runtime_int_loop_bound_in_the_orchestration(tmp_path: Path, cpp_check) -> None:  # type: ignore[no-untyped-def]
    spec = rows.specialize(t(64, 64), pl.RUNTIME, t(64, 64))
    loop = lower(spec.program).program.functions["rows"].body[0]
    assert isinstance(loop, For)
    assert isinstance(loop.stop, Var)
    assert loop.stop.name == "n"
    r = compile_to_files(spec, tmp_path, contract="PROGRAM", platform="a2a3sim")
    orch = (tmp_path / r.metadata.orchestration.source).read_text()
    assert "const std::int32_t n = args->scalar_as<std::int32_t>(0);" in orch
    assert "i < n;" in orch
    cpp_check([f for f in r.files if f.suffix == ".cpp"])


def test_kernel_contract_lists_the_scalar(tmp_path: Path) -> None:
    r = compile_to_files(scale.specialize(A, pl.RUNTIME, C), tmp_path, contract="KERNEL", platform="a2a3sim")
    assert [p.name for p in r.metadata.params] == ["a", "alpha", "c"]
    assert r.metadata.params[1].is_scalar
    assert r.metadata.params[1].dtype is DataType.FP32


@pl.jit
def window_at(a: pl.Tensor, row: pl.Scalar[pl.INT32], c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[0:16, :] = a[row : row + 16, :]
    return c


@pytest.mark.parametrize("row", [pl.RUNTIME, 8])
def test_window_copy_at_a_runtime_offset_lowers(row: object) -> None:
    low = lower(window_at.specialize(t(64, 64), row, t(64, 64)).program).program
    kernel = next(f for f in low.funcs if f.func_type.is_kernel)
    assert "tile.load(a, [" + ("row" if row is pl.RUNTIME else "8") in str(kernel)
