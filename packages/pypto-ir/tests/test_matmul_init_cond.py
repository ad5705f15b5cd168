"""``pl.matmul_acc(..., init_cond=...)``: a run-time condition is the op's fourth operand and the
kernel chooses TMATMUL or TMATMUL_ACC with it, a literal one picks the form when compiling, and
what the rule refuses. Runs are in pypto-runtime's test_matmul_init_cond_run.py."""

from __future__ import annotations

import pytest

import pypto.language as pl
from pypto.ir.codegen import generate_kernel
from pypto.ir.errors import KernelError
from pypto.ir.nodes import Assign, Call, structural_equal, walk_stmts


@pl.function(type=pl.FunctionType.InCore)
def _split_k(
    a: pl.Tensor[[16, 128], pl.FP32],
    b: pl.Tensor[[128, 32], pl.FP32],
    c: pl.Out[pl.Tensor[[16, 32], pl.FP32]],
) -> pl.Tensor[[16, 32], pl.FP32]:
    acc = pl.tile.create([16, 32], pl.FP32, target_memory=pl.MemorySpace.Acc)
    for k0 in pl.range(0, 128, 32):
        a_l1 = pl.load(a, [0, k0], [16, 32], target_memory=pl.MemorySpace.Mat)
        b_l1 = pl.load(b, [k0, 0], [32, 32], target_memory=pl.MemorySpace.Mat)
        a_l0 = pl.move(a_l1, target_memory=pl.MemorySpace.Left)
        b_l0 = pl.move(b_l1, target_memory=pl.MemorySpace.Right)
        acc = pl.matmul_acc(acc, a_l0, b_l0, init_cond=(k0 == 0))
    return pl.store(acc, [0, 0], c)


def _matmul_calls(fn: pl.Function) -> list[Call]:
    values = [s.value for s in walk_stmts(fn.ir.body) if isinstance(s, Assign)]
    return [v for v in values if isinstance(v, Call) and v.op in ("tile.matmul", "tile.matmul_acc")]


def test_a_run_time_condition_chooses_the_instruction_in_the_kernel() -> None:
    (call,) = _matmul_calls(_split_k)
    assert call.op == "tile.matmul_acc"
    assert len(call.args) == 4
    text = generate_kernel(_split_k.ir).text
    assert "if ((k0 == INT64_C(0))) TMATMUL(" in text
    assert "; else TMATMUL_ACC(" in text


@pytest.mark.parametrize(("literal", "op"), [(True, "tile.matmul"), (False, "tile.matmul_acc")])
def test_a_literal_condition_picks_the_form(literal: bool, op: str) -> None:
    @pl.function(type=pl.FunctionType.InCore)
    def k(
        a: pl.Tensor[[16, 32], pl.FP32],
        b: pl.Tensor[[32, 32], pl.FP32],
        c: pl.Out[pl.Tensor[[16, 32], pl.FP32]],
    ) -> pl.Tensor[[16, 32], pl.FP32]:
        left = pl.move(
            pl.load(a, [0, 0], [16, 32], target_memory=pl.MemorySpace.Mat), target_memory=pl.MemorySpace.Left
        )
        right = pl.move(
            pl.load(b, [0, 0], [32, 32], target_memory=pl.MemorySpace.Mat), target_memory=pl.MemorySpace.Right
        )
        acc = pl.tile.create([16, 32], pl.FP32, target_memory=pl.MemorySpace.Acc)
        out = pl.tile.matmul_acc(acc, left, right, init_cond=literal)
        return pl.store(out, [0, 0], c)

    (call,) = _matmul_calls(k)
    assert call.op == op
    assert len(call.args) == (2 if literal else 3)


def test_a_condition_that_is_not_a_bool_is_refused() -> None:
    @pl.function(type=pl.FunctionType.InCore)
    def k(
        a: pl.Tensor[[16, 32], pl.FP32],
        b: pl.Tensor[[32, 32], pl.FP32],
        c: pl.Out[pl.Tensor[[16, 32], pl.FP32]],
    ) -> pl.Tensor[[16, 32], pl.FP32]:
        acc = pl.tile.create([16, 32], pl.FP32, target_memory=pl.MemorySpace.Acc)
        for k0 in pl.range(0, 32, 16):
            left = pl.move(
                pl.load(a, [0, 0], [16, 32], target_memory=pl.MemorySpace.Mat),
                target_memory=pl.MemorySpace.Left,
            )
            right = pl.move(
                pl.load(b, [0, 0], [32, 32], target_memory=pl.MemorySpace.Mat),
                target_memory=pl.MemorySpace.Right,
            )
            acc = pl.matmul_acc(acc, left, right, init_cond=k0)
        return pl.store(acc, [0, 0], c)

    with pytest.raises(
        KernelError, match=r"pl.matmul_acc: init_cond must be a BOOL scalar .*got Scalar\[INT64\]"
    ):
        _ = k.ir

    @pl.function(type=pl.FunctionType.InCore)
    def k2(
        a: pl.Tensor[[16, 32], pl.FP32],
        b: pl.Tensor[[32, 32], pl.FP32],
        c: pl.Out[pl.Tensor[[16, 32], pl.FP32]],
    ) -> pl.Tensor[[16, 32], pl.FP32]:
        left = pl.move(
            pl.load(a, [0, 0], [16, 32], target_memory=pl.MemorySpace.Mat), target_memory=pl.MemorySpace.Left
        )
        right = pl.move(
            pl.load(b, [0, 0], [32, 32], target_memory=pl.MemorySpace.Mat), target_memory=pl.MemorySpace.Right
        )
        acc = pl.tile.create([16, 32], pl.FP32, target_memory=pl.MemorySpace.Acc)
        return pl.store(pl.matmul_acc(acc, left, right, init_cond=1), [0, 0], c)

    with pytest.raises(KernelError, match=r"init_cond must be True, False or a BOOL scalar .*got 1"):
        _ = k2.ir


def test_tensor_operands_take_no_condition() -> None:
    @pl.function(type=pl.FunctionType.InCore)
    def k(
        a: pl.Tensor[[16, 32], pl.FP32],
        b: pl.Tensor[[32, 32], pl.FP32],
        c: pl.InOut[pl.Tensor[[16, 32], pl.FP32]],
    ) -> pl.Tensor[[16, 32], pl.FP32]:
        return pl.matmul_acc(c, a, b, init_cond=True)

    with pytest.raises(KernelError, match=r"init_cond: applies to tile operands"):
        _ = k.ir


def test_print_parses_back_to_the_same_function() -> None:
    printed = _split_k.ir.as_python()
    assert "pl.matmul_acc(acc, a_l0, b_l0, init_cond=(k0 == 0))" in printed
    assert structural_equal(pl.parse(printed), _split_k.ir)
