"""Test programs shared by pypto-runtime's test files (as ``pypto_testing.programs`` is for the
examples): small ``@pl.jit`` functions, the source of a kernels file the command-line tests
write out, and the seeded FP32 inputs the tests run them on (``normal``).

``make_add`` and ``make_scale`` build a fresh function object each call: a test that checks
what a call stores on the object (its call key, its ``executor_plan``) builds its own; the
module-level ``add`` and ``scale`` serve tests that only compile or run them. The test modules
import this by name (``from runtime_programs import add``); conftest.py puts this folder on
sys.path.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import pypto.language as pl

__all__ = ["SCALED_ADD_SOURCE", "add", "make_add", "make_scale", "normal", "scale"]


def make_add() -> Any:
    """A fresh ``add(a, b, out)``: ``out = a + b`` in one CORE_GROUP kernel named ``add``."""

    @pl.jit
    def add(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="add"):
            out[:] = pl.add(a, b)
        return out

    return add


def make_scale() -> Any:
    """A fresh ``scale(a, alpha, out)``: ``out = a * alpha`` (``alpha`` an FP32 scalar)."""

    @pl.jit
    def scale(a: pl.Tensor, alpha: pl.FP32, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.mul(a, alpha)
        return out

    return scale


add = make_add()
scale = make_scale()

# A kernels file for ``python -m pypto.runtime``: ``scaled_add`` computes a + b * alpha.
SCALED_ADD_SOURCE = """
import pypto.language as pl


@pl.jit
def scaled_add(a: pl.Tensor, b: pl.Tensor, alpha: pl.FP32, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="scaled_add"):
        out[:] = pl.add(a, pl.mul(b, alpha))
    return out
"""


def normal(seed: int, *shapes: tuple[int, ...]) -> list[np.ndarray]:
    """FP32 arrays of ``shapes`` drawn in order from a standard normal generator seeded ``seed``."""
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for shape in shapes]
