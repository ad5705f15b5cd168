"""``pl.tile.random`` (PTO-ISA TRANDOM): its type, the kernel's key and counter arrays and
``TRANDOM<rounds>``, the printed text parsing back, the refusal on a2a3 (the instruction exists
on A5 only) and what the rule refuses. Runs, against a Philox reference, are in pypto-runtime's
test_random_run.py."""

from __future__ import annotations

import pytest

import pypto.language as pl
from pypto.ir.codegen import generate_kernel
from pypto.ir.errors import KernelError, PyptoCompileError
from pypto.ir.nodes import structural_equal


@pl.function(type=pl.FunctionType.InCore)
def _k(n: pl.Scalar[pl.INT32], y: pl.Out[pl.Tensor[[16, 128], pl.INT32]]) -> pl.Tensor[[16, 128], pl.INT32]:
    t = pl.tile.random(0x1234, 0x5678, n, 2, 3, 4, [16, 128], valid_shape=[10, 100], dtype=pl.INT32, rounds=7)
    return pl.store(t, [0, 0], y)


def test_the_kernel_fills_the_key_and_counter_words_and_calls_trandom() -> None:
    text = generate_kernel(_k.ir, "a5sim").text
    assert "Tile<TileType::Vec, std::int32_t, 16, 128, BLayout::RowMajor, -1, -1> t(10, 100);" in text
    assert "TRandomKey t_key = {static_cast<std::uint32_t>(INT64_C(4660)), " in text
    assert "TRandomCounter t_counter = {static_cast<std::uint32_t>(n), " in text
    assert "TRANDOM<7>(t, t_key, t_counter);" in text


def test_print_parses_back() -> None:
    printed = _k.ir.as_python()
    assert (
        "pl.tile.random(4660, 22136, n, 2, 3, 4, [16, 128], valid_shape=[10, 100], dtype=pl.INT32, rounds=7)"
        in printed
    )
    assert structural_equal(pl.parse(printed), _k.ir)


def test_a2a3_is_refused_naming_the_platform_to_use() -> None:
    with pytest.raises(PyptoCompileError, match=r"TRANDOM exists on A5 \(Ascend950\) only.*a5sim"):
        generate_kernel(_k.ir, "a2a3sim")


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (
            "pl.tile.random(1, 2, 3, 4, 5, 6, [4, 64], dtype=pl.FP32)",
            r"dtype must be one of INT32, UINT32, got FP32",
        ),
        ("pl.tile.random(1, 2, 3, 4, 5, 6, [4, 64], rounds=8)", r"rounds must be 7 or 10"),
        (
            "pl.tile.random(1, 2, 3, 4, 5, 6, [4, 64], valid_shape=[5, 64])",
            r"valid_shape must be two integer",
        ),
        ("pl.tile.random(1.5, 2, 3, 4, 5, 6, [4, 64])", r"key0 must be an integer"),
    ],
)
def test_what_the_rule_refuses(call: str, match: str) -> None:
    src = f"""
@pl.function(type=pl.FunctionType.InCore)
def k(y: pl.Out[pl.Tensor[[4, 64], pl.UINT32]]) -> pl.Tensor[[4, 64], pl.UINT32]:
    t = {call}
    return pl.store(t, [0, 0], y)
"""
    with pytest.raises(KernelError, match=match):
        pl.parse(src)


@pl.function(type=pl.FunctionType.InCore)
def _tensor_k(y: pl.Out[pl.Tensor[[4, 256], pl.UINT32]]) -> pl.Tensor[[4, 256], pl.UINT32]:
    a: pl.Tensor[[4, 256], pl.UINT32] = pl.random(0x1234, 0x5678, 1, 2, 3, 4, [4, 256], rounds=7)
    return pl.assemble(y, a, [0, 0])


def test_the_tensor_form_is_pl_random_and_pl_tensor_random() -> None:
    # upstream's names: pl.random and pl.tensor.random the tensor form, pl.tile.random the tile's
    assert pl.random is pl.tensor.random
    assert pl.random is not pl.tile.random
    assert pl.random.__name__ == "random"
    assert not hasattr(pl, "tensor_random")  # the op table's key is no name of the language
    assert not hasattr(pl.tensor, "tensor_random")
    printed = _tensor_k.ir.as_python()
    assert "pl.random(4660, 22136, 1, 2, 3, 4, [4, 256], dtype=pl.UINT32, rounds=7)" in printed
    assert structural_equal(pl.parse(printed), _tensor_k.ir)  # runs: test_random_run.py


def test_the_tensor_forms_refusals_name_it() -> None:
    src = """
@pl.function(type=pl.FunctionType.InCore)
def k(y: pl.Out[pl.Tensor[[4, 64], pl.FP32]]) -> pl.Tensor[[4, 64], pl.FP32]:
    return pl.assemble(y, pl.random(1, 2, 3, 4, 5, 6, [4, 64], dtype=pl.FP32), [0, 0])
"""
    with pytest.raises(KernelError, match=r"pl.random: dtype must be one of INT32, UINT32, got FP32"):
        pl.parse(src)
