"""Helpers shared by the pypto-ir tests, imported by name (conftest.py puts this folder on
sys.path, since --import-mode=importlib does not)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

import pypto.language as pl
from pypto.ir.errors import KernelError


class HostArray:
    """A tensor-like argument (``.shape``, ``.dtype``) as numpy or torch would pass it, for
    specialising a ``@pl.jit`` function without allocating data."""

    def __init__(self, shape: tuple[int, ...], dtype: str = "float32") -> None:
        self.shape = shape
        self.dtype = dtype


def tile_op_on_itself(op: Callable[..., Any]) -> pl.JITFunction:
    """A kernel that stores ``op(t, t)`` for ``t``, a [16, 32] tile of its input: for the
    checks a tile op makes of its operands."""

    @pl.jit
    def on_itself(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [16, 32])
            pl.store(op(t, t), [0, 0], out)
        return out

    return on_itself


def rejected_at_line(build: Callable[[], object], marker: str, message: str) -> None:
    """``build()`` raises a KernelError that names the file and line of ``build``'s source (or
    of its ``source`` attribute) holding ``marker``, and says ``message``."""
    with pytest.raises(KernelError) as info:
        build()
    msg = str(info.value)
    source = getattr(build, "source", build)
    lines, first = inspect.getsourcelines(source)
    line = first + next(i for i, text in enumerate(lines) if marker in text)
    assert f"{inspect.getsourcefile(source)}:{line}:" in msg, msg
    assert message in msg, msg
