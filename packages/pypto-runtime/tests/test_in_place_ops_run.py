"""Every element-wise op the memory allocation may place over its operand (IN_PLACE_OPS) computes
the same bits in place as into a tile of its own, on the simulated chip.

One kernel per dtype runs each op on its own [8, 64] block x, once with x read there for the
last time (the result is placed over x) and once with x stored afterwards (the result gets its
own tile); the allocation of each is checked, then the results are compared bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import pypto.language as pl
from pypto.ir.passes.memory_alloc import IN_PLACE_OPS, allocate_kernel
from pypto.ir.pipeline import lower
from pypto_testing.forms import from_source

R, C = 8, 64
_EXPAND = ("add", "sub", "mul", "div", "max", "min", "expdif")

# op -> the expression of its result over block x; b is another block of the same type, r an
# [R, 1] column, c a [1, C] row, s a scratch tile
FLOAT_OPS = {
    "tile.abs": "pl.abs(x)",
    "tile.add": "pl.add(x, b)",
    "tile.adds": "pl.tile.adds(x, 0.75)",
    "tile.sub": "pl.sub(x, b)",
    "tile.subs": "pl.tile.subs(x, 0.75)",
    "tile.mul": "pl.mul(x, b)",
    "tile.muls": "pl.tile.muls(x, 0.75)",
    "tile.div": "pl.div(x, b)",
    "tile.divs": "pl.tile.divs(x, 0.75)",
    "tile.maximum": "pl.maximum(x, b)",
    "tile.maximums": "pl.maximums(x, 0.75)",
    "tile.minimum": "pl.minimum(x, b)",
    "tile.minimums": "pl.minimums(x, 0.75)",
    "tile.fmod": "pl.fmod(x, b)",
    "tile.fmods": "pl.fmods(x, 0.75)",
    "tile.exp": "pl.exp(x)",
    "tile.log": "pl.log(x)",
    "tile.sin": "pl.sin(x)",
    "tile.cos": "pl.cos(x)",
    "tile.sqrt": "pl.sqrt(x)",
    "tile.rsqrt": "pl.rsqrt(x)",
    "tile.recip": "pl.recip(x)",
    "tile.neg": "pl.neg(x)",
    "tile.relu": "pl.relu(x)",
    "tile.lrelu": "pl.lrelu(x, 0.125)",
    "tile.prelu": "pl.prelu(x, b, s)",
    **{f"tile.row_expand_{op}": f"pl.row_expand_{op}(x, r)" for op in _EXPAND},
    **{f"tile.col_expand_{op}": f"pl.col_expand_{op}(x, c)" for op in _EXPAND},
}
INT_OPS = {
    "tile.and_": "pl.and_(x, b)",
    "tile.ands": "pl.ands(x, 6)",
    "tile.or_": "pl.or_(x, b)",
    "tile.ors": "pl.ors(x, 6)",
    "tile.xor": "pl.xor(x, b, s)",
    "tile.xors": "pl.xors(x, 6, s)",
    "tile.shl": "pl.shl(x, b)",
    "tile.shls": "pl.shls(x, 3)",
    "tile.shr": "pl.shr(x, b)",
    "tile.shrs": "pl.shrs(x, 2)",
    "tile.not_": "pl.not_(x)",
}


def test_the_tables_cover_every_in_place_op() -> None:
    # the cube's accumulation is in place through its loop (test_pass_memory_alloc.py; a GEMV's:
    # test_matmul_bias_gemv_run.py)
    assert set(FLOAT_OPS) | set(INT_OPS) | {"tile.matmul_acc", "tile.gemv_acc"} == IN_PLACE_OPS


def _kernel(ops: dict[str, str], dtype: str, *, keep: bool, name: str) -> pl.JITFunction:
    """k(a, bs, rv, cv, out): op i reads block i of a (x_i) and of bs (b_i) and writes block i
    of out's left half; with ``keep``, x_i is then stored to the right half."""
    lines = [
        f"r = pl.load(rv, [0, 0], [{R}, 1])",
        f"c = pl.load(cv, [0, 0], [1, {C}])",
    ]
    for i, expr in enumerate(ops.values()):
        lines += [
            f"x = pl.load(a, [{i * R}, 0], [{R}, {C}])",
            f"b = pl.load(bs, [{i * R}, 0], [{R}, {C}])",
            f"s = pl.tile.create([{R}, {C}], dtype=pl.{dtype})",
            f"y = {expr}",
            f"pl.store(y, [{i * R}, 0], out)",
        ]
        if keep:
            lines.append(f"pl.store(x, [{i * R}, {C}], out)")
    body = "".join(f"        {line}\n" for line in lines)
    src = (
        "@pl.jit\n"
        "def k(a: pl.Tensor, bs: pl.Tensor, rv: pl.Tensor, cv: pl.Tensor, out: pl.Out[pl.Tensor]):\n"
        f"    with pl.at(level=pl.Level.CORE_GROUP, name_hint={name!r}):\n{body}    return out\n"
    )
    return from_source(src, f"<{name}>")["k"]  # type: ignore[no-any-return]


def _inputs(dtype: str, n: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(11)
    if dtype == "FP32":  # positive, away from zero: every op (log, sqrt, div) defined
        a, bs = (rng.uniform(0.25, 2.0, (n * R, C)).astype(np.float32) for _ in range(2))
        rv = rng.uniform(0.25, 2.0, (R, 1)).astype(np.float32)
        cv = rng.uniform(0.25, 2.0, (1, C)).astype(np.float32)
    else:
        a = rng.integers(0, 1 << 20, (n * R, C), dtype=np.int32)
        bs = rng.integers(0, 8, (n * R, C), dtype=np.int32)  # also the shift counts
        rv, cv = np.zeros((R, 1), np.int32), np.zeros((1, C), np.int32)
    return a, bs, rv, cv


def _lowered_kernel(fn: pl.JITFunction, args: tuple[np.ndarray, ...]):  # type: ignore[no-untyped-def]
    prog = lower(fn.specialize(*args).program).program
    (k,) = [f for f in prog.functions.values() if f.func_type.is_kernel]
    return k


@pytest.mark.parametrize(("dtype", "ops"), [("FP32", FLOAT_OPS), ("INT32", INT_OPS)])
def test_each_op_computes_the_same_bits_over_its_operand(dtype: str, ops: dict[str, str]) -> None:
    n = len(ops)
    a, bs, rv, cv = _inputs(dtype, n)
    over = _kernel(ops, dtype, keep=False, name=f"over_{dtype.lower()}")
    own = _kernel(ops, dtype, keep=True, name=f"own_{dtype.lower()}")
    out_over = np.zeros((n * R, 2 * C), a.dtype)
    out_own = np.zeros_like(out_over)
    for fn, out, shared in ((over, out_over, True), (own, out_own, False)):
        mem = allocate_kernel(_lowered_kernel(fn, (a, bs, rv, cv, out)), "a2a3sim")
        pairs = [(f"x{'' if i == 0 else f'__{i}'}", f"y{'' if i == 0 else f'__{i}'}") for i in range(n)]
        placed = [mem.shares(x, y) for x, y in pairs if x in mem.slot_of and y in mem.slot_of]
        assert len(placed) == n, sorted(mem.slot_of)
        assert all(p is shared for p in placed), dict(zip(ops, placed, strict=True))
        fn(a, bs, rv, cv, out)
    np.testing.assert_array_equal(out_own[:, C:], a)  # the kept x blocks: the inputs unchanged
    for i, op in enumerate(ops):
        block = slice(i * R, (i + 1) * R)
        got, want = out_over[block, :C], out_own[block, :C]
        assert got.tobytes() == want.tobytes(), (op, got, want)
