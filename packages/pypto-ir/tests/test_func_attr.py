"""``pl.func_attr({...})``: function attributes in the body prologue, kept on the IR function, in
its text, through serialization and in a kernel's metadata."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import pypto.language as pl
from pypto.ir import deserialize, serialize
from pypto.ir.compile import compile_to_files
from pypto.ir.errors import KernelError
from pypto.ir.metadata import KernelInfo, MetadataError, read_metadata
from pypto.ir.nodes import ParamRef, structural_equal

KERNEL = '''
@pl.program
class Attrs:
    @pl.function(type=pl.FunctionType.InCore)
    def scale(self, x: pl.Tensor[[16, 16], pl.FP32], w: pl.Tensor[[16, 16], pl.FP32], y: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        """Scale x."""
        pl.func_attr({"stationary": w, "split": pl.SplitMode.UP_DOWN})
        pl.func_attr({"unroll": 4, "tag": "ffn", "ratio": 0.5, "fast": True})
        t = pl.load(x, [0, 0], [16, 16])
        y = pl.store(pl.tile.muls(t, 2.0), [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 16], pl.FP32], w: pl.Tensor[[16, 16], pl.FP32], y: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        y = self.scale(x, w, y)
        return y
'''

WANT = (
    ("fast", True),
    ("ratio", 0.5),
    ("split", pl.SplitMode.UP_DOWN),
    ("stationary", ParamRef("w")),
    ("tag", "ffn"),
    ("unroll", 4),
)


def test_attributes_are_recorded_on_the_function_and_print_parse_and_serialize_back() -> None:
    program = pl.parse(KERNEL)
    assert program.functions["scale"].attrs == WANT
    assert program.functions["main"].attrs == ()
    text = program.as_python()
    assert (
        'pl.func_attr({"fast": True, "ratio": 0.5, "split": pl.SplitMode.UP_DOWN, "stationary": w, '
        '"tag": \'ffn\', "unroll": 4})' in text
    )
    back = pl.parse(text)
    assert structural_equal(back, program)
    assert back.as_python() == text
    assert structural_equal(deserialize(serialize(program)), program)
    assert "attr stationary=w" in str(program.functions["scale"])


def test_a_kernels_attributes_are_in_its_metadata(tmp_path: Path) -> None:
    compile_to_files(pl.parse(KERNEL), tmp_path, contract="PROGRAM", platform="a2a3sim")
    raw = json.loads((tmp_path / "compiled_meta.json").read_text())
    (kernel,) = raw["kernels"]
    assert kernel["attrs"] == {
        "fast": True,
        "ratio": 0.5,
        "split": "SplitMode.UP_DOWN",
        "stationary": {"param": "w"},
        "tag": "ffn",
        "unroll": 4,
    }
    assert dict(read_metadata(tmp_path).kernels[0].attrs) == kernel["attrs"]


def test_metadata_refuses_an_attribute_it_cannot_hold() -> None:
    with pytest.raises(MetadataError, match=r"KernelInfo.attrs\['x'\]: expected a number, bool, string"):
        KernelInfo("k", 0, "AIV", "kernels/k.cpp", "kernel_entry", (), attrs={"x": [1, 2]})


def _parse_error(body: str) -> str:
    text = (
        "@pl.function(type=pl.FunctionType.InCore)\n"
        "def k(x: pl.Tensor[[16, 16], pl.FP32], y: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:\n"
        + "".join(f"    {line}\n" for line in body.splitlines())
        + "    y = pl.store(pl.load(x, [0, 0], [16, 16]), [0, 0], y)\n    return y\n"
    )
    with pytest.raises(KernelError) as info:
        pl.parse(text)
    return str(info.value)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('t = 1\npl.func_attr({"a": 1})', "pl.func_attr must come before every other statement"),
        ('pl.func_attr({"a": 1})\npl.func_attr({"a": 2})', "the key 'a' is given twice"),
        ("pl.func_attr({1: 2})", "keys must be string literals"),
        ("pl.func_attr(a=1)", "takes one dict literal"),
        ('pl.func_attr({"a": [1, 2]})', "the value of 'a' must be a parameter name or a constant"),
    ],
)
def test_bad_func_attr_is_refused_at_its_line(body: str, message: str) -> None:
    assert message in _parse_error(body)


def test_func_attr_outside_a_kernel_says_where_it_runs() -> None:
    with pytest.raises(RuntimeError, match=r"pl.func_attr\(\) runs only inside a kernel body"):
        pl.func_attr({"a": 1})
