"""The platform table and the on-chip capacity check: a kernel whose tiles live at the same time
exceed its platform's UB / L1 / L0A / L0B / L0C is refused at compile time with the numbers, and
every compiled kernel reports its peak buffer use per memory space in compiled_meta.json (an
optional schema-3 field). test_tile_liveness.py has the live ranges themselves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pypto_ir_test_helpers import HostArray

import pypto.language as pl
from pypto.ir import contract, platforms
from pypto.ir.compile import compile_to_files
from pypto.ir.dtypes import DataType
from pypto.ir.metadata import ArtifactMetadata, KernelInfo, MetadataError, read_metadata
from pypto.ir.platforms import BufferCapacityError, MemorySpace, Platform, TileAlloc, check_kernel_buffers
from pypto_testing.forms import cube_matmul

KIB = 1024

# ----------------------------------------------------------------------------- kernels

BIG_R, BIG_C = 2048, 1024  # one [2048, 1024] FP32 tile: 8 MiB (it used to crash the simulator)
LN_ROWS, LN_COLS, LN_CHUNK = 32, 512, 8


@pl.jit
def huge_tile(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="huge"):
        t = pl.load(a, [0, 0], [BIG_R, BIG_C])
        pl.store(pl.add(t, t), [0, 0], out)
    return out


@pl.jit
def layer_norm_whole(x: pl.Tensor, gamma: pl.Tensor, beta: pl.Tensor, out: pl.Out[pl.Tensor]):
    """LayerNorm of a [32, 512] FP32 block in one pass: seven 64 KiB vector tiles."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="layer_norm"):
        tx = pl.load(x, [0, 0], [LN_ROWS, LN_COLS])
        tg = pl.load(gamma, [0, 0], [1, LN_COLS])
        tb = pl.load(beta, [0, 0], [1, LN_COLS])
        tmp = pl.create_tile([LN_ROWS, LN_COLS], dtype=pl.FP32, target_memory=pl.MemorySpace.Vec)
        s: pl.Tile[[LN_ROWS, 1], pl.FP32] = pl.row_sum(tx, tmp)
        centered = pl.row_expand_sub(tx, pl.mul(s, 1.0 / LN_COLS))
        v: pl.Tile[[LN_ROWS, 1], pl.FP32] = pl.row_sum(pl.mul(centered, centered), tmp)
        std = pl.sqrt(pl.add(pl.mul(v, 1.0 / LN_COLS), 1e-5))
        y = pl.col_expand_add(pl.col_expand_mul(pl.row_expand_div(centered, std), tg), tb)
        pl.store(y, [0, 0], out)
    return out


@pl.jit
def layer_norm_chunked(x: pl.Tensor, gamma: pl.Tensor, beta: pl.Tensor, out: pl.Out[pl.Tensor]):
    """The same LayerNorm over 8-row chunks: fits the 192 KiB Unified Buffer."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="layer_norm"):
        tg = pl.load(gamma, [0, 0], [1, LN_COLS])
        tb = pl.load(beta, [0, 0], [1, LN_COLS])
        tmp = pl.create_tile([LN_CHUNK, LN_COLS], dtype=pl.FP32, target_memory=pl.MemorySpace.Vec)
        for i in pl.range(LN_ROWS // LN_CHUNK):
            tx = pl.load(x, [i * LN_CHUNK, 0], [LN_CHUNK, LN_COLS])
            s: pl.Tile[[LN_CHUNK, 1], pl.FP32] = pl.row_sum(tx, tmp)
            centered = pl.row_expand_sub(tx, pl.mul(s, 1.0 / LN_COLS))
            v: pl.Tile[[LN_CHUNK, 1], pl.FP32] = pl.row_sum(pl.mul(centered, centered), tmp)
            std = pl.sqrt(pl.add(pl.mul(v, 1.0 / LN_COLS), 1e-5))
            y = pl.col_expand_add(pl.col_expand_mul(pl.row_expand_div(centered, std), tg), tb)
            pl.store(y, [i * LN_CHUNK, 0], out)
    return out


ACC_N = 384  # a [128, 384] FP32 accumulator: 192 KiB, beyond a2a3's L0C (128 KiB), within a5's (256 KiB)


wide_matmul = cube_matmul(128, 64, ACC_N, "wide_mm")
small_matmul = cube_matmul(16, 16, 16, "small_mm")


@pl.jit
def carried(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    """A loop-carried tile, a scalar read and an element write: each declares a tile."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="carried"):
        acc = pl.full([8, 8], dtype=pl.FP32, value=0.0)
        for i in pl.range(4):
            acc = pl.add(acc, pl.load(a, [i * 8, 0], [8, 8]))
        pl.store(acc, [0, 0], out)
        v = pl.read(a, [0, 0])
        pl.write(out, [1, 1], v)
    return out


def z(*shape: int) -> HostArray:
    return HostArray(shape)


def compile_(fn, args, tmp_path: Path, platform: str = "a2a3sim"):  # type: ignore[no-untyped-def]
    return compile_to_files(fn.specialize(*args), tmp_path / platform, contract="PROGRAM", platform=platform)


LN_ARGS = (z(LN_ROWS, LN_COLS), z(1, LN_COLS), z(1, LN_COLS), z(LN_ROWS, LN_COLS))

# ----------------------------------------------------------------------------- the table


def test_one_platform_table_with_the_public_capacities() -> None:
    assert contract.PLATFORMS == platforms.PLATFORMS == ("a2a3sim", "a5sim", "a2a3", "a5")
    a2 = platforms.get_platform("a2a3")
    caps = {s: a2.capacity(s) for s in platforms.TILE_SPACES}
    assert caps == {
        MemorySpace.Vec: 192 * KIB,
        MemorySpace.Mat: 512 * KIB,
        MemorySpace.Left: 64 * KIB,
        MemorySpace.Right: 64 * KIB,
        MemorySpace.Acc: 128 * KIB,
        MemorySpace.Bias: 1 * KIB,
    }
    a5 = platforms.get_platform("a5")
    assert a5.capacity(MemorySpace.Acc) == 256 * KIB
    assert a5.capacity(MemorySpace.Bias) == 4 * KIB
    assert a5.capacity(MemorySpace.Vec) == 192 * KIB  # unconfirmed publicly: the a2a3 figure
    for name, p in platforms.PLATFORM_TABLE.items():
        assert isinstance(p, Platform)
        assert p.name == name
        hw = platforms.get_platform(p.hardware)
        assert p.simulated == name.endswith("sim")
        for s in platforms.TILE_SPACES:  # a simulated platform has its hardware's buffers
            assert p.capacity(s) == hw.capacity(s)
            assert p.alignment(s) == hw.alignment(s)
        assert contract.device_kind(name) is (
            contract.DeviceKind.SIM if p.simulated else contract.DeviceKind.ONBOARD
        )
    with pytest.raises(dataclasses_frozen()):
        a2.ub_bytes = 1  # type: ignore[misc]
    with pytest.raises(ValueError, match="expected one of a2a3sim, a5sim, a2a3, a5"):
        platforms.get_platform("a3")
    with pytest.raises(ValueError, match="expected one of"):
        contract.parse_platform(None)


def dataclasses_frozen() -> type[Exception]:
    import dataclasses

    return dataclasses.FrozenInstanceError


def test_usage_rounds_each_tile_to_its_buffer_alignment() -> None:
    p = platforms.get_platform("a2a3sim")
    tiles = [
        TileAlloc("a", MemorySpace.Vec, DataType.FP32, (1, 1)),  # 4 bytes -> 32
        TileAlloc("b", MemorySpace.Vec, DataType.FP16, (16, 16)),  # 512
        TileAlloc("c", MemorySpace.Left, DataType.FP16, (1, 16)),  # 32 -> 512
        TileAlloc("d", MemorySpace.Acc, DataType.FP32, (1, 1)),  # 4 -> 64
        TileAlloc("e", MemorySpace.Mat, DataType.FP4E2M1, (1, 3)),  # 1.5 -> 2 -> 32
    ]
    used = platforms.buffer_usage(p, tiles)
    assert used == {
        MemorySpace.Vec: 32 + 512,
        MemorySpace.Mat: 32,
        MemorySpace.Left: 512,
        MemorySpace.Right: 0,
        MemorySpace.Acc: 64,
        MemorySpace.Bias: 0,
    }


def test_exactly_full_is_accepted_one_block_more_is_refused() -> None:
    full = [TileAlloc(f"t{i}", MemorySpace.Vec, DataType.FP32, (64, 64)) for i in range(12)]  # 12 x 16 KiB
    assert check_kernel_buffers("k", "a2a3", full)[MemorySpace.Vec] == 192 * KIB
    with pytest.raises(BufferCapacityError, match=r"Vec tiles need 196640 bytes \(192\.03 KiB\) but the UB"):
        check_kernel_buffers("k", "a2a3", [*full, TileAlloc("one", MemorySpace.Vec, DataType.INT8, (1, 1))])


# ----------------------------------------------------------------------------- compile-time refusals


def test_a_tile_the_simulator_could_not_hold_is_refused_with_the_numbers(tmp_path: Path) -> None:
    with pytest.raises(BufferCapacityError) as info:
        compile_(huge_tile, (z(BIG_R, BIG_C), z(BIG_R, BIG_C)), tmp_path)
    msg = str(info.value)
    assert "kernel 'huge" in msg
    assert "Vec tiles need 8192 KiB" in msg  # the sum is made over t, which it reads last
    assert "UB (Unified Buffer) of a2a3sim holds 192 KiB" in msg
    assert "1 tile is live: t [2048, 1024] FP32 (8192 KiB)" in msg
    assert "test_platform_buffers.py" in msg  # points at the largest tile's line
    assert "t = pl.load(a, [0, 0], [BIG_R, BIG_C])" in msg
    assert not (tmp_path / "a2a3sim" / "compiled_meta.json").exists()  # nothing is written


def test_layer_norm_beyond_the_unified_buffer_is_refused_and_chunked_fits(tmp_path: Path) -> None:
    with pytest.raises(BufferCapacityError) as info:
        compile_(layer_norm_whole, LN_ARGS, tmp_path)
    msg = str(info.value)
    assert "kernel 'layer_norm" in msg
    assert "does not fit the on-chip buffers of a2a3sim" in msg
    assert "but the UB (Unified Buffer) of a2a3sim holds 192 KiB" in msg
    assert "[32, 512] FP32 (64 KiB)" in msg
    # the peak: where the squares' row sum v is made, x's storage (centered is made over x, which
    # it reads last), gamma, beta, the scratch tile, the squares and v are live (64 + 2 + 2 + 64 +
    # 64 + 0.125 KiB), each named with its position (a shared storage by its first tile)
    assert "at the peak, where v is defined (" in msg
    assert "6 tiles are live together: tx [32, 512] FP32 (64 KiB) at " in msg
    assert "; tmp [32, 512] FP32 (64 KiB) at " in msg
    assert "; _t2 [32, 512] FP32 (64 KiB) at " in msg
    assert "Vec tiles need 200832 bytes (196.12 KiB)" in msg
    result = compile_(layer_norm_chunked, LN_ARGS, tmp_path)
    (k,) = result.metadata.kernels
    # the chunked peak, also where v is made: gamma and beta (2 KiB each), the [8, 512] scratch
    # tile, chunk (centered over it) and squares (16 KiB each), and the [8, 1] row sum v (32 B)
    assert k.buffer_bytes("Vec") == 2 * 2 * KIB + 3 * 16 * KIB + 32
    assert k.buffer_bytes("Acc") == 0


def test_acc_tiles_are_checked_against_each_platforms_l0c(tmp_path: Path) -> None:
    args = (z(128, 64), z(64, ACC_N), z(128, ACC_N))
    with pytest.raises(
        BufferCapacityError, match=r"Acc tiles need 192 KiB but the L0C of a2a3sim holds 128 KiB"
    ):
        compile_(wide_matmul, args, tmp_path, "a2a3sim")
    with pytest.raises(
        BufferCapacityError, match=r"Right tiles need 96 KiB but the L0B of a5sim holds 64 KiB"
    ):
        compile_(wide_matmul, args, tmp_path, "a5sim")


@pl.jit
def biased(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, y: pl.Out[pl.Tensor]):
    """A [16, 512] product plus a [1, 512] FP32 bias row: 2 KiB in the bias table."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="biased"):
        ta = pl.load(a, [0, 0], [16, 16], target_memory=pl.MemorySpace.Mat)
        tb = pl.load(b, [0, 0], [16, 512], target_memory=pl.MemorySpace.Mat)
        tbias = pl.load(bias, [0, 0], [1, 512], target_memory=pl.MemorySpace.Mat)
        pl.store(pl.matmul_bias(ta, tb, tbias), [0, 0], y)
    return y


def test_bias_tiles_are_checked_against_each_platforms_bias_table(tmp_path: Path) -> None:
    args = (z(16, 16), z(16, 512), z(1, 512), z(16, 512))
    with pytest.raises(
        BufferCapacityError, match=r"Bias tiles need 2 KiB but the BT \(bias table\) of a2a3sim holds 1 KiB"
    ):
        compile_(biased, args, tmp_path, "a2a3sim")
    (k,) = compile_(biased, args, tmp_path, "a5sim").metadata.kernels  # a5's table holds 4 KiB
    assert k.buffer_bytes("Bias") == 2 * KIB


def test_usage_in_the_metadata_counts_every_space(tmp_path: Path) -> None:
    result = compile_(small_matmul, (z(16, 16), z(16, 16), z(16, 16)), tmp_path)
    (k,) = read_metadata(result.output_dir).kernels
    assert k.core_type == "AIC"
    # Mat: two [16, 16] FP32 of 1 KiB, one live at a time (a's is moved to L0A before b's is
    # loaded); Left/Right: 1 KiB each; Acc: 1 KiB; no Vec tile.
    assert dict(k.buffer_usage) == {
        "Vec": 0,
        "Mat": 1024,
        "Left": 1024,
        "Right": 1024,
        "Acc": 1024,
        "Bias": 0,
    }
    raw = json.loads((result.output_dir / "compiled_meta.json").read_text())
    assert raw["kernels"][0]["buffer_usage"] == {
        "Vec": 0,
        "Mat": 1024,
        "Left": 1024,
        "Right": 1024,
        "Acc": 1024,
        "Bias": 0,
    }


def test_loop_carried_read_and_write_tiles_are_counted(tmp_path: Path) -> None:
    result = compile_(carried, (z(32, 8), z(8, 8)), tmp_path)
    (k,) = result.metadata.kernels
    # every storage is counted where it is live: full [8, 8], the loop holder and the add share
    # one (256: the memory-allocation pass gives a carried value one address), the load (256),
    # the 1x1 tiles of read and write (padded to one 32-byte row each); the peak is in the loop
    # body, where the carried value and the load are live together
    assert k.buffer_bytes("Vec") == 2 * 256
    text = (result.output_dir / "kernels" / f"{k.name}.cpp").read_text()
    assert text.count("Tile<TileType::Vec, float, 8, 8, BLayout::RowMajor, -1, -1> ") == 4
    assert text.count("Tile<TileType::Vec, float, 1, 8, BLayout::RowMajor, -1, -1> ") == 2


# ----------------------------------------------------------------------------- metadata compatibility


def _meta_json(tmp_path: Path) -> dict[str, object]:
    result = compile_(small_matmul, (z(16, 16), z(16, 16), z(16, 16)), tmp_path)
    return json.loads((result.output_dir / "compiled_meta.json").read_text())  # type: ignore[no-any-return]


def test_schema3_metadata_without_buffer_usage_still_loads(tmp_path: Path) -> None:
    data = _meta_json(tmp_path)
    del data["kernels"][0]["buffer_usage"]  # type: ignore[index]
    meta = ArtifactMetadata.from_json(data)
    assert meta.kernels[0].buffer_usage == ()
    assert meta.kernels[0].buffer_bytes("Vec") is None
    assert "buffer_usage" not in meta.to_json()["kernels"][0]


@pytest.mark.parametrize(
    ("usage", "error"),
    [
        ({"Vec": -1}, "expected an int >= 0"),
        ({"Vec": True}, "expected an int >= 0"),
        ({"Vec": 1.5}, "expected an int >= 0"),
        ({"UB": 1}, "unknown memory space 'UB'"),
        ([["Vec", 1]], "expected dict, got list"),
        ("Vec", "expected dict, got str"),
    ],
)
def test_invalid_buffer_usage_is_rejected(tmp_path: Path, usage: object, error: str) -> None:
    data = _meta_json(tmp_path)
    data["kernels"][0]["buffer_usage"] = usage  # type: ignore[index]
    with pytest.raises(MetadataError, match=error):
        ArtifactMetadata.from_json(data)


def test_kernel_info_canonicalises_usage() -> None:
    k = KernelInfo("k", 0, "AIV", "kernels/k.cpp", "kernel_entry", (), (("Acc", 64), ("Vec", 32)))
    assert k.buffer_usage == (("Vec", 32), ("Mat", 0), ("Left", 0), ("Right", 0), ("Acc", 64), ("Bias", 0))
    assert KernelInfo("k", 0, "AIV", "kernels/k.cpp", "kernel_entry", ()).buffer_usage == ()
    with pytest.raises(MetadataError, match="given twice"):
        KernelInfo("k", 0, "AIV", "kernels/k.cpp", "kernel_entry", (), (("Vec", 1), ("Vec", 2)))
    with pytest.raises(ValueError, match="expected one of Vec"):
        k.buffer_bytes("L1")
