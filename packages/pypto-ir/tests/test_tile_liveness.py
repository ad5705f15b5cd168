"""Live ranges of a kernel's tiles (pypto.ir.analysis.tile_liveness) and the capacity check on
their peak: the tiles live at the same time must fit a buffer, not every tile the kernel
declares. Four [128, 128] FP32 Vec tiles are 256 KiB, more than the 192 KiB Unified Buffer;
three are exactly 192 KiB. The kernels of the capacity checks read their tiles again after the
peak, so that no result takes a dying operand's storage there (test_pass_memory_alloc.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pypto_ir_test_helpers import HostArray

import pypto.language as pl
from pypto.ir.analysis.tile_liveness import kernel_tile_ranges
from pypto.ir.compile import compile_to_files
from pypto.ir.dtypes import DataType
from pypto.ir.nodes import Function
from pypto.ir.passes import memory_alloc
from pypto.ir.passes.memory_alloc import OverlapError
from pypto.ir.pipeline import lower
from pypto.ir.platforms import (
    SIM_DECLARED_TILE_BYTES,
    BufferCapacityError,
    TileAlloc,
    buffer_peaks,
    check_kernel_buffers,
    get_platform,
)
from pypto.ir.types import MemorySpace

KIB = 1024
N = 128
TILE = N * N * 4  # one [128, 128] FP32 tile: 64 KiB


@pl.jit
def three_at_once(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="three"):
        t = pl.load(a, [0, 0], [N, N])
        u = pl.add(t, t)
        v = pl.mul(u, t)  # t, u, v live: the peak
        w = pl.sub(v, u)  # u, v, w live (t is dead)
        pl.store(w, [0, 0], out)
    return out


@pl.jit
def three_kept(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    """Three tiles live at once whatever shares: each is read again after the peak."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="kept"):
        t = pl.load(a, [0, 0], [N, N])
        sq = pl.mul(t, t)
        cube = pl.mul(sq, t)  # t, sq, cube live: the peak
        # t^3 - t^2 + t: the difference over cube (cube and sq die there), the sum over that
        pl.store(pl.add(pl.sub(cube, sq), t), [0, 0], out)
    return out


@pl.jit
def four_at_once(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="four"):
        ta = pl.load(a, [0, 0], [N, N])
        tb = pl.load(b, [0, 0], [N, N])
        s = pl.add(ta, tb)
        d = pl.sub(ta, tb)  # ta, tb, s, d live together (ta and tb are read again below)
        pl.store(pl.mul(pl.mul(s, d), pl.add(ta, tb)), [0, 0], out)
    return out


@pl.jit
def before_the_loop(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="loop"):
        x = pl.load(b, [0, 0], [N, N])
        for i in pl.range(2):
            y = pl.load(a, [i * N, 0], [N, N])
            z = pl.add(y, x)  # x's last use in the text, but the next iteration reads it again
            w = pl.add(y, z)  # y, z, w and x live (y and z are read again below)
            pl.store(pl.sub(w, pl.mul(y, z)), [i * N, 0], out)
    return out


@pl.jit
def straight_line(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    """before_the_loop's body without the loop: x is dead once z is made."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="line"):
        x = pl.load(b, [0, 0], [N, N])
        y = pl.load(a, [0, 0], [N, N])
        z = pl.add(y, x)
        w = pl.add(y, z)
        pl.store(pl.sub(w, pl.mul(y, z)), [0, 0], out)
    return out


@pl.jit
def carried_and_printed(a: pl.Tensor, cfg: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="carried"):
        acc = pl.full([8, 8], dtype=pl.FP32, value=0.0)
        for i in pl.range(4):
            acc = pl.add(acc, pl.load(a, [i * 8, 0], [8, 8]))
        shown = pl.print(acc)
        flag = pl.read(cfg, [0, 0])
        if flag > 0:
            picked = pl.add(shown, shown)
        else:
            picked = pl.mul(shown, shown)
        pl.store(picked, [0, 0], out)
    return out


def z(*shape: int) -> HostArray:
    return HostArray(shape)


def kernel(fn, *args: HostArray) -> Function:  # type: ignore[no-untyped-def]
    prog = lower(fn.specialize(*args).program).program
    (k,) = (f for f in prog.funcs if f.func_type.is_kernel)
    return k


def compile_(fn, args, tmp_path: Path, platform: str = "a2a3sim"):  # type: ignore[no-untyped-def]
    return compile_to_files(fn.specialize(*args), tmp_path / platform, contract="PROGRAM", platform=platform)


def ranges(k: Function) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    for t in kernel_tile_ranges(k):
        assert t.live is not None
        assert t.name not in out, t.name
        out[t.name] = t.live
    return out


# ----------------------------------------------------------------------------- the analysis


def test_a_tile_lives_from_its_definition_to_its_last_use() -> None:
    r = ranges(kernel(three_at_once, z(N, N), z(N, N)))
    # points: 0 t = load, 1 u = add, 2 v = mul, 3 w = sub, 4 store, 5 return
    assert r == {"t": (0, 2), "u": (1, 3), "v": (2, 3), "w": (3, 4)}


def test_a_tile_defined_before_a_loop_and_used_in_it_lives_to_the_loops_end() -> None:
    k = kernel(before_the_loop, z(2 * N, N), z(N, N), z(2 * N, N))
    r = ranges(k)
    # points: 0 x = load, 1 for, 2 y = load, 3 z = add(y, x), 4 w = add(y, z), 5 mul(y, z),
    # 6 sub, 7 store, 8 return
    assert r["x"] == (0, 7)  # read at 3, kept to the loop's last statement
    assert r["y"] == (2, 5)  # defined in the loop: its own uses only
    assert r["z"] == (3, 5)
    line = ranges(kernel(straight_line, z(N, N), z(N, N), z(N, N)))
    assert line["x"] == (0, 2)  # the same reads without the loop end at the last one


def test_loop_carried_tiles_live_across_the_loop_and_aliases_count_once() -> None:
    tiles = kernel_tile_ranges(kernel(carried_and_printed, z(32, 8), z(1, 1), z(8, 8)))
    # points: 0 acc = full, 1 for (holder acc__1), 2 _t1 = load, 3 acc__2 = add, 4 yield,
    # 5 shown = print(acc__3), 6 flag = read, 7 if (holder picked__2), 8 picked = add(shown, ..),
    # 9 yield, 10 picked__1 = mul(shown, ..), 11 yield, 12 store(picked__2), 13 return
    assert [(t.name, t.live) for t in tiles] == [
        ("acc", (0, 1)),  # the full tile: read once, by the loop header
        ("acc", (1, 10)),  # the carried holder: across the loop, then as the printed tile
        ("_t1", (2, 3)),
        ("acc", (3, 4)),  # yielded into the holder
        ("flag (pl.read)", (6, 6)),  # the 1x1 tile of pl.read: at its statement only
        ("picked", (7, 12)),  # the branch-result holder, from the if to the store
        ("picked", (8, 9)),
        ("picked", (10, 11)),
    ]  # shown = pl.print(acc) is the loop's result, which is the holder: no tile of its own


# ----------------------------------------------------------------------------- the check on the peak


def test_five_tiles_of_which_three_are_live_at_once_fit(tmp_path: Path) -> None:
    result = compile_(three_kept, (z(N, N), z(N, N)), tmp_path)
    (k,) = result.metadata.kernels
    assert k.buffer_bytes("Vec") == 3 * TILE  # the peak: exactly the Unified Buffer
    text = (result.output_dir / "kernels" / f"{k.name}.cpp").read_text()
    assert text.count(f"Tile<TileType::Vec, float, {N}, {N}, BLayout::RowMajor, -1, -1> ") == 5  # five tiles
    # placed by the allocation: the difference and the sum over cube's bytes
    assert len(set(re.findall(r"TASSIGN\(\w+, (0x[0-9a-f]+)\);", text))) == 3


def test_results_over_dying_operands_lower_the_peak(tmp_path: Path) -> None:
    (k,) = compile_(three_at_once, (z(N, N), z(N, N)), tmp_path).metadata.kernels
    # v is made over t (t's last read) and w over v: two storages where liveness alone needs three
    assert k.buffer_bytes("Vec") == 2 * TILE


def test_four_tiles_live_together_are_refused_naming_the_peak(tmp_path: Path) -> None:
    with pytest.raises(BufferCapacityError) as info:
        compile_(four_at_once, (z(N, N), z(N, N), z(N, N)), tmp_path)
    msg = str(info.value)
    assert "kernel 'four" in msg
    assert "Vec tiles need 256 KiB but the UB (Unified Buffer) of a2a3sim holds 192 KiB" in msg
    assert "at the peak, where d is defined (" in msg
    assert "4 tiles are live together: ta [128, 128] FP32 (64 KiB) at " in msg
    for name in ("tb", "s", "d"):
        assert f"; {name} [128, 128] FP32 (64 KiB) at " in msg
    assert "test_tile_liveness.py:" in msg  # each with its source position
    assert "live ranges are not analysed" not in msg
    assert not (tmp_path / "a2a3sim" / "compiled_meta.json").exists()


def test_a_tile_used_in_a_loop_counts_through_the_loop(tmp_path: Path) -> None:
    with pytest.raises(BufferCapacityError) as info:
        compile_(before_the_loop, (z(2 * N, N), z(N, N), z(2 * N, N)), tmp_path)
    msg = str(info.value)
    assert "Vec tiles need 256 KiB" in msg
    assert "at the peak, where w is defined" in msg
    assert "x [128, 128] FP32 (64 KiB) at " in msg
    # without the loop x is dead before w: three tiles at the peak, which fit
    (k,) = compile_(straight_line, (z(N, N), z(N, N), z(N, N)), tmp_path).metadata.kernels
    assert k.buffer_bytes("Vec") == 3 * TILE


def test_peak_counts_only_the_tiles_live_at_the_same_point() -> None:
    p = get_platform("a2a3sim")
    tiles = [
        TileAlloc("a", MemorySpace.Vec, DataType.FP32, (64, 64), live=(0, 2)),  # 16 KiB
        TileAlloc("b", MemorySpace.Vec, DataType.FP32, (64, 64), live=(1, 1)),
        TileAlloc("c", MemorySpace.Vec, DataType.FP32, (64, 64), live=(3, 4)),
        TileAlloc("d", MemorySpace.Vec, DataType.FP32, (1, 1), live=(4, 4)),  # 4 bytes -> 32
        TileAlloc("e", MemorySpace.Acc, DataType.FP32, (1, 1)),  # no range: live throughout
    ]
    peaks = buffer_peaks(p, tiles)
    assert peaks[MemorySpace.Vec].nbytes == 2 * 16 * KIB  # a + b at 1 (c + d at 4 is 32 bytes less)
    assert [t.name for t in peaks[MemorySpace.Vec].live] == ["a", "b"]
    assert peaks[MemorySpace.Vec].point == 1
    assert peaks[MemorySpace.Acc].nbytes == 64
    assert peaks[MemorySpace.Mat].nbytes == 0


def test_the_simulator_bounds_the_tiles_a_kernel_declares() -> None:
    # one 64 KiB tile live at a time (the peak fits), but the simulator keeps them all on its stack
    n = SIM_DECLARED_TILE_BYTES // TILE + 1
    tiles = [TileAlloc(f"t{i}", MemorySpace.Vec, DataType.FP32, (N, N), live=(i, i)) for i in range(n)]
    assert check_kernel_buffers("k", "a2a3", tiles)[MemorySpace.Vec] == TILE  # hardware: fits
    with pytest.raises(BufferCapacityError) as info:
        check_kernel_buffers("k", "a2a3sim", tiles)
    msg = str(info.value)
    assert f"kernel 'k' declares {n * 64} KiB of tiles in {n} tiles" in msg
    assert "more than the 8192 KiB the a2a3sim simulator can hold" in msg
    assert check_kernel_buffers("k", "a2a3sim", tiles[:-1])[MemorySpace.Vec] == TILE


def test_the_build_refuses_an_allocation_where_live_tiles_overlap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory_alloc, "_place", lambda busy, nbytes, align: 0)  # everything at 0
    # (v and w share t's storage, which is named by all three)
    with pytest.raises(OverlapError, match=r"kernel 'three': tiles t/v/w and u are live together"):
        compile_(three_at_once, (z(N, N), z(N, N)), tmp_path)
