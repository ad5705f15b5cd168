"""Upstream PyPTO's scope forms and hints: what they build, and their misuses rejected at the
offending line (``pl.scope``, ``pl.no_dep``, ``pl.at(allow_early_resolve=)``, ``pl.split(slot_num=)``,
``pl.create_tile(flat_layout=)``, an Opaque function scoped automatically, ``pl.fillpad_expand``)."""

from __future__ import annotations

import pytest
from pypto_ir_test_helpers import Rejections, TextProgram, function, task_program
from pypto_ir_test_programs import PRINTED_CALL

import pypto.language as pl
from pypto.ir.errors import KernelError
from pypto.ir.nodes import Assign, Call, ExprStmt, Scope
from pypto.ir.python_printer import function_text
from pypto.ir.types import TaskIdType


def _scoped(auto_scope: bool) -> TextProgram:
    return task_program(
        [
            "with pl.scope():  # automatic",
            "    a = self.k(x)",
            "with pl.scope(mode=pl.ScopeMode.MANUAL):",
            "    b, _t = pl.submit(self.k, a)",
            "return b",
        ],
        f"<scoped auto_scope={auto_scope}>",
        options=f", auto_scope={auto_scope}",
    )


def test_scope_modes_mark_runtime_scopes() -> None:
    main = _scoped(False)().functions["main"]  # type: ignore[attr-defined]
    marks = [s.value for s in main.body if isinstance(s, ExprStmt) and isinstance(s.value, Call)]
    assert [(c.op, c.attr("mode")) for c in marks] == [
        ("system.scope_begin", "auto"),
        ("system.scope_end", "auto"),
        ("system.scope_begin", "manual"),
        ("system.scope_end", "manual"),
    ]


rejects = Rejections()


rejects.add(
    _scoped(True),
    "# automatic",
    "declare it @pl.function(..., auto_scope=False)",
    "auto_scope_in_default_mode",
)


@rejects("pl.scope(1)", "pl.scope() takes only the keyword mode=")
def scope_positional() -> object:
    @pl.function(type=pl.FunctionType.Orchestration, auto_scope=False)
    def f(x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
        with pl.scope(1):  # type: ignore[call-arg]
            a = x
        return a

    return f.ir


rejects.add(
    task_program(
        [
            "with pl.scope(mode=pl.ScopeMode.MANUAL):",
            "    with pl.scope():  # nested",
            "        a = self.k(x)",
            "return a",
        ],
        "<auto_in_manual>",
        options=", auto_scope=False",
    ),
    "# nested",
    "pl.scope() does not nest inside a pl.manual_scope()",
    "auto_in_manual",
)


@rejects("# Vec", "flat_layout=True describes a flat (non-fractal) Mat (L1) staging tile")
def flat_vec_tile() -> object:
    @pl.function(type=pl.FunctionType.InCore)
    def f(x: pl.Tensor[[16, 16], pl.FP32]) -> pl.Tensor[[16, 16], pl.FP32]:
        _t = pl.create_tile([16, 16], dtype=pl.FP32, flat_layout=True)  # Vec
        return x

    return f.ir


@rejects("# a scalar", "pl.no_dep(t): 'n' must be a tensor")
def no_dep_of_a_scalar() -> object:
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64], pl.FP32], n: pl.Scalar[pl.INT32]) -> pl.Tensor[[64], pl.FP32]:
            return x

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[64], pl.FP32], n: pl.Scalar[pl.INT32]) -> pl.Tensor[[64], pl.FP32]:
            y = self.k(x, pl.no_dep(n))  # a scalar
            return y

    return P


STORE = "    out = pl.store(pl.load(x, [0, 0], [16, 16]), [0, 0], out)"
# (case, the pl.at opening of an orchestration f(x, out)'s one scope, the marker, the message)
for _name, _opening, _marker, _message in [
    (
        "early_resolve_not_bool",
        ["with pl.at(level=pl.Level.CORE_GROUP, allow_early_resolve=1):"],
        "allow_early_resolve=1",
        "pl.at(allow_early_resolve): expected a bool",
    ),
    (
        "slot_num_twice",
        [
            "with pl.at(",
            "    level=pl.Level.CORE_GROUP,",
            "    optimizations=[pl.cross_core_slot(slot_num=2), pl.split(pl.SplitMode.NONE, slot_num=4)],",
            "):",
        ],
        "pl.split(pl.SplitMode.NONE, slot_num=4)",
        "optimizations gives slot_num twice",
    ),
]:
    _f = function("Orchestration", "[16, 16]", [*_opening, STORE], f"<{_name}>", out=True)
    rejects.add(_f, _marker, _message, _name)


@rejects("# smaller", "shape [8, 32] must be at least the source's [16, 32]")
def fillpad_expand_smaller() -> object:
    @pl.function(type=pl.FunctionType.InCore)
    def f(
        x: pl.Tensor[[16, 32], pl.FP32], o: pl.Out[pl.Tensor[[16, 32], pl.FP32]]
    ) -> pl.Tensor[[16, 32], pl.FP32]:
        t = pl.load(x, [0, 0], [16, 32])
        return pl.store(pl.fillpad_expand(t, [8, 32]), [0, 0], o)  # smaller

    return f.ir


test_rejected_at_the_line = rejects.test()


_split_slot = function(
    "Orchestration",
    "[16, 16]",
    [
        "with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN, slot_num=8)]):",
        STORE,
    ],
    out=True,
)


def test_slot_num_of_split_is_the_cross_core_slot_hint() -> None:
    with pytest.warns(DeprecationWarning, match=r"pl.split\(\.\.\., slot_num=n\) is deprecated"):
        body = _split_slot().body
    scope = next(s for s in body if isinstance(s, Scope))
    assert dict(scope.hints) == {"cross_core_slot": 8, "split": "UP_DOWN"}


def test_flat_layout_is_recorded_and_printed() -> None:
    @pl.function(type=pl.FunctionType.InCore)
    def f(x: pl.Tensor[[16, 16], pl.FP32]) -> pl.Tensor[[16, 16], pl.FP32]:
        _t = pl.create_tile([16, 16], dtype=pl.FP32, target_memory=pl.MemorySpace.Mat, flat_layout=True)
        return x

    create = next(s.value for s in f.ir.body if isinstance(s, Assign))
    assert create.attr("flat_layout") is True
    assert "flat_layout=True" in function_text(f.ir)


def test_opaque_computation_outside_scopes_gets_its_own_scopes() -> None:
    @pl.program
    class P:
        @pl.function
        def sq(self, x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
            r: pl.Tensor[[64], pl.FP32] = pl.mul(x, x)
            return r

        @pl.function
        def main(self, x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
            a: pl.Tensor[[64], pl.FP32] = self.sq(x)
            b: pl.Tensor[[64], pl.FP32] = pl.add(a, a)
            c: pl.Tensor[[64], pl.FP32] = pl.add(b, x)
            d: pl.Tensor[[64], pl.FP32] = self.sq(c)
            e: pl.Tensor[[64], pl.FP32] = pl.add(d, 1.0)
            return e

    kinds = [type(s).__name__ for s in P.functions["main"].body]  # type: ignore[attr-defined]
    assert kinds == ["Assign", "Scope", "Assign", "Scope", "Return"]
    first = next(s for s in P.functions["main"].body if isinstance(s, Scope))  # type: ignore[attr-defined]
    assert [s.var.name for s in first.body] == ["b", "c"]


def test_none_in_an_orchestration_is_the_id_of_no_task() -> None:
    program = task_program(
        [
            "with pl.manual_scope():",
            "    prev = None",
            "    a, _t = pl.submit(self.k, x, deps=[prev])",
            "return a",
        ],
        "<none_as_a_dep>",
    )
    P = program()
    main = P.functions["main"]  # type: ignore[attr-defined]
    first = next(s for s in main.body if isinstance(s, Assign))
    assert first.value.op == "system.task_invalid"
    assert isinstance(first.var.type, TaskIdType)


def _overrides(value: str) -> str:
    return PRINTED_CALL.replace("CALL_ATTRS", f'"arg_direction_overrides": {value}')


def test_printed_direction_overrides_are_checked() -> None:
    prog = pl.parse(_overrides("[1]"))
    assert "kernel" in {f.name for f in prog.funcs}  # type: ignore[union-attr]
    for bad in ("[2]", "[1, 1]", "1"):
        with pytest.raises(KernelError, match="arg_direction_overrides"):
            pl.parse(_overrides(bad))
