"""Kernel programs more than one pypto-ir test module checks, written once (the test modules
import them by name; conftest.py puts this folder on sys.path)."""

from __future__ import annotations

import pypto.language as pl


@pl.jit
def tile_escapes(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    """A tile ``x`` loaded in one ``pl.at`` scope and stored in another: rejected, since a tile
    lives in its scope's kernel."""
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [16, 16])
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(x, [0, 0], out)
    return out


@pl.jit
def scale(a: pl.Tensor, factor: pl.FP32, out: pl.Out[pl.Tensor]):
    """``out = a * factor``: a tensor and a scalar parameter, for binding and specialising."""
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(a, factor)
    return out


PRINTED_CALL = """
import pypto.language as pl


@pl.program
class Prog:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, x: pl.Tensor[[64], pl.FP32], dst: pl.Out[pl.Tensor[[64], pl.FP32]]) -> pl.Tensor[[64], pl.FP32]:
        t: pl.Tile[[64], pl.FP32] = pl.load(x, [0], [64])
        dst = pl.store(t, [0], dst)
        return dst

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64], pl.FP32], dst: pl.Out[pl.Tensor[[64], pl.FP32]]) -> pl.Tensor[[64], pl.FP32]:
        dst = self.kernel(x, dst, attrs={CALL_ATTRS})
        return dst
"""
"""A program as ``as_python()`` prints one, whose orchestration calls its kernel with the
attributes ``CALL_ATTRS`` (replace it): for what the parser checks of printed call attributes."""


@pl.jit.incore
def copy_16x16(src: pl.Tensor, dst: pl.Out[pl.Tensor]):
    """An InCore function that copies the [16, 16] corner of ``src`` into ``dst``."""
    pl.store(pl.load(src, [0, 0], [16, 16]), [0, 0], dst)
    return dst


@pl.jit
def returns_internal(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    """Returns a tensor it creates, none of its parameters: the KERNEL contract refuses it and
    its return lineage is no parameter."""
    tmp = pl.create_tensor([16, 16], dtype=pl.FP32)
    tmp = copy_16x16(a, tmp)
    return tmp
