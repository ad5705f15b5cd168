"""``pl.print``: tiles and scalars printed from kernels on the simulated chip."""

from __future__ import annotations

import re

import numpy as np
import pto_backend
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
    if pto_backend.official():
        # TPRINT's page defines no output format (a debugging aid); the official CPU backend
        # prints "TPRINT <rows>x<cols>" and then the valid region's rows, untagged
        assert re.search(tag + r" t:$", out, re.M), out
        assert "TPRINT 16x32\n" in out, out
        rows = [ln.split() for ln in out.splitlines() if ln.strip() and re.fullmatch(r"[\s\d.eE+-]+", ln)]
        assert [[float(v) for v in r] for r in rows] == a.tolist()
        assert re.search(tag + r" t\[1, 2\]: 34$", out, re.M), out
        return
    # the label, then TPRINT: the tile's kind, dtype, shape and valid shape, then every row of
    # the valid region
    assert re.search(tag + r" t:\n" + tag + r" TPRINT: Vec FLOAT32 \[16, 32\], valid \[16, 32\]", out), out
    rows = [ln.strip(" []") for ln in out.splitlines() if ln.lstrip().startswith("[") and "TPRINT" not in ln]
    rows = [r for r in rows if r and not r.startswith("task")]
    assert [[float(v) for v in r.split()] for r in rows] == a.tolist()
    assert re.search(tag + r" t\[1, 2\]: 34$", out, re.M), out
