"""Compile-path timings of pypto-ir, each beside a baseline measured in the same run.

- specialise (cache hit) vs a plain Python call of a function with the same arguments;
- parse (cache miss: a fresh JIT function) vs the hit;
- lower (all passes) and codegen + metadata write vs parse.

Prints a table (rich if available): time per operation and the ratio to its baseline.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pypto.language as pl
from pypto.ir.compile import compile_to_files
from pypto.ir.pipeline import lower
from pypto_testing.bench import print_table


class HostArray:
    def __init__(self, shape: tuple[int, ...], dtype: str = "float32") -> None:
        self.shape = shape
        self.dtype = dtype


def softmax_rows(a: pl.Tensor, out: pl.Out[pl.Tensor]):  # type: ignore[no-untyped-def]
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(4):
            t = pl.load(a, [i * 16, 0], [16, 64])
            m = pl.row_max(t)
            e = pl.exp(pl.row_expand_sub(t, m))
            s = pl.row_sum(e)
            pl.store(pl.row_expand_div(e, s), [i * 16, 0], out)
    return out


def timeit(fn: Callable[[], object], repeat: int) -> float:
    fn()
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) / repeat


def main() -> None:
    a, out = HostArray((64, 64)), HostArray((64, 64))
    hot = pl.jit(softmax_rows)
    spec = hot.specialize(a, out)

    def shapes(x: HostArray, y: HostArray) -> object:
        return (x.shape, y.shape)

    def plain() -> object:
        return shapes(a, out)

    tmp = Path(tempfile.mkdtemp())
    n = [0]

    def write() -> object:
        n[0] += 1
        return compile_to_files(spec, tmp / str(n[0]), contract="PROGRAM", platform="a2a3sim")

    rows = []
    t_plain = timeit(plain, 2000)
    t_hit = timeit(lambda: hot.specialize(a, out), 2000)
    rows.append(("specialise (cache hit)", t_hit, "plain Python call", t_plain))
    t_parse = timeit(lambda: pl.jit(softmax_rows).specialize(a, out), 30)
    rows.append(("parse (cache miss)", t_parse, "cache hit", t_hit))
    t_lower = timeit(lambda: lower(spec.program), 30)
    rows.append(("lower (all passes + verifier)", t_lower, "parse", t_parse))
    t_write = timeit(write, 20)
    rows.append(("lower + codegen + write files", t_write, "parse", t_parse))

    print_table(
        "pypto-ir compile path",
        ("operation", "time", "baseline", "baseline time", "ratio"),
        [
            (name, f"{t * 1e6:.1f} us", base, f"{tb * 1e6:.1f} us", f"{t / tb:.1f}x")
            for name, t, base, tb in rows
        ],
    )


if __name__ == "__main__":
    main()
