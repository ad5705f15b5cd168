"""Upstream PyPTO's scope and hint forms run on a2a3sim and checked against torch: ``with
pl.scope():`` (an automatic runtime scope, ``auto_scope=False``) and ``pl.scope(mode=MANUAL)``,
``pl.no_dep(t)`` on a kernel call's argument, ``pl.at(allow_early_resolve=True)``,
``pl.split(..., slot_num=n)``, ``pl.create_tile(..., flat_layout=True)``, and an Opaque function
whose computation outside its scopes is scoped automatically; ``pl.fillpad_expand`` (TFILLPAD_EXPAND)
of a tile and of a window."""

from __future__ import annotations

import math

import pytest

import pypto.language as pl
from pypto.runtime import run

torch = pytest.importorskip("torch")


@pl.program
class Scoped:
    @pl.function(type=pl.FunctionType.InCore)
    def twice(
        self, a: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]
    ) -> pl.Tensor[[16, 16], pl.FP32]:
        t = pl.load(a, [0, 0], [16, 16])
        return pl.store(pl.add(t, t), [0, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration, auto_scope=False)
    def main(
        self,
        a: pl.Tensor[[16, 16], pl.FP32],
        mid: pl.InOut[pl.Tensor[[16, 16], pl.FP32]],
        out: pl.Out[pl.Tensor[[16, 16], pl.FP32]],
    ) -> pl.Tensor[[16, 16], pl.FP32]:
        with pl.scope():
            mid = self.twice(a, mid)
        with pl.scope(mode=pl.ScopeMode.MANUAL):
            out, t = pl.submit(self.twice, mid, out)
            out, _u = pl.submit(self.twice, mid, pl.no_dep(out), deps=[t])
        return out


def _hinted(second_scope: str, tile_line: str = "") -> str:
    """A program whose two CORE_GROUP scopes carry hints that change nothing: the first
    ``allow_early_resolve``, the second opened by ``second_scope`` (and ``tile_line`` in it)."""
    return f"""
import pypto.language as pl


@pl.program
class Hinted:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self, x: pl.Tensor[[32, 16], pl.FP32], out: pl.Out[pl.Tensor[[32, 16], pl.FP32]]
    ) -> pl.Tensor[[32, 16], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, allow_early_resolve=True):
            t = pl.load(x, [0, 0], [16, 16])
            pl.store(pl.mul(t, 3.0), [0, 0], out)
        {second_scope}:
            {tile_line}
            u = pl.load(x, [16, 0], [16, 16])
            pl.store(pl.add(u, 1.0), [16, 0], out)
        return out
"""


@pl.program
class AutoScoped:
    @pl.function
    def square(
        self, x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]
    ) -> pl.Tensor[[16, 16], pl.FP32]:
        t = pl.load(x, [0, 0], [16, 16])
        return pl.store(pl.mul(t, t), [0, 0], out)

    @pl.function
    def main(
        self,
        a: pl.Tensor[[16, 16], pl.FP32],
        sq: pl.InOut[pl.Tensor[[16, 16], pl.FP32]],
        out: pl.Out[pl.Tensor[[16, 16], pl.FP32]],
    ) -> pl.Tensor[[16, 16], pl.FP32]:
        sq = self.square(a, sq)
        t = pl.load(sq, [0, 0], [16, 16])  # outside any pl.at: scoped automatically
        out = pl.store(pl.add(t, 1.0), [0, 0], out)
        return out


def test_scope_auto_and_manual_and_no_dep_run_in_order() -> None:
    a = torch.randn(16, 16)
    mid, out = torch.zeros(16, 16), torch.zeros(16, 16)
    run(Scoped, a, mid, out)
    torch.testing.assert_close(mid, 2 * a)
    torch.testing.assert_close(out, 4 * a)


def test_scope_hints_are_taken_and_change_nothing() -> None:
    x = torch.randn(32, 16)
    out = torch.zeros(32, 16)
    with pytest.warns(DeprecationWarning, match=r"pl.cross_core_slot\(slot_num=n\)"):
        prog = pl.parse(
            _hinted(
                "with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.NONE, slot_num=4)])"
            )
        )
    run(prog, x, out)
    want = torch.cat([3 * x[:16], x[16:] + 1])
    torch.testing.assert_close(out, want)
    flat = "_s = pl.create_tile([16, 16], dtype=pl.FP32, target_memory=pl.MemorySpace.Mat, flat_layout=True)"
    out = torch.zeros(32, 16)
    run(pl.parse(_hinted("with pl.at(level=pl.Level.CORE_GROUP)", flat)), x, out)
    torch.testing.assert_close(out, want)


def test_opaque_function_computation_outside_scopes_is_scoped() -> None:
    a = torch.randn(16, 16)
    sq, out = torch.zeros(16, 16), torch.zeros(16, 16)
    run(AutoScoped, a, sq, out)
    torch.testing.assert_close(out, a * a + 1)


@pl.jit
def expand_tile(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 32], valid_shape=[5, 7])
        pl.store(pl.fillpad_expand(t, [24, 48], pad_value=pl.PadValue.min), [0, 0], o)
    return o


@pl.jit
def expand_window(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        w = pl.slice(a, [8, 32], [8, 0], valid_shape=[6, 20], pad_value=pl.PadValue.max)
        o[:] = pl.fillpad_expand(w, [16, 32])  # its valid region, zeros around it
    return o


def test_fillpad_expand_copies_the_valid_region_into_a_larger_padded_tile() -> None:
    a = torch.randn(16, 32)
    o = torch.full((24, 48), 7.0)
    expand_tile(a, o)
    want = torch.full((24, 48), -math.inf)
    want[:5, :7] = a[:5, :7]
    torch.testing.assert_close(o, want)


def test_fillpad_expand_of_a_window_with_a_valid_shape() -> None:
    a = torch.randn(16, 32)
    o = torch.full((16, 32), 7.0)
    expand_window(a, o)
    want = torch.zeros(16, 32)
    want[:6, :20] = a[8:14, :20]
    torch.testing.assert_close(o, want)


@pl.jit
def pad_in_place(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 32], valid_shape=[5, 7])
        pl.store(pl.tile.fillpad_inplace(t, pad_value=-math.inf), [0, 0], o)
    return o


def test_fillpad_inplace_is_fillpad_of_the_tile() -> None:
    a = torch.randn(16, 32)
    o = torch.full((16, 32), 7.0)
    pad_in_place(a, o)
    want = torch.full((16, 32), -math.inf)
    want[:5, :7] = a[:5, :7]
    torch.testing.assert_close(o, want)


@pl.program
class Chain:
    @pl.function(type=pl.FunctionType.InCore)
    def bump(
        self, x: pl.Tensor[[16, 16], pl.FP32], acc: pl.InOut[pl.Tensor[[16, 16], pl.FP32]]
    ) -> pl.Tensor[[16, 16], pl.FP32]:
        t = pl.add(pl.load(acc, [0, 0], [16, 16]), pl.load(x, [0, 0], [16, 16]))
        return pl.store(t, [0, 0], acc)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self, x: pl.Tensor[[16, 16], pl.FP32], acc: pl.InOut[pl.Tensor[[16, 16], pl.FP32]]
    ) -> pl.Tensor[[16, 16], pl.FP32]:
        with pl.manual_scope():
            prev = None  # no producer yet: the first task waits for nothing
            for _i, (p,) in pl.range(3, init_values=(prev,)):
                acc, t = pl.submit(self.bump, x, acc, deps=[p])
                p = pl.yield_(t)  # noqa: PLW2901 -- the loop-carried value's next one
        return acc


def test_none_task_id_starts_a_chain_of_tasks() -> None:
    x = torch.randn(16, 16)
    acc = torch.ones(16, 16)
    run(Chain, x, acc)
    torch.testing.assert_close(acc, 1 + 3 * x)
