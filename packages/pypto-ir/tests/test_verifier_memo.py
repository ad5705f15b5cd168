"""Within one run of the pipeline the verifier skips only what it has already checked: a function
object seen at the same level (an orchestration: with the same callee objects) and an op call
whose recorded type it has inferred. Anything a stage rebuilds is verified again."""

from __future__ import annotations

import dataclasses

import pytest
from pypto_ir_test_helpers import HostArray

import pypto.language as pl
from pypto.ir import pipeline, verifier
from pypto.ir.dtypes import DataType
from pypto.ir.nodes import Assign, Call, Program, Var
from pypto.ir.types import FunctionType, TileType
from pypto.ir.verifier import VerifyError, VerifyMemo, verify


@pl.jit
def scaled(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 16])
        pl.store(pl.mul(t, t), [0, 0], out)
    return out


def _lowered() -> Program:
    x = HostArray((16, 16))
    return pipeline.lower(scaled.specialize(x, x).program).program


def _walked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the functions the verifier walks from now on."""
    names: list[str] = []
    run = verifier._FnVerifier.run

    def counting(self: verifier._FnVerifier) -> None:
        names.append(self.fn.name)
        run(self)

    monkeypatch.setattr(verifier._FnVerifier, "run", counting)
    return names


def test_a_function_is_walked_again_unless_it_is_the_same_object_at_the_same_level(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    prog = _lowered()
    level = pipeline.STAGES[-1].after
    kernel = next(f for f in prog.funcs if f.func_type is FunctionType.InCore)
    walked = _walked(monkeypatch)
    memo = VerifyMemo()
    verify(prog, level, "first", memo)
    assert sorted(walked) == sorted(f.name for f in prog.funcs)
    walked.clear()
    verify(prog, level, "again", memo)  # the same objects: nothing to walk
    assert walked == []
    verify(prog, dataclasses.replace(level, outlined=False), "weaker", memo)  # another level
    assert sorted(walked) == sorted(f.name for f in prog.funcs)
    walked.clear()
    verify(prog, dataclasses.replace(level, lowered=False), "unlowered", memo)  # checks kernels only
    assert walked == [kernel.name]
    walked.clear()
    # an equal kernel rebuilt by a stage is a new object; the orchestration calling it is
    # checked again against it
    rebuilt = dataclasses.replace(kernel)
    verify(prog.replace(tuple(rebuilt if f is kernel else f for f in prog.funcs)), level, "rebuilt", memo)
    assert sorted(walked) == sorted(f.name for f in prog.funcs)


def test_a_mistyped_call_in_a_rebuilt_function_is_caught_after_its_call_was_verified() -> None:
    prog = _lowered()
    level = pipeline.STAGES[-1].after
    memo = VerifyMemo()
    verify(prog, level, "first", memo)
    kernel = next(f for f in prog.funcs if f.func_type is FunctionType.InCore)
    i, a = next(
        (i, s)
        for i, s in enumerate(kernel.body)
        if isinstance(s, Assign) and isinstance(s.value, Call) and isinstance(s.value.type, TileType)
    )
    wrong = dataclasses.replace(a.value.type, dtype=DataType.FP16)
    bad_stmt = Assign(Var(a.var.name, wrong), dataclasses.replace(a.value, type=wrong))
    bad = dataclasses.replace(kernel, body=(*kernel.body[:i], bad_stmt, *kernel.body[i + 1 :]))
    with pytest.raises(
        VerifyError, match=r"IR verification failed after bad_stage in function .*records type"
    ):
        verify(prog.replace(tuple(bad if f is kernel else f for f in prog.funcs)), level, "bad_stage", memo)
