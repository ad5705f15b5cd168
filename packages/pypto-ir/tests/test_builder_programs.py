"""Programs made by builder functions: the builder's names resolve in annotations and bodies."""

from __future__ import annotations

import pytest

import pypto.language as pl
from pypto.ir.errors import KernelError
from pypto.ir.types import TensorType


def build(rows: int, cols: int):  # type: ignore[no-untyped-def]
    @pl.program
    class Scaled:
        # `rows` and `cols` appear only in annotations here: Python does not keep them in
        # this method's closure, so the decorator must have recorded them.
        @pl.function(type=pl.FunctionType.InCore)
        def kernel(
            self, x: pl.Tensor[[rows, cols], pl.FP32], out: pl.Out[pl.Tensor[[rows, cols], pl.FP32]]
        ) -> pl.Tensor[[rows, cols], pl.FP32]:
            t = pl.load(x, [0, 0], [rows, cols])
            out = pl.store(pl.mul(t, 2.0), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(
            self, x: pl.Tensor[[rows, cols], pl.FP32], out: pl.Out[pl.Tensor[[rows, cols], pl.FP32]]
        ) -> pl.Tensor[[rows, cols], pl.FP32]:
            out = self.kernel(x, out)
            return out

    return Scaled


@pytest.mark.parametrize(("rows", "cols"), [(16, 64), (32, 16)])
def test_builder_names_shape_the_program(rows: int, cols: int) -> None:
    prog = build(rows, cols)
    main = prog.functions["main"]
    for param in main.params:
        assert isinstance(param.var.type, TensorType)
        assert param.var.type.shape == (rows, cols)


def test_inner_builder_name_wins_over_a_global() -> None:
    def outer(cols: int):  # type: ignore[no-untyped-def]
        def inner(rows: int):  # type: ignore[no-untyped-def]
            return build_inline(rows, cols)

        return inner(8)

    prog = outer(48)
    assert prog.functions["main"].params[0].var.type.shape == (8, 48)


rows = 999  # a module global of the same name must not shadow the builder's argument


def build_inline(rows: int, cols: int):  # type: ignore[no-untyped-def]
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[rows, cols], pl.FP32]) -> pl.Tensor[[rows, cols], pl.FP32]:
            return x

    return P


def test_an_undefined_name_is_still_reported() -> None:
    def broken():  # type: ignore[no-untyped-def]
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, x: pl.Tensor[[undefined_rows, 4], pl.FP32]) -> pl.Tensor[[4, 4], pl.FP32]:  # noqa: F821
                return x

        return P

    with pytest.raises(KernelError, match="name 'undefined_rows' is not defined"):
        broken()
