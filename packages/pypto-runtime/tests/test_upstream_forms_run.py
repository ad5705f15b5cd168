"""Upstream PyPTO's subscript forms and implicit conversions, run on a2a3sim against numpy:
a sub-tile with a run-time extent (its valid part) and one clamped to the tile, ``pl.set_validshape``
of a tensor written into a window of its valid shape, a window write of a value without the
window's scalar-indexed leading dims, ``C[i][j]`` of a tensor, tensor-level operands promoted and
broadcast, and a tensor-level value converted to its annotated dtype."""

from __future__ import annotations

import numpy as np

import pypto.language as pl
from pypto.runtime import run

RNG = np.random.default_rng(31)


def r(*shape: int, dtype: type = np.float32) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


@pl.program
class TileWindows:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        x: pl.Tensor[[16, 64], pl.FP32],
        n: pl.Scalar[pl.INDEX],
        out: pl.Out[pl.Tensor[[16, 64], pl.FP32]],
        tail: pl.Out[pl.Tensor[[16, 64], pl.FP32]],
    ) -> tuple[pl.Tensor[[16, 64], pl.FP32], pl.Tensor[[16, 64], pl.FP32]]:
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [0, 0], [16, 64])
            head = t[:, :n]  # [16, 64], valid [16, n]
            out = pl.store(head, [0, 0], out)
            right = t[:, 48:256]  # clamped: [16, 16]
            tail = pl.store(right, [0, 0], tail)
        return out, tail


def test_run_time_extent_is_the_valid_part_and_a_bound_past_the_end_is_clamped() -> None:
    x = r(16, 64)
    out = np.zeros((16, 64), np.float32)
    tail = np.zeros((16, 64), np.float32)
    run(TileWindows, x, 40, out, tail)
    want = np.zeros_like(out)
    want[:, :40] = x[:, :40]
    np.testing.assert_array_equal(out, want)
    want_tail = np.zeros_like(tail)
    want_tail[:, :16] = x[:, 48:]
    np.testing.assert_array_equal(tail, want_tail)


@pl.program
class TensorWindows:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        src: pl.Tensor[[16, 8], pl.FP32],
        rhs: pl.Tensor[[8, 16], pl.FP32],
        cube: pl.Tensor[[2, 3, 8, 16], pl.FP32],
        out: pl.Out[pl.Tensor[[32, 32], pl.FP32]],
        planes: pl.Out[pl.Tensor[[4, 8, 16], pl.FP32]],
    ) -> tuple[pl.Tensor[[32, 32], pl.FP32], pl.Tensor[[4, 8, 16], pl.FP32]]:
        with pl.at(level=pl.Level.CORE_GROUP):
            narrowed = pl.set_validshape(src, 16, 4)
            out[0:16, 4:8] = narrowed  # the valid [16, 4] part
            planes[2] = rhs  # a [1, 8, 16] window takes the [8, 16] value
            planes[3] = pl.add(cube[1][2], 1.0)  # cube[1][2] is cube[1, 2]
        return out, planes


def test_narrowed_tensor_lower_rank_value_and_chained_index() -> None:
    src, rhs, cube = r(16, 8), r(8, 16), r(2, 3, 8, 16)
    out = np.zeros((32, 32), np.float32)
    planes = np.zeros((4, 8, 16), np.float32)
    run(TensorWindows, src, rhs, cube, out, planes)
    want = np.zeros_like(out)
    want[0:16, 4:8] = src[:, :4]
    np.testing.assert_array_equal(out, want)
    want_planes = np.zeros_like(planes)
    want_planes[2] = rhs
    want_planes[3] = cube[1, 2] + 1.0
    np.testing.assert_allclose(planes, want_planes, rtol=1e-6)


@pl.program
class Conversions:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        h: pl.Tensor[[16, 32], pl.FP16],
        f: pl.Tensor[[16, 32], pl.FP32],
        col: pl.Tensor[[16, 1], pl.FP32],
        out: pl.Out[pl.Tensor[[16, 32], pl.FP32]],
        half: pl.Out[pl.Tensor[[16, 32], pl.FP16]],
    ) -> tuple[pl.Tensor[[16, 32], pl.FP32], pl.Tensor[[16, 32], pl.FP16]]:
        with pl.at(level=pl.Level.CORE_GROUP):
            scaled: pl.Tensor[[16, 32], pl.FP32] = pl.mul(h, 0.5)  # FP16 value, FP32 annotation
            mixed = pl.add(scaled, h)  # FP16 operand promoted to FP32
            centred = pl.sub(mixed, col)  # [16, 1] broadcast over the columns
            out[:, :] = pl.mul(centred, f)
            low: pl.Tensor[[16, 32], pl.FP16] = pl.add(f, 1.0)  # FP32 value, FP16 annotation
            half[:, :] = low
        return out, half


def test_promotion_broadcast_and_annotated_dtype() -> None:
    h = r(16, 32, dtype=np.float16)
    f, col = r(16, 32), r(16, 1)
    out = np.zeros((16, 32), np.float32)
    half = np.zeros((16, 32), np.float16)
    run(Conversions, h, f, col, out, half)
    hf = h.astype(np.float32)
    scaled = (h * np.float16(0.5)).astype(np.float32)
    np.testing.assert_allclose(out, (scaled + hf - col) * f, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(
        half.astype(np.float32), (f + 1.0).astype(np.float16).astype(np.float32), rtol=1e-3
    )


@pl.program
class Planes:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        x: pl.Tensor[[3, 8, 16], pl.FP32],
        out: pl.Out[pl.Tensor[[4, 8, 16], pl.FP32]],
    ) -> pl.Tensor[[4, 8, 16], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            t: pl.Tile[[2, 8, 16], pl.FP32] = pl.load(x, [1, 0, 0], [2, 8, 16])  # held as [16, 16]
            plane: pl.Tile[[8, 16], pl.FP32] = t[1]  # x[2]
            row: pl.Tile[[1, 16], pl.FP32] = plane[3]  # x[2, 3]
            t[0, 5, :] = row
            t[1, :, :] = pl.add(plane, 1.0)
            doubled = pl.mul(t, 2.0)  # element-wise: still [2, 8, 16]
            out = pl.store(doubled, [2, 0, 0], out)
        return out


def test_three_dim_tile_loads_indexes_writes_and_stores_plane_by_plane() -> None:
    x = r(3, 8, 16)
    out = np.zeros((4, 8, 16), np.float32)
    run(Planes, x, out)
    t = x[1:3].copy()
    t[0, 5, :] = x[2, 3]
    t[1] = x[2] + 1.0
    want = np.zeros_like(out)
    want[2:4] = t * 2.0
    np.testing.assert_allclose(out, want, rtol=1e-6)


@pl.program
class VecMatmul:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        a: pl.Tensor[[16, 32], pl.FP16],
        b: pl.Tensor[[32, 16], pl.FP16],
        out: pl.Out[pl.Tensor[[16, 16], pl.FP16]],
    ) -> pl.Tensor[[16, 16], pl.FP16]:
        with pl.at(level=pl.Level.CORE_GROUP):
            ta = pl.load(a, [0, 0], [16, 32])  # Vec tiles: moved to the cube
            tb = pl.load(b, [0, 0], [32, 16])
            c = pl.matmul(ta, tb)  # an FP32 Acc tile
            out = pl.store(c, [0, 0], out)  # converted to FP16 on the way out
        return out


def test_matmul_of_vec_tiles_and_acc_store_into_another_dtype() -> None:
    a = r(16, 32, dtype=np.float16)
    b = r(32, 16, dtype=np.float16)
    out = np.zeros((16, 16), np.float16)
    run(VecMatmul, a, b, out)
    want = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    np.testing.assert_allclose(out.astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=2e-3)


@pl.program
class NoProducerYet:
    @pl.function(type=pl.FunctionType.InCore)
    def add_one(
        self, x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]
    ) -> pl.Tensor[[16, 16], pl.FP32]:
        out[:, :] = pl.add(x, 1.0)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self, x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]
    ) -> pl.Tensor[[16, 16], pl.FP32]:
        with pl.manual_scope():
            prev = None  # upstream's "no producer yet" task id
            out, prev = pl.submit(self.add_one, x, out, deps=[prev])
            out, _ = pl.submit(self.add_one, out, out, deps=[prev])
        return out


def test_none_task_id_is_a_task_with_nothing_to_wait_for() -> None:
    x = r(16, 16)
    out = np.zeros((16, 16), np.float32)
    run(NoProducerYet, x, out)
    np.testing.assert_allclose(out, x + 2.0, rtol=1e-6)


@pl.program
class OutParamsRebound:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(
        self,
        a: pl.Tensor[[16, 32], pl.FP32],
        o0: pl.Out[pl.Tensor[[16, 32], pl.FP32]],
        o1: pl.Out[pl.Tensor[[16, 32], pl.FP32]],
    ) -> tuple[pl.Tensor[[16, 32], pl.FP32], pl.Tensor[[16, 32], pl.FP32]]:
        with pl.at(level=pl.Level.CORE_GROUP):
            o0 = pl.add(a, a)  # writes the pl.Out parameter o0
            o1 = pl.mul(a, a)
        return o0, o1


def test_kernel_binding_its_out_parameters_writes_them() -> None:
    a = r(16, 32)
    o0 = np.zeros_like(a)
    o1 = np.zeros_like(a)
    run(OutParamsRebound, a, o0, o1)
    np.testing.assert_allclose(o0, a + a, rtol=1e-6)
    np.testing.assert_allclose(o1, a * a, rtol=1e-6)
