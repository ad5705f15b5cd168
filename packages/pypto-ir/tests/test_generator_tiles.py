"""Tiles made from nothing but a scalar: ``pl.tri`` (PTO-ISA TTRI) and ``pl.tile.ci`` /
``pl.tile.arange`` (TCI). What the parser and type rules accept and refuse, the text the printer
writes back, and the instruction the kernel generator writes (runs are checked in
pypto-runtime's test_tri_run.py and test_ci_run.py)."""

from __future__ import annotations

from typing import Any

import pytest

import pypto.language as pl
from pypto.ir.codegen import generate_kernel
from pypto.ir.errors import KernelError, PyptoCompileError
from pypto.ir.nodes import structural_equal
from pypto.ir.pipeline import lower


def _kernel(dtype: Any = pl.FP32, upper: bool = False, valid_shape: list[int] | None = None) -> Any:
    @pl.function(type=pl.FunctionType.InCore)
    def k(d: pl.Scalar[pl.INT32], y: pl.Out[pl.Tensor[[16, 32], dtype]]) -> pl.Tensor[[16, 32], dtype]:
        t = pl.tri(d, [16, 32], valid_shape=valid_shape, dtype=dtype, upper=upper)
        return pl.store(t, [0, 0], y)

    return k


def test_the_kernel_calls_ttri_with_the_side_as_a_template_argument() -> None:
    lower = generate_kernel(_kernel().ir).text
    assert "TTRI<decltype(t), 0>(t, static_cast<std::int32_t>(d));" in lower
    upper = generate_kernel(_kernel(upper=True, valid_shape=[5, 7]).ir).text
    assert "TTRI<decltype(t), 1>(t, static_cast<std::int32_t>(d));" in upper
    assert " t(5, 7);" in upper  # the valid shape is the tile's


def test_a5_only_element_types_are_refused_for_a2a3_and_accepted_for_a5() -> None:
    k = _kernel(pl.BF16)
    with pytest.raises(PyptoCompileError, match=r"pl.tri: dtype BF16 is not supported on a2a3 hardware"):
        generate_kernel(k.ir, "a2a3sim")
    assert "TTRI<decltype(t), 0>" in generate_kernel(k.ir, "a5sim").text


def test_print_parses_back_to_the_same_function() -> None:
    @pl.function(type=pl.FunctionType.InCore)
    def k(d: pl.Scalar[pl.INT32], y: pl.Out[pl.Tensor[[16, 32], pl.INT16]]) -> pl.Tensor[[16, 32], pl.INT16]:
        a = pl.tri(d, [16, 32], valid_shape=[4, 8], dtype=pl.INT16, upper=True)
        b = pl.tile.tri(-2, [16, 32], dtype=pl.INT16)
        y = pl.store(a, [0, 0], y)
        return pl.store(b, [0, 0], y)

    printed = k.ir.as_python()
    assert "pl.tri(d, [16, 32], valid_shape=[4, 8], dtype=pl.INT16, upper=True)" in printed
    assert "pl.tri(-2, [16, 32], dtype=pl.INT16)" in printed
    assert structural_equal(pl.parse(printed), k.ir)


def _ci_kernel(dtype: Any = pl.INT32, descending: bool = False) -> Any:
    @pl.function(type=pl.FunctionType.InCore)
    def k(s: pl.Scalar[pl.INT32], y: pl.Out[pl.Tensor[[1, 32], dtype]]) -> pl.Tensor[[1, 32], dtype]:
        t = pl.tile.ci(s, [1, 32], dtype=dtype, descending=descending)
        return pl.store(t, [0, 0], y)

    return k


def test_ci_calls_tci_with_the_element_type_and_direction_as_template_arguments() -> None:
    up = generate_kernel(_ci_kernel().ir).text
    assert "TCI<decltype(t), std::int32_t, 0>(t, static_cast<std::int32_t>(s));" in up
    down = generate_kernel(_ci_kernel(pl.UINT16, descending=True).ir).text
    assert "TCI<decltype(t), std::uint16_t, 1>(t, static_cast<std::uint16_t>(s));" in down


def test_ci_and_its_arange_alias_print_and_parse_back() -> None:
    @pl.function(type=pl.FunctionType.InCore)
    def k(y: pl.Out[pl.Tensor[[2, 16], pl.INT16]]) -> pl.Tensor[[2, 16], pl.INT16]:
        y = pl.store(pl.tile.ci(3, [1, 16], dtype=pl.INT16, descending=True), [0, 0], y)
        return pl.store(pl.tile.arange(0, [1, 16], dtype=pl.INT16), [1, 0], y)

    printed = k.ir.as_python()
    assert "pl.tile.ci(3, [1, 16], dtype=pl.INT16, descending=True)" in printed
    assert "pl.tile.ci(0, [1, 16], dtype=pl.INT16)" in printed
    assert structural_equal(pl.parse(printed), k.ir)


def _tri_with(
    diagonal: Any = 0,
    shape: Any = (16, 32),
    valid_shape: Any = None,
    dtype: Any = pl.FP32,
    upper: Any = False,
) -> Any:
    @pl.function(type=pl.FunctionType.InCore)
    def k(y: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        return pl.store(pl.tri(diagonal, shape, valid_shape=valid_shape, dtype=dtype, upper=upper), [0, 0], y)

    return k


def _ci_with(start: Any = 0, shape: Any = (1, 16), dtype: Any = pl.INT32, descending: Any = False) -> Any:
    @pl.function(type=pl.FunctionType.InCore)
    def k(y: pl.Out[pl.Tensor[[1, 16], pl.INT32]]) -> pl.Tensor[[1, 16], pl.INT32]:
        return pl.store(pl.tile.ci(start, shape, dtype=dtype, descending=descending), [0, 0], y)

    return k


@pytest.mark.parametrize(
    ("make", "bad", "message"),
    [
        (
            _tri_with,
            {"diagonal": 1.5},
            r"pl.tri: diagonal must be an integer \(a constant or a scalar\), got Scalar\[FP32\]",
        ),
        (_tri_with, {"shape": [16]}, r"pl.tri: shape must be two positive integer constants, got \[16\]"),
        (
            _tri_with,
            {"valid_shape": [0, 4]},
            r"pl.tri: valid_shape must be two integer constants in \[1, shape\]",
        ),
        (_tri_with, {"valid_shape": [4, 33]}, r"valid_shape .* got \[4, 33\]"),
        (
            _tri_with,
            {"dtype": pl.INT64},
            r"pl.tri: dtype must be one of BF16, FP16, FP32, INT16, INT32, INT8, ",
        ),
        (_tri_with, {"upper": 1}, r"pl.tri: upper must be True or False, got 1"),
        (
            _ci_with,
            {"start": 0.5},
            r"pl.tile.ci: start must be an integer \(a constant or a scalar\), got Scalar\[FP32\]",
        ),
        (_ci_with, {"shape": [2, 16]}, r"pl.tile.ci: shape must be \[1, n\] with n > 1 .* got \[2, 16\]"),
        (_ci_with, {"shape": [1, 1]}, r"got \[1, 1\]"),
        (
            _ci_with,
            {"dtype": pl.FP32},
            r"pl.tile.ci: dtype must be one of INT16, INT32, UINT16, UINT32, got FP32",
        ),
        (_ci_with, {"descending": "yes"}, r"pl.tile.ci: descending must be True or False, got 'yes'"),
    ],
)
def test_bad_arguments_are_refused_naming_the_argument(make: Any, bad: dict[str, Any], message: str) -> None:
    with pytest.raises(KernelError, match=message):
        make(**bad).ir  # noqa: B018


def test_ci_is_spelled_as_upstream_spells_it() -> None:
    assert pl.tile.arange is pl.tile.ci  # the tile form
    assert pl.tensor.arange is pl.tensor.ci is pl.arange  # the tensor form
    assert not hasattr(pl, "ci")


def _kernel_texts(program: Any) -> list[str]:
    """The C++ of the kernels of ``program`` (lowered; its ``main`` left out)."""
    lowered = lower(program).program
    return [generate_kernel(fn).text for name, fn in lowered.functions.items() if name != "main"]


def test_the_tensor_form_lowers_to_the_tile_form_and_prints_back() -> None:
    @pl.program
    class Rows:
        @pl.function(type=pl.FunctionType.Opaque)
        def main(self, y: pl.Out[pl.Tensor[[1, 32], pl.INT32]]) -> pl.Tensor[[1, 32], pl.INT32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                seq = pl.arange(5, [1, 32], dtype=pl.INT32, descending=True)
                y = pl.assemble(y, seq, [0, 0])
            return y

    printed = Rows.as_python()
    assert "pl.arange(5, [1, 32], dtype=pl.INT32, descending=True)" in printed
    assert structural_equal(pl.parse(printed), Rows)
    kernels = _kernel_texts(Rows)
    assert any("TCI<decltype(" in text and ", std::int32_t, 1>(" in text for text in kernels), kernels


def test_full_is_the_tile_and_pl_tensor_full_the_tensor_form() -> None:
    # upstream's pl.tensor.full; pl.full makes the tile here (it mixes in where a tensor is taken)
    assert pl.tensor.full is not pl.full
    assert pl.tile.full is pl.full
    assert pl.tensor.full.__name__ == "full"

    @pl.program
    class Filled:
        @pl.function(type=pl.FunctionType.Opaque)
        def main(self, y: pl.Out[pl.Tensor[[16, 32], pl.FP16]]) -> pl.Tensor[[16, 32], pl.FP16]:
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.tensor.full([16, 32], dtype=pl.FP16, value=1.5)
                y = pl.assemble(y, pl.add(t, t), [0, 0])
            return y

    printed = Filled.as_python()
    assert "pl.tensor.full([16, 32], dtype=pl.FP16, value=1.5)" in printed
    assert structural_equal(pl.parse(printed), Filled)
    kernels = _kernel_texts(Filled)
    assert any("TEXPANDS(" in text for text in kernels), kernels
    with pytest.raises(KernelError, match=r"pl.tensor.full value must be a scalar, got Tensor"):
        pl.parse(
            """
@pl.function(type=pl.FunctionType.InCore)
def k(x: pl.Tensor[[16, 32], pl.FP32], y: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
    return pl.assemble(y, pl.tensor.full([16, 32], dtype=pl.FP32, value=x), [0, 0])
"""
        )
