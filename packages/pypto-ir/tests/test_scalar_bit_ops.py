"""Shifts and bitwise operators of integer scalars (``<<``, ``>>``, ``&``, ``|``, ``^``): folded as
the kernel computes them (Python's results within 64 bits: a left shift wraps), spelled in C++ (the left
shift in unsigned arithmetic, so that a negative value is defined), printed and parsed back, and
refused on floats, booleans, tiles and out-of-range shift counts. A run with a run-time scalar is
in pypto-runtime's test_runtime_scalars.py."""

from __future__ import annotations

import pytest

import pypto.language as pl
from pypto.ir.codegen.cpp import scalar_expr
from pypto.ir.errors import KernelError
from pypto.ir.nodes import Assign, BinOp, Const, structural_equal, walk_stmts


def _kernel(expr: str, n_type: str = "pl.INT32") -> str:
    return f"""
@pl.function(type=pl.FunctionType.InCore)
def k(a: pl.Tensor[[8, 16], pl.FP32], n: pl.Scalar[{n_type}], y: pl.Out[pl.Tensor[[8, 16], pl.FP32]]) -> pl.Tensor[[8, 16], pl.FP32]:
    t = pl.load(a, [0, 0], [8, 16])
    m = {expr}
    return pl.store(pl.add(t, m), [0, 0], y)
"""


def _value_of_m(expr: str) -> object:
    """What ``m`` is bound to: its expression, or the constant the add reads (a folded ``m`` is
    no statement)."""
    fn = pl.parse(_kernel(expr))
    bound = [s.value for s in walk_stmts(fn.body) if isinstance(s, Assign) and s.var.name == "m"]
    if bound:
        return bound[0]
    (store,) = [s.value for s in walk_stmts(fn.body) if isinstance(s, Assign) and s.var.name == "ret0"]
    add = store.args[0]  # type: ignore[union-attr]
    return add.args[1]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("expr", "want"),
    [
        ("1 << 10", 1024),
        ("-5 >> 1", -3),  # Python's (and the kernel's arithmetic) shift: toward minus infinity
        ("1 << 63", -(1 << 63)),  # wraps to 64 bits, as the kernel's int64
        ("(1 << 63) >> 62", -2),  # ... so what follows sees the wrapped value
        ("-1 << 4", -16),
        ("12 & 10", 8),
        ("12 | 3", 15),
        ("12 ^ 10", 6),
        ("-8 & 0xFF", 248),
    ],
)
def test_constants_fold_as_the_kernel_computes(expr: str, want: int) -> None:
    v = _value_of_m(expr)
    assert isinstance(v, Const)
    assert v.value == want


def test_run_time_operands_are_spelled_in_cpp() -> None:
    v = _value_of_m("((n << 3) | (n & 5)) ^ (n >> 1)")
    assert isinstance(v, BinOp)
    assert v.op == "bitxor"
    cpp = scalar_expr(v)
    assert "static_cast<std::int64_t>(static_cast<std::uint64_t>(n) << (INT64_C(3)))" in cpp
    for part in ("(n & INT64_C(5))", "(n >> INT64_C(1))", " ^ ", " | "):
        assert part in cpp


def test_print_parses_back() -> None:
    fn = pl.parse(_kernel("((n << 3) | (n & 5)) ^ (n >> 1)"))
    assert structural_equal(pl.parse(fn.as_python()), fn)


@pytest.mark.parametrize(
    ("expr", "n_type", "match"),
    [
        ("n << 2", "pl.FP32", r"<< takes integer scalars; its left operand is Scalar\[FP32\]"),
        ("n & True", "pl.INT32", r"& takes integer scalars; its right operand is Scalar\[BOOL\]"),
        ("n << 64", "pl.INT32", r"<<: the shift count must be 0 to 63, got 64"),
        ("n >> -1", "pl.INT32", r">>: the shift count must be 0 to 63, got -1"),
        ("t << 1", "pl.INT32", r"does not apply to tiles"),
    ],
)
def test_what_is_refused(expr: str, n_type: str, match: str) -> None:
    with pytest.raises(KernelError, match=match):
        pl.parse(_kernel(expr, n_type))
