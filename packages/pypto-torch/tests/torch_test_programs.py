"""Test programs shared by pypto-torch's test files (as ``pypto_testing.programs`` is for the
examples). The test modules import this by name (``from torch_test_programs import add``);
conftest.py puts this folder on sys.path.
"""

from __future__ import annotations

import pypto.language as pl

__all__ = ["add"]


@pl.jit
def add(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    """out = a + b in one CORE_GROUP kernel named ``add``."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="add"):
        out[:] = pl.add(a, b)
    return out
