"""Test programs shared by pypto-torch's test files (as ``pypto_testing.programs`` is for the
examples). The test modules import this by name (``from torch_test_programs import add``);
conftest.py puts this folder on sys.path.
"""

from __future__ import annotations

import pypto.language as pl

__all__ = ["add", "shift_rows"]


@pl.jit
def add(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    """out = a + b in one CORE_GROUP kernel named ``add``."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="add"):
        out[:] = pl.add(a, b)
    return out


@pl.jit
def shift_rows(x: pl.Tensor, n: pl.INT32, out: pl.Out[pl.Tensor]):
    """out[i] = x[(i + n) % 4] for the four 16-row chunks of a [64, 32] x: an INT32 runtime
    scalar read by the orchestration."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="shift"):
        for i in pl.range(4):
            src = (i + n) % 4
            pl.store(pl.load(x, [src * 16, 0], [16, 32]), [i * 16, 0], out)
    return out
