"""Call directions: derived for outlined kernels, checked for declared ones and at call sites."""

from __future__ import annotations

import pytest
from pypto_ir_test_helpers import HostArray

import pypto.language as pl
from pypto.ir.errors import KernelError
from pypto.ir.nodes import CallFunc, stmt_exprs, walk_stmts
from pypto.ir.param_info import ParamDirection
from pypto.ir.passes import call_directions, outline_scopes, ssa

IN, OUT, INOUT = ParamDirection.IN, ParamDirection.OUT, ParamDirection.INOUT


def t(*shape: int) -> HostArray:
    return HostArray(shape)


def _run(fn, *args):  # type: ignore[no-untyped-def]
    prog = outline_scopes.run(ssa.run(fn.specialize(*args).program))
    return call_directions.run(prog)


@pl.jit
def three_ways(a: pl.Tensor, o: pl.Out[pl.Tensor], io: pl.InOut[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [16, 16])
        pl.store(x, [0, 0], o)
        y = pl.load(io, [0, 0], [16, 16])
        io[:] = pl.add(io, a)
        pl.store(y, [0, 0], io)
    return o, io


def test_outlined_kernel_directions_are_derived() -> None:
    prog = _run(three_ways, t(16, 16), t(16, 16), t(16, 16))
    k = prog.functions["three_ways_k0"]
    assert [(p.name, p.direction) for p in k.params] == [("a", IN), ("o", OUT), ("io", INOUT)]
    call = next(
        e for s in walk_stmts(prog.entry_function.body) for e in stmt_exprs(s) if isinstance(e, CallFunc)
    )
    assert call.directions == (IN, OUT, INOUT)


@pl.jit.incore
def _writes_in(a: pl.Tensor, b: pl.Tensor):
    pl.store(pl.load(a, [0, 0], [16, 16]), [0, 0], b)
    return b


@pl.jit
def calls_writes_in(a: pl.Tensor, b: pl.Out[pl.Tensor]):
    b = _writes_in(a, b)
    return b


def test_declared_in_parameter_that_is_written_is_an_error() -> None:
    with pytest.raises(KernelError, match="writes parameter 'b', which is declared In"):
        _run(calls_writes_in, t(16, 16), t(16, 16))


@pl.jit
def forgets_out(a: pl.Tensor, c: pl.Tensor):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.exp(a)
    return c


def test_orchestration_parameter_written_by_a_kernel_must_be_out() -> None:
    with pytest.raises(KernelError, match="parameter 'c' is declared In but kernel"):
        _run(forgets_out, t(16, 16), t(16, 16))
