"""Programs in the style of PyPTO's beginner and intermediate teaching examples: each one
specialises, lowers through the whole pipeline, compiles to files and the generated C++
compiles against simpler's headers."""

from __future__ import annotations

from pathlib import Path

import pytest
from pypto_ir_test_helpers import HostArray

import pypto.language as pl
from pypto.ir.compile import _compile_to_files
from pypto.ir.metadata import read_metadata

ROWS, COLS, TILE = 256, 64, 64


@pl.jit
def add_one_tile(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [64, 64])
        y = pl.load(b, [0, 0], [64, 64])
        pl.store(pl.add(x, y), [0, 0], c)
    return c


@pl.jit
def add_chunks(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(ROWS // TILE):
            x = pl.load(a, [i * TILE, 0], [TILE, COLS])
            y = pl.load(b, [i * TILE, 0], [TILE, COLS])
            pl.store(pl.mul(x, y), [i * TILE, 0], c)
    return c


@pl.jit
def scale_sum(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    """(a + b) * 2 with a tile-scalar op."""
    with pl.at(level=pl.Level.CORE_GROUP):
        s = pl.add(pl.load(a, [0, 0], [32, 32]), pl.load(b, [0, 0], [32, 32]))
        pl.store(pl.mul(s, 2.0), [0, 0], c)
    return c


@pl.jit
def silu_like(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [16, 64])
        d = pl.add(pl.exp(pl.mul(t, -1.0)), 1.0)
        pl.store(pl.mul(t, pl.recip(d)), [0, 0], out)
    return out


@pl.jit
def cube_matmul(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        l1a = pl.load(a, [0, 0], [32, 32], target_memory=pl.MemorySpace.Mat)
        l1b = pl.load(b, [0, 0], [32, 32], target_memory=pl.MemorySpace.Mat)
        left = pl.move(l1a, target_memory=pl.MemorySpace.Left)
        right = pl.move(l1b, target_memory=pl.MemorySpace.Right)
        pl.store(pl.matmul(left, right), [0, 0], c)
    return c


@pl.jit
def split_k(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        a0 = pl.move(
            pl.load(a, [0, 0], [32, 16], target_memory=pl.MemorySpace.Mat), target_memory=pl.MemorySpace.Left
        )
        b0 = pl.move(
            pl.load(b, [0, 0], [16, 32], target_memory=pl.MemorySpace.Mat), target_memory=pl.MemorySpace.Right
        )
        acc: pl.Tile[[32, 32], pl.FP32] = pl.matmul(a0, b0)
        a1 = pl.move(
            pl.load(a, [0, 16], [32, 16], target_memory=pl.MemorySpace.Mat), target_memory=pl.MemorySpace.Left
        )
        b1 = pl.move(
            pl.load(b, [16, 0], [16, 32], target_memory=pl.MemorySpace.Mat),
            target_memory=pl.MemorySpace.Right,
        )
        acc = pl.matmul_acc(acc, a1, b1)
        pl.store(acc, [0, 0], c)
    return c


@pl.jit
def row_softmax(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [32, 64])
        tmp = pl.create_tile([32, 64], dtype=pl.FP32, target_memory=pl.MemorySpace.Vec)
        m: pl.Tile[[32, 1], pl.FP32] = pl.row_max(t, tmp)
        e = pl.exp(pl.row_expand_sub(t, m))
        s: pl.Tile[[32, 1], pl.FP32] = pl.row_sum(e, tmp)
        pl.store(pl.row_expand_div(e, s), [0, 0], out)
    return out


@pl.jit
def rms_norm(x: pl.Tensor, gamma: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        tx = pl.load(x, [0, 0], [16, 64])
        tg = pl.load(gamma, [0, 0], [1, 64])
        tmp = pl.create_tile([16, 64], dtype=pl.FP32, target_memory=pl.MemorySpace.Vec)
        ms: pl.Tile[[16, 1], pl.FP32] = pl.row_sum(pl.mul(tx, tx), tmp)
        flat: pl.Tile[[1, 16], pl.FP32] = pl.reshape(ms, [1, 16])
        flat = pl.sqrt(pl.add(pl.mul(flat, 1.0 / 64), 1e-6))
        rms = pl.reshape(flat, [16, 1])
        pl.store(pl.col_expand_mul(pl.row_expand_div(tx, rms), tg), [0, 0], out)
    return out


@pl.jit
def column_stats(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [16, 32])
        mean: pl.Tile[[1, 32], pl.FP32] = pl.mul(pl.col_sum(t), 1.0 / 16)
        spread = pl.sub(pl.col_max(t), pl.col_min(t))
        pl.store(pl.col_expand_div(pl.col_expand_sub(t, mean), spread), [0, 0], out)
    return out


@pl.jit
def join_cols(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t: pl.Tile[[16, 32], pl.FP32] = pl.concat(pl.load(a, [0, 0], [16, 16]), pl.load(b, [0, 0], [16, 16]))
        pl.store(t, [0, 0], c)
    return c


@pl.jit.incore
def _mm_kernel(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    ta = pl.move(
        pl.load(a, [0, 0], [32, 32], target_memory=pl.MemorySpace.Mat), target_memory=pl.MemorySpace.Left
    )
    tb = pl.move(
        pl.load(b, [0, 0], [32, 32], target_memory=pl.MemorySpace.Mat), target_memory=pl.MemorySpace.Right
    )
    pl.store(pl.matmul(ta, tb), [0, 0], out)
    return out


@pl.jit.incore
def _bias_kernel(x: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    pl.store(pl.relu(pl.add(pl.load(x, [0, 0], [32, 32]), pl.load(bias, [0, 0], [32, 32]))), [0, 0], out)
    return out


@pl.jit
def fused_linear(x: pl.Tensor, w: pl.Tensor, bias: pl.Tensor, y: pl.Out[pl.Tensor]):
    mid = pl.create_tensor([32, 32], dtype=pl.FP32)
    mid = _mm_kernel(x, w, mid)
    y = _bias_kernel(mid, bias, y)
    return y


@pl.jit
def two_stages(x: pl.Tensor, scratch: pl.Out[pl.Tensor], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="stage1") as first:
        scratch[:] = pl.add(x, x)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="stage2", deps=[first]):
        out[:] = pl.mul(scratch, scratch)
    return scratch, out


@pl.jit
def scalar_param(a: pl.Tensor, alpha: pl.FP32, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.mul(a, alpha)
    return c


M = pl.dynamic("M")


@pl.jit
def dynamic_rows(a: pl.Tensor[[M, 32], pl.FP32], c: pl.Out[pl.Tensor[[M, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(M // 16):
            pl.store(pl.exp(pl.load(a, [i * 16, 0], [16, 32])), [i * 16, 0], c)
    return c


def z(*shape: int) -> HostArray:
    return HostArray(shape, "float32")


CASES = {
    "add_one_tile": (add_one_tile, (z(64, 64), z(64, 64), z(64, 64)), ["AIV"]),
    "add_chunks": (add_chunks, (z(ROWS, COLS), z(ROWS, COLS), z(ROWS, COLS)), ["AIV"]),
    "scale_sum": (scale_sum, (z(32, 32), z(32, 32), z(32, 32)), ["AIV"]),
    "silu_like": (silu_like, (z(16, 64), z(16, 64)), ["AIV"]),
    "cube_matmul": (cube_matmul, (z(32, 32), z(32, 32), z(32, 32)), ["AIC"]),
    "split_k": (split_k, (z(32, 32), z(32, 32), z(32, 32)), ["AIC"]),
    "row_softmax": (row_softmax, (z(32, 64), z(32, 64)), ["AIV"]),
    "rms_norm": (rms_norm, (z(16, 64), z(1, 64), z(16, 64)), ["AIV"]),
    "column_stats": (column_stats, (z(16, 32), z(16, 32)), ["AIV"]),
    "join_cols": (join_cols, (z(16, 16), z(16, 16), z(16, 32)), ["AIV"]),
    "fused_linear": (fused_linear, (z(32, 32), z(32, 32), z(32, 32), z(32, 32)), ["AIC", "AIV"]),
    "two_stages": (two_stages, (z(16, 16), z(16, 16), z(16, 16)), ["AIV", "AIV"]),
    "scalar_param": (scalar_param, (z(16, 16), 0.5, z(16, 16)), ["AIV"]),
    "dynamic_rows": (dynamic_rows, (z(64, 32), z(64, 32)), ["AIV"]),
}


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("examples")
    out = {}
    for name, (fn, args, _) in CASES.items():
        out[name] = _compile_to_files(
            fn.specialize(*args), root / name, contract="PROGRAM", platform="a2a3sim"
        )
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_example_compiles_to_files(name: str, compiled: dict[str, object]) -> None:
    result = compiled[name]
    fn, _args, cores = CASES[name]
    meta = read_metadata(result.output_dir)  # type: ignore[attr-defined]
    assert meta == result.metadata  # type: ignore[attr-defined]
    assert [k.core_type for k in meta.kernels] == cores
    assert [k.func_id for k in meta.kernels] == list(range(len(cores)))
    assert [p.name for p in meta.params] == list(fn.param_names)
    for k in meta.kernels:
        assert (result.output_dir / k.source).is_file()  # type: ignore[attr-defined]
    assert (result.output_dir / meta.orchestration.source).is_file()  # type: ignore[attr-defined]
    assert meta.return_count == len(meta.return_aliases)


def test_generated_cpp_compiles(compiled: dict[str, object], cpp_check) -> None:  # type: ignore[no-untyped-def]
    files: list[Path] = []
    for result in compiled.values():
        files += [f for f in result.files if f.suffix == ".cpp"]  # type: ignore[attr-defined]
    cpp_check(files)


def test_dynamic_dims_share_one_specialisation() -> None:
    s1 = dynamic_rows.specialize(z(64, 32), z(64, 32))
    s2 = dynamic_rows.specialize(z(128, 32), z(128, 32))
    assert s1 is s2
    assert s1.params[0].shape == (-1, 32)


def test_scalar_values_specialise() -> None:
    s1 = scalar_param.specialize(z(16, 16), 0.5, z(16, 16))
    s2 = scalar_param.specialize(z(16, 16), 0.25, z(16, 16))
    assert s1 is not s2
    assert s1.key != s2.key
    assert s1.params[1].is_scalar
