"""Names the language lacks and host functions in kernels: the error says what to write instead."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pypto_ir_test_helpers import scope_kernel

import pypto.language as pl
from pypto.ir.errors import KernelError
from pypto.language.suggest import COMPOSED, foreign_library, instead_of


def _arrays() -> tuple[np.ndarray, np.ndarray]:
    return np.zeros((16, 16), np.float32), np.zeros((16, 16), np.float32)


CASES = [
    ("pl.softmax(x)", "pl has no attribute 'softmax'", "compose it: pl.row_max"),
    ("pl.ad(x, x)", "pl has no attribute 'ad'", "did you mean pl.add"),
    ("np.exp(x)", "np.exp: numpy functions run on the host and cannot be called in a kernel", "use pl.exp"),
    ("np.tanh(x)", "np.tanh: numpy functions run on the host", "pl.tanh"),
    ("math.sqrt(x)", "math.sqrt: math functions run on the host", "use pl.sqrt"),
]


@pytest.mark.parametrize(("call", "what", "hint"), CASES, ids=[c[0] for c in CASES])
def test_kernel_error_says_what_to_write(call: str, what: str, hint: str) -> None:
    # the kernel stores call(x) for a [16, 16] tile x; its module has numpy and math imported
    name = f"<kernel storing {call}>"
    fn = scope_kernel(
        ["x = pl.load(a, [0, 0], [16, 16])", f"pl.store({call}, [0, 0], out)"], name, np=np, math=math
    )
    with pytest.raises(KernelError) as info:
        fn.specialize(*_arrays())
    head = str(info.value).split("\n")[0]
    assert f"{name}:5:" in head  # the file and line of the call
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
