"""Binding errors show the signature as it is written in source."""

from __future__ import annotations

import pytest
from pypto_ir_test_programs import scale

import pypto.language as pl
from pypto.language.typing import annotation_text

M = pl.dynamic("M")


def test_binding_errors_print_the_source_signature() -> None:
    with pytest.raises(TypeError) as info:
        scale.bind(object())
    text = str(info.value)
    assert text.startswith(
        "scale(a: pl.Tensor, factor: pl.FP32, out: pl.Out[pl.Tensor]): missing a required argument"
    )
    assert "DirectionAnnotation" not in text
    assert "pypto.language.typing" not in text


@pytest.mark.parametrize(
    ("annotation", "text"),
    [
        (pl.Tensor, "pl.Tensor"),
        (pl.Tensor[[M, 32], pl.FP16], "pl.Tensor[[M, 32], pl.FP16]"),
        (pl.Tensor[[16, 64], pl.BF16, pl.NZ], "pl.Tensor[[16, 64], pl.BF16, pl.NZ]"),
        (pl.InOut[pl.Tensor[[8], pl.INT32]], "pl.InOut[pl.Tensor[[8], pl.INT32]]"),
        (pl.Out[pl.Tensor], "pl.Out[pl.Tensor]"),
        (pl.Scalar[pl.INT64], "pl.Scalar[pl.INT64]"),
        (pl.FP32, "pl.FP32"),
        (pl.Tile[[16, 16], pl.FP32, pl.MemorySpace.Vec], "pl.Tile[[16, 16], pl.FP32, pl.Mem.Vec]"),
    ],
)
def test_annotation_text(annotation: object, text: str) -> None:
    assert annotation_text(annotation) == text
