"""``pl.static_print`` and ``pl.static_assert``: run while the kernel is parsed, no IR left."""

from __future__ import annotations

import numpy as np
import pytest

import pypto.language as pl
from pypto.ir.errors import KernelError
from pypto.ir.nodes import walk_stmts

COLS = 64


def _args(cols: int = 16) -> tuple[np.ndarray, np.ndarray]:
    return np.zeros((16, cols), np.float32), np.zeros((16, cols), np.float32)


@pl.jit
def prints(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    pl.static_print("input:", a, f"cols={COLS} a={a}")
    pl.static_assert(COLS > 32, "COLS too small")
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 16])
        pl.static_print(t, pl.dim(a, 1))
        c[:] = t
    return c


@pl.jit
def prints_nothing(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 16])
        c[:] = t
    return c


def _statement_kinds(spec: pl.Specialization) -> list[list[str]]:
    return [
        [type(s).__name__ for s in walk_stmts(fn.body)] for _, fn in sorted(spec.program.functions.items())
    ]


def test_static_print_prints_types_and_values_at_specialisation(capsys: pytest.CaptureFixture[str]) -> None:
    spec = prints.specialize(*_args())
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("static_print")]
    assert len(lines) == 2
    assert lines[0].startswith(f"static_print [{__file__}:")
    assert lines[0].endswith("]: input: a: Tensor[[16, 16], FP32] cols=64 a=a: Tensor[[16, 16], FP32]")
    assert lines[1].endswith("]: t: Tile[[16, 16], FP32, Vec] pl.dim(a, 1) = 16")
    # Nothing of either directive is left in the IR: the same statements as without them.
    assert _statement_kinds(spec) == _statement_kinds(prints_nothing.specialize(*_args()))


@pl.jit
def asserts_shape(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.static_assert(pl.dim(a, 1) % 32 == 0, "columns must be a multiple of 32")
        t = pl.load(a, [0, 0], [16, 16])
        c[0:16, 0:16] = t
    return c


def test_static_assert_passes_and_fails_per_specialisation() -> None:
    asserts_shape.specialize(*_args(64))
    with pytest.raises(KernelError) as info:
        asserts_shape.specialize(*_args(48))
    head, src, caret = str(info.value).split("\n")[:3]
    assert head.startswith(f"{__file__}:")
    assert "static assertion failed: pl.dim(a, 1) % 32 == 0: columns must be a multiple of 32" in head
    assert "pl.static_assert(" in src
    assert caret.index("^") == src.index("pl.dim(a, 1) % 32")


@pl.jit
def asserts_runtime_value(a: pl.Tensor, n: pl.INT32, c: pl.Out[pl.Tensor]):
    pl.static_assert(n > 0)
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.load(a, [0, 0], [16, 16])
    return c


def test_static_assert_refuses_a_runtime_condition() -> None:
    a, c = _args()
    with pytest.raises(
        KernelError, match=r"known at compile time, but n > 0 is a Scalar\[BOOL\] computed when"
    ):
        asserts_runtime_value.specialize(a, pl.RUNTIME, c)


@pl.jit
def message_not_literal(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    pl.static_assert(COLS > 0, str(COLS))
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.load(a, [0, 0], [16, 16])
    return c


@pl.jit
def directive_as_value(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    x = pl.static_print(a)
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.load(a, [0, 0], [16, 16])
    return c, x


@pl.jit
def print_nothing(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    pl.static_print()
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.load(a, [0, 0], [16, 16])
    return c


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (message_not_literal, r"pl\.static_assert\(message\): expected a string literal"),
        (directive_as_value, r"pl\.static_print is a statement: write it on a line of its own"),
        (print_nothing, r"pl\.static_print needs at least one argument"),
    ],
)
def test_misuse_is_a_compile_error(fn: pl.JITFunction, message: str) -> None:
    with pytest.raises(KernelError, match=message):
        fn.specialize(*_args())


def test_outside_a_kernel_they_refuse_to_run() -> None:
    with pytest.raises(RuntimeError, match="runs only inside a kernel body"):
        pl.static_print("x")
    with pytest.raises(RuntimeError, match="runs only inside a kernel body"):
        pl.static_assert(True)
