"""Names the language lacks and host functions in kernels: the error says what to write instead."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pypto.language as pl
from pypto.ir.errors import KernelError
from pypto.language.suggest import COMPOSED, foreign_library, instead_of


def _arrays() -> tuple[np.ndarray, np.ndarray]:
    return np.zeros((16, 16), np.float32), np.zeros((16, 16), np.float32)


@pl.jit
def uses_softmax(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [16, 16])
        pl.store(pl.softmax(x), [0, 0], c)
    return c


@pl.jit
def misspells_add(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [16, 16])
        pl.store(pl.ad(x, x), [0, 0], c)
    return c


@pl.jit
def calls_numpy_exp(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [16, 16])
        pl.store(np.exp(x), [0, 0], c)
    return c


@pl.jit
def calls_numpy_tanh(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [16, 16])
        pl.store(np.tanh(x), [0, 0], c)
    return c


@pl.jit
def calls_math_sqrt(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [16, 16])
        pl.store(math.sqrt(x), [0, 0], c)
    return c


CASES = [
    (uses_softmax, "pl has no attribute 'softmax'", "compose it: pl.row_max"),
    (misspells_add, "pl has no attribute 'ad'", "did you mean pl.add"),
    (
        calls_numpy_exp,
        "np.exp: numpy functions run on the host and cannot be called in a kernel",
        "use pl.exp",
    ),
    (calls_numpy_tanh, "np.tanh: numpy functions run on the host", "pl.tanh"),
    (calls_math_sqrt, "math.sqrt: math functions run on the host", "use pl.sqrt"),
]


@pytest.mark.parametrize(("fn", "what", "hint"), CASES, ids=[c[0].__name__ for c in CASES])
def test_kernel_error_says_what_to_write(fn: pl.JITFunction, what: str, hint: str) -> None:
    with pytest.raises(KernelError) as info:
        fn.specialize(*_arrays())
    head = str(info.value).split("\n")[0]
    assert f"{__file__}:" in head
    assert what in head
    assert hint in head
    assert "cannot call another function" not in head


def test_module_attribute_errors_name_the_composition() -> None:
    with pytest.raises(AttributeError, match=r"has no attribute 'swish'; use pl\.silu"):
        _ = pl.swish
    with pytest.raises(AttributeError, match=r"has no attribute 'softmax'; compose it: pl\.row_max"):
        _ = pl.tile.softmax
    with pytest.raises(AttributeError, match=r"has no attribute 'nothing_like_it'$"):
        _ = pl.nothing_like_it


def test_composed_hints_name_only_existing_ops() -> None:
    # Every pl.<op> a hint tells the user to write must exist.
    import re

    for name, hint in COMPOSED.items():
        for op in re.findall(r"pl\.(\w+)", hint):
            assert hasattr(pl, op), f"COMPOSED[{name!r}] names pl.{op}, which does not exist"
        assert not hasattr(pl, name), f"pl.{name} exists; drop the hint"


def test_foreign_library_recognises_host_functions() -> None:
    def torch_like(x: object) -> object:
        return x

    torch_like.__module__ = "torch.functional"
    assert foreign_library(np.tanh) == "numpy"
    assert foreign_library(np.sum) == "numpy"
    assert foreign_library(math.exp) == "math"
    assert foreign_library(torch_like) == "torch"
    assert foreign_library(len) is None
    assert foreign_library(pl.add) is None


def test_close_names_are_optional() -> None:
    assert instead_of("ad", ["add", "abs"]) == "did you mean pl.add?"
    assert instead_of("ad", ["add", "abs"], close_names=False) == ""
    assert instead_of("xyzzy", ["add"]) == ""
