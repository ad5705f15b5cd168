"""Upstream PyPTO's cross-core pipes (``pl.tpush_to_aiv``, ``pl.tpop_from_aic``, ``pl.tfree_to_aic``
and the other direction): parsed and type-checked, their misuses rejected at the line; the
simulated chip has no AIC-AIV pipe, so compiling one fails with an error that says so."""

from __future__ import annotations

from pathlib import Path

import pytest
from pypto_ir_test_helpers import Rejections, function, program

import pypto.language as pl
from pypto.ir.compile import compile_to_files
from pypto.ir.errors import PyptoCompileError
from pypto.ir.nodes import Assign, ExprStmt
from pypto.ir.types import MemorySpace, TileType


@pl.program
class Pipes:
    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, x: pl.Tensor[[16, 32], pl.FP16]) -> pl.Tensor[[16, 32], pl.FP16]:
        t = pl.load(x, [0, 0], [16, 32], target_memory=pl.MemorySpace.Mat)
        pl.tpush_to_aiv(t, split=1, id=2)
        back: pl.Tile[[16, 32], pl.FP16, pl.MemorySpace.Mat] = pl.tile.tpop_from_aiv()
        pl.tile.tfree_to_aiv(back)
        return x

    @pl.function(type=pl.FunctionType.AIV)
    def vector(self, x: pl.Tensor[[16, 32], pl.FP16]) -> pl.Tensor[[16, 32], pl.FP16]:
        half = pl.tpop_from_aic(shape=[8, 32], dtype=pl.FP16, split=1, id=2)
        pl.tfree_to_aic(half)
        pl.tile.tpush_to_aic(half, split=1)
        return x


def test_pipe_ops_build_typed_calls() -> None:
    cube = Pipes.functions["cube"]  # type: ignore[attr-defined]
    calls = {s.value.op: s.value for s in cube.body if isinstance(s, ExprStmt)}
    assert dict(calls["tile.tpush_to_aiv"].attrs) == {"split": 1, "id": 2}
    popped = next(s for s in cube.body if isinstance(s, Assign) and s.value.op == "tile.tpop_from_aiv")
    assert popped.var.type == TileType((16, 32), pl.FP16, MemorySpace.Mat)
    vector = Pipes.functions["vector"]  # type: ignore[attr-defined]
    half = next(s for s in vector.body if isinstance(s, Assign))
    assert half.var.type == TileType((8, 32), pl.FP16, MemorySpace.Vec)
    assert "tile.tfree_to_aic" in {s.value.op for s in vector.body if isinstance(s, ExprStmt)}


# a kernel that pushes a tile to the vector cores, called by an orchestration
Pushing = program(
    "[16, 32]",
    kernel=[
        "t = pl.load(x, [0, 0], [16, 32])",
        "pl.tpush_to_aiv(t, split=0)",
        "return pl.store(t, [0, 0], out)",
    ],
    main=["out = self.k(x, out)", "return out"],
    out="out",
)()


def test_a_kernel_with_a_pipe_does_not_compile_and_says_why(tmp_path: Path) -> None:
    with pytest.raises(PyptoCompileError, match=r"pl.tpush_to_aiv: the simulated chip has no cross-core"):
        compile_to_files(Pushing, tmp_path, contract="PROGRAM", platform="a2a3sim")


rejects = Rejections()


LOAD = "t = pl.load(x, [0, 0], [16, 32])"
# (case, kind of function f(x) -> x, its lines, the marker of the line rejected, the message)
for _name, _kind, _lines, _marker, _message in [
    (
        "push_from_vector",
        "AIV",
        [LOAD, "pl.tpush_to_aiv(t, split=0)  # the cube's op"],
        "# the cube's op",
        "pl.tpush_to_aiv runs on a cube (AIC) core, but this is a vector",
    ),
    (
        "push_without_split",
        "AIV",
        [LOAD, "pl.tpush_to_aic(t)  # no split"],
        "# no split",
        "missing a required argument: 'split'",
    ),
    (
        "split_out_of_range",
        "AIV",
        [LOAD, "pl.tpush_to_aic(t, split=3)  # only 0..2 this way"],
        "# only 0..2",
        "pl.tpush_to_aic(split): expected an int 0 to 2",
    ),
    (
        "untyped_pop",
        "AIV",
        ["t = pl.tpop_from_aic()  # no type", "pl.tfree_to_aic(t)"],
        "# no type",
        "the popped tile's type is not known",
    ),
    (
        "push_from_orchestration",
        "Orchestration",
        ["pl.tfree_to_aiv(x)  # not in a kernel"],
        "# not in a kernel",
        "pl.tfree_to_aiv runs on a core",
    ),
]:
    rejects.add(function(_kind, "[16, 32]", _lines, f"<{_name}>"), _marker, _message, _name)

test_rejected_at_the_line = rejects.test()
