"""pl.cast rounding modes: the names and codes accepted, the errors for anything else, and the
PTO-ISA RoundMode the generated kernel passes (TCVT)."""

from __future__ import annotations

from typing import Any

import pytest
from pypto_ir_test_helpers import HostArray

import pypto.language as pl
from pypto.ir.codegen import generate_kernel
from pypto.ir.dtypes import DataType
from pypto.ir.errors import KernelError
from pypto.ir.ops import OpError, infer
from pypto.ir.ops.cast_modes import CAST_MODES, cast_mode, cpp_round_mode
from pypto.ir.pipeline import lower
from pypto.ir.types import TensorType


def t(*shape: int, dtype: str = "float32") -> HostArray:
    return HostArray(shape, dtype)


def _cast_kernel(mode: Any) -> Any:
    @pl.jit
    def k(a: pl.Tensor, o: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [0, 0], [16, 16])
            pl.store(pl.cast(x, pl.INT32, mode=mode), [0, 0], o)
        return o

    return k


@pl.jit
def default_cast(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [16, 16])
        pl.store(pl.cast(x, pl.FP16), [0, 0], o)
    return o


def _kernel_text(fn: Any, out_dtype: str) -> str:
    prog = lower(fn.specialize(t(16, 16), t(16, 16, dtype=out_dtype)).program).program
    (name,) = [n for n in prog.functions if n.endswith("_k0")]
    return generate_kernel(prog.functions[name]).text


@pytest.mark.parametrize(
    ("mode", "enumerator"),
    [
        ("none", "Rint"),  # TCVT's page leaves CAST_NONE undefined; "none" is nearest-even, RINT
        ("rint", "Rint"),
        ("round", "Round"),
        (3, "Floor"),
        ("ceil", "Ceil"),
        (5, "Trunc"),
        ("odd", "Odd"),
    ],
)
def test_the_kernel_passes_the_mode(mode: Any, enumerator: str) -> None:
    text = _kernel_text(_cast_kernel(mode), "int32")
    assert f"RoundMode::CAST_{enumerator.upper()}, SaturationMode::ON);" in text


def test_a_cast_without_mode_rounds_half_away_from_zero() -> None:
    assert "RoundMode::CAST_ROUND);" in _kernel_text(default_cast, "float16")  # float: no saturation


def test_names_and_codes_map_to_one_canonical_name() -> None:
    assert [cast_mode(c) for c in range(7)] == list(CAST_MODES)
    assert all(cast_mode(n) == n for n in CAST_MODES)
    assert cpp_round_mode(None) == "RoundMode::CAST_ROUND"


@pytest.mark.parametrize("bad", ["nearest", "ROUND", 7, -1, True, 2.0])
def test_a_bad_mode_is_rejected_naming_mode(bad: Any) -> None:
    with pytest.raises(KernelError) as info:
        _cast_kernel(bad).specialize(t(16, 16), t(16, 16, dtype="int32"))
    text = str(info.value)
    assert "pl.cast: mode must be one of 'none' (0), 'rint' (1), 'round' (2)" in text
    assert f"got {bad!r}" in text


def test_the_op_rule_checks_the_mode_too() -> None:
    x = TensorType((4, 4), DataType.FP32)
    assert infer("tensor.cast", [x], {"dtype": DataType.FP16, "mode": "round"}) == TensorType(
        (4, 4), DataType.FP16
    )
    with pytest.raises(OpError, match=r"mode must be one of .* got 'up'"):
        infer("tensor.cast", [x], {"dtype": DataType.FP16, "mode": "up"})


@pl.jit
def scalar_floor(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        v = pl.read(a, [0, 0])
        x = pl.load(a, [0, 0], [16, 16])
        pl.store(pl.tile.adds(x, pl.cast(pl.cast(v, pl.INT32, mode="floor"), pl.FP32)), [0, 0], o)
    return o


def test_a_scalar_cast_takes_the_default_mode_only() -> None:
    with pytest.raises(
        KernelError, match=r"pl.cast: a scalar takes the default mode 'round' only, got mode='floor'"
    ):
        scalar_floor.specialize(t(16, 16), t(16, 16))
