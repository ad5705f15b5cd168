"""Programs upstream PyPTO's language tests reject are rejected here too, each with an error at
the offending line that says what to write instead."""

from __future__ import annotations

import pytest
from pypto_ir_test_helpers import Rejections, TextProgram, program, task_program
from pypto_ir_test_programs import PRINTED_CALL

import pypto.language as pl
from pypto.ir.errors import KernelError

rejects = Rejections()


@rejects("in range(10)", "a kernel loop must use pl.range(), not Python's range")
def python_range() -> object:
    @pl.function
    def f(n: pl.Tensor[[1], pl.INT32]) -> pl.Tensor[[1], pl.INT32]:
        r: pl.Tensor[[1], pl.INT32] = n
        for _i in range(10):
            r = pl.add(r, 1)
        return r

    return f.ir


@rejects("if 1:", "an if condition must be a bool scalar")
def int_condition() -> object:
    @pl.function
    def f(x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
        if 1:
            r: pl.Tensor[[64], pl.FP32] = pl.mul(x, 2.0)
        else:
            r = x
        return r

    return f.ir


@rejects("pl.yield_(x + 1)", "requires an assignment-form pl.yield_: x_next = pl.yield_(...)")
def bare_yield() -> object:
    @pl.function
    def f(x0: pl.Scalar[pl.INT64]) -> pl.Scalar[pl.INT64]:
        for _i, (x,) in pl.range(10, init_values=(x0,)):
            pl.yield_(x + 1)
        return x0

    return f.ir


def _blocks(lines: list[str], name: str) -> TextProgram:
    """A program whose orchestration ``main(a, out)`` on [512, 128] FP32 tensors runs ``lines``
    and returns ``out``."""
    return program("[512, 128]", name, main=[*lines, "return out"], ins=("a",), out="out")


# the launches of four blocks, each rejected at its first line
BLOCK_LAUNCHES = [
    (
        "spmd_deps_without_tid",
        "deps=[]",
        "pl.spmd does not accept 'deps=' without a task id",
        [
            "with pl.spmd(4, deps=[]):  # deps without `as tid`",
            "    i = pl.tile.get_block_idx()",
            "    out = pl.store(pl.load(a, [i * 128, 0], [128, 128]), [i * 128, 0], out)",
        ],
    ),
    (
        "spmd_without_block_index",
        "every block the same",
        "neither reads the per-block index",
        [
            "with pl.spmd(4):  # every block the same work",
            "    t = pl.load(a, [0, 0], [128, 128])",
            "    out = pl.store(pl.add(t, t), [0, 0], out)",
        ],
    ),
    (
        "spmd_tid_in_cluster",
        "as tid:",
        "cannot capture a TaskId when nested inside pl.cluster",
        [
            "with pl.cluster():",
            "    with pl.spmd(4) as tid:",
            "        j = pl.tile.get_block_idx()",
            "        out = pl.store(pl.load(a, [j * 128, 0], [128, 128]), [j * 128, 0], out)",
        ],
    ),
    (
        "spmd_early_resolve_in_cluster",
        "allow_early_resolve=True",
        "cannot be nested inside pl.cluster()",
        [
            "with pl.cluster():",
            "    for k in pl.spmd(4, allow_early_resolve=True):",
            "        out = pl.store(pl.load(a, [k * 128, 0], [128, 128]), [k * 128, 0], out)",
        ],
    ),
]
for _name, _marker, _message, _lines in BLOCK_LAUNCHES:
    rejects.add(_blocks(_lines, f"<{_name}>"), _marker, _message, _name)

# manual scopes in a kernel-and-orchestration program, each rejected at the line marked
rejects.add(
    task_program(
        ["with pl.manual_scope():", "    pl.submit(self.k, x)  # results and task id dropped", "return x"],
        "<bare_submit_in_manual_scope>",
    ),
    "pl.submit(self.k, x)  #",
    "must be unpacked into its results and task id",
    "bare_submit_in_manual_scope",
)
rejects.add(
    task_program(
        [
            "with pl.manual_scope():",
            "    tids = pl.array.create(4, pl.TASK_ID)",
            "    for n in pl.parallel(4):",
            "        _a, t = pl.submit(self.k, x)",
            "        tids[n] = t",
            "    _b, _u = pl.submit(self.k, x, deps=[tids[m] for m in pl.range(4)])",
            "return x",
        ],
        "<deps_over_a_dsl_loop>",
    ),
    "for m in pl.range(4)",
    "is a DSL loop",
    "deps_over_a_dsl_loop",
)


@rejects("no_dep_args=[x, x]", "no_dep_args names 'x' more than once")
def duplicate_no_dep() -> object:
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Opaque)
        def main(self, x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP, no_dep_args=[x, x]):
                y: pl.Tensor[[64], pl.FP32] = pl.add(x, x)
            return y

    return P


test_rejected_at_the_line = rejects.test()


def _printed(directions: str) -> str:
    return PRINTED_CALL.replace("CALL_ATTRS", f'"arg_directions": [{directions}]')


def test_printed_arg_directions_are_read_back() -> None:
    prog = pl.parse(_printed("pl.adir.input, pl.adir.output_existing"))
    assert "kernel" in {f.name for f in prog.funcs}  # type: ignore[union-attr]
    with pytest.raises(KernelError, match=r"pl.adir has no attribute .sideways."):
        pl.parse(_printed("pl.adir.input, pl.adir.sideways"))
    with pytest.raises(KernelError, match=r"arg_directions names 1 direction\(s\) for 2 argument\(s\)"):
        pl.parse(_printed("pl.adir.input"))
