"""The compile pipeline, as readable lists of named stages.

``compile_to_files`` (pypto.ir.compile) runs ``COMPILE``, then writes the files:

    target           the platform is a known one (an NPU platform's sources are built for the
                     device by pypto-runtime: pypto.runtime.device_build)
    aliases          a second SSA run, on the original (parsed) IR: the entry's return
                     aliases (analysis.return_lineage.entry_aliases) and the logical signature
    contract         KERNEL: validate_kernel_contract; PROGRAM: every return aliases a parameter
    lower            the IR stages below (STAGES), with the verifier between every two
    host_access      host reads/writes in the orchestration vs the kernels' use (lowered IR)
    lower_signature  nz_layout.lower_signature: the assembly (lowered) signature
    lowered_abi      KERNEL: check_lowered_abi, the lowered ABI against the logical signature
    kernels          codegen: one C++ source per kernel the entry calls
    buffer_capacity  the tiles each kernel has live at once fit the platform's on-chip buffers
    orchestration    codegen: the orchestration's C++ source
    metadata         compiled_meta.json's content

``lower`` runs ``STAGES`` (also on its own, e.g. ``JITFunction.lower``):

    parse (pypto.language.parser)
      -> verify
      -> ssa              every name assigned once, nested op calls flattened
      -> verify
      -> outline_scopes   pl.at scopes become InCore kernels submitted by the orchestration
      -> verify
      -> task_barriers    pl.system.task_dummy becomes a submit of an empty kernel
      -> verify
      -> call_directions  In/Out/InOut of kernel parameters and call arguments
      -> verify
      -> tensor_to_tile   tensor-level statements in kernels become load/compute/store
      -> verify
      -> decompose_math   tanh, sigmoid, gelu, erf, softplus, pow, ... become PTO-ISA element-wise ops
      -> verify
      -> nz_layout        NZ tensor parameters checked for their blocked (lowered) form
      -> verify

The verifier runs between every two stages; a failure names the stage before it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pypto.ir import build
from pypto.ir.build import Build
from pypto.ir.nodes import Program
from pypto.ir.passes import (
    call_directions,
    decompose_math,
    nz_layout,
    outline_scopes,
    ssa,
    task_barriers,
    tensor_to_tile,
)
from pypto.ir.verifier import VerifyLevel, VerifyMemo, verify

__all__ = ["COMPILE", "STAGES", "Build", "LowerResult", "Stage", "Step", "lower", "run_compile"]


@dataclass(frozen=True)
class Stage:
    """An IR pass: Program -> Program, then the verifier at level ``after``."""

    name: str
    run: Callable[[Program], Program]
    after: VerifyLevel  # what the verifier requires of the result


STAGES: tuple[Stage, ...] = (
    Stage(ssa.NAME, ssa.run, VerifyLevel(ssa=True)),
    Stage(outline_scopes.NAME, outline_scopes.run, VerifyLevel(ssa=True, outlined=True)),
    Stage(task_barriers.NAME, task_barriers.run, VerifyLevel(ssa=True, outlined=True)),
    Stage(call_directions.NAME, call_directions.run, VerifyLevel(ssa=True, outlined=True)),
    Stage(tensor_to_tile.NAME, tensor_to_tile.run, VerifyLevel(ssa=True, outlined=True, lowered=True)),
    Stage(decompose_math.NAME, decompose_math.run, VerifyLevel(ssa=True, outlined=True, lowered=True)),
    Stage(nz_layout.NAME, nz_layout.run, VerifyLevel(ssa=True, outlined=True, lowered=True)),
)


@dataclass(frozen=True)
class LowerResult:
    program: Program
    trace: tuple[tuple[str, Program], ...]  # (stage name, program after it)


def lower(program: Program, *, check: bool = True, stages: tuple[Stage, ...] | None = None) -> LowerResult:
    """Run ``stages`` (default ``STAGES``) in order, verifying before the first and after each one."""
    if stages is None:
        stages = STAGES
    memo = VerifyMemo()  # a function a stage hands on unchanged is not verified twice
    if check:
        verify(program, VerifyLevel(), "parse", memo)
    trace = []
    for stage in stages:
        program = stage.run(program)
        if check:
            verify(program, stage.after, stage.name, memo)
        trace.append((stage.name, program))
    return LowerResult(program, tuple(trace))


def _lower(b: Build) -> None:
    stages = STAGES
    known = b.ssa_form
    if known is not None and stages and stages[0].run is ssa.run:
        # the aliases step has run SSA on this very program (a pure function of it): reuse it
        def first(p: Program, done: Program = known) -> Program:
            return done if p is b.program else ssa.run(p)

        stages = (Stage(stages[0].name, first, stages[0].after), *stages[1:])
    b.lowered = lower(b.program, stages=stages).program


@dataclass(frozen=True)
class Step:
    """One step of a compile: reads and fills in the ``Build``."""

    name: str
    run: Callable[[Build], None]


COMPILE: tuple[Step, ...] = (
    Step("target", build.target),
    Step("aliases", build.aliases),
    Step("contract", build.contract),
    Step("lower", _lower),
    Step("host_access", build.host_access),
    Step("lower_signature", build.lower_signature),
    Step("lowered_abi", build.lowered_abi),
    Step("kernels", build.kernels),
    Step("buffer_capacity", build.buffer_capacity),
    Step("orchestration", build.orchestration),
    Step("metadata", build.metadata),
)


def run_compile(b: Build, steps: tuple[Step, ...] | None = None) -> Build:
    """Run ``steps`` (default ``COMPILE``) on ``b`` in order; returns ``b``, filled in."""
    for step in COMPILE if steps is None else steps:
        step.run(b)
    return b
