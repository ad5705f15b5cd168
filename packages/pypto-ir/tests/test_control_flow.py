"""Control flow beyond pl.range/if: ``while`` loops (plain and ``pl.while_``), ``break`` /
``continue``, names first bound inside a loop or one if branch and read after it, tuple values,
and ``@pl.function(attrs=..., auto_scope=...)``. What the IR, the SSA pass and the generated C++
look like, and mistakes reported at their line. (Runs on the simulated chip:
pypto-runtime/tests/test_control_flow_run.py.)"""

from __future__ import annotations

import dataclasses
import inspect
import json
from pathlib import Path
from typing import Any

import pytest
from pypto_ir_test_helpers import program

import pypto.language as pl
from pypto.ir.compile import compile_to_files
from pypto.ir.errors import KernelError
from pypto.ir.nodes import (
    Assign,
    Break,
    Const,
    Continue,
    For,
    If,
    Program,
    While,
    Yield,
    structural_equal,
    walk_stmts,
)
from pypto.ir.passes import ssa
from pypto.ir.pipeline import lower
from pypto.ir.types import ScalarType
from pypto.ir.verifier import VerifyError, verify
from pypto_testing.forms import KernelWhile

# ----------------------------------------------------------------------------- helpers


def _line_of(fn: Any, marker: str) -> str:
    """``file:line`` of the first source line of ``fn`` containing ``marker``."""
    target = getattr(fn, "fn", fn)
    lines, first = inspect.getsourcelines(target)
    for k, line in enumerate(lines):
        if line.strip() == marker or (marker in line and not line.lstrip().startswith("def ")):
            return f"{inspect.getsourcefile(target)}:{first + k}:"
    raise AssertionError(f"{marker!r} not in the source of {fn}")


def _error(fn: Any) -> str:
    with pytest.raises(KernelError) as info:
        _ = fn.ir
    return str(info.value)


# ----------------------------------------------------------------------------- while loops


@pl.function
def collatz_steps(n: pl.Scalar[pl.INT64]) -> pl.Scalar[pl.INT64]:
    steps: pl.Scalar[pl.INT64] = 0
    v: pl.Scalar[pl.INT64] = n
    while v > 1:
        if v % 2 == 0:
            v = v // 2
        else:
            v = v * 3 + 1
        steps = steps + 1
    return steps


def test_a_while_loop_carries_the_names_it_rebinds_through_ssa() -> None:
    f = collatz_steps.ir
    (loop,) = [s for s in f.body if isinstance(s, While)]
    assert loop.iter_args == ()  # before SSA the loop is name-based
    after = ssa.convert_function(f)
    (loop,) = [s for s in after.body if isinstance(s, While)]
    carried = [ia.var.name.split("__")[0] for ia in loop.iter_args]
    assert sorted(carried) == ["steps", "v"]
    # the condition reads the carried value of v, not its value before the loop
    v_phi = next(ia.var for ia in loop.iter_args if ia.var.name.startswith("v"))
    assert loop.cond.lhs == v_phi  # type: ignore[union-attr]
    assert isinstance(loop.body[-1], Yield)
    assert len(loop.results) == 2


@pl.function
def halve_until_small(n: pl.Scalar[pl.INT64]) -> pl.Scalar[pl.INT64]:
    x: pl.Scalar[pl.INT64] = 0
    for (v,) in pl.while_(init_values=(n,)):
        pl.cond(v > 10)
        v_next = pl.yield_(v // 2)
    x = v_next + 1
    return x


def test_pl_while_is_the_same_loop_with_its_carried_values_spelled_out() -> None:
    f = halve_until_small.ir
    loops = [s for s in f.body if isinstance(s, While)]
    assert len(loops) == 1
    after = ssa.convert_function(f)
    (loop,) = [s for s in after.body if isinstance(s, While)]
    assert len(loop.iter_args) == 1
    assert isinstance(loop.iter_args[0].init.type, ScalarType)
    text = f.as_python()
    assert "while (v > 10):" in text
    assert structural_equal(pl.parse(text), f)


@pl.function
def first_multiple(n: pl.Scalar[pl.INT64], k: pl.Scalar[pl.INT64]) -> pl.Scalar[pl.INT64]:
    found: pl.Scalar[pl.INT64] = -1
    for i in pl.range(1, n):
        if i % 2 == 0:
            continue
        if i % k == 0:
            found = i
            break
    return found


def test_break_and_continue_record_the_carried_values_where_they_leave() -> None:
    after = ssa.convert_function(first_multiple.ir)
    (loop,) = [s for s in after.body if isinstance(s, For)]
    (found_phi,) = [ia.var for ia in loop.iter_args]
    leaves = [s for s in walk_stmts(loop.body) if isinstance(s, (Break, Continue))]
    assert [type(s) for s in leaves] == [Continue, Break]
    assert leaves[0].values == (found_phi,)  # continue: found unchanged
    assert leaves[1].values == (loop.var,)  # break: found = i, just bound
    # a branch that ends in break does not feed the code after the if
    ifs = [s for s in loop.body if isinstance(s, If)]
    assert all(not s.results for s in ifs)


def test_while_break_continue_generate_cpp_that_compiles(tmp_path: Path, cpp_check) -> None:  # type: ignore[no-untyped-def]
    compile_to_files(KernelWhile, tmp_path, contract="PROGRAM", platform="a2a3sim")
    (kernel,) = (tmp_path / "kernels").glob("*.cpp")
    text = kernel.read_text()
    assert "while (" in text
    assert "continue;" in text
    assert "break;" in text
    cpp_check([kernel, *(tmp_path / "orchestration").glob("*.cpp")])


# ----------------------------------------------------------------------------- names bound inside


@pl.function
def last_square(n: pl.Scalar[pl.INT64]) -> pl.Scalar[pl.INT64]:
    for i in pl.range(n):
        sq = i * i
    if n > 3:
        big = sq + 1000
    return sq + big


def test_a_name_first_bound_in_a_loop_or_one_branch_starts_as_zero_before_it() -> None:
    f = last_square.ir
    starts = {s.var.name: s.value for s in f.body if isinstance(s, Assign) and isinstance(s.value, Const)}
    assert starts == {"sq": Const(0, starts["sq"].dtype), "big": Const(0, starts["big"].dtype)}
    after = ssa.convert_function(f)
    (loop,) = [s for s in after.body if isinstance(s, For)]
    assert [ia.var.name.split("__")[0] for ia in loop.iter_args] == ["sq"]
    (branch,) = [s for s in after.body if isinstance(s, If)]
    assert [r.name.split("__")[0] for r in branch.results] == ["big"]


@pl.function
def local_stays_local(n: pl.Scalar[pl.INT64]) -> pl.Scalar[pl.INT64]:
    total: pl.Scalar[pl.INT64] = 0
    for i in pl.range(n):
        step = i + 1
        total = total + step
    return total


@pl.function
def rebound_before_read(n: pl.Scalar[pl.INT64]) -> pl.Scalar[pl.INT64]:
    total: pl.Scalar[pl.INT64] = 0
    for i in pl.range(n):
        step = i + 1
        total = total + step
    step = 7  # bound again before it is read: the loop's value is not needed
    return total + step


def test_a_name_not_read_after_the_loop_gets_no_starting_value() -> None:
    for fn in (local_stays_local, rebound_before_read):
        (loop,) = [s for s in fn.ir.body if isinstance(s, For)]
        before = fn.ir.body[: fn.ir.body.index(loop)]
        assert "step" not in [s.var.name for s in before if isinstance(s, Assign)]
        (loop,) = [s for s in ssa.convert_function(fn.ir).body if isinstance(s, For)]
        assert [ssa.base_name(ia.var.name) for ia in loop.iter_args] == ["total"]


# ----------------------------------------------------------------------------- tuples


@pl.function
def tuple_forms(a: pl.Scalar[pl.INT64], b: pl.Scalar[pl.INT64]) -> pl.Scalar[pl.INT64]:
    pair = (a, b)
    nested = (pair, a + b)
    first, (second, third) = pair[0], (nested[0][1], nested[1])
    x, y = first, second
    x, y = y, x
    return x * 100 + y * 10 + third


def test_tuples_exist_only_in_the_parser_and_unpack_like_python() -> None:
    f = tuple_forms.ir
    assert all(not isinstance(s.value.type, tuple) for s in f.body if isinstance(s, Assign))
    after = ssa.convert_function(f)
    text = str(after)
    # x, y = y, x swaps: the result is b * 100 + a * 10 + (a + b)
    assert "Tuple" not in text
    ret = after.body[-1]
    assert ret.values  # type: ignore[union-attr]


@pl.function
def tuple_index_out_of_range(a: pl.Scalar[pl.INT64]) -> pl.Scalar[pl.INT64]:
    t = (a, a)
    return t[2]


@pl.function
def tuple_index_not_constant(a: pl.Scalar[pl.INT64]) -> pl.Scalar[pl.INT64]:
    t = (a, a)
    return t[a]


@pl.function
def tuple_unpack_count(a: pl.Scalar[pl.INT64]) -> pl.Scalar[pl.INT64]:
    t = (a, a, a)
    x, _y = t
    return x


def test_tuple_mistakes_are_reported_at_their_line() -> None:
    msg = _error(tuple_index_out_of_range)
    assert _line_of(tuple_index_out_of_range, "t[2]") in msg
    assert "tuple index 2 is out of range for a tuple of 2 item(s)" in msg
    msg = _error(tuple_index_not_constant)
    assert _line_of(tuple_index_not_constant, "t[a]") in msg
    assert "a tuple index must be" in msg
    msg = _error(tuple_unpack_count)
    assert _line_of(tuple_unpack_count, "x, _y = t") in msg
    assert "cannot unpack a tuple of 3 item(s) into 2 name(s)" in msg


# ----------------------------------------------------------------------------- mistakes


@pl.function
def break_in_parallel(n: pl.Scalar[pl.INT64]) -> pl.Scalar[pl.INT64]:
    x: pl.Scalar[pl.INT64] = 0
    for i in pl.parallel(n):
        x = x + i
        break
    return x


@pl.function
def continue_in_unroll(n: pl.Scalar[pl.INT64]) -> pl.Scalar[pl.INT64]:
    x: pl.Scalar[pl.INT64] = 0
    for _i in pl.unroll(4):
        continue
    return x


@pl.function
def while_on_a_tensor(x: pl.Tensor[[16, 16], pl.FP32]) -> pl.Tensor[[16, 16], pl.FP32]:
    while x:
        x = pl.mul(x, 2.0)
    return x


@pl.function
def while_on_an_int(n: pl.Scalar[pl.INT64]) -> pl.Scalar[pl.INT64]:
    while n:
        n = n - 1
    return n


@pl.function
def pl_while_without_cond(n: pl.Scalar[pl.INT64]) -> pl.Scalar[pl.INT64]:
    for (v,) in pl.while_(init_values=(n,)):
        w = v + 1
        v_next = pl.yield_(w)
    return v_next


@pl.function
def cond_outside_pl_while(n: pl.Scalar[pl.INT64]) -> pl.Scalar[pl.INT64]:
    pl.cond(n > 0)
    return n


@pl.function
def pl_while_bare_yield(n: pl.Scalar[pl.INT64]) -> pl.Scalar[pl.INT64]:
    for (v,) in pl.while_(init_values=(n,)):
        pl.cond(v < 100)
        pl.yield_(v * 2)
    return n


@pytest.mark.parametrize(
    ("fn", "marker", "message"),
    [
        (break_in_parallel, "break", "break in a pl.parallel loop (its iterations are independent)"),
        (continue_in_unroll, "continue", "continue in a pl.unroll loop (every iteration is unrolled)"),
        (while_on_a_tensor, "while x:", "a while condition must be a bool scalar"),
        (
            while_on_an_int,
            "while n:",
            "a while condition must be a bool scalar (a comparison such as i < n, or True), got Scalar[INT64]",
        ),
        (pl_while_without_cond, "w = v + 1", "the body of a pl.while_ loop starts with pl.cond(condition)"),
        (pl_while_bare_yield, "pl.yield_(v * 2)", "ends with an assignment-form pl.yield_"),
        (
            cond_outside_pl_while,
            "pl.cond(n > 0)",
            "is the first statement of a pl.while_ loop body, and only that",
        ),
    ],
)
def test_control_flow_mistakes_are_reported_at_their_line(fn: Any, marker: str, message: str) -> None:
    msg = _error(fn)
    assert _line_of(fn, marker) in msg
    assert message in msg


def test_break_inside_a_scope_cannot_leave_the_loop_around_it() -> None:
    main = [
        "for _i in pl.range(4):",
        "    with pl.at(level=pl.Level.CORE_GROUP):",
        "        t = pl.load(x, [0, 0], [16, 16])",
        "        out = pl.store(t, [0, 0], out)",
        "        break",
        "return out",
    ]
    with pytest.raises(KernelError) as info:
        program("[16, 16]", "<break across a scope>", main=main, out="out")()
    assert "break inside a pl.at scope cannot leave the loop around the scope" in str(info.value)
    assert "<break across a scope>:" in str(info.value)


def test_break_outside_a_loop_is_refused_at_its_line() -> None:
    # Python itself refuses `break` outside a loop when it compiles the source (a module or
    # pl.parse text), before the kernel-language parser reads it
    text = "@pl.function\ndef f(n: pl.Scalar[pl.INT64]) -> pl.Scalar[pl.INT64]:\n    if n > 0:\n        break\n    return n\n"
    with pytest.raises(SyntaxError, match="'break' outside loop") as info:
        pl.parse(text)
    assert info.value.lineno == 4


def test_hand_built_ir_with_break_outside_a_loop_is_refused() -> None:
    f = collatz_steps.ir
    bad = dataclasses.replace(f, body=(Break(), *f.body))
    with pytest.raises(KernelError, match="break outside a loop"):
        ssa.convert_function(bad)
    with pytest.raises(VerifyError, match="break outside a loop"):
        verify(Program("p", (bad,), bad.name))


# t turns FP16 in a while loop that carries it
TypeChangesInWhile = program(
    "[16, 16]",
    "<type changes in while>",
    main=[
        "with pl.at(level=pl.Level.CORE_GROUP):",
        "    k: pl.Scalar[pl.INT64] = 0",
        "    t = pl.load(x, [0, 0], [16, 16])",
        "    while k < n:",
        "        t = pl.cast(t, pl.FP16)",
        "        k = k + 1",
        "    out = pl.store(pl.cast(t, pl.FP32), [0, 0], out)",
        "return out",
    ],
    ins=("x", "n: pl.Scalar[pl.INT64]"),
    out="out",
)


def test_a_carried_name_whose_type_changes_in_a_while_is_reported_at_the_loop() -> None:
    with pytest.raises(KernelError) as info:
        lower(TypeChangesInWhile())
    msg = str(info.value)
    assert "'t' changes type inside the loop" in msg
    line = [text.strip() for text in TypeChangesInWhile.text.splitlines()].index("while k < n:") + 1
    assert f"<type changes in while>:{line}:" in msg


# ----------------------------------------------------------------------------- decorator attributes


@pl.program
class DecoratedAttrs:
    @pl.function(type=pl.FunctionType.InCore, attrs={"windowize": True, "split": pl.SplitMode.UP_DOWN})
    def scale(
        self, x: pl.Tensor[[16, 16], pl.FP32], y: pl.Out[pl.Tensor[[16, 16], pl.FP32]]
    ) -> pl.Tensor[[16, 16], pl.FP32]:
        pl.func_attr({"stationary": x})
        t = pl.load(x, [0, 0], [16, 16])
        y = pl.store(pl.mul(t, 3.0), [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration, auto_scope=False)
    def main(
        self, x: pl.Tensor[[16, 16], pl.FP32], y: pl.Out[pl.Tensor[[16, 16], pl.FP32]]
    ) -> pl.Tensor[[16, 16], pl.FP32]:
        y = self.scale(x, y)
        return y


def test_decorator_attrs_combine_with_func_attr_and_reach_the_metadata(tmp_path: Path) -> None:
    attrs = dict(DecoratedAttrs.functions["scale"].attrs)
    assert attrs["windowize"] is True
    assert attrs["split"] is pl.SplitMode.UP_DOWN
    assert "stationary" in attrs
    assert dict(DecoratedAttrs.functions["main"].attrs) == {"auto_scope": False}
    text = DecoratedAttrs.as_python()
    assert "@pl.function(type=pl.FunctionType.Orchestration, auto_scope=False)" in text
    assert structural_equal(pl.parse(text), DecoratedAttrs)
    compile_to_files(DecoratedAttrs, tmp_path, contract="PROGRAM", platform="a2a3sim")
    (kernel,) = json.loads((tmp_path / "compiled_meta.json").read_text())["kernels"]
    assert kernel["attrs"]["windowize"] is True
    assert kernel["attrs"]["split"] == "SplitMode.UP_DOWN"


def test_a_key_given_by_the_decorator_and_the_body_is_reported() -> None:
    text = (
        '@pl.function(type=pl.FunctionType.InCore, attrs={"tag": 1})\n'
        "def k(x: pl.Tensor[[16, 16], pl.FP32]) -> pl.Tensor[[16, 16], pl.FP32]:\n"
        '    pl.func_attr({"tag": 2})\n'
        "    return x\n"
    )
    with pytest.raises(KernelError, match="the key 'tag' is given twice"):
        pl.parse(text)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"attrs": [("a", 1)]}, r"attrs=\.\.\.\): expected a dict"),
        ({"attrs": {1: True}}, "keys must be strings, got 1"),
        ({"attrs": {"a": [1, 2]}}, "the value of 'a' must be a constant"),
        ({"auto_scope": "no"}, r"auto_scope=\.\.\.\): expected True or False, got 'no'"),
        ({"attrs": {"auto_scope": False}}, "give auto_scope as its own keyword"),
    ],
)
def test_bad_decorator_attrs_are_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(TypeError, match=message):
        pl.function(**kwargs)


# ----------------------------------------------------------------------------- text


def test_programs_with_while_break_continue_and_tuples_print_and_parse_back() -> None:
    for f in (first_multiple.ir, collatz_steps.ir, last_square.ir, tuple_forms.ir, halve_until_small.ir):
        text = f.as_python()
        assert structural_equal(pl.parse(text), f), text
    text = KernelWhile.as_python()
    assert "while (k < n):" in text
    assert "continue" in text
    assert "break" in text
    assert structural_equal(pl.parse(text), KernelWhile)


# a kernel that writes both of its InOut tensors, called in a loop that carries one of them
NamesOfOtherValues = program(
    "[16, 16]",
    kernel=[
        "t = pl.load(x, [0, 0], [16, 16])",
        "a = pl.store(t, [0, 0], a)",
        "b = pl.store(t, [0, 0], b)",
        "return a, b",
    ],
    main=[
        "for _i, (acc,) in pl.range(3, init_values=(a,)):",
        "    got_a, got_b = self.k(x, acc, b)  # names of the argument tensors",
        "    acc_next = pl.yield_(got_a)  # a name of the carried value",
        "return acc_next, got_b",
    ],
    ins=("x", "a: pl.InOut[pl.Tensor[[16, 16], pl.FP32]]", "b: pl.InOut[pl.Tensor[[16, 16], pl.FP32]]"),
    out=None,
    returns="tuple[pl.Tensor[[16, 16], pl.FP32], pl.Tensor[[16, 16], pl.FP32]]",
)()


def test_names_bound_in_a_loop_to_other_values_get_no_starting_value() -> None:
    main = NamesOfOtherValues.functions["main"]
    creates = [s for s in walk_stmts(main.body) if isinstance(s, Assign) and "create" in str(s.value)]
    assert creates == []
    (ret,) = [s for s in main.body if not isinstance(s, (Assign, For))]
    assert [v.name for v in ret.values] == ["acc", "b"]  # type: ignore[union-attr]


# a while loop whose condition reads a tensor element
OpCallInWhileCondition = program(
    "[16, 16]",
    main=[
        "with pl.at(level=pl.Level.CORE_GROUP):",
        "    k: pl.Scalar[pl.INT64] = 0",
        "    while k < pl.read(cfg, [0, 0]):",
        "        k = k + 1",
        "    out = pl.store(pl.mul(pl.load(x, [0, 0], [16, 16]), k), [0, 0], out)",
        "return out",
    ],
    ins=("x", "cfg: pl.Tensor[[1, 4], pl.INT64]"),
    out="out",
)()


def test_an_op_call_in_a_while_condition_is_tested_afresh_at_the_top_of_each_iteration() -> None:
    main = OpCallInWhileCondition.functions["main"]
    (loop,) = [s for s in walk_stmts(main.body) if isinstance(s, While)]
    # while True: if <k < pl.read(cfg, ...)>: pass else: break; <body>
    assert isinstance(loop.cond, Const)
    assert loop.cond.value is True
    first = loop.body[0]
    assert isinstance(first, If)
    assert "read" in str(first.cond)
    assert first.then_body == ()
    assert isinstance(first.else_body[0], Break)
    lower(OpCallInWhileCondition)  # and it compiles
