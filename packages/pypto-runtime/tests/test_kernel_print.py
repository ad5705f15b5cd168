"""``pl.print``: tiles and scalars printed from kernels on the simulated chip."""

from __future__ import annotations

import re

import numpy as np
import pytest

import pypto.language as pl


@pl.jit
def prints_tile_and_scalar(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 32])
        pl.print(t)
        s = pl.read(t, [1, 2])
        pl.print(s, label="t[1, 2]")
        pl.store(pl.mul(t, 2.0), [0, 0], c)
    return c


def test_print_shows_the_tile_and_scalar_tagged_with_task_and_core(capfd: pytest.CaptureFixture[str]) -> None:
    a = np.arange(16 * 32, dtype=np.float32).reshape(16, 32)
    c = np.zeros_like(a)
    prints_tile_and_scalar(a, c)
    np.testing.assert_array_equal(c, 2 * a)  # printing changes nothing
    out = capfd.readouterr().out
    tag = r"\[task 0 AIV\d+\]"  # the run's first task, on a vector core
    assert re.search(tag + r" t: Tile\[16, 32\] FLOAT32 Vec, valid \[16, 32\]", out), out
    # numpy's summary: first and last three rows and columns of the valid region.
    first = next(ln for ln in out.splitlines() if ln.startswith("[["))
    assert [float(v) for v in first.strip("[]").replace("...", " ").split()] == [0, 1, 2, 29, 30, 31]
    assert any(ln.strip().startswith("[       480") for ln in out.splitlines())
    assert sum("..." in ln for ln in out.splitlines()) == 7  # 6 rows with a column gap, 1 row gap
    assert re.search(tag + r" t\[1, 2\]:\s+34$", out, re.M), out
