"""The task-graph forms of an orchestration: ``pl.manual_scope``, ``pl.submit``, task-id arrays
and ``pl.system.task_dummy``: what the parser accepts and rejects, the IR after lowering, and
the orchestration C++ they become. Runs on the chip: pypto-runtime's test_task_graph_runs.py."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from pypto_ir_test_helpers import load_source

import pypto.language as pl
from pypto.ir.codegen.orchestration import generate_orchestration
from pypto.ir.errors import KernelError
from pypto.ir.nodes import Assign, Call, CallFunc, ExprStmt, Program, Return, walk_stmts
from pypto.ir.passes import task_barriers
from pypto.ir.pipeline import lower
from pypto.ir.types import ArrayType, TaskIdType

_HEAD = """
import pypto.language as pl

N = 24


@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def inc(
        self,
        x: pl.Tensor[[8, N], pl.FP32],
        y: pl.Out[pl.Tensor[[8, N], pl.FP32]],
    ) -> pl.Tensor[[8, N], pl.FP32]:
        return pl.store(pl.add(pl.load(x, [0, 0], [8, N]), 1.0), [0, 0], y)

    @pl.function(type=pl.FunctionType.InCore)
    def same(self, x: pl.Tensor[[8, N], pl.FP32]) -> pl.Tensor[[8, N], pl.FP32]:
        return x

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        x: pl.Tensor[[8, N], pl.FP32],
        a: pl.Out[pl.Tensor[[8, N], pl.FP32]],
        b: pl.Out[pl.Tensor[[8, N], pl.FP32]],
    ) -> pl.Tensor[[8, N], pl.FP32]:
"""


def program(body: str, tmp_path: Path) -> Program:
    """The program of one kernel (``y = x + 1`` over [8, N]) and an orchestration ``main`` whose
    body is ``body`` (its lines indented by 4), loaded from a file as users write them."""
    text = _HEAD + textwrap.indent(textwrap.dedent(body).strip() + "\n", " " * 8)
    return load_source(text, tmp_path).P  # type: ignore[no-any-return]


def _orch_text(p: Program) -> str:
    low = lower(p).program
    kernels = [f.name for f in low.funcs if f.func_type.is_kernel]
    return generate_orchestration(low.entry_function, low, {k: i for i, k in enumerate(kernels)}).text


FAN_IN = """
with pl.manual_scope():
    tids = pl.array.create(3, pl.TASK_ID)
    a, t0 = pl.submit(self.inc, x, a)
    tids[0] = t0
    gate = pl.system.task_dummy(deps=[tids, None])
    b, t1 = pl.submit(self.inc, a, b, deps=[gate, tids[0]])
return b
"""


def test_the_forms_become_scope_marks_array_ops_and_submits_with_deps(tmp_path: Path) -> None:
    p = program(FAN_IN, tmp_path)
    main = p.functions["main"]
    ops = [
        s.value.op
        for s in walk_stmts(main.body)
        if isinstance(s, (Assign, ExprStmt)) and isinstance(s.value, Call)
    ]
    assert ops[0] == "system.scope_begin"
    assert ops[-1] == "system.scope_end"
    assert ops.count("array.create") == 1
    assert ops.count("array.set") == 1
    submits = [s for s in walk_stmts(main.body) if isinstance(s, Assign) and isinstance(s.value, CallFunc)]
    assert [s.var.type for s in submits] == [TaskIdType(), TaskIdType()]
    last = submits[-1].value
    assert isinstance(last, CallFunc)
    assert [type(d.type) for d in last.deps] == [TaskIdType, TaskIdType]  # gate and tids[0]
    assert isinstance(last.deps[1], Call)
    assert last.deps[1].op == "array.get"
    arrays = [
        s.var for s in walk_stmts(main.body) if isinstance(s, Assign) and isinstance(s.var.type, ArrayType)
    ]
    assert arrays[0].type == ArrayType(3)


def test_task_dummy_lowers_to_an_empty_kernel_submitted_with_the_deps(tmp_path: Path) -> None:
    low = lower(program(FAN_IN, tmp_path)).program
    dummy = low.functions[task_barriers.KERNEL]
    assert dummy.params == ()
    assert dummy.func_type.is_kernel
    calls = [e for s in walk_stmts(low.entry_function.body) if isinstance(s, Assign) for e in [s.value]]
    barrier = next(c for c in calls if isinstance(c, CallFunc) and c.callee == task_barriers.KERNEL)
    assert barrier.args == ()
    assert len(barrier.deps) == 1
    assert isinstance(barrier.deps[0].type, ArrayType)


def test_orchestration_cpp_filters_unset_entries_and_brackets_the_scope(tmp_path: Path) -> None:
    text = _orch_text(program(FAN_IN, tmp_path))
    assert "std::vector<std::int64_t> tids(3, -1);" in text
    assert "if (pypto_d >= 0)" in text  # an array in deps: only the entries that were set
    assert text.index("orch.scope_begin()") < text.index("orch.submit(") < text.index("orch.scope_end()")
    assert "is outside the array's 3 entries" in text


def test_without_arrays_a_submit_keeps_the_initializer_list_form(tmp_path: Path) -> None:
    chain = """
    a, t0 = pl.submit(self.inc, x, a)
    b, t1 = pl.submit(self.inc, a, b, deps=[t0])
    return b
    """
    text = _orch_text(program(chain, tmp_path))
    assert "{simpler::in(a), simpler::out(b)}, {}, {t0});" in text
    assert "scope_begin" not in text


def test_submit_results_are_the_arguments_the_kernel_returns(tmp_path: Path) -> None:
    body = """
    with pl.manual_scope():
        c, t0 = pl.submit(self.same, x)
        _a2, _t1 = pl.submit(self.inc, c, a, deps=[t0])
        b, t2 = pl.submit(self.inc, c, b, deps=[t0])
    return b
    """
    main = program(body, tmp_path).functions["main"]
    calls = [
        s.value for s in walk_stmts(main.body) if isinstance(s, Assign) and isinstance(s.value, CallFunc)
    ]
    assert [c.callee for c in calls] == ["same", "inc", "inc"]
    # `same` returns its In argument: c is x
    assert [str(c.args[0]) for c in calls] == ["x", "x", "x"]
    assert [str(d) for c in calls for d in c.deps] == ["t0", "t0"]
    ret = main.body[-1]
    assert isinstance(ret, Return)
    assert [str(v) for v in ret.values] == ["b"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "with pl.manual_scope():\n    with pl.manual_scope():\n        a, t = pl.submit(self.inc, x, a)",
            "does not nest",
        ),
        ("a, b, t = pl.submit(self.inc, x, a)", r"gives 1 result\(s\) and a task id: unpack 2 name\(s\)"),
        ("a, t = pl.submit(self.inc, x, a, after=[])", "unsupported keyword 'after'"),
        (
            "with pl.manual_scope():\n    pl.submit(self.inc, x, a)",
            "must be unpacked into its results and task id",
        ),
        ("a, t = pl.submit(pl.add, x, a)", "must be a kernel method written self.<kernel>"),
        ("a, t = pl.submit(self.inc, x, a, deps=[x])", "deps entry must be a task id"),
        ("tids = pl.array.create(0, pl.TASK_ID)", "extent must be a positive integer constant"),
        ("tids = pl.array.create(2, pl.INT32)", "element type must be pl.TASK_ID"),
        ("tids = pl.array.create(2, pl.TASK_ID)\ntids[0] = 1.5", "arr holds TaskId"),
        ("tids = pl.array.create(2, pl.TASK_ID)\nt = tids[x]", "an array index must be a scalar"),
        (
            "with pl.at(level=pl.Level.CORE_GROUP):\n    tids = pl.array.create(2, pl.TASK_ID)",
            "belongs in an orchestration body",
        ),
    ],
)
def test_mistakes_are_reported_at_their_line(body: str, message: str, tmp_path: Path) -> None:
    with pytest.raises(KernelError, match=message) as info:
        program(body + "\nreturn a", tmp_path)
    assert info.value.span is not None
    assert info.value.span.line > 20


def test_submit_is_a_parser_construct() -> None:
    with pytest.raises(RuntimeError, match="runs only inside an orchestration body"):
        pl.submit(None)
    with pytest.raises(RuntimeError, match="part of the kernel language"):
        pl.array.create(2, pl.TASK_ID)
    assert TaskIdType() == pl.TASK_ID
