"""Helpers shared by the pypto-ir tests, imported by name (conftest.py puts this folder on
sys.path, since --import-mode=importlib does not)."""

from __future__ import annotations


class HostArray:
    """A tensor-like argument (``.shape``, ``.dtype``) as numpy or torch would pass it, for
    specialising a ``@pl.jit`` function without allocating data."""

    def __init__(self, shape: tuple[int, ...], dtype: str = "float32") -> None:
        self.shape = shape
        self.dtype = dtype
