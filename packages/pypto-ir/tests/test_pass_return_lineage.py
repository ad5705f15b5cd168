"""Return lineage: which external parameter each returned tensor aliases, in order, with duplicates."""

from __future__ import annotations

from pypto_ir_test_helpers import HostArray
from pypto_ir_test_programs import copy_16x16, returns_internal

import pypto.language as pl
from pypto.ir.analysis.return_lineage import entry_aliases
from pypto.ir.passes import ssa


def t(*shape: int) -> HostArray:
    return HostArray(shape)


@pl.jit
def dup_returns(a: pl.Tensor, alpha: pl.FP32, o1: pl.Out[pl.Tensor], o2: pl.Out[pl.Tensor]):
    o1 = copy_16x16(a, o1)
    tmp = pl.create_tensor([16, 16], dtype=pl.FP32)
    tmp = copy_16x16(a, tmp)
    o2 = copy_16x16(tmp, o2)
    return o2, o1, o2


@pl.jit
def through_loop(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    for _i in pl.range(3):
        o = copy_16x16(a, o)
    return o


def test_aliases_are_ordered_with_duplicates_and_count_scalar_slots() -> None:
    prog = ssa.run(dup_returns.specialize(t(16, 16), 1.0, t(16, 16), t(16, 16)).program)
    assert entry_aliases(prog) == (3, 2, 3)


def test_internal_tensor_aliases_nothing() -> None:
    prog = ssa.run(returns_internal.specialize(t(16, 16), t(16, 16)).program)
    assert entry_aliases(prog) == (None,)


def test_lineage_follows_loop_carried_values() -> None:
    prog = ssa.run(through_loop.specialize(t(16, 16), t(16, 16)).program)
    assert entry_aliases(prog) == (1,)
