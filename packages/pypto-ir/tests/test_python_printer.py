"""``as_python`` prints kernel-language text that ``pl.parse`` reads back to the same IR.

The round trip runs over every shared example program (``pypto_testing.programs``) as parsed,
and over hand-written ``@pl.program`` and ``@pl.function`` texts that use the statement forms
the examples do not (loops with carried values, branches, task dependencies, scalars, casts).
``serialize``/``deserialize`` round-trip the same programs to equal nodes.
"""

from __future__ import annotations

import pytest
from pypto_ir_test_helpers import HostArray

import pypto.language as pl
from pypto.ir import Function, Program, deserialize, serialize
from pypto.ir.errors import KernelError
from pypto.ir.nodes import Call, structural_equal, walk_stmts
from pypto_testing.programs import EXAMPLES, Example


def _args(ex: Example) -> tuple[object, ...]:
    inputs = tuple(HostArray(i, "float32") if isinstance(i, tuple) else i for i in ex.inputs)
    return inputs + tuple(HostArray(o, "float32") for o in ex.outputs)


def _roundtrip(node: Program | Function) -> Program | Function:
    text = node.as_python()
    back = pl.parse(text)
    assert type(back) is type(node)
    assert structural_equal(node, back), f"the text does not parse back to the same IR:\n{text}"
    assert back.as_python() == text  # printing is a fixed point
    return back


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_programs_print_and_parse_back(name: str) -> None:
    ex = EXAMPLES[name]
    program = ex.fn.specialize(*_args(ex)).program
    _roundtrip(program)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_programs_serialize_to_equal_nodes(name: str) -> None:
    ex = EXAMPLES[name]
    program = ex.fn.specialize(*_args(ex)).program
    data = serialize(program)
    assert isinstance(data, bytes)
    assert deserialize(data) == program  # spans aside, field for field


FORMS = """
@pl.program
class Forms:
    @pl.function(type=pl.FunctionType.InCore)
    def scale(self, x: pl.Tensor[[16, 32], pl.FP32], k: pl.FP32, y: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        t = pl.load(x, [0, 0], [16, 32])
        acc = pl.full([16, 32], dtype=pl.FP32, value=0.0)
        for i, (a,) in pl.range(3, init_values=(acc,)):
            a2 = pl.add(a, pl.mul(t, k))
            a3 = pl.yield_(a2)
        if k > 1.0:
            b = pl.exp(a3)
        else:
            b = pl.cast(pl.cast(a3, pl.FP16), pl.FP32)
        r = pl.row_sum(b)
        y = pl.store(pl.row_expand_sub(b, r), [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[32, 32], pl.FP32], y: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="first") as t0:
            y[0:16, :] = pl.add(x[0:16, :], x[16:32, :])
        with pl.at(level=pl.Level.CORE_GROUP, deps=[t0]):
            for j in pl.range(0, 32, 16):
                y[j:j + 16, :] = pl.mul(x[j:j + 16, :], 2.0)
        return y
"""


def test_statement_forms_print_and_parse_back() -> None:
    program = pl.parse(FORMS)
    assert isinstance(program, Program)
    assert [f.name for f in program.funcs] == ["scale", "main"]
    back = _roundtrip(program)
    ops = {
        s.value.op
        for f in back.funcs
        for s in walk_stmts(f.body)
        if hasattr(s, "value") and isinstance(s.value, Call)
    }
    assert {"tile.load", "tile.full", "tile.store"} <= ops
    assert deserialize(serialize(program)) == program


def test_a_function_prints_its_dynamic_dims_and_parses_back() -> None:
    code = """
N = pl.dynamic("N")

@pl.function(type=pl.FunctionType.InCore)
def rows(a: pl.Tensor[[N, 32], pl.FP32], c: pl.Out[pl.Tensor[[N, 32], pl.FP32]]) -> pl.Tensor[[N, 32], pl.FP32]:
    for i in pl.range(pl.dim(a, 0) // 16):
        c = pl.store(pl.exp(pl.load(a, [i * 16, 0], [16, 32])), [i * 16, 0], c)
    return c
"""
    f = pl.parse(code)
    assert isinstance(f, Function)
    assert f.return_types == f.returns
    assert len(f.params) == 2
    text = f.as_python()
    assert text.startswith('N = pl.dynamic("N")\n')
    _roundtrip(f)


def test_parse_reports_what_the_text_lacks() -> None:
    with pytest.raises(ValueError, match="found none"):
        pl.parse("x = 1\n")
    two = "@pl.function\ndef f(x: pl.Tensor[[8], pl.FP32]) -> pl.Tensor[[8], pl.FP32]:\n    return x\n"
    with pytest.raises(ValueError, match="found 2: f, g"):
        pl.parse(two + two.replace("def f", "def g"))
    with pytest.raises(SyntaxError):
        pl.parse("@pl.function\ndef f(x):\n    return x +\n")
    with pytest.raises(TypeError, match="expected a str"):
        pl.parse(b"x = 1")  # type: ignore[arg-type]


def test_a_kernel_error_points_into_the_text() -> None:
    code = "@pl.function\ndef f(x: pl.Tensor[[8], pl.FP32]) -> pl.Tensor[[8], pl.FP32]:\n    y = pl.nope(x)\n    return y\n"
    with pytest.raises((KernelError, AttributeError)) as info:
        pl.parse(code, filename="<kernels>")
    assert "nope" in str(info.value)


def test_loads_reads_a_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "k.py"
    path.write_text(
        "import pypto.language as pl\n\n@pl.function\n"
        "def double(x: pl.Tensor[[8, 8], pl.FP32]) -> pl.Tensor[[8, 8], pl.FP32]:\n"
        "    y: pl.Tensor[[8, 8], pl.FP32] = pl.add(x, x)\n    return y\n"
    )
    f = pl.loads(path)
    assert isinstance(f, Function)
    assert f.name == "double"
    assert f.body[0].span is not None
    assert f.body[0].span.file == str(path)
    with pytest.raises(FileNotFoundError):
        pl.loads(tmp_path / "missing.py")


def test_deserialize_refuses_other_bytes() -> None:
    with pytest.raises(ValueError, match="not serialized IR"):
        deserialize(b"\xff\x00")
    with pytest.raises(ValueError, match="expected format"):
        deserialize(b'{"format": "other/9", "ir": null}')
    with pytest.raises(TypeError, match=r"expected a pypto\.ir Program or Function"):
        serialize("text")  # type: ignore[arg-type]


def test_a_program_with_a_standalone_helper_is_the_result() -> None:
    code = """
@pl.function(type=pl.FunctionType.InCore)
def double(x: pl.Tensor[[16, 16], pl.FP32], y: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
    y = pl.store(pl.add(pl.load(x, [0, 0], [16, 16]), pl.load(x, [0, 0], [16, 16])), [0, 0], y)
    return y

@pl.program
class UsesHelper:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 16], pl.FP32], y: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        y = double(x, y)
        return y
"""
    program = pl.parse(code)
    assert isinstance(program, Program)
    assert program.entry == "main"
    assert sorted(program.functions) == ["double", "main"]
    _roundtrip(program)  # the helper prints as a method, called as self.double(...)
