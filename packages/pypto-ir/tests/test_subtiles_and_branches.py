"""Sub-tiles (slice, assemble), valid shapes with fillpad, scalar reads and run-time branches."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pypto_ir_test_helpers import HostArray

import pypto.language as pl
from pypto.ir.compile import compile_to_files
from pypto.ir.errors import KernelError
from pypto.ir.nodes import For, If, Yield, walk_stmts
from pypto.ir.pipeline import lower

Q, W = 32, 32


def t(*shape: int, dtype: str = "float32") -> HostArray:
    return HostArray(shape, dtype)


@pl.jit
def rows_into_place(x: pl.Tensor, src: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.load(x, [0, 0], [16, 32])
        part = pl.load(src, [0, 0], [16, 8])
        for j in pl.range(4):
            piece = pl.slice(part, [4, 8], [j * 4, 0])
            acc = pl.tile.assemble(acc, piece, [j * 4, j * 8])
        pl.store(acc, [0, 0], y)
    return y


@pl.jit
def ragged_tail(data: pl.Tensor, cfg: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        blocks = pl.cast(pl.read(cfg, [0]), pl.INDEX)
        tail = pl.cast(pl.read(cfg, [1]), pl.INDEX)
        for i in pl.range(blocks):
            if i == blocks - 1:
                n = tail
            else:
                n = W
            s = pl.load(data, [i * Q, 0], [Q, W], valid_shape=[Q, n])
            padded = pl.tile.fillpad(s, pad_value=pl.PadValue.min)
            pl.store(pl.mul(padded, 2.0), [i * Q, 0], out)
    return out


@pl.jit
def host_branch(x: pl.Tensor, cfg: pl.Tensor, out: pl.Out[pl.Tensor], mode: pl.INT32):
    flag = pl.read(cfg, [0])
    if mode > 0:  # a jit scalar: decided when specialising
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.exp(x)
    else:
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.neg(x)
    if flag == 1:  # data read on the host: a run-time branch in the orchestration
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.relu(out)
    return out


def test_slice_and_assemble_lower_with_loop_carried_tile() -> None:
    prog = lower(rows_into_place.specialize(t(16, 32), t(16, 8), t(16, 32)).program).program
    loop = next(s for s in walk_stmts(prog.functions["rows_into_place_k0"].body) if isinstance(s, For))
    assert len(loop.iter_args) == 1
    assert "tile.assemble" in str(prog)
    assert "tile.slice" in str(prog)


def test_runtime_if_merges_names_into_results() -> None:
    prog = lower(ragged_tail.specialize(t(64, W), t(2, dtype="int64"), t(64, W)).program).program
    k = prog.functions["ragged_tail_k0"]
    branch = next(s for s in walk_stmts(k.body) if isinstance(s, If))
    assert [r.name.split("__")[0] for r in branch.results] == ["n"]
    assert isinstance(branch.then_body[-1], Yield)
    assert isinstance(branch.else_body[-1], Yield)


def test_compile_time_if_picks_one_branch() -> None:
    on = lower(host_branch.specialize(t(8, 8), t(1, dtype="int32"), t(8, 8), 1).program).program
    off = lower(host_branch.specialize(t(8, 8), t(1, dtype="int32"), t(8, 8), 0).program).program
    assert "tile.exp" in str(on)
    assert "tile.exp" not in str(off)
    assert "tile.neg" in str(off)
    assert any(isinstance(s, If) for s in walk_stmts(on.entry_function.body))


@pl.jit
def mismatched_branches(x: pl.Tensor, cfg: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        v = pl.read(cfg, [0])
        a = pl.load(x, [0, 0], [8, 8])
        if v > 0:
            a = pl.load(x, [0, 0], [4, 8])
        pl.store(a, [0, 0], out)
    return out


def test_branches_must_agree_on_types() -> None:
    with pytest.raises(KernelError, match="both branches must give it the same type"):
        lower(mismatched_branches.specialize(t(8, 8), t(1, dtype="int32"), t(8, 8)).program)


def test_generated_sources_compile(tmp_path: Path, cpp_check) -> None:  # type: ignore[no-untyped-def]
    files: list[Path] = []
    for name, spec in {
        "a": rows_into_place.specialize(t(16, 32), t(16, 8), t(16, 32)),
        "b": ragged_tail.specialize(t(64, W), t(2, dtype="int64"), t(64, W)),
        "c": host_branch.specialize(t(8, 8), t(1, dtype="int32"), t(8, 8), 1),
    }.items():
        r = compile_to_files(spec, tmp_path / name, contract="PROGRAM", platform="a2a3sim")
        files += [f for f in r.files if f.suffix == ".cpp"]
    text = "\n".join(f.read_text() for f in files)
    assert "TFILLPAD(" in text
    assert "TINSERT(" in text
    assert "host read of tensor data" in text
    cpp_check(files)


def test_host_reads_are_rejected_for_host_build_graph_kernels(tmp_path: Path) -> None:
    from pypto.ir.contract import ContractError

    spec = host_branch.specialize(t(8, 8), t(1, dtype="int32"), t(8, 8), 1)
    with pytest.raises(ContractError, match=r"host_build_graph runtime cannot read .* pl\.read\(cfg\) at "):
        compile_to_files(
            spec, tmp_path / "k", contract="KERNEL", platform="a2a3sim", runtime="host_build_graph"
        )
    compile_to_files(spec, tmp_path / "t", contract="KERNEL", platform="a2a3sim")


@pl.jit
def write_elements(flags: pl.Out[pl.Tensor], x: pl.Tensor, out: pl.Out[pl.Tensor]):
    pl.write(flags, [1], 7)  # host write: no kernel uses flags
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.exp(x)
        pl.write(out, [0, 0], 2.5)  # kernel write, after the store in the same task
    return out


@pl.jit
def racy_read(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.exp(x)
    v = pl.read(out, [0, 0])
    if v > 0:
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.neg(out)
    return out


def test_element_writes_in_kernels_and_on_the_host(tmp_path: Path, cpp_check) -> None:  # type: ignore[no-untyped-def]
    spec = write_elements.specialize(t(4, dtype="int32"), t(8, 8), t(8, 8))
    r = compile_to_files(spec, tmp_path / "w", contract="PROGRAM", platform="a2a3sim")
    text = "\n".join(f.read_text() for f in r.files if f.suffix == ".cpp")
    assert "host write of tensor data" in text
    assert re.search(r"Tile<TileType::Vec, float, 1, 8, BLayout::RowMajor, -1, -1> (one\d+)\(1, 1\);", text)
    assert [p.direction.value for p in r.metadata.kernels[0].params] == ["In", "Out"]
    cpp_check([f for f in r.files if f.suffix == ".cpp"])


def test_host_access_racing_with_tasks_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(
        KernelError, match=r"pl\.read on out reads it on the host, but kernels .* use it \(InOut, Out\)"
    ):
        compile_to_files(
            racy_read.specialize(t(8, 8), t(8, 8)), tmp_path / "r", contract="PROGRAM", platform="a2a3sim"
        )


@pl.jit
def ssa_style(x: pl.Tensor, cfg: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        k = pl.read(cfg, [0])
        if k > 0:
            n = pl.yield_(8)
        else:
            n = pl.yield_(4)
        base = pl.load(x, [0, 0], [8, 8])
        for _i, (acc,) in pl.range(n, init_values=(base,)):
            acc_next = pl.yield_(pl.add(acc, base))
        pl.store(acc_next, [0, 0], out)
    return out


def test_yield_in_if_branches_and_loop_results_named_by_the_yield() -> None:
    prog = lower(ssa_style.specialize(t(8, 8), t(1, dtype="int32"), t(8, 8)).program).program
    k = prog.functions["ssa_style_k0"]
    branch = next(s for s in walk_stmts(k.body) if isinstance(s, If))
    assert len(branch.results) == 1
    loop = next(s for s in walk_stmts(k.body) if isinstance(s, For))
    assert loop.stop == branch.results[0]
    assert len(loop.results) == 1
