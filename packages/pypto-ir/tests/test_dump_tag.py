"""``pl.dump_tag(t)`` and ``pl.submit(..., dumps=[...])``: the tensors marked for a selective dump
are recorded on the kernel calls that take them (``CallFunc.dumps``), by value, once each, in
argument order; the simulated chip has no tensor dump, so nothing else changes."""

from __future__ import annotations

import pytest

import pypto.language as pl
from pypto.ir import deserialize, serialize
from pypto.ir.errors import KernelError
from pypto.ir.nodes import Assign, CallFunc, Var, walk_stmts
from pypto_testing.forms import from_source

T = pl.Tensor[[16, 16], pl.FP32]


def _program(orch_body: str) -> object:
    """A program of one kernel ``k(a, b, out) -> out`` and an orchestration with ``orch_body``."""
    body = "\n".join("        " + line for line in orch_body.strip().splitlines())
    src = f"""
@pl.program
class P:
    @pl.function(type=pl.FunctionType.AIV)
    def k(self, a: T, b: T, out: pl.Out[T]) -> T:
        t = pl.add(pl.load(a, [0, 0], [16, 16]), pl.load(b, [0, 0], [16, 16]))
        return pl.store(t, [0, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def orch(self, a: T, b: T, c: pl.Out[T], d: pl.Out[T]) -> T:
{body}
"""
    return from_source(src, f"<dump_tag {abs(hash(src))}>", T=T)["P"]


def _dumps(program: object) -> list[list[str]]:
    """The dump marks of the orchestration's kernel calls, in order, as names."""
    orch = program.functions["orch"]  # type: ignore[attr-defined]
    return [
        [d.name for d in s.value.dumps if isinstance(d, Var)]
        for s in walk_stmts(orch.body)
        if isinstance(s, Assign) and isinstance(s.value, CallFunc)
    ]


def test_a_tag_marks_the_later_calls_that_take_the_tensor_once_in_argument_order() -> None:
    p = _program(
        """
c = self.k(a, b, c)
pl.dump_tag(d)
pl.dump_tag(a)
pl.dump_tag(a)
d = self.k(a, b, d)
return d
"""
    )
    assert _dumps(p) == [[], ["a", "d"]]
    assert "call @k(a, b, d, dumps=[a, d])" in str(p)


def test_a_rebound_name_is_a_new_value_the_tag_does_not_cover() -> None:
    p = _program(
        """
pl.dump_tag(c)
c = self.k(a, b, c)
c = self.k(c, b, c)
return c
"""
    )
    assert _dumps(p) == [["c"], []]


def test_submit_dumps_marks_its_arguments_with_the_tags() -> None:
    p = _program(
        """
pl.dump_tag(a)
out, tid = pl.submit(self.k, a, b, c, dumps=[c, b, c])
return out
"""
    )
    assert _dumps(p) == [["a", "b", "c"]]


def test_dumps_survive_serialization_and_printing() -> None:
    p = _program(
        """
pl.dump_tag(b)
d = self.k(a, b, d)
return d
"""
    )
    assert deserialize(serialize(p)) == p  # type: ignore[arg-type]
    text = p.as_python()  # type: ignore[attr-defined]
    assert "pl.dump_tag(b)\n        d: pl.Tensor[[16, 16], pl.FP32] = self.k(a, b, d)" in text
    assert _dumps(pl.parse(text)) == [["b"]]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("pl.dump_tag(a[0:8, :])\nreturn c", r"pl\.dump_tag takes one tensor name: pl\.dump_tag\(t\)"),
        (
            "n = 3\npl.dump_tag(n)\nreturn c",
            r"pl\.dump_tag\(n\): expected a tensor of this function, got a Scalar",
        ),
        (
            "pl.dump_tag(zz)\nreturn c",
            r"pl\.dump_tag\(zz\): expected a tensor of this function, got not a name",
        ),
        (
            "out, tid = pl.submit(self.k, a, b, c, dumps=[d])\nreturn out",
            r"pl\.submit: dumps= entry 'd' is not an argument of this submit",
        ),
        ("out, tid = pl.submit(self.k, a, b, c, dumps=a)\nreturn out", r"pl\.submit: dumps must be a list"),
    ],
)
def test_dump_errors(body: str, message: str) -> None:
    with pytest.raises(KernelError, match=message):
        _program(body)


def test_pl_tensor_dump_tag_is_the_same_directive() -> None:
    # upstream spells it in both places
    assert pl.tensor.dump_tag is pl.dump_tag
    p = _program(
        """
pl.tensor.dump_tag(b)
c = self.k(a, b, c)
return c
"""
    )
    assert _dumps(p) == [["b"]]


def test_dump_tag_belongs_in_an_orchestration() -> None:
    src = """
@pl.jit
def f(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.dump_tag(a)
        out[:] = pl.exp(a)
    return out
"""
    scope = from_source(src, "<dump_tag in a scope>")
    from pypto_ir_test_helpers import HostArray

    with pytest.raises(KernelError, match=r"pl\.dump_tag belongs in an orchestration body"):
        scope["f"].specialize(HostArray((16, 16)), HostArray((16, 16)))  # type: ignore[attr-defined]


def _jit(src: str, name: str) -> object:
    return from_source(src, name)["f"]


AT_SRC = """
@pl.jit
def f(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    pl.dump_tag(b)
    with pl.at(level=pl.Level.CORE_GROUP, dumps=[DUMPS]):
        out[:] = pl.add(a, b)
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.exp(a)
    return out
"""


def test_a_scope_records_its_dumps_and_the_tagged_tensors_it_captures_on_its_kernel_call() -> None:
    from pypto_ir_test_helpers import HostArray

    from pypto.ir.pipeline import lower

    f = _jit(AT_SRC.replace("DUMPS", "a"), "<at dumps a>")
    x = HostArray((16, 16))
    prog = lower(f.specialize(x, x, x).program).program  # type: ignore[attr-defined]
    calls = [
        s.value
        for fn in prog.functions.values()
        for s in walk_stmts(fn.body)
        if isinstance(getattr(s, "value", None), CallFunc)
    ]
    assert [[d.name for d in c.dumps if isinstance(d, Var)] for c in calls] == [["a", "b"], []]
    assert all("dump" not in dict(k.hints) for k in prog.functions.values())  # not kernel hints


@pytest.mark.parametrize(
    ("dumps", "message"),
    [
        ("3", r"pl\.at: dumps entry '3' is not a tensor defined before the scope"),
        ("out, zz", r"pl\.at: dumps entry 'zz' is not a tensor"),
    ],
)
def test_scope_dumps_errors(dumps: str, message: str) -> None:
    from pypto_ir_test_helpers import HostArray

    f = _jit(AT_SRC.replace("DUMPS", dumps), f"<at dumps {dumps}>")
    x = HostArray((16, 16))
    with pytest.raises(KernelError, match=message):
        f.specialize(x, x, x)  # type: ignore[attr-defined]
