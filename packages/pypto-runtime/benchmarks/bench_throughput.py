"""pypto-runtime benchmark: throughput of whole programs (issue 32).

Generated PTO-ISA kernels on a2a3sim against what a user would run on the CPU instead, in the
same process, each result checked first, each figure the best of several calls:

- a 16M-element FP32 add (4096 x 4096, row blocks in parallel tasks) vs ``np.add(out=)``;
- a row softmax of 4096 x 1024 FP32 (row blocks in parallel tasks; max, the fused
  ``exp(x - max)``, sum, times the sum's reciprocal) vs torch eager;
- 384^3 and 1024^3 FP32 matmuls (one cube task per output block, the depth accumulated in
  steps with ``TMATMUL`` / ``TMATMUL_ACC``: 1024^3 in 128x256 blocks of two 128x128 Acc tiles
  that share each step's Left tile, 384^3 in 192x128 tiles) vs ``torch.matmul`` on the same
  thread count as the chip's AIC threads (1, then 2: the output blocks are independent tasks,
  so the graph allows both cores).

Goals (issue 32): add <= 1.5x numpy, softmax <= 1.2x torch, both matmuls <= 1x torch.

    python packages/pypto-runtime/benchmarks/bench_throughput.py      # or: nox -s bench
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import pypto.language as pl
import pypto.runtime as rt
from pypto_testing.bench import report

N_ADD = 4096  # 4096 x 4096 = 16M elements
ADD_ROWS = 64  # rows per task
ADD_TILE_ROWS = 4  # tiles of whole rows: each TLOAD / TSTORE is one run of 64 KiB (three tiles fill UB)
ADD_TILE = [ADD_TILE_ROWS, N_ADD]
SM_ROWS, SM_COLS, SM_BLOCK = 4096, 1024, 8
TM = 128  # matmul output tile: TM x TM, the depth TK at a time. Each step copies its operand
TK = 128  # tiles twice (TLOAD to Mat, TMOV to Left/Right): a 128x128 tile does half the copying
# per product of a 64x64 one; 128 deep, Left and Right fill L0A and L0B (64 KiB each) and the
# instructions per product halve (docs/performance-throughput.md).


# Each parallel task gets the window of every tensor it touches (pl.slice in the
# orchestration): the chip derives dependencies from the tensors a task is given, so tasks that
# were each given the whole output would all write it and run one after another.


@pl.jit
def add16m(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    for p in pl.parallel(N_ADD // ADD_ROWS):
        av = pl.slice(a, [ADD_ROWS, N_ADD], [p * ADD_ROWS, 0])
        bv = pl.slice(b, [ADD_ROWS, N_ADD], [p * ADD_ROWS, 0])
        cv = pl.slice(c, [ADD_ROWS, N_ADD], [p * ADD_ROWS, 0])
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(ADD_ROWS // ADD_TILE_ROWS):
                r = i * ADD_TILE_ROWS
                x = pl.load(av, [r, 0], ADD_TILE)
                y = pl.load(bv, [r, 0], ADD_TILE)
                pl.store(pl.add(x, y), [r, 0], cv)
    return c


@pl.jit
def softmax(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    for p in pl.parallel(SM_ROWS // 64):
        av = pl.slice(a, [64, SM_COLS], [p * 64, 0])
        ov = pl.slice(out, [64, SM_COLS], [p * 64, 0])
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(64 // SM_BLOCK):
                r = i * SM_BLOCK
                t = pl.load(av, [r, 0], [SM_BLOCK, SM_COLS])
                tmp = pl.create_tile([SM_BLOCK, SM_COLS], dtype=pl.FP32, target_memory=pl.MemorySpace.Vec)
                m: pl.Tile[[SM_BLOCK, 1], pl.FP32] = pl.row_max(t, tmp)
                e = pl.row_expand_expdif(t, m)
                s: pl.Tile[[SM_BLOCK, 1], pl.FP32] = pl.row_sum(e, tmp)
                # times the reciprocal of the sum, as torch's CPU softmax does (one divide a row)
                pl.store(pl.row_expand_mul(e, pl.recip(s)), [r, 0], ov)
    return out


@pl.inline
def _left(view, row, col, rows, cols):
    """A cube operand: view's [rows, cols] window at [row, col] loaded into Mat (L1), then moved
    to Left (L0A)."""
    return pl.move(
        pl.load(view, [row, col], [rows, cols], target_memory=pl.MemorySpace.Mat),
        target_memory=pl.MemorySpace.Left,
    )


@pl.inline
def _right(view, row, col, rows, cols):
    """The same into Right (L0B)."""
    return pl.move(
        pl.load(view, [row, col], [rows, cols], target_memory=pl.MemorySpace.Mat),
        target_memory=pl.MemorySpace.Right,
    )


def _matmul(n: int, tm: int = TM, tn: int = TM, tk: int = TK) -> Callable[..., object]:
    """n^3 in tm x tn output tiles, one cube task each, the depth tk at a time."""
    rows, cols, steps = n // tm, n // tn, n // tk

    @pl.jit
    def mm(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
        for t in pl.parallel(rows * cols):
            i = t // cols
            j = t % cols
            av = pl.slice(a, [tm, n], [i * tm, 0])  # the output tile's rows of a
            bv = pl.slice(b, [n, tn], [0, j * tn])  # and columns of b
            cv = pl.slice(c, [tm, tn], [i * tm, j * tn])
            with pl.at(level=pl.Level.CORE_GROUP):
                left = _left(av, 0, 0, tm, tk)
                right = _right(bv, 0, 0, tk, tn)
                acc: pl.Tile[[tm, tn], pl.FP32] = pl.matmul(left, right)
                for k in pl.range(1, steps):
                    left = _left(av, 0, k * tk, tm, tk)
                    right = _right(bv, k * tk, 0, tk, tn)
                    acc = pl.matmul_acc(acc, left, right)
                pl.store(acc, [0, 0], cv)
        return c

    return mm


def _matmul_pair(n: int) -> Callable[..., object]:
    """n^3 in TM x 2TM output blocks, one cube task each: two TM x TM Acc tiles (L0C full) share
    each step's Left tile, so a step copies three operand tiles for two products, not four."""
    rows, cols, steps = n // TM, n // (2 * TM), n // TK

    @pl.jit
    def mm(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
        for t in pl.parallel(rows * cols):
            i = t // cols
            j = t % cols
            av = pl.slice(a, [TM, n], [i * TM, 0])
            bv = pl.slice(b, [n, 2 * TM], [0, j * 2 * TM])
            cv = pl.slice(c, [TM, 2 * TM], [i * TM, j * 2 * TM])
            with pl.at(level=pl.Level.CORE_GROUP):
                left = _left(av, 0, 0, TM, TK)
                r0 = _right(bv, 0, 0, TK, TM)
                acc0: pl.Tile[[TM, TM], pl.FP32] = pl.matmul(left, r0)
                r1 = _right(bv, 0, TM, TK, TM)
                acc1: pl.Tile[[TM, TM], pl.FP32] = pl.matmul(left, r1)
                for k in pl.range(1, steps):
                    left = _left(av, 0, k * TK, TM, TK)
                    right0 = _right(bv, k * TK, 0, TK, TM)
                    acc0 = pl.matmul_acc(acc0, left, right0)
                    right1 = _right(bv, k * TK, TM, TK, TM)
                    acc1 = pl.matmul_acc(acc1, left, right1)
                pl.store(acc0, [0, 0], cv)
                pl.store(acc1, [0, TM], cv)
        return c

    return mm


def _matmul_for(n: int) -> tuple[Callable[..., object], str]:
    """The program for an n^3 product and how it tiles the output. A task's operand copies per
    product fall with 1/rows + 1/cols of its output block, which L0C (128 KiB: 32K floats of
    FP32 accumulators) bounds: TM x 2TM blocks where n allows (1024^3: 32 tasks), else 192 x TM
    tiles 64 deep (384^3: 6 tasks rather than 9; Left 192 x 64 and Right 64 x TM fit L0A and
    L0B), else TM x TM tiles."""
    if n % (2 * TM) == 0 and n % TK == 0:
        return _matmul_pair(n), f"{TM}x{2 * TM} blocks (two {TM}x{TM} Acc tiles)"
    if n % 192 == 0:
        return _matmul(n, 192, TM, 64), f"192x{TM} tiles, 64 deep"
    return _matmul(n), f"{TM}x{TM} tiles"


_SETTLE = 0.3  # seconds between the two sides of a row (_pair)
_CPU: dict[int, float] = {}  # id(f) -> the process's CPU seconds per call of f (all threads)


def _best(f: Callable[[], object], repeat: int) -> float:
    """The best wall time of ``repeat`` calls; their mean process CPU time goes to ``_CPU``. On a
    loaded machine the wall time includes waiting for a core, the CPU time does not (but counts
    every thread of the process: the chip's core threads, torch's pool)."""
    f()
    best = float("inf")
    c0 = time.process_time()
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t0)
    _CPU[id(f)] = (time.process_time() - c0) / repeat
    return best


def _pair(
    ours: Callable[[], object], theirs: Callable[[], object], repeat: int
) -> tuple[float, float, float, float]:
    """Best wall times and mean CPU times of ``ours`` and ``theirs``, timed one after the other.
    Each side starts after a pause in which the other side's idle threads park (torch's OpenMP
    pool spins for a while after a parallel region, the chip's core threads for 50 us): on two
    cores, a spinning thread of one side takes a core from the other."""
    time.sleep(_SETTLE)
    w0 = _best(ours, repeat)
    time.sleep(_SETTLE)
    w1 = _best(theirs, repeat)
    return w0, w1, _CPU[id(ours)], _CPU[id(theirs)]


# label, ours (s), peer (s), peer's name, goal (ratio), our CPU (s), peer's CPU (s)
Row = tuple[str, float, float, str, float, float, float]


def _add_row(rng: np.random.Generator, repeat: int) -> Row:
    a = rng.standard_normal((N_ADD, N_ADD), dtype=np.float32)
    b = rng.standard_normal((N_ADD, N_ADD), dtype=np.float32)
    c = np.empty_like(a)
    add16m(a, b, c)
    np.testing.assert_array_equal(c, a + b)
    ours, theirs, c0, c1 = _pair(lambda: add16m(a, b, c), lambda: np.add(a, b, out=c), repeat)
    return ("16M-element FP32 add", ours, theirs, "np.add(out=)", 1.5, c0, c1)


def _softmax_row(rng: np.random.Generator, repeat: int, torch: Any) -> Row:
    x = rng.standard_normal((SM_ROWS, SM_COLS), dtype=np.float32)
    out = np.empty_like(x)
    softmax(x, out)
    xt = torch.from_numpy(x)
    np.testing.assert_allclose(out, torch.softmax(xt, dim=1).numpy(), rtol=1e-5, atol=1e-6)
    ours, theirs, c0, c1 = _pair(lambda: softmax(x, out), lambda: torch.softmax(xt, dim=1), repeat)
    return ("row softmax 4096x1024 FP32", ours, theirs, "torch.softmax (eager)", 1.2, c0, c1)


def _matmul_row(rng: np.random.Generator, repeat: int, torch: Any, n: int, *, cube: int, aiv: int) -> Row:
    mm, tiling = _matmul_for(n)
    p = rng.standard_normal((n, n), dtype=np.float32)
    q = rng.standard_normal((n, n), dtype=np.float32)
    pt, qt = torch.from_numpy(p), torch.from_numpy(q)
    config = rt.RunConfig(aic_threads=cube, aiv_threads=aiv)
    r = np.empty((n, n), np.float32)
    mm(p, q, r, config=config)
    np.testing.assert_allclose(r, p.astype(np.float64) @ q, rtol=1e-3, atol=1e-3)
    torch.set_num_threads(cube)
    ours, theirs, c0, c1 = _pair(lambda: mm(p, q, r, config=config), lambda: torch.matmul(pt, qt), repeat)
    label = f"matmul {n}^3 FP32, {tiling}, {cube} AIC thread(s)"
    return (label, ours, theirs, f"torch.matmul ({cube} thread(s))", 1.0, c0, c1)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="pypto-bench-tp-") as store:
        os.environ["PYPTO_CACHE_DIR"] = store
        try:
            _run()
        finally:
            del os.environ["PYPTO_CACHE_DIR"]


def _run() -> None:
    import torch

    from pypto.runtime.worker import default_core_threads

    aic, aiv = default_core_threads()
    repeat = 3 if "--quick" in sys.argv else 7
    rng = np.random.default_rng(0)
    rows: list[Row] = []

    rows.append(_add_row(rng, repeat))
    rows.append(_softmax_row(rng, repeat, torch))
    threads = torch.get_num_threads()
    try:
        # The chip's AIC threads, and torch's threads: 1, then 2.
        rows.extend(
            _matmul_row(rng, repeat, torch, n, cube=cube, aiv=aiv) for n in (384, 1024) for cube in (1, 2)
        )
    finally:
        torch.set_num_threads(threads)

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\nthroughput on a2a3sim ({aic} AIC + {aiv} AIV threads), best of {repeat}, load average {load}")
    for label, value, base, base_name, goal, cpu, base_cpu in rows:
        ok = "met" if value / base <= goal else "NOT met"
        print(
            f"  {label}: {value * 1e3:.2f} ms vs {base * 1e3:.2f} ms ({base_name}): {value / base:.2f}x "
            f"(goal <= {goal:g}x: {ok}); CPU per call {cpu * 1e3:.2f} vs {base_cpu * 1e3:.2f} ms: {cpu / base_cpu:.2f}x"
        )
        report(label, value * 1e3, base * 1e3, base_name, "ms", bar=goal, goal=goal)


if __name__ == "__main__":
    main()
