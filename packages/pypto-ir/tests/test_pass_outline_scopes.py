"""Scope outlining: pl.at bodies become InCore kernels with their free values as parameters."""

from __future__ import annotations

import pytest
from pypto_ir_test_helpers import HostArray
from pypto_ir_test_programs import tile_escapes

import pypto.language as pl
from pypto.ir.errors import KernelError
from pypto.ir.nodes import Assign, CallFunc, ExprStmt, Scope, walk_stmts
from pypto.ir.passes import outline_scopes, ssa
from pypto.ir.types import FunctionType, ScalarType, TaskIdType, TensorType
from pypto.ir.verifier import VerifyLevel, verify


def t(*shape: int) -> HostArray:
    return HostArray(shape)


@pl.jit
def staged(x: pl.Tensor, w: pl.Tensor, mid: pl.Out[pl.Tensor], out: pl.Out[pl.Tensor]):
    for i in pl.range(2):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="first") as tid:
            mid[:] = pl.add(w, x)
        with pl.at(level=pl.Level.CORE_GROUP, deps=[tid]):
            v = pl.load(mid, [0, 0], [16, 16])
            pl.store(pl.mul(v, 3.0), [i * 0, 0], out)
    return out


def _outlined(fn, *args):  # type: ignore[no-untyped-def]
    prog = ssa.run(fn.specialize(*args).program)
    out = outline_scopes.run(prog)
    verify(out, VerifyLevel(ssa=True, outlined=True), "outline")
    return out


def test_scopes_become_kernels_with_free_values_as_params() -> None:
    prog = _outlined(staged, t(16, 16), t(16, 16), t(16, 16), t(16, 16))
    entry = prog.entry_function
    assert entry.func_type is FunctionType.Orchestration
    assert not any(isinstance(s, Scope) for s in walk_stmts(entry.body))
    first = prog.functions["first"]
    assert first.outlined
    assert first.func_type is FunctionType.InCore
    # enclosing parameters first, in their order (x before w), tensors before scalars
    assert [p.name for p in first.params] == ["x", "w", "mid"]
    second = prog.functions["staged_k1"]
    assert [p.name for p in second.params] == ["mid", "out", "i"]
    assert isinstance(second.params[-1].var.type, ScalarType)
    calls = [
        s
        for s in walk_stmts(entry.body)
        if isinstance(s, (Assign, ExprStmt)) and isinstance(s.value, CallFunc)
    ]
    assert isinstance(calls[0], Assign)
    assert isinstance(calls[0].var.type, TaskIdType)
    assert calls[1].value.deps[0].name == calls[0].var.name  # type: ignore[union-attr]


def test_a_tile_cannot_leave_its_scope() -> None:
    prog = ssa.run(tile_escapes.specialize(t(16, 16), t(16, 16)).program)
    with pytest.raises(KernelError, match="cannot use 'x'"):
        outline_scopes.run(prog)


@pl.jit
def store_result_escapes(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c = pl.store(pl.load(a, [0, 0], [16, 16]), [0, 0], c)
    return c


def test_a_written_tensor_escapes_as_the_outer_tensor() -> None:
    prog = _outlined(store_result_escapes, t(16, 16), t(16, 16))
    ret = prog.entry_function.body[-1]
    assert ret.values[0].name == "c"  # type: ignore[union-attr]
    assert isinstance(ret.values[0].type, TensorType)  # type: ignore[union-attr]
