"""pl.at hints: optimizations=[pl.split(...), pl.cross_core_slot(...)] and no_dep_args=[...]
are validated, carried to the outlined kernel and recorded in compiled_meta.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pypto_ir_test_helpers import HostArray

import pypto.language as pl
from pypto.ir.compile import compile_to_files
from pypto.ir.contract import Contract
from pypto.ir.errors import KernelError
from pypto.ir.metadata import KernelInfo, MetadataError, read_metadata
from pypto.ir.pipeline import lower
from pypto_testing.forms import from_source


def t(*shape: int, dtype: str = "float32") -> HostArray:
    return HostArray(shape, dtype)


@pl.jit
def hinted(x: pl.Tensor, y: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(
        level=pl.Level.CORE_GROUP,
        name_hint="up_down",
        optimizations=[pl.cross_core_slot(slot_num=4), pl.split(pl.SplitMode.UP_DOWN)],
        no_dep_args=[y],
    ):
        out[:] = pl.add(x, y)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="plain"):
        out[:] = pl.mul(out, 2.0)
    return out


ARGS = (t(16, 32), t(16, 32), t(16, 32))


def test_hints_reach_the_kernel_and_its_metadata(tmp_path: Path) -> None:
    program = lower(hinted.specialize(*ARGS).program).program
    kernels = {f.name: f for f in program.funcs if f.func_type.is_kernel}
    assert dict(kernels["up_down"].hints) == {"cross_core_slot": 4, "no_dep_args": ("y",), "split": "UP_DOWN"}
    assert kernels["plain"].hints == ()
    compile_to_files(
        hinted.specialize(*ARGS).program, tmp_path, contract=Contract.PROGRAM, platform="a2a3sim"
    )
    raw = json.loads((tmp_path / "compiled_meta.json").read_text())
    by_name = {k["name"]: k for k in raw["kernels"]}
    assert by_name["up_down"]["hints"] == {"cross_core_slot": 4, "no_dep_args": ["y"], "split": "UP_DOWN"}
    assert "hints" not in by_name["plain"]
    meta = read_metadata(tmp_path)
    assert dict(next(k for k in meta.kernels if k.name == "up_down").hints)["split"] == "UP_DOWN"


@pytest.mark.parametrize(
    ("hints", "match"),
    [
        ({"split": "DIAGONAL"}, r"\['split'\]: expected one of NONE, UP_DOWN, LEFT_RIGHT, got 'DIAGONAL'"),
        ({"cross_core_slot": 0}, r"\['cross_core_slot'\]: expected an int >= 1, got 0"),
        ({"no_dep_args": "y"}, r"\['no_dep_args'\]: expected a list of parameter names"),
        ({"pipeline": 2}, r"unknown hint 'pipeline'"),
    ],
)
def test_metadata_rejects_bad_hints(hints: dict[str, object], match: str) -> None:
    with pytest.raises(MetadataError, match=match):
        KernelInfo("k", 0, "AIV", "kernels/k.cpp", "kernel_entry", (), hints=tuple(hints.items()))


def _with(at_args: str) -> pl.JITFunction:
    src = f"""
import pypto.language as pl

@pl.jit
def k(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, {at_args}):
        out[:] = pl.neg(x)
    return out
"""
    path = Path(__file__).with_name(f"_scope_hints_{abs(hash(at_args))}.py")
    fn = from_source(src, str(path))["k"]
    assert isinstance(fn, pl.JITFunction)
    return fn


@pytest.mark.parametrize(
    ("at_args", "match"),
    [
        (
            "optimizations=[pl.split(3)]",
            r"pl.split\(mode\): expected pl.SplitMode.NONE, UP_DOWN or LEFT_RIGHT, got 3",
        ),
        ("optimizations=pl.split(pl.SplitMode.UP_DOWN)", "optimizations must be a list"),
        ("optimizations=[pl.neg]", "each optimizations entry must be pl.split"),
        (
            "optimizations=[pl.split(pl.SplitMode.UP_DOWN), pl.split(pl.SplitMode.NONE)]",
            r"lists pl.split\(...\) twice",
        ),
        (
            "optimizations=[pl.cross_core_slot(slot_num=-2)]",
            r"cross_core_slot\(slot_num\): expected a positive int, got -2",
        ),
        ("no_dep_args=[x + 1]", "no_dep_args entries must be tensor names"),
        ("no_dep_args=[nothing]", "'nothing' must be a tensor defined before the scope"),
        ("no_dep_args=x", "no_dep_args must be a list of tensor names"),
    ],
)
def test_bad_hints_are_errors_naming_the_argument(at_args: str, match: str) -> None:
    with pytest.raises(KernelError, match=match):
        _with(at_args).specialize(t(8, 8), t(8, 8))


@pl.jit
def unused_no_dep(x: pl.Tensor, y: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, no_dep_args=[y]):
        out[:] = pl.neg(x)
    return out


def test_no_dep_args_must_name_a_tensor_the_scope_uses() -> None:
    with pytest.raises(KernelError, match="no_dep_args names 'y', which the scope does not use"):
        lower(unused_no_dep.specialize(t(8, 8), t(8, 8), t(8, 8)).program)


def test_python_helpers_validate_too() -> None:
    assert pl.split(pl.SplitMode.LEFT_RIGHT).mode is pl.SplitMode.LEFT_RIGHT
    with pytest.raises(TypeError, match=r"pl.split\(mode\): expected a pl.SplitMode"):
        pl.split("UP_DOWN")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"slot_num\): expected a positive int, got True"):
        pl.cross_core_slot(slot_num=True)
