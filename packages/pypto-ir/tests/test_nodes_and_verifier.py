"""The IR: printer, structural equality (alpha-equivalence) and the verifier's checks."""

from __future__ import annotations

import dataclasses

import pytest

from pypto.ir.dtypes import DataType
from pypto.ir.nodes import (
    Assign,
    Call,
    CallFunc,
    Const,
    ExprStmt,
    For,
    Function,
    IterArg,
    Param,
    Program,
    Return,
    Var,
    Yield,
    print_ir,
    structural_equal,
)
from pypto.ir.param_info import ParamDirection
from pypto.ir.types import FunctionType, MemorySpace, ScalarType, TensorType, TileType, TupleType
from pypto.ir.verifier import VerifyError, VerifyLevel, verify

F32 = DataType.FP32
TT = TensorType((16, 16), F32)
TL = TileType((16, 16), F32, MemorySpace.Vec)
I64 = DataType.INT64


def kernel(tile_name: str = "t", out_name: str = "o") -> Function:
    a, o = Var("a", TT), Var(out_name, TT)
    t = Var(tile_name, TL)
    zero = (Const(0, I64), Const(0, I64))
    body = (
        Assign(t, Call("tile.load", (a, zero), (("shape", (16, 16)),), TL)),
        ExprStmt(Call("tile.store", (t, zero, o), (), TT)),
        Return(()),
    )
    return Function("k", (Param(a), Param(o, ParamDirection.OUT)), (), body, FunctionType.InCore)


def test_printer_is_readable() -> None:
    text = print_ir(kernel())
    assert "def @k(a: In Tensor[[16, 16], FP32], o: Out Tensor[[16, 16], FP32]) -> ():  # InCore" in text
    assert "t: Tile[[16, 16], FP32, Vec] = tile.load(a, [0, 0], shape=[16, 16])" in text


def test_structural_equality_is_alpha_equivalence() -> None:
    assert structural_equal(kernel("t"), kernel("renamed"))
    assert kernel("t") != kernel("renamed")
    assert not structural_equal(kernel(), dataclasses.replace(kernel(), func_type=FunctionType.AIV))
    a, b = Var("a", TT), Var("b", TT)
    # a consistent renaming only: (a, a) is not (a, b)
    assert not structural_equal((a, a), (a, b))


def test_nodes_are_immutable() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        kernel().name = "x"  # type: ignore[misc]


def test_program_rejects_bad_entry_and_duplicate_names() -> None:
    k = kernel()
    with pytest.raises(ValueError, match="entry 'main'"):
        Program("p", (k,), "main")
    with pytest.raises(ValueError, match="repeat"):
        Program("p", (k, k), "k")


def _prog(*fns: Function) -> Program:
    return Program("p", fns, fns[0].name)


def test_verifier_accepts_a_good_kernel() -> None:
    verify(_prog(kernel()), VerifyLevel(ssa=True, outlined=True, lowered=True))


def test_verifier_reports_wrong_recorded_type() -> None:
    k = kernel()
    bad_tile = TileType((16, 16), DataType.FP16, MemorySpace.Vec)
    s0 = k.body[0]
    assert isinstance(s0, Assign)
    body = (Assign(Var("t", bad_tile), dataclasses.replace(s0.value, type=bad_tile)), *k.body[1:])
    with pytest.raises(VerifyError, match=r"op tile.load records type Tile\[\[16, 16\], FP16, Vec\]") as info:
        verify(_prog(dataclasses.replace(k, body=body)), stage="test")
    assert "after test in function 'k'" in str(info.value)


def test_verifier_reports_undefined_use_and_double_assignment() -> None:
    k = kernel()
    body = (k.body[1], *k.body)
    with pytest.raises(VerifyError, match="'t' is used but not defined here"):
        verify(_prog(dataclasses.replace(k, body=body)))
    twice = (k.body[0], k.body[0], *k.body[1:])
    with pytest.raises(VerifyError, match="'t' is assigned more than once in SSA form"):
        verify(_prog(dataclasses.replace(k, body=twice)), VerifyLevel(ssa=True))


def test_verifier_checks_operand_rules() -> None:
    k = kernel()
    t = Var("t", TL)
    mm = Call("tile.matmul", (t, t), (), TileType((16, 16), F32, MemorySpace.Acc))
    body = (k.body[0], Assign(Var("m", mm.type), mm), *k.body[1:])
    with pytest.raises(VerifyError, match=r"op tile.matmul rejects operands .* must be in Left memory"):
        verify(_prog(dataclasses.replace(k, body=body)))


def test_verifier_checks_placement() -> None:
    k = kernel()
    orch = Function(
        "main",
        k.params,
        (),
        (ExprStmt(CallFunc("k", tuple(p.var for p in k.params), TupleType(()))), Return(())),
        FunctionType.Orchestration,
    )
    verify(Program("p", (orch, k), "main"), VerifyLevel(outlined=True))
    in_kernel = dataclasses.replace(k, body=(orch.body[0], *k.body))
    with pytest.raises(VerifyError, match="kernel calls function 'k'"):
        verify(Program("p", (orch, in_kernel), "main"))
    tile_in_orch = dataclasses.replace(orch, body=(k.body[0], *orch.body))
    with pytest.raises(VerifyError, match="runs on a core but appears in orchestration"):
        verify(Program("p", (tile_in_orch, k), "main"), VerifyLevel(outlined=True))


def test_verifier_checks_loops() -> None:
    i, acc, acc2, res = (
        Var("i", ScalarType(I64)),
        Var("acc", ScalarType(I64)),
        Var("acc2", ScalarType(I64)),
        Var("r", ScalarType(I64)),
    )
    from pypto.ir.nodes import BinOp

    good = For(
        i,
        Const(0, I64),
        Const(4, I64),
        Const(1, I64),
        (Assign(acc2, BinOp("add", acc, i, ScalarType(I64))), Yield((acc2,))),
        (IterArg(acc, Const(0, I64)),),
        (res,),
    )
    fn = Function("f", (), (), (good, Return(())), FunctionType.Orchestration)
    verify(_prog(fn), VerifyLevel(ssa=True))
    no_yield = dataclasses.replace(good, body=good.body[:1])
    with pytest.raises(VerifyError, match="must end its body with a yield"):
        verify(_prog(dataclasses.replace(fn, body=(no_yield, Return(())))))
