"""Tensor-level pl.assemble, values crossing pl.at scopes and blocked matmuls, at the IR level:
what the passes produce, the directions they derive and the errors they raise."""

from __future__ import annotations

from pathlib import Path

import pytest
from pypto_ir_test_helpers import HostArray
from pypto_ir_test_programs import tile_escapes

import pypto.language as pl
from pypto.ir.compile import compile_to_files
from pypto.ir.contract import Contract
from pypto.ir.errors import KernelError
from pypto.ir.nodes import Assign, Call, CallFunc, ExprStmt, For, walk_stmts
from pypto.ir.param_info import ParamDirection
from pypto.ir.passes.matmul_tiling import CAPACITY, needs_blocking
from pypto.ir.pipeline import lower
from pypto.ir.platforms import get_platform
from pypto.ir.types import MemorySpace, TensorType, TileType


def t(*shape: int, dtype: str = "float32") -> HostArray:
    return HostArray(shape, dtype)


def _kernel(program, name=None):  # type: ignore[no-untyped-def]
    ks = [f for f in program.funcs if f.func_type.is_kernel and (name is None or f.name == name)]
    assert len(ks) == 1
    return ks[0]


def _ops(fn) -> list[str]:  # type: ignore[no-untyped-def]
    return [
        ("stmt " if isinstance(s, ExprStmt) else "") + s.value.op
        for s in walk_stmts(fn.body)
        if isinstance(s, (Assign, ExprStmt)) and isinstance(s.value, Call)
    ]


@pl.jit
def accumulate(a: pl.Tensor, c: pl.InOut[pl.Tensor]):
    for _ in pl.range(2):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="acc"):
            c = pl.assemble(c, pl.exp(a), [0, 0], atomic=pl.AtomicType.Add)
    return c


@pl.jit
def overwrite(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="put"):
        c = pl.assemble(c, pl.exp(a), [8, 0])
    return c


def test_atomic_assemble_reads_the_window_so_the_target_is_in_out() -> None:
    prog = lower(accumulate.specialize(t(8, 16), t(8, 16)).program).program
    k = _kernel(prog, "acc")
    assert k.param("c").direction is ParamDirection.INOUT
    ops = _ops(k)
    # the source, then the window's contents, their sum, the store
    assert ops == ["tile.load", "tile.exp", "tile.load", "tile.add", "tile.store"]
    plain = _kernel(lower(overwrite.specialize(t(8, 16), t(16, 16)).program).program, "put")
    assert plain.param("c").direction is ParamDirection.OUT
    assert _ops(plain) == ["tile.load", "tile.exp", "tile.store"]


@pl.jit
def tile_atomic(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [8, 16])
        y = pl.assemble(x, x, [0, 0], atomic=pl.AtomicType.Add)
        pl.store(y, [0, 0], c)
    return c


@pl.jit
def window_overflow(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c = pl.assemble(c, pl.neg(a), [10, 0])
    return c


@pl.jit
def bad_atomic(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c = pl.assemble(c, pl.neg(a), [0, 0], atomic="add")
    return c


def test_assemble_errors_name_what_is_wrong() -> None:
    with pytest.raises(KernelError, match=r"atomic=pl\.AtomicType\.Add needs a tensor target"):
        tile_atomic.specialize(t(8, 16), t(8, 16))
    with pytest.raises(KernelError, match=r"the window \[10, 18\) on axis 0 exceeds the tensor extent 16"):
        window_overflow.specialize(t(8, 16), t(16, 16))
    with pytest.raises(KernelError, match=r"atomic must be a pl\.AtomicType"):
        bad_atomic.specialize(t(8, 16), t(8, 16))


@pl.jit
def staged(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="first"):
        s = pl.add(a, b)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="second"):
        out[:] = pl.mul(s, s)
    return out


def test_a_value_crossing_scopes_goes_through_an_intermediate_tensor() -> None:
    prog = lower(staged.specialize(t(16, 16), t(16, 16), t(16, 16)).program).program
    entry = prog.entry_function
    creates = [s for s in entry.body if isinstance(s, Assign) and isinstance(s.value, Call)]
    assert [c.value.op for c in creates] == ["tensor.create"]  # type: ignore[union-attr]
    spill = creates[0].var
    calls = [s.value for s in entry.body if isinstance(s, ExprStmt) and isinstance(s.value, CallFunc)]
    assert [c.callee for c in calls] == ["first", "second"]
    first, second = calls
    assert spill in first.args
    assert spill in second.args
    assert first.directions[first.args.index(spill)] is ParamDirection.OUT
    assert second.directions[second.args.index(spill)] is ParamDirection.IN


def test_a_tile_still_does_not_outlive_its_scope() -> None:
    with pytest.raises(KernelError, match=r"a pl\.at scope cannot use 'x' of type Tile"):
        lower(tile_escapes.specialize(t(16, 16), t(16, 16)).program)


def test_blocking_starts_where_one_tile_set_no_longer_fits() -> None:
    small = (TensorType((128, 128), pl.FP32), TensorType((128, 128), pl.FP32))  # 64 KiB each
    assert not needs_blocking(*small)
    wide = (TensorType((128, 64), pl.FP32), TensorType((64, 384), pl.FP32))  # Acc 192 KiB
    assert needs_blocking(*wide)
    deep = (TensorType((64, 512), pl.FP16), TensorType((512, 64), pl.FP16))  # Left 64 KiB: fits
    assert not needs_blocking(*deep)
    deeper = (TensorType((64, 1024), pl.FP16), TensorType((1024, 64), pl.FP16))
    assert needs_blocking(*deeper)
    assert CAPACITY[MemorySpace.Acc] == min(
        get_platform(p).capacity(MemorySpace.Acc) for p in ("a2a3sim", "a5sim")
    )


@pl.jit
def big(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="blocked"):
        out[:] = pl.matmul(a, b)
    return out


def test_blocked_nest_accumulates_in_place_and_fits_the_buffers(tmp_path: Path) -> None:
    args = (t(256, 512), t(512, 384), t(256, 384))
    k = _kernel(lower(big.specialize(*args).program).program, "blocked")
    loops = [s for s in walk_stmts(k.body) if isinstance(s, For)]
    assert len(loops) == 3  # block rows, block columns, the K steps after the first
    assert all(not loop.iter_args for loop in loops)  # nothing carried: the Acc tile is updated in place
    ops = _ops(k)
    assert "stmt tile.matmul_acc" in ops
    assert ops.count("tile.matmul") == 1
    assert ops[-1] == "stmt tile.store"  # each block from Acc straight to its window
    tiles = [
        s.var.type for s in walk_stmts(k.body) if isinstance(s, Assign) and isinstance(s.var.type, TileType)
    ]
    assert max(tt.shape[0] * tt.shape[1] for tt in tiles) < 256 * 384
    result = compile_to_files(
        big.specialize(*args).program, tmp_path, contract=Contract.PROGRAM, platform="a2a3sim"
    )
    info = result.metadata.kernels[0]
    plat = get_platform("a2a3sim")
    for space in ("Vec", "Mat", "Left", "Right", "Acc"):
        used = info.buffer_bytes(space)
        assert used is not None
        assert used <= plat.capacity(MemorySpace(space))


@pl.jit
def big_in_branches(a: pl.Tensor, b: pl.Tensor, cfg: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="branches"):
        c = pl.matmul(a, b)
        if pl.tensor.read(cfg, [0, 0]) > 0:  # a run-time condition
            out = pl.assemble(out, pl.exp(c), [0, 0])
        else:
            out = pl.assemble(out, pl.neg(c), [0, 0])
    return out


def test_a_blocked_product_read_in_both_branches_is_computed_in_each() -> None:
    # its scratch tile from the then branch is not defined in the else branch (the verifier checks)
    args = (t(128, 256), t(256, 128), t(1, 1), t(128, 128))
    k = _kernel(lower(big_in_branches.specialize(*args).program).program, "branches")
    assert _ops(k).count("tile.matmul") == 2


@pl.jit
def odd(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.matmul(a, b)
    return out


def test_a_product_that_cannot_be_halved_into_blocks_is_an_error() -> None:
    with pytest.raises(
        KernelError, match=r"pl.matmul of \[255, 77\] x \[77, 255\] cannot be split into blocks"
    ):
        lower(odd.specialize(t(255, 77), t(77, 255), t(255, 255)).program)


def tile_minus_tensor(rows: int) -> pl.JITFunction:
    """``out = load(x, [rows, 16]) - x``: a tile op with a tensor operand."""

    @pl.jit
    def tile_then_tensor(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [0, 0], [rows, 16])
            out[:] = pl.sub(t, x)
        return out

    return tile_then_tensor


def test_a_tensor_operand_makes_a_tile_op_tensor_level() -> None:
    prog = lower(tile_minus_tensor(16).specialize(t(16, 16), t(16, 16)).program).program
    assert _ops(_kernel(prog)) == ["tile.load", "tile.load", "tile.sub", "stmt tile.store"]
    with pytest.raises(KernelError, match=r"operand shapes differ: \[8, 16\] vs \[16, 16\]"):
        tile_minus_tensor(8).specialize(t(16, 16), t(16, 16))
