"""The verifier runs between every two stages of the pipeline and on the parsed IR, and a
failure names the stage that produced the ill-formed IR. Skipping any of those checks fails a
test here: an injected stage that breaks an invariant must be caught right after it."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest
from pypto_ir_test_helpers import HostArray

import pypto.language as pl
from pypto.ir import pipeline
from pypto.ir.compile import compile_to_files
from pypto.ir.dtypes import DataType
from pypto.ir.nodes import Assign, Call, Function, Program, Stmt, Var
from pypto.ir.types import TileType
from pypto.ir.verifier import VerifyError, VerifyLevel


@pl.jit.incore
def _square(src: pl.Tensor, dst: pl.Out[pl.Tensor]):
    t = pl.load(src, [0, 0], [16, 16])
    pl.store(pl.mul(t, t), [0, 0], dst)
    return dst


@pl.jit
def add(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.add(a, b)
    c = _square(c, c)
    return c


def _parsed() -> Program:
    x = HostArray((16, 16))
    return add.specialize(x, x, x).program


def _first_assign(fn: Function) -> int | None:
    """The first top-level assignment of a name that is not a parameter."""
    params = {p.name for p in fn.params}
    return next(
        (i for i, s in enumerate(fn.body) if isinstance(s, Assign) and s.var.name not in params), None
    )


def _edit_first_assign(
    program: Program, edit: Callable[[tuple[Stmt, ...], int], tuple[Stmt, ...]]
) -> Program:
    """``program`` with the body of its first function that has a top-level assignment replaced by
    ``edit(body, index of that assignment)``."""
    for k, fn in enumerate(program.funcs):
        i = _first_assign(fn)
        if i is not None:
            funcs = (
                *program.funcs[:k],
                dataclasses.replace(fn, body=edit(fn.body, i)),
                *program.funcs[k + 1 :],
            )
            return Program(program.name, funcs, program.entry)
    raise AssertionError("no function with a top-level assignment")


def _duplicate_an_assignment(program: Program) -> Program:
    """Ill-formed SSA: one top-level assignment of some function appears twice."""
    return _edit_first_assign(program, lambda body, i: (*body[: i + 1], body[i], *body[i + 1 :]))


def _drop_an_assignment(program: Program) -> Program:
    """Ill-formed IR at any level: a name used but never defined."""
    return _edit_first_assign(program, lambda body, i: (*body[:i], *body[i + 1 :]))


def _mistype(body: tuple[Stmt, ...], i: int) -> tuple[Stmt, ...]:
    a = body[i]
    assert isinstance(a, Assign)
    assert isinstance(a.value, Call)
    assert isinstance(a.value.type, TileType)
    wrong = dataclasses.replace(a.value.type, dtype=DataType.FP16)
    bad = Assign(Var(a.var.name, wrong), dataclasses.replace(a.value, type=wrong))
    return (*body[:i], bad, *body[i + 1 :])


def _mistype_an_assignment(program: Program) -> Program:
    """Ill-formed IR that the passes would carry along: a recorded type the op does not infer."""
    return _edit_first_assign(program, _mistype)


BAD = pipeline.Stage("injected_bad_stage", _duplicate_an_assignment, VerifyLevel(ssa=True))


@pytest.mark.parametrize("at", range(1, len(pipeline.STAGES) + 1))
def test_the_verifier_after_each_stage_names_a_stage_that_breaks_the_ir(at: int) -> None:
    stages = (*pipeline.STAGES[:at], BAD, *pipeline.STAGES[at:])
    with pytest.raises(VerifyError, match=r"IR verification failed after injected_bad_stage in function"):
        pipeline.lower(_parsed(), stages=stages)


def test_without_the_check_the_broken_ir_goes_through() -> None:
    """The failure above comes from the verifier, not from the stages after the bad one."""
    stages = (*pipeline.STAGES, BAD)
    pipeline.lower(_parsed(), stages=stages, check=False)


def test_the_parsed_ir_is_verified_before_the_first_stage() -> None:
    with pytest.raises(
        VerifyError, match=r"IR verification failed after parse in function 'square': .*not defined"
    ):
        pipeline.lower(_drop_an_assignment(_parsed()))
    with pytest.raises(VerifyError, match=r"IR verification failed after parse in function 'square'"):
        pipeline.lower(_mistype_an_assignment(_parsed()))


def test_compile_to_files_verifies_between_its_stages(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(pipeline, "STAGES", (*pipeline.STAGES[:2], BAD, *pipeline.STAGES[2:]))
    with pytest.raises(VerifyError, match="after injected_bad_stage"):
        compile_to_files(_parsed(), tmp_path / "out", contract="PROGRAM", platform="a2a3sim")
    assert not (tmp_path / "out" / "compiled_meta.json").exists()


def test_compile_to_files_verifies_the_parsed_ir(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(VerifyError, match="after parse"):
        compile_to_files(
            _mistype_an_assignment(_parsed()), tmp_path / "out", contract="PROGRAM", platform="a2a3sim"
        )


def test_the_compile_steps_are_listed_in_the_pipeline_in_order(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """``compile_to_files`` runs exactly ``pipeline.COMPILE``, in its order."""
    assert [s.name for s in pipeline.COMPILE] == [
        "target",
        "aliases",
        "contract",
        "lower",
        "host_access",
        "lower_signature",
        "lowered_abi",
        "kernels",
        "buffer_capacity",
        "orchestration",
        "metadata",
    ]
    ran: list[str] = []
    steps = tuple(
        pipeline.Step(s.name, lambda b, s=s: (ran.append(s.name), s.run(b))[1]) for s in pipeline.COMPILE
    )
    monkeypatch.setattr(pipeline, "COMPILE", steps)
    result = compile_to_files(_parsed(), tmp_path / "out", contract="PROGRAM", platform="a2a3sim")
    assert ran == [s.name for s in steps]
    assert result.metadata.kernels
    assert (tmp_path / "out" / "compiled_meta.json").is_file()
