"""The binder (pypto.language.binding) and JITFunction.bind_call: one set of rules for a
call's arguments, a cheap key for a repeat call, and the declared signature."""

from __future__ import annotations

from typing import Any

import pytest
from pypto_ir_test_programs import scale

import pypto.language as pl
from pypto.ir.analysis.signature import function_signature, signature_of
from pypto.ir.dtypes import DataType
from pypto.ir.param_info import DYNAMIC, ParamDirection, ParamInfo
from pypto.language import binding


class Duck:
    """A tensor-like argument without numpy or torch: ``.shape`` and ``.dtype`` only."""

    def __init__(self, *shape: int, dtype: str = "float32") -> None:
        self.shape = shape
        self.dtype = dtype


@pl.jit
def bdeclared(
    a: pl.Tensor[[16, pl.dynamic("n")], pl.FP16],
    n: pl.Scalar[pl.INT32],
    out: pl.InOut[pl.Tensor],
    alpha: pl.FP32 = pl.RUNTIME,
):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(out, alpha)
    return out


def test_is_tensor_is_shape_and_dtype_not_a_python_scalar() -> None:
    assert binding.is_tensor(Duck(2, 2))
    for value in (1, 2.0, True, [1, 2], None, "x", object()):
        assert not binding.is_tensor(value), value


def test_duck_arrays_and_other_values_have_no_call_key() -> None:
    assert binding.arg_key(Duck(4, 4)) is None
    assert binding.arg_key([1]) is None
    assert binding.arg_key(float("nan")) is None
    assert binding.arg_key(2.0) == (float, 2.0)
    assert binding.arg_key(True) == (bool, True)
    assert binding.arg_key(True) != binding.arg_key(1)
    assert binding.fast_key((1, 2.5)) == ((int, 1), (float, 2.5))
    assert binding.fast_key((1, Duck(1))) is None


def test_numpy_call_keys_tell_type_shape_dtype_and_strides_apart() -> None:
    np = pytest.importorskip("numpy")
    a = np.zeros((4, 8), np.float32)
    assert binding.arg_key(a) == binding.arg_key(np.ones((4, 8), np.float32))
    others = [np.zeros((8, 4), np.float32).T, np.zeros((4, 8), np.float16), np.zeros((4, 4), np.float32)]
    for other in others:
        assert binding.arg_key(other) != binding.arg_key(a)
    assert binding.arg_key(np.float32(1.0)) is None  # a numpy scalar: the full binder decides
    assert binding.arg_key(np.array(2.0)) is None  # 0-d: its value would be folded, not keyed
    assert binding.tensor_library(a) == "numpy"
    assert binding.tensor_library(Duck(1)) is None


def test_a_repeat_call_is_bound_by_its_key_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    np = pytest.importorskip("numpy")
    a, out = np.zeros((16, 16), np.float32), np.zeros((16, 16), np.float32)
    first, bound, key = scale.bind_call((a, 2.0, out), {})
    assert bound == (a, 2.0, out)
    assert key == binding.fast_key((a, 2.0, out))
    calls: list[Any] = []
    real = scale.call_key

    def counting(args: Any) -> Any:
        calls.append(args)
        return real(args)

    monkeypatch.setattr(scale, "call_key", counting)
    assert scale.bind_call((np.ones_like(a), 2.0, np.ones_like(out)), {})[0] is first
    assert scale.specialize(a, 2.0, out) is first
    assert calls == []
    assert scale.specialize(a, 3.0, out) is not first  # a folded scalar's value is in the key
    assert scale.specialize(a, factor=2.0, out=out) is first  # keywords: bound in full
    assert len(calls) == 2
    s2 = scale.specialize(a, np.array(2.0, np.float32), out)  # a 0-d array: folded by its value
    assert scale.specialize(a, np.array(5.0, np.float32), out) is not s2


def test_bind_call_for_a_run_needs_every_runtime_value() -> None:
    a, out = Duck(16, 16, dtype="float16"), Duck(16, 16, dtype="float16")
    spec, bound, key = bdeclared.bind_call((a, 4, out), {})  # alpha left out: its default pl.RUNTIME
    assert key is None
    assert bound[3] is pl.RUNTIME
    assert spec.key[3] == ("R", "FP32")
    with pytest.raises(TypeError, match=r"parameter 'alpha' is a runtime scalar.*pass its value"):
        bdeclared.bind_call((a, 4, out), {}, run=True)
    assert bdeclared.bind_call((a, 4, out, 0.5), {}, run=True)[0] is spec


def test_declared_params_read_the_annotations() -> None:
    a, n, out, alpha = bdeclared.declared_params()
    assert (a.kind, a.dtype, a.shape, a.direction) == (
        "tensor",
        DataType.FP16,
        (16, DYNAMIC),
        ParamDirection.IN,
    )
    assert a.param_info() == ParamInfo("a", ParamDirection.IN, (16, DYNAMIC), DataType.FP16)
    assert (n.kind, n.dtype, n.is_scalar) == ("scalar", DataType.INT32, True)
    assert (out.kind, out.dtype, out.shape, out.direction) == ("tensor", None, None, ParamDirection.INOUT)
    assert out.param_info() is None  # dtype and shape come from the call
    assert (alpha.kind, alpha.dtype, alpha.position) == ("scalar", DataType.FP32, 3)


def test_one_signature_function_for_parsed_and_compiled_programs() -> None:
    spec = scale.specialize(Duck(16, 16), 2.0, Duck(16, 16))
    entry = spec.program.functions[spec.program.entry]
    assert spec.params == function_signature(entry, ssa_names=False) == signature_of(spec.program)
    assert [p.name for p in spec.params] == ["a", "factor", "out"]
