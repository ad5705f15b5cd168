"""SSA conversion: versions, copy propagation, loop-carried values, flattening."""

from __future__ import annotations

import pytest
from pypto_ir_test_helpers import HostArray

import pypto.language as pl
from pypto.ir.errors import KernelError
from pypto.ir.nodes import Assign, Call, ExprStmt, For, Program, Var, Yield, walk_stmts
from pypto.ir.passes import ssa
from pypto.ir.verifier import VerifyLevel, verify


@pl.jit
def rebinds(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [16, 16])
        x = pl.add(x, 1.0)
        y = x
        x = pl.mul(y, pl.exp(x))
        for _i in pl.range(4):
            x = pl.add(x, y)
        pl.store(x, [0, 0], c)
    return c


def _lowered_scope(prog: Program) -> list[object]:
    return list(walk_stmts(ssa.run(prog).entry_function.body))


def test_every_name_assigned_once_with_versions() -> None:
    prog = rebinds.specialize(HostArray((16, 16)), HostArray((16, 16))).program
    out = ssa.run(prog)
    verify(out, VerifyLevel(ssa=True), "ssa")
    names = [s.var.name for s in walk_stmts(out.entry_function.body) if isinstance(s, Assign)]
    assert len(names) == len(set(names))
    assert "x" in names
    assert "x__1" in names
    assert "x__2" in names
    assert ssa.base_name("x__12") == "x"
    assert ssa.base_name("tile__a") == "tile__a"


def test_copies_are_propagated_and_nested_calls_flattened() -> None:
    prog = rebinds.specialize(HostArray((16, 16)), HostArray((16, 16))).program
    stmts = _lowered_scope(prog)
    assert not any(isinstance(s, Assign) and s.var.name.startswith("y") for s in stmts)
    mul = next(
        s for s in stmts if isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == "tile.mul"
    )
    assert all(isinstance(a, Var) for a in mul.value.args)  # type: ignore[union-attr]
    assert mul.value.args[0].name == "x__1"  # type: ignore[union-attr]  # y -> x__1


def test_loop_carried_value_gets_iter_arg_yield_and_result() -> None:
    prog = rebinds.specialize(HostArray((16, 16)), HostArray((16, 16))).program
    loop = next(s for s in _lowered_scope(prog) if isinstance(s, For))
    assert [ia.var.name for ia in loop.iter_args] == ["x__3"]
    assert loop.iter_args[0].init.name == "x__2"  # type: ignore[union-attr]
    y = loop.body[-1]
    assert isinstance(y, Yield)
    assert y.values[0].name == "x__4"  # type: ignore[union-attr]
    assert [r.name for r in loop.results] == ["x__5"]


@pl.jit
def uses_loop_local_after(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(2):
            t = pl.load(a, [i * 8, 0], [8, 16])
            u = pl.mul(t, 2.0)  # read in the loop only
            pl.store(u, [i * 8, 0], c)
        pl.store(t, [0, 0], c)
    return c


def test_a_loop_local_read_after_the_loop_is_carried_and_one_read_inside_only_is_not() -> None:
    prog = uses_loop_local_after.specialize(HostArray((16, 16)), HostArray((16, 16))).program
    out = ssa.run(prog)
    (loop,) = [s for f in out.funcs for s in walk_stmts(f.body) if isinstance(s, For)]
    assert [ssa.base_name(ia.var.name) for ia in loop.iter_args] == ["t"]


@pl.jit
def changes_type(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [16, 16])
        for _i in pl.range(2):
            x = pl.reshape(x, [8, 32])
        pl.store(x, [0, 0], c)
    return c


def test_loop_carried_value_must_keep_its_type() -> None:
    prog = changes_type.specialize(HostArray((16, 16)), HostArray((8, 32))).program
    with pytest.raises(KernelError, match="changes type inside the loop"):
        ssa.run(prog)


@pl.jit
def explicit_carry(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        zero = pl.load(a, [0, 0], [16, 16])
        for _i, (acc,) in pl.range(3, init_values=(zero,)):
            acc = pl.yield_(pl.add(acc, pl.load(a, [0, 0], [16, 16])))  # noqa: PLW2901  (the language's loop-carried idiom)
        pl.store(acc, [0, 0], c)
    return c


def test_init_values_and_yield_are_loop_carried_values() -> None:
    prog = ssa.run(explicit_carry.specialize(HostArray((16, 16)), HostArray((16, 16))).program)
    verify(prog, VerifyLevel(ssa=True), "ssa")
    loop = next(s for s in walk_stmts(prog.entry_function.body) if isinstance(s, For))
    assert [ia.var.name.split("__")[0] for ia in loop.iter_args] == ["acc"]
    assert len(loop.results) == 1
    store = [s for s in walk_stmts(prog.entry_function.body) if isinstance(s, ExprStmt)][-1]
    assert store.value.args[0] == loop.results[0]  # type: ignore[union-attr]


@pl.jit
def stray_yield(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for _i in pl.range(3):
            pl.yield_(pl.load(a, [0, 0], [16, 16]))
    return c


def test_yield_outside_an_init_values_loop_is_an_error() -> None:
    with pytest.raises(KernelError, match=r"pl\.yield_ belongs in a loop"):
        stray_yield.specialize(HostArray((16, 16)), HostArray((16, 16)))
