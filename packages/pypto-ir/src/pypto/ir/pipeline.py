"""The compile pipeline, as a readable list of named stages.

    parse (pypto.ir.parser)
      -> verify
      -> ssa              every name assigned once, nested op calls flattened
      -> outline_scopes   pl.at scopes become InCore kernels submitted by the orchestration
      -> call_directions  In/Out/InOut of kernel parameters and call arguments
      -> tensor_to_tile   tensor-level statements in kernels become load/compute/store
      -> nz_layout        NZ tensor parameters checked for their blocked (lowered) form
      -> verify
      -> codegen (pypto.ir.codegen)

The verifier runs between every two stages.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pypto.ir.nodes import Program
from pypto.ir.passes import call_directions, nz_layout, outline_scopes, ssa, tensor_to_tile
from pypto.ir.verifier import VerifyLevel, verify

__all__ = ["STAGES", "LowerResult", "Stage", "lower"]


@dataclass(frozen=True)
class Stage:
    name: str
    run: Callable[[Program], Program]
    after: VerifyLevel  # what the verifier requires of the result


STAGES: tuple[Stage, ...] = (
    Stage(ssa.NAME, ssa.run, VerifyLevel(ssa=True)),
    Stage(outline_scopes.NAME, outline_scopes.run, VerifyLevel(ssa=True, outlined=True)),
    Stage(call_directions.NAME, call_directions.run, VerifyLevel(ssa=True, outlined=True)),
    Stage(tensor_to_tile.NAME, tensor_to_tile.run, VerifyLevel(ssa=True, outlined=True, lowered=True)),
    Stage(nz_layout.NAME, nz_layout.run, VerifyLevel(ssa=True, outlined=True, lowered=True)),
)


@dataclass(frozen=True)
class LowerResult:
    program: Program
    trace: tuple[tuple[str, Program], ...]  # (stage name, program after it)


def lower(program: Program, *, check: bool = True, stages: tuple[Stage, ...] = STAGES) -> LowerResult:
    """Run ``stages`` in order, verifying before the first and after each one."""
    if check:
        verify(program, VerifyLevel(), "parse")
    trace = []
    for stage in stages:
        program = stage.run(program)
        if check:
            verify(program, stage.after, stage.name)
        trace.append((stage.name, program))
    return LowerResult(program, tuple(trace))
