"""Upstream's other spellings of functions this language has: ``pl.tensor.get_block_idx`` /
``get_block_num`` / ``get_subblock_idx``, ``pl.get_subblock_idx``, ``pl.tile.max`` / ``pl.tile.min``
(of two scalars), ``pl.tensor.set_validshape`` and ``pl.tile.aiv_shard`` / ``aic_gather``. Each is the same function as its ``pl``
spelling, and a kernel written either way is the same IR."""

from __future__ import annotations

from typing import Any

import pytest

import pypto.language as pl
from pypto.ir.nodes import structural_equal


@pytest.mark.parametrize(
    ("spelled", "canonical"),
    [
        (pl.tensor.get_block_idx, pl.get_block_idx),
        (pl.tensor.get_block_num, pl.get_block_num),
        (pl.tensor.get_subblock_idx, pl.tile.get_subblock_idx),
        (pl.get_subblock_idx, pl.tile.get_subblock_idx),
        (pl.tile.max, pl.max),
        (pl.tile.min, pl.min),
        (pl.tensor.set_validshape, pl.set_validshape),
        (pl.tile.aiv_shard, pl.aiv_shard),
        (pl.tile.aic_gather, pl.aic_gather),
    ],
)
def test_each_spelling_is_the_function_it_names(spelled: object, canonical: object) -> None:
    assert spelled is canonical


def _kernel(upstream: bool) -> Any:
    if upstream:

        @pl.function(type=pl.FunctionType.InCore)
        def k(
            a: pl.Tensor[[32, 16], pl.FP32], y: pl.Out[pl.Tensor[[16, 16], pl.FP32]]
        ) -> pl.Tensor[[16, 16], pl.FP32]:
            i = pl.tensor.get_block_idx()
            n = pl.tensor.get_block_num()
            v = pl.tensor.set_validshape(a, 8, 16)
            t = pl.load(v, [pl.tile.min(i, n), 0], [16, 16], valid_shape=[8, 16])
            return pl.store(t, [pl.tile.max(i, n) - 1, 0], y)

        return k

    @pl.function(type=pl.FunctionType.InCore)
    def k(
        a: pl.Tensor[[32, 16], pl.FP32], y: pl.Out[pl.Tensor[[16, 16], pl.FP32]]
    ) -> pl.Tensor[[16, 16], pl.FP32]:
        i = pl.get_block_idx()
        n = pl.get_block_num()
        v = pl.set_validshape(a, 8, 16)
        t = pl.load(v, [pl.min(i, n), 0], [16, 16], valid_shape=[8, 16])
        return pl.store(t, [pl.max(i, n) - 1, 0], y)

    return k


def test_a_kernel_in_upstreams_spellings_is_the_same_ir() -> None:
    assert structural_equal(_kernel(upstream=True).ir, _kernel(upstream=False).ir)
