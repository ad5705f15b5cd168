"""Scope-local pl.create_tensor, tensor-level values carried through loops and branches,
tensor-level pl.matmul_acc and inline helpers writing pl.Out parameters, at the IR level: what
the passes produce, and the errors they raise."""

from __future__ import annotations

import pytest
from pypto_ir_test_helpers import HostArray, call_ops, to_tiles

import pypto.language as pl
from pypto.ir.dtypes import DataType
from pypto.ir.errors import KernelError
from pypto.ir.nodes import Assign, Call, CallFunc, ExprStmt, For, If, walk_stmts
from pypto.ir.param_info import ParamDirection
from pypto.ir.passes.tensor_to_tile import fits_one_tile
from pypto.ir.pipeline import lower
from pypto.ir.types import MemorySpace, TensorType, TileType


def t(*shape: int, dtype: str = "float32") -> HostArray:
    return HostArray(shape, dtype)


def _fn(program, name):  # type: ignore[no-untyped-def]
    (f,) = [f for f in program.funcs if f.name == name]
    return f


@pl.jit
def small_scratch(x: pl.Tensor, w: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="k"):
        acc = pl.create_tensor([16, 32], dtype=pl.FP32)
        for kb in pl.range(3):
            k0 = kb * 16
            if k0 == 0:
                acc = pl.matmul(x[:, k0 : k0 + 16], w[k0 : k0 + 16, :])
            else:
                acc = pl.matmul_acc(acc, x[:, k0 : k0 + 16], w[k0 : k0 + 16, :])
        y = pl.assemble(y, acc, [0, 0])
    return y


def test_a_small_scope_local_tensor_is_a_zeroed_vec_tile_carried_through_loop_and_branch() -> None:
    prog = lower(small_scratch.specialize(t(16, 48), t(48, 32), t(16, 32)).program).program
    k = _fn(prog, "k")
    assert [p.name for p in k.params] == ["x", "w", "y"]  # no parameter for the scratch
    ops = call_ops(k)
    assert ops[0] == "tile.full"
    assert "tensor.create" not in ops
    assert not any(o.startswith("tensor.") for o in ops)
    vec = TileType((16, 32), DataType.FP32, MemorySpace.Vec)
    loop = next(s for s in walk_stmts(k.body) if isinstance(s, For))
    assert [ia.var.type for ia in loop.iter_args] == [vec]
    assert [r.type for r in loop.results] == [vec]
    branch = next(s for s in walk_stmts(k.body) if isinstance(s, If))
    assert [r.type for r in branch.results] == [vec]
    # matmul_acc on tensor-level values: the product, moved to Vec, added to the accumulator
    assert ops.count("tile.matmul") == 2
    assert "tile.matmul_acc" not in ops
    orch = _fn(prog, "small_scratch")
    assert not any(c == "tensor.create" for c in call_ops(orch))


@pl.jit
def big_scratch(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="k"):
        stage = pl.create_tensor([64, 1024], dtype=pl.FP32)
        stage = pl.assemble(stage, pl.exp(x[:, 0:256]), [0, 0])
        out = pl.assemble(out, stage[:, 0:256], [0, 0])
    return out


def test_a_scope_local_tensor_too_large_for_a_tile_is_allocated_by_the_orchestration() -> None:
    assert not fits_one_tile(TensorType((64, 1024), DataType.FP32))
    assert fits_one_tile(TensorType((16, 32), DataType.FP32))
    prog = lower(big_scratch.specialize(t(64, 256), t(64, 256)).program).program
    orch = _fn(prog, "big_scratch")
    body = [s for s in orch.body if isinstance(s, (Assign, ExprStmt))]
    assert isinstance(body[0].value, Call)
    assert body[0].value.op == "tensor.create"
    assert isinstance(body[1].value, CallFunc)
    assert body[1].value.args[-1] == body[0].var
    k = _fn(prog, "k")
    assert [p.name for p in k.params] == ["x", "out", "stage"]
    assert k.param("stage").direction is ParamDirection.INOUT  # written, then read back


@pl.jit
def tile_rebound(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="k"):
        total = pl.full([8, 16], dtype=pl.FP32, value=1.0)
        for cb in pl.range(2):
            total = pl.add(total, x[:, cb * 16 : cb * 16 + 16])
        out = pl.assemble(out, total, [0, 0])
    return out


def test_a_tile_rebound_to_tensor_level_values_in_a_loop_is_carried_as_a_tile() -> None:
    prog = lower(tile_rebound.specialize(t(8, 32), t(8, 16)).program).program
    loop = next(s for s in walk_stmts(_fn(prog, "k").body) if isinstance(s, For))
    assert [ia.var.type for ia in loop.iter_args] == [TileType((8, 16), DataType.FP32, MemorySpace.Vec)]


@pl.jit
def carried_from_device(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = x
        for _ in pl.range(2):
            acc = pl.add(acc, x)
        out = pl.assemble(out, acc, [0, 0])
    return out


def test_a_loop_carrying_a_tensor_level_value_that_starts_in_device_memory_is_refused() -> None:
    with pytest.raises(KernelError, match=r"starts as .* a tensor in device memory"):
        lower(carried_from_device.specialize(t(8, 16), t(8, 16)).program)


@pl.jit
def written_by_statements(x: pl.Tensor, col: pl.Tensor, out: pl.Out[pl.Tensor], wide: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        u = pl.create_tensor([8, 16], dtype=pl.FP32)
        pl.assemble(u, x, [0, 0])  # statements: no name rebound in the source
        out = pl.assemble(out, u, [0, 0])
        w = pl.create_tensor([8, 16], dtype=pl.FP32)
        pl.expand_clone(col, w)
        wide = pl.assemble(wide, w, [0, 0])
    return out, wide


def test_a_write_as_a_statement_gives_the_scope_local_tensor_its_new_tile() -> None:
    k = _fn(
        to_tiles(written_by_statements, t(8, 16), t(8, 1), t(8, 16), t(8, 16)), "written_by_statements_k0"
    )
    stores = [s.value for s in walk_stmts(k.body) if isinstance(s, Assign) and s.value.op == "tile.store"]
    defs = {s.var.name: s.value.op for s in walk_stmts(k.body) if isinstance(s, Assign)}
    # each store writes the written tile (not the zeroed scratch the tensor started as)
    assert [defs[st.args[0].name] for st in stores] == ["tile.assemble", "tile.row_expand"]


@pl.jit
def written_in_a_loop(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        u = pl.create_tensor([8, 16], dtype=pl.FP32)
        for _ in pl.range(2):
            pl.assemble(u, x, [0, 0])
        out = pl.assemble(out, u, [0, 0])
    return out


def test_a_write_as_a_statement_in_a_loop_is_refused_naming_the_form_to_write() -> None:
    with pytest.raises(KernelError, match=r"'u' is written by a statement inside a loop.*u = pl.assemble\(u"):
        to_tiles(written_in_a_loop, t(8, 16), t(8, 16))


def test_matmul_acc_checks_its_accumulator() -> None:
    @pl.jit
    def wrong_acc(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            acc = pl.create_tensor([16, 8], dtype=pl.FP32)
            c = pl.assemble(c, pl.matmul_acc(acc, a, b), [0, 0])
        return c

    with pytest.raises(
        KernelError, match=r"pl.matmul_acc: the accumulator is \[16, 8\] but the product is \[16, 32\]"
    ):
        wrong_acc.specialize(t(16, 16), t(16, 32), t(16, 32))


@pl.jit.inline
def fill_twice(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="fill"):
        for cb in pl.range(2):
            y = pl.assemble(y, pl.add(x, x), [0, cb * 16])
    return y


@pl.jit
def calls_helper(x: pl.Tensor, y: pl.Tensor):
    y = fill_twice(x, y)
    return y


def test_a_bare_tensor_passed_to_a_helpers_out_parameter_becomes_in_out() -> None:
    spec = calls_helper.specialize(t(8, 16), t(8, 32))
    assert spec.program.functions["calls_helper"].param("y").direction is ParamDirection.INOUT
    prog = lower(spec.program).program
    assert _fn(prog, "fill").param("y").direction is ParamDirection.OUT
