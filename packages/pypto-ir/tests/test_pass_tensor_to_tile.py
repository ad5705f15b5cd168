"""Tensor-to-tile lowering: tensor-level statements in kernels become load/compute/store."""

from __future__ import annotations

import pytest
from pypto_ir_test_helpers import HostArray, to_tiles

import pypto.language as pl
from pypto.ir.errors import KernelError
from pypto.ir.nodes import Assign, Call, ExprStmt, TensorWrite, walk_stmts
from pypto.ir.types import MemorySpace


def t(*shape: int) -> HostArray:
    return HostArray(shape)


def _ops(fn):  # type: ignore[no-untyped-def]
    return [
        (s.value.op, s.value.attr("memory"))
        for s in walk_stmts(fn.body)
        if isinstance(s, (Assign, ExprStmt)) and isinstance(s.value, Call)
    ]


@pl.jit
def twice(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        y = pl.add(x, x)
        out[0:16, :] = pl.mul(y, 0.5)
    return out


def test_tensor_write_becomes_load_compute_store() -> None:
    prog = to_tiles(twice, t(16, 32), t(32, 32))
    k = prog.functions["twice_k0"]
    assert not any(isinstance(s, TensorWrite) for s in walk_stmts(k.body))
    ops = [op for op, _ in _ops(k)]
    assert ops == ["tile.load", "tile.add", "tile.mul", "tile.store"]  # x is loaded once


@pl.jit
def tensor_matmul(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.relu(pl.matmul(a, b))
    return c


def test_tensor_matmul_goes_through_the_cube_spaces() -> None:
    prog = to_tiles(tensor_matmul, t(16, 32), t(32, 16), t(16, 16))
    ops = _ops(prog.functions["tensor_matmul_k0"])
    assert ops == [
        ("tile.load", MemorySpace.Mat),
        ("tile.load", MemorySpace.Mat),
        ("tile.move", MemorySpace.Left),
        ("tile.move", MemorySpace.Right),
        ("tile.matmul", None),
        ("tile.move", MemorySpace.Vec),
        ("tile.relu", None),
        ("tile.store", None),
    ]


N = pl.dynamic("N")


@pl.jit
def dynamic_tensor_op(x: pl.Tensor[[N, 16], pl.FP32], out: pl.Out[pl.Tensor[[N, 16], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.exp(x)
    return out


def test_dynamic_shapes_need_explicit_tiles() -> None:
    with pytest.raises(KernelError, match="tensor-level ops need static shapes"):
        to_tiles(dynamic_tensor_op, t(64, 16), t(64, 16))


def test_a_tensor_too_big_for_one_tile_is_rejected() -> None:
    with pytest.raises(KernelError, match=r"tile it with pl\.range"):
        to_tiles(twice, t(16, 8192), t(32, 8192))


@pl.jit
def windows(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    for i in pl.range(2):
        with pl.at(level=pl.Level.CORE_GROUP):
            c[i * 16 : i * 16 + 16, :] = pl.add(a[i * 16 : i * 16 + 16, :], b[:, 0:32])
            t = pl.load(a[16:32, :], [0, 0], [16, 32])
            pl.store(t, [0, 0], c[0:16, :])
    return c


def test_tensor_windows_become_offset_loads_and_stores() -> None:
    prog = to_tiles(windows, t(32, 32), t(16, 64), t(32, 32))
    k = prog.functions["windows_k0"]
    text = str(k)
    assert "tensor.view" not in text
    assert "tile.load(a, [(i * 16), 0], memory=Vec, shape=[16, 32])" in text
    assert "tile.load(b, [0, 0], memory=Vec, shape=[16, 32])" in text
    assert "tile.load(a, [16, 0], shape=[16, 32])" in text
    assert [p.name for p in k.params][:3] == ["a", "b", "c"]
    assert [p.direction.value for p in k.params][:3] == ["In", "In", "Out"]


@pl.jit.incore
def _halve(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    y[:] = pl.mul(x, 0.5)
    return y


@pl.jit
def row_blocks(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    for i in pl.range(2):
        _halve(a[i * 16 : i * 16 + 16, :], c[i * 16 : i * 16 + 16, :])
    return c


def test_orchestration_windows_are_descriptors_passed_to_kernels(tmp_path, cpp_check) -> None:  # type: ignore[no-untyped-def]
    from pypto.ir.compile import compile_to_files

    r = compile_to_files(
        row_blocks.specialize(t(32, 8), t(32, 8)), tmp_path, contract="KERNEL", platform="a2a3sim"
    )
    assert [p.shape for p in r.metadata.kernels[0].params] == [(16, 8), (16, 8)]
    assert r.metadata.return_aliases == (1,)
    text = (tmp_path / r.metadata.orchestration.source).read_text()
    assert text.count("pypto_window(") == 3  # the helper and two windows
    cpp_check([f for f in r.files if f.suffix == ".cpp"])
