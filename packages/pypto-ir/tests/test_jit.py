"""@pl.jit: duck-typed specialisation, the in-memory cache and the executor registration point."""

from __future__ import annotations

from typing import Any

import pytest
from pypto_ir_test_programs import scale

import pypto.language as pl
from pypto.ir import execution
from pypto.ir.dtypes import DataType
from pypto.language.binding import dtype_of


class TorchLikeDtype:
    def __str__(self) -> str:
        return "torch.bfloat16"


class TorchLike:
    def __init__(self, *shape: int) -> None:
        self.shape = shape
        self.dtype = TorchLikeDtype()


class NumpyLikeDtype:
    name = "float16"


class NumpyLike:
    def __init__(self, *shape: int) -> None:
        self.shape = shape
        self.dtype = NumpyLikeDtype()


def test_dtype_names_map_without_importing_torch_or_numpy() -> None:
    assert dtype_of(TorchLike(1)) is DataType.BF16
    assert dtype_of(NumpyLike(1)) is DataType.FP16
    with pytest.raises(TypeError, match="no PyPTO equivalent"):
        dtype_of(type("X", (), {"dtype": "complex64"})())


def test_specialisation_cache_hits_on_same_shapes_dtypes_and_values() -> None:
    before = scale.cache_size
    s1 = scale.specialize(TorchLike(16, 16), 2.0, TorchLike(16, 16))
    s2 = scale.specialize(TorchLike(16, 16), 2.0, TorchLike(16, 16))
    s3 = scale.specialize(NumpyLike(16, 16), 2.0, NumpyLike(16, 16))
    s4 = scale.specialize(TorchLike(32, 16), 2.0, TorchLike(32, 16))
    assert s1 is s2
    assert s3 is not s1
    assert s4 is not s1
    assert scale.cache_size == before + 3
    assert s1.params[0].dtype is DataType.BF16
    assert s3.params[0].dtype is DataType.FP16
    assert s1.key_material["ir"] != s3.key_material["ir"]


def test_bad_arguments_are_named() -> None:
    with pytest.raises(TypeError, match="parameter 'a' is a tensor; got int"):
        scale.specialize(3, 2.0, TorchLike(1, 1))
    with pytest.raises(TypeError, match="parameter 'factor': expected a Python int, float or bool"):
        scale.specialize(TorchLike(1, 1), "x", TorchLike(1, 1))
    with pytest.raises(TypeError, match="missing a required argument: 'out'"):
        scale.specialize(TorchLike(1, 1), 2.0)


def test_call_without_executor_says_to_install_the_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(execution, "_executor", None)
    monkeypatch.setattr(execution.metadata, "entry_points", lambda group: [])
    with pytest.raises(execution.NoExecutorError, match="install pypto-runtime"):
        scale(TorchLike(16, 16), 2.0, TorchLike(16, 16))


def test_installed_executor_receives_the_call(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []

    def executor(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
        seen.append((fn, args, kwargs))
        return "ran"

    monkeypatch.setattr(execution, "_executor", None)
    previous = execution.set_jit_executor(executor)
    try:
        assert scale(1, 2, 3, config="cfg") == "ran"
    finally:
        execution.set_jit_executor(previous)
    assert seen == [(scale, (1, 2, 3), {"config": "cfg"})]
    with pytest.raises(TypeError, match="expected a callable"):
        execution.set_jit_executor(42)  # type: ignore[arg-type]


def test_entry_point_executor_is_loaded_on_first_call(monkeypatch: pytest.MonkeyPatch) -> None:
    class EP:
        name = "runtime"

        def load(self) -> Any:
            return lambda fn, args, kwargs: ("from entry point", args)

    monkeypatch.setattr(execution, "_executor", None)
    monkeypatch.setattr(
        execution.metadata, "entry_points", lambda group: [EP()] if group == "pypto.executors" else []
    )
    assert scale(1, 2, 3) == ("from entry point", (1, 2, 3))


def test_lower_returns_the_lowered_program() -> None:
    prog = scale.lower(TorchLike(16, 16), 0.5, TorchLike(16, 16))
    assert len(prog.functions) == 2
    assert prog.functions["scale_k0"].func_type is pl.FunctionType.InCore


ROWS = 16


@pl.jit
def uses_global(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.load(a, [0, 0], [ROWS, 16]), [0, 0], out)
    return out


def test_a_changed_module_constant_is_an_error_naming_both_values(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = uses_global.specialize(TorchLike(16, 16), TorchLike(16, 16))
    assert spec.key_material["globals"] == {"uses_global.ROWS": "16"}
    monkeypatch.setitem(globals(), "ROWS", 8)
    with pytest.raises(RuntimeError, match="global 'ROWS' was 16 when this kernel was compiled and is 8 now"):
        uses_global.specialize(TorchLike(16, 16), TorchLike(16, 16))
